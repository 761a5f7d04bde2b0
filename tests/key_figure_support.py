"""What every paper's key figure test checks (papers/<paper>/key_figure.py): redrawn from the committed results, the
plot CSV equals the committed one byte for byte and the PNG is a PNG; every bar's number is the cell of the file it
names (a results table's row for that series, or the paper's published table). The full profile's figure is drawn
from tables the test writes with the full stages' columns, some of the paper's rows left out (as a stand-in's or a
skipped model's tables are)."""
from __future__ import annotations

import csv
from pathlib import Path
from types import ModuleType
from typing import Mapping, Sequence

from common.paths import ROOT
from common.reporting.published import PublishedCell, load_cells

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def read_plot(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def redrawn_plot(module: ModuleType, tmp_path: Path) -> list[dict[str, str]]:
    """Redraw the figure into ``tmp_path`` and check it against the committed one; the committed plot's rows."""
    assert module.main(["--profile", "mini", "--out", str(tmp_path)]) == 0
    committed = module.MINI / "key_figure_plot.csv"
    assert (tmp_path / "key_figure_plot.csv").read_bytes() == committed.read_bytes(), \
        f"{committed} is stale: rerun `dvc repro -s papers/{module.PAPER}/dvc.yaml:key-figure` (profile mini)"
    png = tmp_path / "key_figure.png"
    assert png.read_bytes()[:8] == PNG_SIGNATURE and png.stat().st_size > 20_000
    assert (module.MINI / "key_figure.png").read_bytes()[:8] == PNG_SIGNATURE
    return read_plot(committed)


def check_sources(plot: list[dict[str, str]], paper: str, series_rows: Mapping[str, str],
                  published_rows: Mapping[tuple[str, str], str]) -> None:
    """Every mini bar's value is a cell of its source file in the row ``series_rows`` names for its series; every
    published bar's value is a cell of the paper's table in the row ``published_rows`` names for (table, series).
    Both maps must cover every series drawn (a bar with no traceable row fails)."""
    by_table: dict[str, list[PublishedCell]] = {}
    for cell in load_cells(paper):
        by_table.setdefault(cell.table, []).append(cell)
    for bar in plot:
        value = float(bar["value"])
        if bar["source"].startswith("published: "):
            table = bar["source"].removeprefix("published: ")
            row = published_rows[(table, bar["series"])]
            assert value in {c.value for c in by_table[table] if c.row == row}, bar
        else:
            source = ROOT / bar["source"]
            assert source.parent == ROOT / "results" / paper / "mini", bar
            (row,) = [r for r in read_plot(source) if r["row"] == series_rows[bar["series"]]]
            assert value in {float(v) for k, v in row.items() if k not in ("row", "model", "label") and _number(v)}, bar


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def cell(path: Path, row: str, column: str) -> float:
    """One cell of a results table, read with nothing but the csv module."""
    (found,) = [r for r in read_plot(path) if r["row"] == row]
    return float(found[column])


def bar(plot: list[dict[str, str]], panel: str, group: str, series: str, published: bool = False) -> float:
    (found,) = [b for b in plot if (b["panel"], b["group"], b["series"]) == (panel, group, series)
                and b["source"].startswith("published: ") == published]
    return float(found["value"])


def write_full_table(path: Path, fields: Sequence[str], rows: Sequence[str]) -> Path:
    """A results table with the full stage's ``fields`` and these ``rows``: every number distinct (row k, column j:
    k * 10 + j / 10 + 1), so a bar read from the wrong cell is caught."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(fields))
        writer.writeheader()
        for k, row in enumerate(rows):
            writer.writerow({f: row if f in ("row", "model", "label") else round(k * 10 + j / 10 + 1, 2)
                             for j, f in enumerate(fields)})
    return path


def drawn_full(module: ModuleType, tmp_path: Path) -> list[dict[str, str]]:
    """Draw the full profile's figure from ``tmp_path / "full"`` into ``tmp_path / "out"``; the plot's rows."""
    out = tmp_path / "out"
    assert module.main(["--profile", "full", "--results", str(tmp_path / "full"), "--out", str(out)]) == 0
    assert (out / "key_figure.png").read_bytes()[:8] == PNG_SIGNATURE
    return read_plot(out / "key_figure_plot.csv")


def check_full(plot: list[dict[str, str]], module: ModuleType, tables: Mapping[str, Path]) -> None:
    """Every solid bar is the cell of the table its source names, in the row of its series (``module.FULL_MODELS``);
    the series of rows the tables lack have no solid bar; the published bars are those of the mini figure."""
    rows_of = {name: row for row, name in module.FULL_MODELS.items()}
    measured = [b for b in plot if not b["source"].startswith("published: ")]
    assert measured
    for drawn in measured:
        path = tables[drawn["source"]]
        (found,) = [r for r in read_plot(path) if r["row"] == rows_of[drawn["series"]]]
        assert float(drawn["value"]) in {float(v) for k, v in found.items() if _number(v)}, drawn
    mini = read_plot(module.MINI / "key_figure_plot.csv")
    published = [b for b in plot if b["source"].startswith("published: ")]
    assert published == [b for b in mini if b["source"].startswith("published: ")]
