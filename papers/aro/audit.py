"""ARO's audit: every published number against what was recomputed here.

Recomputed from the paper's own tables (claims, ``common.audit``) and from this profile's run of its experiments
(``results/aro/<profile>/``, written by ``papers.aro.tables``): Table 2 (per relation, its macro rows and
``# Samples``), Tables 3-5 and Table 6, for the models the run scored. A full-profile run is compared cell by cell;
a mini-profile run marks the cells it covers (its CLIP, CLIP-FT and NegCLIP analogs) as not comparable. Stage
``audit`` of ``papers/aro/dvc.yaml``: ``python -m papers.aro.audit --strict``.
"""
from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Iterator, Sequence

from common.audit import stage_main
from common.audit.core import Recomputed
from common.audit.runs import MINI_NOTE
from common.paths import RESULTS

DATA_FILES = ("results/published/aro.csv", "results/published/aro_claims.csv", "papers/aro/models.toml")
"""The published numbers this audit reads (``common.stage_deps``), and the zoo entries of ARO's own runs (their
labels)."""

PAPER = "aro"
PUBLISHED_COLUMN = {
    "openai/ViT-B-32": "CLIP", "aro/negclip": "NegCLIP", "aro/clip-ft": "CLIP-FT",
    "blip/itm-base-coco": "BLIP", "flava/full": "Flava", "xvlm/coco": "XVLM",
    "mini/xs-32k": "CLIP", "aro/mini-clip-ft": "CLIP-FT", "aro/mini-negclip": "NegCLIP",
}
"""The paper's column of each model a run may score (the mini models stand for the model they are analogs of)."""
TABLE2_MACROS = {"Accuracy (table2 rule)": "Accuracy", "Accuracy (table2 rule, spatial)": "Spatial Relationships | Accuracy",
                 "Accuracy (table2 rule, verb)": "Verbs | Accuracy"}
"""Table 2's Accuracy rows are plain means over the 45 relations it lists (``papers.aro.vg_rules.TABLE2_RULE``)."""
TABLE2_BLOCK = {"spatial": "Spatial Relationships", "verb": "Verbs"}
TABLE6_ROWS = {"VG-Relation": "Compositional Tasks | VG-Relation", "VG-Attribution": "Compositional Tasks | VG-Attribution",
               "COCO-PRC": "Compositional Tasks | COCO-PRC", "Flickr30k-PRC": "Compositional Tasks | Flickr30k-PRC",
               "COCO Image R@1": "Downstream Tasks | COCO Image R@1", "COCO Text R@1": "Downstream Tasks | COCO Text R@1",
               "Flickr30k Image R@1": "Downstream Tasks | Flickr30k Image R@1",
               "Flickr30k Text R@1": "Downstream Tasks | Flickr30k Text R@1"}


def _rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _cells(run_dir: Path, labels: dict[str, str]) -> Iterator[tuple[str, str, str, str]]:
    """(table, published row, published column, our value as printed) for every cell the run covers."""
    for row in _rows(run_dir / "table2_vg_relation.csv"):
        published_rows = ([TABLE2_MACROS[row["group"]]] if row["group"] in TABLE2_MACROS
                          else [f"{TABLE2_BLOCK[row['kind']]} | {row['group']}"] if row["kind"] in TABLE2_BLOCK else [])
        for published_row in published_rows:
            for label, column in labels.items():
                yield "Table 2", published_row, column, row[label]
            if row["kind"] in TABLE2_BLOCK:
                yield "Table 2", published_row, "# Samples", row["n"]
    for row in _rows(run_dir / "table5_order.csv"):
        if row["model"] in labels:
            prc = f"{row['dataset'].replace('-Order', '-PRC')} | {labels[row['model']]}"
            yield "Table 5", prc, "Accuracy", row["accuracy"]
            yield "Table 5", prc, "Accuracy | std", row["std"]
    for table, stem, kind in (("Table 3", "table3_text_shuffle", "Text"), ("Table 4", "table4_image_shuffle", "Image")):
        for row in _rows(run_dir / f"{stem}.csv"):
            if row["model"] in labels:
                for column in ("Text Recall@1", "Text Recall@5", "Image Recall@1", "Image Recall@5"):
                    published_row = f"{row['dataset']} {kind} Shuffle | {labels[row['model']]} | {row['strategy']}"
                    yield table, published_row, column, row[column]
                    if row["strategy"] != "No Shuffling":
                        yield table, published_row, f"{column} | std", row[f"{column} | std"]
    for row in _rows(run_dir / "table6.csv"):
        if row["task"] in TABLE6_ROWS:
            for label, column in labels.items():
                yield "Table 6", TABLE6_ROWS[row["task"]], column, row[label]


def recompute(profile: str, results: Path = RESULTS) -> list[Recomputed]:
    """This profile's run mapped onto the published cells (nothing when the run has not happened yet)."""
    from common.jsonl import read_json
    from common.published import load_cells
    from common.zoo import get_spec

    run_dir = results / PAPER / profile
    context = run_dir / "context.json"
    if not context.is_file():
        return []
    models = read_json(context, expect=dict, remedy="run `dvc repro papers/aro/dvc.yaml:tables`")["models"]
    labels = {get_spec(name).label: PUBLISHED_COLUMN[name] for name in models if name in PUBLISHED_COLUMN}
    published = {(c.table, c.row, c.column) for c in load_cells(PAPER)}
    source = f"run {run_dir.relative_to(results.parent)}"
    recs, seen = [], set()
    for table, row, column, value in _cells(run_dir, labels):
        key = (table, row, column)
        if key not in published or key in seen or value == "":
            continue
        seen.add(key)
        if profile == "mini":
            recs.append(Recomputed(PAPER, table, row, column, math.nan, "fraction", source, "mini", "default",
                                   note=MINI_NOTE))
        else:
            exact = column == "# Samples"
            recs.append(Recomputed(PAPER, table, row, column, float(value), "count" if exact else "fraction", source,
                                   "full", "exact" if exact else "default"))
    return recs


def main(argv: Sequence[str] | None = None) -> int:
    return stage_main(PAPER, argv, recompute=recompute)


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
