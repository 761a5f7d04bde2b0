"""What every paper's key figure test checks (papers/<paper>/key_figure.py): redrawn from the committed results, the
plot CSV equals the committed one byte for byte and the PNG is a PNG; every bar's number is the cell of the file it
names (a results table's row for that series, or the paper's published table)."""
from __future__ import annotations

import csv
from pathlib import Path
from types import ModuleType
from typing import Mapping

from common.paths import ROOT
from common.published import PublishedCell, load_cells

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def read_plot(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def redrawn_plot(module: ModuleType, tmp_path: Path) -> list[dict[str, str]]:
    """Redraw the figure into ``tmp_path`` and check it against the committed one; the committed plot's rows."""
    assert module.main(["--out", str(tmp_path)]) == 0
    committed = module.MINI / "key_figure_plot.csv"
    assert (tmp_path / "key_figure_plot.csv").read_bytes() == committed.read_bytes(), \
        f"{committed} is stale: rerun `dvc repro -s papers/{module.MINI.parent.name}/dvc.yaml:key-figure-mini`"
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
