"""ARO's audit: every published number against what was recomputed here.

Recomputed from the paper's own tables (claims, ``common.audit``) and from this profile's run of its experiments
(``results/aro/<profile>/``, written by ``papers.aro.tables``): Tables 2-6 for the models the run scored; a
mini-profile run marks the cells it covers as not comparable. A published column scored more than one way
(``context.json``'s ``scoring``: OpenAI's CLIP at the authors' fp16 and at fp32; NegCLIP as trained, QuickGELU, and as
ARO's evaluator built it, GELU) is recomputed once per way, its note naming the way, so the audit shows which way
reproduces each cell. Stage ``audit``: ``python -m common audit aro --strict``.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Iterator, Sequence

from common.audit import stage_main
from common.audit.core import Recomputed
from common.audit.runs import MINI_NOTE, RunRow, context_recipe_notes, read_run_table, require_rows, run_value
from common.files.jsonl import read_json
from common.paths import RESULTS
from common.reporting.published import load_cells
from common.zoo import get_spec

DATA_FILES = ("results/published/aro.csv", "results/published/aro_claims.csv",
              "results/oracle/aro.json", "papers/aro/models.toml")
"""The published numbers this audit reads (``common.pipeline.stage_deps``), and the zoo entries of ARO's own runs (their
labels)."""

PAPER = "aro"
PUBLISHED_COLUMN = {
    "openai/ViT-B-32": "CLIP", "aro/negclip": "NegCLIP", "aro/negclip-rerun": "NegCLIP", "aro/clip-ft": "CLIP-FT",
    "blip/itm-base-coco": "BLIP", "flava/full": "Flava", "xvlm/coco": "XVLM",
    "mini/xs-32k": "CLIP", "aro/mini-clip-ft": "CLIP-FT", "aro/mini-negclip": "NegCLIP",
}
"""The paper's column of each model a run may score (the mini models stand for the model they are analogs of; the
full profile's NegCLIP re-training is compared with the published NegCLIP column beside the released weights)."""
TABLE2_MACROS = {"Accuracy (table2 rule)": "Accuracy", "Accuracy (table2 rule, spatial)": "Spatial Relationships | Accuracy",
                 "Accuracy (table2 rule, verb)": "Verbs | Accuracy"}
"""Table 2's Accuracy rows are plain means over the 45 relations it lists (``papers.aro.vg_rules.TABLE2_RULE``)."""
TABLE2_BLOCK = {"spatial": "Spatial Relationships", "verb": "Verbs"}
TABLE6_ROWS = {"VG-Relation": "Compositional Tasks | VG-Relation", "VG-Attribution": "Compositional Tasks | VG-Attribution",
               "COCO-PRC": "Compositional Tasks | COCO-PRC", "Flickr30k-PRC": "Compositional Tasks | Flickr30k-PRC",
               "COCO Image R@1": "Downstream Tasks | COCO Image R@1", "COCO Text R@1": "Downstream Tasks | COCO Text R@1",
               "Flickr30k Image R@1": "Downstream Tasks | Flickr30k Image R@1",
               "Flickr30k Text R@1": "Downstream Tasks | Flickr30k Text R@1"}


RECALLS = ("Text Recall@1", "Text Recall@5", "Image Recall@1", "Image Recall@5")
TABLE_KEYS = {"table2_vg_relation": ("group",), "table5_order": ("dataset", "model"),
              "table3_text_shuffle": ("dataset", "strategy", "model"),
              "table4_image_shuffle": ("dataset", "strategy", "model"), "table6": ("task",)}
"""Each run table the audit reads, by the columns that identify a row (a row twice is a damaged table)."""
TABLE_COLUMNS = {"table2_vg_relation": ("kind", "n"), "table5_order": ("accuracy", "std"),
                 "table3_text_shuffle": (*RECALLS, *(f"{c} | std" for c in RECALLS)),
                 "table4_image_shuffle": (*RECALLS, *(f"{c} | std" for c in RECALLS)), "table6": ()}


def _rows(path: Path, labels: dict[str, str]) -> list[RunRow]:
    """The checked rows of one of the run's tables: every model the run scored has its column or its rows; Table 2
    has its macro rows (the last the writer writes: a table cut short loses them first)."""
    stem = path.stem
    wide = stem in ("table2_vg_relation", "table6")
    rows = read_run_table(path, [*TABLE_KEYS[stem], *TABLE_COLUMNS[stem], *(labels if wide else ())],
                          key=TABLE_KEYS[stem])
    if stem == "table2_vg_relation":
        require_rows(path, [r["group"] for r in rows], TABLE2_MACROS)
    elif not wide:
        require_rows(path, [r["model"] for r in rows], labels)
    return rows


