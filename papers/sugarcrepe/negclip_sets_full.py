"""The full NegCLIP training set (stage ``negclip-full-set``): NegCLIP's COCO train TSV with each caption's
CREPE-style REPLACE, SWAP and NEGATE negatives (``common.text.crepe_style``, vocabulary from these captions).

Rows on a SugarCrepe test image (same COCO id) are dropped, and so are rows some kind does not apply to, so that every
run trains on the same captions; both are counted.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from common.blind.crossfit import coco_group
from common.files.io import output_group, sha256_file, write_json_atomic
from common.files.jsonl import write_jsonl
from common.files.tasks import DatasetError
from common.paths import build_dir, data_root
from common.pipeline.cli import stage_parser
from common.pipeline.params import add_stage_option, own_section
from common.text.crepe_style import Vocabulary, crepe_negatives, describe as describe_generator, parse_captions
from common.text.released_text import read_negclip_tsv
from papers.sugarcrepe.positives import sugarcrepe_positives
from papers.sugarcrepe.runs import KINDS

SET_KIND = "sugarcrepe-negclip-full-set"


def build_train_set(tsv: Path, images_dir: Path, sugarcrepe_manifest: Path, out_dir: Path, seed: int = 0,
                    vocabulary_min_count: int = 1) -> dict:
    """``rows.jsonl`` and ``manifest.json`` in ``out_dir``: the TSV's captions on non-test images with a negative of
    every kind; errors name the TSV row whose image is missing."""
    tsv, images_dir = Path(tsv), Path(images_dir)
    rows = read_negclip_tsv(tsv)
    try:  # COCO ids (coco:<id>) of every SugarCrepe test image
        test_groups = {coco_group(name) for name, _ in sugarcrepe_positives(sugarcrepe_manifest)[0]}
    except ValueError as exc:
        raise DatasetError(f"{sugarcrepe_manifest}: {exc}") from None
    kept, dropped_images = [], set()
    for number, row in enumerate(rows, start=1):
        name = Path(row.filepath).name
        if not (images_dir / name).is_file():
            raise DatasetError(f"{tsv}: row {number} (index {row.index}): image {row.filepath!r} not found under "
                               f"{images_dir}")
        try:
            group = coco_group(name)
        except ValueError as exc:
            raise DatasetError(f"{tsv}: row {number} (index {row.index}): {exc}") from None
        if group in test_groups:
            dropped_images.add(name)
            continue
        kept.append((name, row.title))
    captions = [c for _, c in kept]
    parsed = parse_captions(captions)
    vocabulary = Vocabulary.from_parsed(parsed.values(), vocabulary_min_count)
    negatives = crepe_negatives(captions, KINDS, seed, vocabulary, parsed=parsed)
    without = {k: sum(n is None for n in negatives[k]) for k in KINDS}
    records = [{"image": name, "caption": caption, "negatives": dict(zip(KINDS, negs))}
               for (name, caption), negs in zip(kept, zip(*(negatives[k] for k in KINDS))) if None not in negs]
    if not records:
        raise DatasetError(f"{tsv}: no caption outside the SugarCrepe test images gets a negative of every kind")
    out_dir = Path(out_dir)
    manifest = {
        "kind": SET_KIND, "profile": "full", "seed": seed, "kinds": list(KINDS),
        "counts": {"tsv_rows": len(rows), "rows_on_test_images": len(rows) - len(kept),
                   "test_images_dropped": len(dropped_images), "rows_without_negative": without,
                   "rows": len(records), "images": len({x["image"] for x in records})},
        "generator": describe_generator(vocabulary), "train_tsv_sha256": sha256_file(tsv),
        "sugarcrepe_manifest_sha256": sha256_file(sugarcrepe_manifest),
    }
    with output_group(out_dir) as staging:
        write_jsonl(staging / "rows.jsonl", records)
        write_json_atomic(staging / "manifest.json", manifest)
    return manifest


def main(argv: Sequence[str] | None = None) -> int:
    parser = stage_parser(__spec__.name, __doc__)
    parser.add_argument("--tsv", type=Path, default=None, help="default: <data>/negclip/train_neg_clip.tsv")
    parser.add_argument("--images", type=Path, default=None, help="default: <data>/coco/train2014/train2014")
    parser.add_argument("--sugarcrepe", type=Path, default=None,
                        help="the test set whose images are dropped from training (default: "
                             "build/full/sugarcrepe/manifest.json)")
    parser.add_argument("--out", type=Path, default=None, help="default: build/full/sugarcrepe_negclip/set")
    add_stage_option(parser)
    args = parser.parse_args(argv)
    _, section = own_section("sugarcrepe.negclip_full", args.stage)
    manifest = build_train_set(args.tsv or data_root() / "negclip" / "train_neg_clip.tsv",
                               args.images or data_root() / "coco" / "train2014" / "train2014",
                               args.sugarcrepe or build_dir("full", "sugarcrepe") / "manifest.json",
                               args.out or build_dir("full", "sugarcrepe_negclip") / "set",
                               section["seed"], section["vocabulary_min_count"])
    print(json.dumps(manifest["counts"], indent=2))
    return 0


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
