"""common/reporting/key_figure.py: bars read from a results table name their file, published bars their table; a missing
file, column or row is one line naming the file (a missing row is left out where the profile allows it); the figure
and its plot CSV are written together; the profile picks the results folder."""
from __future__ import annotations

import csv
import re

import pytest

from common.errors import WorkspaceError
from common.paths import RESULTS
from common.reporting.key_figure import (
    PLOT_FIELDS, PlotBar, PlotLine, parse_args, published_bars, result_bars, write_bar_figure)
from common.reporting.published import CellIndex, PublishedCell


def write_table(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def published_cell(row: str, column: str, value: float) -> PublishedCell:
    return PublishedCell(paper="toy", table="Table 1", row=row, column=column, value=value, unit="percent",
                         status="ok", raw="", note="", line=2)


def test_result_bars_read_each_row_and_column(tmp_path):
    table = write_table(tmp_path / "table.csv", [{"row": "a", "x": "1.5", "y": "2"}, {"row": "b", "x": "3", "y": "4"}])
    bars = result_bars(table, "panel", {"x": "X", "y": "Y"}, {"b": "model B", "a": "model A"})
    assert [(b.group, b.series, b.value) for b in bars] == [("X", "model B", 3.0), ("X", "model A", 1.5),
                                                            ("Y", "model B", 4.0), ("Y", "model A", 2.0)]
    assert {b.source for b in bars} == {"table.csv"} and not any(b.published for b in bars)


@pytest.mark.parametrize("groups, series, says", [({"z": "Z"}, {"a": "A"}, ":1: missing column(s) ['z']"),
                                                  ({"x": "X"}, {"c": "C"}, ": no row(s) ['c']")])
def test_result_bars_refuse_what_the_table_lacks(tmp_path, groups, series, says):
    table = write_table(tmp_path / "table.csv", [{"row": "a", "x": "1"}])
    with pytest.raises(WorkspaceError, match=re.escape(f"table.csv{says}")):
        result_bars(table, "panel", groups, series)
    with pytest.raises(WorkspaceError, match="missing; run the stage"):
        result_bars(tmp_path / "absent.csv", "panel", groups, series)


def test_a_cell_that_is_no_number_is_named(tmp_path):
    table = write_table(tmp_path / "table.csv", [{"row": "a", "x": "N/A"}])
    with pytest.raises(WorkspaceError, match=re.escape("table.csv: row 'a', column 'x': 'N/A' is no number")):
        result_bars(table, "panel", {"x": "X"}, {"a": "A"})


def test_published_bars_are_marked_published_and_a_missing_cell_is_named():
    cells = CellIndex([published_cell("CLIP", "Acc.", 61.6)])
    (drawn,) = published_bars(cells, "Table 1", "panel", {"Acc.": "accuracy"}, {"CLIP": "CLIP"})
    assert drawn == PlotBar("panel", "accuracy", "CLIP", 61.6, "published: Table 1") and drawn.published
    with pytest.raises(WorkspaceError, match=re.escape("results/published: no published cell ('Table 1', 'BLIP'")):
        published_bars(cells, "Table 1", "panel", {"Acc.": "accuracy"}, {"BLIP": "BLIP"})


def test_figure_and_plot_csv_hold_every_bar(tmp_path):
    bars = [PlotBar("p1", "g", "A", 40.0, "results/x.csv"), PlotBar("p1", "g", "A", 60.0, "published: Table 1"),
            PlotBar("p2", "h", "B", 100.0, "results/x.csv")]
    paths = write_bar_figure(bars, [PlotLine("p1", "g", 50.0)], tmp_path / "f.png", tmp_path / "f.csv",
                             "title", "accuracy (%)")
    with open(paths["plot"], newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert tuple(rows[0]) == PLOT_FIELDS
    assert [(r["series"], float(r["value"]), r["source"]) for r in rows] == [(b.series, b.value, b.source) for b in bars]
    assert paths["figure"].read_bytes()[:4] == b"\x89PNG"


def test_absent_rows_are_left_out_when_allowed(tmp_path):
    table = write_table(tmp_path / "table.csv", [{"row": "a", "x": "1"}])
    bars = result_bars(table, "panel", {"x": "X"}, {"c": "C", "a": "A"}, absent_rows=True)
    assert [(b.series, b.value) for b in bars] == [("A", 1.0)]


def test_the_profile_picks_the_results_folder(tmp_path):
    args = parse_args(["--profile", "full"], "papers.bivlc.key_figure", "toy", "bivlc")
    assert args.results == args.out == RESULTS / "bivlc" / "full"
    args = parse_args(["--profile", "mini", "--results", str(tmp_path)], "papers.bivlc.key_figure", "toy", "bivlc")
    assert (args.results, args.out) == (tmp_path, RESULTS / "bivlc" / "mini")
