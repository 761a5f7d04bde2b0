"""The audit of this paper: every published number against what was recomputed here (docs/audit.md).

Recomputed: the paper's own tables (claims), the REPLACE counts from the released benchmark (``released``) and this
profile's Tables 1-3; a row scored beside the authors' configuration (``<row>@fp32``, ``<row>@quickgelu``) is
compared with its row's published cells too, its note naming how it was scored. The authors released no training code
(``amitakamath/hard_positives@33addaae`` holds evaluation, data and the hard-positive generator only), so every cell
of a run trained here carries ``UNVERIFIED_METHOD`` in its verdict text, whatever the verdict.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from common.audit import stage_main
from common.audit.core import Recomputed
from common.audit.runs import context_recipe_notes, joined_notes, recipe_of_row, run_rows_recomputations
from common.files.jsonl import read_json
from common.paths import RESULTS
from papers.hard_positives import released

DATA_FILES = ("results/published/hard_positives.csv", "results/published/hard_positives_claims.csv",
              "results/oracle/hard_positives.json")
"""The published numbers this audit reads and its oracle record (``common.pipeline.stage_deps``)."""

TABLE1_COLUMNS: dict[str, str] = {
    "replace_orig": "REPLACE | Orig. Test Acc.", "replace_aug": "REPLACE | Aug. Test Acc.",
    "replace_drop": "REPLACE | Aug. Test Acc. | delta", "swap_orig": "SWAP | Orig. Test Acc.",
    "swap_aug": "SWAP | Aug. Test Acc.", "swap_drop": "SWAP | Aug. Test Acc. | delta",
    "replace_brittleness": "REPLACE | Brittleness", "swap_brittleness": "SWAP | Brittleness",
}
TABLE2_COLUMNS: dict[str, str] = {"replace_mean_original": "Mean score | c", "replace_mean_negative": "Mean score | c_n",
                                  "replace_mean_positive": "Mean score | c_p"}
UNITS: dict[str, str] = {"replace_drop": "points", "swap_drop": "points", **{k: "score" for k in TABLE2_COLUMNS}}

PUBLISHED_ROWS: dict[str, dict[str, str]] = {
    "Table 1": {"base": "CLIP ViT-B/32", "negclip": "NegCLIP", "crepe-swap": "CREPE-Swap",
                "crepe-replace": "CREPE-Replace", "svlc": "SVLC", "svlc-pos": "SVLC+Pos", "dac-llm": "DAC-LLM",
                "dac-sam": "DAC-SAM", "hn": "Our HN", "hp-hn": "Our HP+HN", "hp-hn-swap": "Our HP+HN (Swap-only)",
                "hp-hn-replace": "Our HP+HN (Replace-only)"},
    "Table 2": {"base": "CLIP ViT-B/32", "dac-llm": "DAC-LLM", "hp-hn": "Ours"},
    "Table 3": {"base": "CLIP ViT-B/32", "ratio-0": "0 HN", "ratio-0.25": "0.25 HN", "ratio-0.5": "0.50 HN",
                "ratio-0.75": "0.75 HN", "hn": "Our HN", "hp-hn": "Our HP+HN"},
}
"""A results row's ``row`` (what the model is, the same name in both profiles) -> the paper's row label."""
TRAINED_ROWS = frozenset({"clip-ft", "hn", "hp-hn", "hp-hn-swap", "hp-hn-replace", "ratio-0", "ratio-0.25",
                          "ratio-0.5", "ratio-0.75"})
"""``runs.RUNS``' rows, named here so that the audit does not import the loss and torch with it."""
UNVERIFIED_METHOD = ("method unverified: no released training code (amitakamath/hard_positives@33addaae); "
                     "HardPositiveLoss is this workspace's reading of Sec. 4.1 (\"follows the procedure outlined in "
                     "SVLC\"), papers/hard_positives/losses.py")
"""The caveat of every cell recomputed from a run in ``TRAINED_ROWS``."""
MINI_ROWS = TRAINED_ROWS | {"base"}
"""The rows the mini run writes (its CLIP and fine-tunes): one missing from a mini table is a damaged table, not a
smaller audit (a full run may leave out a model it could not load)."""
TABLE_FILES: dict[str, tuple[str, Mapping[str, str]]] = {
    "Table 1": ("table1.csv", TABLE1_COLUMNS), "Table 2": ("table2.csv", TABLE2_COLUMNS),
    "Table 3": ("table3.csv", TABLE1_COLUMNS)}


def scoring_notes(context: Path) -> tuple[dict[str, str], dict[str, str]]:
    """(row -> the published row it stands for, followed to the end; row -> its note: precision, why and ties, for
    every row scored in more than one way) from a full run's ``context.json``; empty where it wrote no reference."""
    if not context.is_file():
        return {}, {}
    models = read_json(context, expect=dict,
                       remedy="run `dvc repro papers/hard_positives/dvc.yaml:table1-full`").get("models", {})
    if not any(isinstance(m, dict) and m.get("stands_for") for m in models.values()):
        return {}, {}
    direct = {row: m["stands_for"] for row, m in models.items() if m.get("stands_for")}

    def root(row: str) -> str:
        seen = set()
        while row in direct and row not in seen:
            seen.add(row)
            row = direct[row]
        return row

    stands_for = {row: root(row) for row in direct}
    notes = {row: f"{m['precision']}: {m['why']}; exact ties: "
                  + ", ".join(f"{g} {n}" for g, n in m.get("ties", {}).items())
             for row, m in models.items() if m.get("stands_for") or row in direct.values()}
    return stands_for, notes


def run_recomputations(profile: str, results: Path = RESULTS) -> list[Recomputed]:
    """Tables 1-3 from this profile's runs (nothing where a table has not been produced yet)."""
    out = results / released.PAPER / profile
    stands_for, notes = scoring_notes(out / "context.json") if profile == "full" else ({}, {})
    # each trained run's recipe, copied by the tables stage from its sidecar (keyed by zoo name in the mini context,
    # by run in the full one); a reference row scored beside another (``<row>@fp32``) is the same run
    recipes = context_recipe_notes(out / "context.json",
                                   f"run `dvc repro papers/hard_positives/dvc.yaml:table1-{profile}`")
    published_row = lambda row: stands_for.get(row.get("row", ""), row.get("row", ""))  # noqa: E731
    recipe = lambda row: recipe_of_row(recipes, "model", "row")({**row, "row": published_row(row)})  # noqa: E731
    recs = []
    for table, (name, columns) in TABLE_FILES.items():
        path = out / name
        rows = PUBLISHED_ROWS[table]
        expected = {label for row, label in rows.items() if row in MINI_ROWS} if profile == "mini" else ()
        recs += run_rows_recomputations(
            released.PAPER, table, path, profile, columns,
            lambda row, rows=rows: rows.get(published_row(row)),
            f"run {path.relative_to(results.parent)}", units=UNITS, expected=expected,
            note=joined_notes(lambda row: notes.get(row.get("row", ""), ""), recipe),
            caveat=lambda row: UNVERIFIED_METHOD if row.get("row", "") in TRAINED_ROWS else "")
    return recs


def recompute(profile: str, results: Path = RESULTS) -> list[Recomputed]:
    """The released artifacts' recomputations (the same in every profile) and this profile's runs."""
    return released.recompute() + run_recomputations(profile, results)


def main(argv: Sequence[str] | None = None) -> int:
    return stage_main(released.PAPER, argv, recompute)
