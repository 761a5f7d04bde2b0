"""The audit of this paper: every published number against what was recomputed here.

Recomputed from the paper's own tables (claims, ``common.audit``); in ``released``, Tables 1-5 from the authors'
released per-instance predictions and detector outputs; and from this workspace's runs (``results/bivlc/<profile>/``):
Tables 2-5 of every model the tables stage scored. A mini run covers the cells but is never compared (tiny CLIPs on
the rendered world); a full run is compared. Full-profile rows: the released models under their own row id, this
workspace's re-trainings as ``ft-<run>`` (mapped to the same published row: a re-training reproduces that number).
"""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Mapping, Sequence

from common.audit import stage_main
from common.audit.core import Recomputed
from common.audit.runs import context_recipe_notes, joined_notes, run_rows_recomputations
from common.paths import RESULTS
from papers.bivlc import released
from papers.bivlc.detection import head_run

DATA_FILES = ("results/published/bivlc.csv", "results/published/bivlc_claims.csv", "results/oracle/bivlc.json")
"""The published numbers this audit reads and its oracle record (``common.pipeline.stage_deps``)."""

MAIN_COLUMNS = {"I2T": "BiVLC | I2T", "T2I": "BiVLC | T2I", "group": "BiVLC | Group", "sugarcrepe": "SugarCrepe"}
FINER_COLUMNS = {m: f"BiVLC (finer metrics) | {m}" for m in ("Ipos2T", "Ineg2T", "Tpos2I", "Tneg2I")}
TYPE_COLUMNS = {f"{t}_{m}": f"{t.capitalize()} | {label}" for t in ("replace", "swap", "add")
                for m, label in (("I2T", "I2T"), ("T2I", "T2I"), ("group", "Group"))}
CONTRASTIVE = {"clip": "CLIP", "clip-coco": "CLIPCOCO", "negclip": "NegCLIP", "trohn-text": "CLIPTROHN-Text",
               "trohn-img": "CLIPTROHN-Img"}
RETRAINED = ("clip-coco", "trohn-text", "trohn-img", "clipdet", "trohn-img-det")
"""Rows that the full profile also re-trains here (``ft-<run>``); the plain row is the authors' released model (or,
for a detector, their released heads)."""
TABLES: dict[str, tuple[str, Mapping[str, str], Mapping[str, str]]] = {
    "Table 2": ("table2.csv", MAIN_COLUMNS, {row: f"Contrastive | {CONTRASTIVE[row]}"
                                            for row in ("clip", "clip-coco", "negclip")}),
    "Table 3": ("table2.csv", {**MAIN_COLUMNS, **FINER_COLUMNS}, CONTRASTIVE),
    "Table 4": ("table4.csv", TYPE_COLUMNS, CONTRASTIVE),
    "Table 5": ("table5.csv", {"text_detection": "Text detection acc", "image_detection": "Img detection acc",
                               "I2T": "I2T", "T2I": "T2I", "group": "Group"},
                {"clipdet": "CLIPDet", "trohn-img-det": "CLIPTROHN-Img/Det"}),
}
"""Table -> (results file, our column -> published column, our row id -> published row label)."""
FULL_OPTIONAL: dict[str, frozenset[str]] = {"Table 2": frozenset({"sugarcrepe"}), "Table 3": frozenset({"sugarcrepe"}),
                                            "Table 4": frozenset(TYPE_COLUMNS)}
"""Columns the full tables stage leaves empty when nothing was measured (no SugarCrepe set given; no instance of a
type): ``papers.bivlc.tables --profile full``. The mini stage writes every value, so an empty one there is damage."""


def recipe_notes(context: Path, profile: str):
    """A results row -> the recipe note of the runs that made it (``context.json``'s ``training``, copied from the
    sidecars by the tables stage): a fine-tune's own, a detector row's per head; "" for a model not trained here."""
    notes = context_recipe_notes(context, f"run `dvc repro papers/bivlc/dvc.yaml:tables-{profile}`")

    def note(row: Mapping[str, str]) -> str:
        rid = row.get("row", "")
        heads = [f"{tower} head: {notes[head_run(rid, tower)]}" for tower in ("image", "text")
                 if head_run(rid, tower) in notes]
        return "; ".join(([notes[rid]] if rid in notes else []) + heads)
    return note


def run_recomputations(profile: str, results: Path = RESULTS) -> list[Recomputed]:
    """Every mapped cell of this profile's runs: a mini row missing is a damaged table, not a smaller audit (the
    mini run writes every row); a full run may leave out a model it could not load."""
    out = results / released.PAPER / profile
    recipes = recipe_notes(out / "context.json", profile)
    recs: list[Recomputed] = []
    for table, (name, columns, rows) in TABLES.items():
        path = out / name
        ids = dict(rows)  # our row id -> published row label; in the full profile the re-trainings' too
        if profile == "full":
            ids.update({f"ft-{row}": label for row, label in rows.items() if row in RETRAINED})
        notes = detector_notes(path) if table == "Table 5" and profile == "full" else {}
        recs += run_rows_recomputations(
            released.PAPER, table, path, profile, columns, lambda row, ids=ids: ids.get(row.get("row", "")),
            f"run {path.relative_to(results.parent)}",
            note=joined_notes(lambda row, notes=notes: notes.get(row.get("row", ""), ""), recipes),
            expected=set(rows.values()) if profile == "mini" else (),
            optional=FULL_OPTIONAL.get(table, ()) if profile == "full" else ())
    return recs


def detector_notes(table5: Path) -> dict[str, str]:
    """Per row of the full profile's ``table5.csv``, what the audit says beside its cells: whose heads were scored
    and how the recomputed probabilities compare with the authors' released per-instance outputs of those heads."""
    if not table5.is_file():
        return {}
    with open(table5, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    notes = {}
    for row in rows:
        note = f"heads: {row.get('heads') or 'trained here'}, on the towers' raw outputs"
        if row.get("released_max_abs_diff", ""):
            note += (f"; against the authors' per-instance outputs of these heads: max |P difference| "
                     f"{float(row['released_max_abs_diff']):.3g}, {row['released_instances_differing']} of "
                     f"{row['n']} instances with a decision differing")
        notes[row.get("row", "")] = note
    return notes


def recompute(profile: str, results: Path = RESULTS) -> list[Recomputed]:
    """What the released artifacts give (the same in every profile) and this profile's runs."""
    return released.recompute() + run_recomputations(profile, results)


def main(argv: Sequence[str] | None = None) -> int:
    return stage_main(released.PAPER, argv, recompute)
