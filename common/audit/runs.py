"""Recomputations from this workspace's own pipeline runs (full profile), and mini-run coverage.

A full-profile run of a paper's table maps onto the published cells it reproduces. A mini-profile run
covers the same cells but is never compared: each covered cell gets a ``mini`` recomputation without a
value, so the report says a run exists and why it is not comparable.
"""
from __future__ import annotations

import csv
import math
from pathlib import Path

from common.audit.core import Recomputed
from common.paths import RESULTS

SUGARCREPE_COLUMNS = {
    "replace_obj": "REPLACE | Object", "replace_att": "REPLACE | Attribute", "replace_rel": "REPLACE | Relation",
    "swap_obj": "SWAP | Object", "swap_att": "SWAP | Attribute", "add_obj": "ADD | Object",
    "add_att": "ADD | Attribute", "average": "Average",
}
"""Table 6 column of each results-table column."""


def _sugarcrepe_table6(profile: str, results: Path) -> list[Recomputed]:
    from common.params import load_params, section
    from common.zoo import get_spec

    table = results / "sugarcrepe" / profile / "table6.csv"
    if not table.is_file():
        return []
    source = f"run {table.relative_to(results.parent)}"
    if profile == "mini":
        recs = []
        for name in section(load_params(), "sugarcrepe.models.full"):
            spec = get_spec(name)
            for column in SUGARCREPE_COLUMNS.values():
                recs.append(Recomputed("sugarcrepe", "Table 6", f"{spec.family} | {spec.label}", column, math.nan,
                                       "percent", source, "mini", "default",
                                       note="the mini run scores tiny CLIPs on the rendered mini world"))
        return recs
    recs = []
    with open(table, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            spec = get_spec(row["model"])
            for ours, column in SUGARCREPE_COLUMNS.items():
                recs.append(Recomputed("sugarcrepe", "Table 6", f"{spec.family} | {spec.label}", column,
                                       float(row[ours]), "percent", source, "full", "default"))
    return recs


RUN_RECOMPUTERS = {"sugarcrepe": [_sugarcrepe_table6]}


def recompute(paper: str, profile: str, results: Path = RESULTS) -> list[Recomputed]:
    return [r for fn in RUN_RECOMPUTERS.get(paper, []) for r in fn(profile, results)]