def _cells(run_dir: Path, labels: dict[str, str]) -> Iterator[tuple[str, str, str, RunRow, str, Path]]:
    """(table, published row, published column, our row, its column, file) for every cell the run covers."""
    path = run_dir / "table2_vg_relation.csv"
    for row in _rows(path, labels):
        published_rows = ([TABLE2_MACROS[row["group"]]] if row["group"] in TABLE2_MACROS
                          else [f"{TABLE2_BLOCK[row['kind']]} | {row['group']}"] if row["kind"] in TABLE2_BLOCK else [])
        for published_row in published_rows:
            for label, column in labels.items():
                yield "Table 2", published_row, column, row, label, path
            if row["kind"] in TABLE2_BLOCK:
                yield "Table 2", published_row, "# Samples", row, "n", path
    path = run_dir / "table5_order.csv"
    for row in _rows(path, labels):
        if row["model"] in labels:
            prc = f"{row['dataset'].replace('-Order', '-PRC')} | {labels[row['model']]}"
            yield "Table 5", prc, "Accuracy", row, "accuracy", path
            yield "Table 5", prc, "Accuracy | std", row, "std", path
    for table, stem, kind in (("Table 3", "table3_text_shuffle", "Text"), ("Table 4", "table4_image_shuffle", "Image")):
        path = run_dir / f"{stem}.csv"
        for row in _rows(path, labels):
            if row["model"] in labels:
                for column in RECALLS:
                    published_row = f"{row['dataset']} {kind} Shuffle | {labels[row['model']]} | {row['strategy']}"
                    yield table, published_row, column, row, column, path
                    if row["strategy"] != "No Shuffling":
                        yield table, published_row, f"{column} | std", row, f"{column} | std", path
    path = run_dir / "table6.csv"
    for row in _rows(path, labels):
        if row["task"] in TABLE6_ROWS:
            for label, column in labels.items():
                yield "Table 6", TABLE6_ROWS[row["task"]], column, row, label, path


def published_column(name: str) -> str | None:
    """The paper's column a model's results stand for: its own, or (a variant) the model's it varies."""
    return PUBLISHED_COLUMN.get(name) or PUBLISHED_COLUMN.get(get_spec(name).variant_of or "")


def scoring_note(entry: dict) -> str:
    """How a column was scored, for the audit row (``papers.aro.tables.scoring_context``): its precision and why,
    its activation when it is a variant, and its exact ties."""
    parts = [f"{entry['precision']}: {entry['why']}"]
    if entry.get("variant_note"):
        parts.append(f"variant of {entry['variant_of']}: {entry['variant_note']}")
    ties = entry.get("ties") or {}
    parts.append("exact ties: " + (", ".join(f"{task} {n}" for task, n in ties.items()) or "none counted"))
    return "; ".join(parts)


def column_labels(context: dict, recipes: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(our column label -> the paper's column, our column label -> its note, with the recipe note of a model trained
    here) for every column the run scored."""
    scoring = context.get("scoring")
    if scoring is None:  # a run that scored each model one way (the mini profile)
        models = {get_spec(name).label: name for name in context["models"]}
        notes = {}
    else:
        models = {label: entry["model"] for label, entry in scoring.items()}
        notes = {label: scoring_note(entry) for label, entry in scoring.items()}
    labels = {label: published_column(name) for label, name in models.items()}
    notes = {label: "; ".join(n for n in (notes.get(label, ""), recipes.get(name, "")) if n)
             for label, name in models.items()}
    return {k: v for k, v in labels.items() if v}, {k: v for k, v in notes.items() if v}


def recompute(profile: str, results: Path = RESULTS) -> list[Recomputed]:
    """This profile's run mapped onto the published cells (nothing when the run has not happened yet)."""
    run_dir = results / PAPER / profile
    context = run_dir / "context.json"
    if not context.is_file():
        return []
    remedy = "run `dvc repro papers/aro/dvc.yaml:tables`"
    # each fine-tune trained here names its recipe: the tables stage copied it from the run's sidecar (by zoo name)
    labels, notes = column_labels(read_json(context, expect=dict, remedy=remedy), context_recipe_notes(context, remedy))
    published = {(c.table, c.row, c.column) for c in load_cells(PAPER)}
    source = f"run {run_dir.relative_to(results.parent)}"
    recs, seen = [], set()
    for table, row, column, ours, our_column, path in _cells(run_dir, labels):
        key = (table, row, column)
        # one recomputation per cell and way of scoring (``# Samples`` counts are the same whatever scored them)
        way = our_column if our_column in labels else ours.get("model", our_column)
        if key not in published or (key, way) in seen:
            continue
        # empty: the writer's NaN (``papers.aro.tables.fraction``: nothing scored there); anything else is a number
        value = run_value(ours, our_column, path, optional=True)
        if value is None:
            continue
        seen.add((key, way))
        mini = profile == "mini"
        exact = column == "# Samples" and not mini
        recs.append(Recomputed(PAPER, table, row, column, math.nan if mini else value, "count" if exact else "fraction",
                               source, "mini" if mini else "full", "exact" if exact else "default",
                               note="; ".join(n for n in (MINI_NOTE if mini else "", notes.get(way, "")) if n)))
    return recs


def main(argv: Sequence[str] | None = None) -> int:
    return stage_main(PAPER, argv, recompute=recompute)
