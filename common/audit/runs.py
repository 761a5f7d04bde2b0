"""Recomputations from this workspace's own pipeline runs: a results table mapped onto published cells.

A full-profile run of a paper's table maps onto the published cells it reproduces (tolerance ``default``). A
mini-profile run covers the same cells but is never compared: each covered cell gets a ``mini`` recomputation
without a value, so the report says a run exists and why it is not comparable.
"""
from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Callable, Mapping, Sequence

from common.audit.core import Recomputed

MINI_NOTE = "the mini run scores tiny CLIPs on the rendered mini world"


def table_recomputations(
    paper: str, table: str, results_csv: Path, profile: str, columns: Mapping[str, str],
    published_row: Callable[[str], str], covered_models: Sequence[str], source: str,
) -> list[Recomputed]:
    """Published cells of ``table`` recomputed by a run's wide results table (one row per model).

    ``columns`` maps a results column to the published column; ``published_row`` a zoo model name to the published
    row. Full profile: every row of ``results_csv`` becomes recomputations. Mini profile: the cells of
    ``covered_models`` (the models the full profile would run) are marked covered but not comparable. Nothing when
    the run has not happened yet.
    """
    if not results_csv.is_file():
        return []
    if profile == "mini":
        return [Recomputed(paper, table, published_row(name), column, math.nan, "percent", source, "mini", "default",
                           note=MINI_NOTE)
                for name in covered_models for column in columns.values()]
    recs = []
    with open(results_csv, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            for ours, column in columns.items():
                recs.append(Recomputed(paper, table, published_row(row["model"]), column, float(row[ours]),
                                       "percent", source, "full", "default"))
    return recs


def run_rows_recomputations(
    paper: str, table: str, results_csv: Path, profile: str, columns: Mapping[str, str],
    published_row: Callable[[Mapping[str, str]], "str | None"], source: str, note: str = "",
    units: Mapping[str, str] | None = None,
) -> list[Recomputed]:
    """Published cells recomputed by a results table whose rows are runs described by their own columns (how a
    model was trained, with which negatives) rather than by a zoo name: ``published_row`` maps a row to its
    published row label, or None where the paper has no such row. Full profile: compared (tolerance ``default``);
    mini profile: the same cells marked covered but not comparable. Nothing when the run has not happened yet.
    ``units``: a results column's unit where it is not "percent" (a difference in points, a mean score)."""
    if not results_csv.is_file():
        return []
    with open(results_csv, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return rows_recomputations(paper, table, rows, profile, columns, published_row, source, note, units)


def rows_recomputations(
    paper: str, table: str, rows: Sequence[Mapping[str, str]], profile: str, columns: Mapping[str, str],
    published_row: Callable[[Mapping[str, str]], "str | None"], source: str, note: str = "",
    units: Mapping[str, str] | None = None,
) -> list[Recomputed]:
    """``run_rows_recomputations`` over rows already read (a paper that reshapes a long results file first)."""
    recs = []
    for row in rows:
        label = published_row(row)
        if label is None:
            continue
        for ours, column in columns.items():
            unit = (units or {}).get(ours, "percent")
            if profile == "mini":
                recs.append(Recomputed(paper, table, label, column, math.nan, unit, source, "mini", "default",
                                       note="; ".join(n for n in (MINI_NOTE, note) if n)))
            elif row.get(ours) not in (None, ""):
                recs.append(Recomputed(paper, table, label, column, float(row[ours]), unit, source, "full",
                                       "default", note=note))
    return recs
