"""This workspace's side of a comparison: the full profile's tables and per-example predictions, as CSV files read
through the one checked reader of results tables (``common.reporting.report.read_table``)."""
from __future__ import annotations

from pathlib import Path

from common.oracle.core import Number
from common.reporting.report import read_table


def rows_by(path: Path, *key: str, optional: bool = False) -> dict:
    """A table's rows by their ``key`` column (several: the tuple of their values), the last row of a key kept;
    ``optional``: a missing file has none."""
    if optional and not path.is_file():
        return {}
    return {(row[key[0]] if len(key) == 1 else tuple(row[k] for k in key)): row for row in read_table(path)}


def our_predictions(path: Path) -> tuple[dict[str, bool], dict[str, list[float]]]:
    """A predictions CSV (``common.evaluation.results.write_predictions``): each example's decision, and its options'
    scores (``score_0``, ``score_1``, ...)."""
    rows = read_table(path)
    return ({r["item_id"]: r["correct"] == "1" for r in rows},
            {r["item_id"]: [float(v) for c, v in r.items() if c.startswith("score_")] for r in rows})


def number(benchmark: str, model: str, key: str, authors: float, ours: str | None, decimals: int,
           reason: str | None = None) -> Number:
    """A ``Number`` whose value here is a table's cell (empty, "N/A" or absent: none)."""
    return Number(benchmark, model, key, float(authors), None if ours in (None, "", "N/A") else float(ours), decimals,
                  reason)
