"""CoN-CLIP (Singh et al.), the full profile's fine-tuning set: CC-Neg's training split with distractor images from
COCO train 2017 and CREPE-Negate negations, one row per usable entry (stage ``finetune-full-set``).

The authors' data (jaisidhsingh/CoN-CLIP's ``FineTuningDatasetWithNegatives``): every CC-Neg entry but the last
40,000 (188,246), jaisidhsingh/CoN-CLIP@503388ac src/data/finetuning_datasets.py:50
"- configs.num_ccneg_eval_samples", each the image I, its caption c, its negated caption c' (commas removed,
jaisidhsingh/CoN-CLIP@503388ac src/data/finetuning_datasets.py:88 "negative_prompt = negative_prompt.replace(") and
the distractor I' = COCO train image ``mapping[idx][0]`` of the released mapping (``papers.conclip.coco_pool``).
The authors filter nothing: every entry of the training split is an item,
jaisidhsingh/CoN-CLIP@503388ac src/data/finetuning_datasets.py:55 "self.image_paths[:self.split_size]"
and jaisidhsingh/CoN-CLIP@503388ac src/data/finetuning_datasets.py:68-69 "return len(self.annotations)", so every
entry is a row but those their loader would crash on, which are dropped
and counted in the manifest: an entry with no mapping row, or a missing image or distractor file. A negated caption
that reads like its caption after commas are removed is kept, as theirs (counted). The CREPE-Negate negation is
this workspace's (the CREPE-Negate run of Table 6's last row, whose data the authors do not release): a row whose
caption gets none, or one that reads like the caption, has ``crepe_negated: null`` and only that run skips it
(``papers.conclip.train.run_rows``; counted); the four CC-Neg runs train on all rows, the authors' 188,246.

The CREPE-Negate negation is ``common.text.crepe_style``'s NEGATE called as the mini profile calls it, not imported
from there, so that this stage does not depend on the mini world's code.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from common.files.io import output_group, sha256_file, write_json_atomic
from common.files.jsonl import write_jsonl
from common.files.tasks import DatasetError
from common.paths import build_dir, data_root as default_data_root
from common.pipeline.cli import stage_parser
from common.pipeline.params import add_stage_option, own_section
from common.registry.fetch import fetch
from common.text.crepe_style import crepe_negatives, describe as describe_crepe
from papers.conclip.ccneg import EVAL_SIZE, default_paths, eval_size_for, load_ccneg_training
from papers.conclip.coco_pool import MAPPING_KEY, coco_train_images, load_distractor_mapping
from papers.conclip.data_paths import CCNEG_IMAGES, COCO_CAPTIONS, COCO_IMAGES
from papers.conclip.finetune_rows import FullRow

SET_KIND = "conclip-finetune-full-set"
DATA_FILES = ("papers/conclip/sources.toml",)
"""Read at run time (``common.pipeline.stage_deps``): the download entries of CC-Neg and the distractor mapping."""
DROP_REASONS = ("no_mapping_row", "image_missing", "distractor_missing")
"""Why a training entry is not a row (the authors' loader would crash on it), in the order the checks run (an entry
counts under the first that applies)."""
CREPE_SKIPS = ("no_crepe_negation", "crepe_negation_reads_like_caption")
"""Why a row has no CREPE-Negate negation (``crepe_negated: null``): only the CREPE-Negate run skips it."""
EXAMPLES_PER_REASON = 5


def reads_alike(a: str, b: str) -> bool:
    """Equal up to case and whitespace, as CLIP's tokenizer sees them (it lowercases and collapses whitespace)."""
    return " ".join(a.lower().split()) == " ".join(b.lower().split())


def make_rows(ccneg_path: Path, ccneg_images: Path, mapping_path: Path, data_root: Path, seed: int = 0,
              eval_size: int = EVAL_SIZE) -> tuple[list[FullRow], dict]:
    """The usable training entries as rows, in file order, and the counts."""
    split = load_ccneg_training(ccneg_path, ccneg_images, eval_size)
    pool = coco_train_images(data_root)
    mapping = load_distractor_mapping(mapping_path, len(pool))
    dropped: dict[str, list[int]] = {r: [] for r in DROP_REASONS}
    images_root = Path(ccneg_images).resolve()
    kept = []
    for entry in split.entries:
        reason = None
        if entry.index >= len(mapping):
            reason = "no_mapping_row"
        elif not entry.image.is_file():
            reason = "image_missing"
        elif not pool[int(mapping[entry.index, 0])].is_file():
            reason = "distractor_missing"
        if reason:
            dropped[reason].append(entry.index)
        else:
            kept.append(entry)
    distinct = list(dict.fromkeys(e.caption for e in kept))
    crepe = dict(zip(distinct, crepe_negatives(distinct, ("negate",), seed)["negate"]))
    rows, skipped = [], {r: [] for r in CREPE_SKIPS}
    for entry in kept:
        negated = crepe[entry.caption]
        if negated is None or reads_alike(negated, entry.caption):
            skipped["no_crepe_negation" if negated is None else "crepe_negation_reads_like_caption"].append(
                entry.index)
            negated = None
        top1 = int(mapping[entry.index, 0])
        rows.append(FullRow(entry.index, entry.image.relative_to(images_root).as_posix(), entry.caption,
                            entry.negated, pool[top1].relative_to(Path(data_root) / COCO_IMAGES).as_posix(), top1,
                            negated))
    counts = {"entries_in_file": split.n_entries, "eval_size": eval_size, "training_entries": len(split.entries),
              "mapping_rows": int(len(mapping)), "mapping_top_k": int(mapping.shape[1]), "pool_images": len(pool),
              "rows": len(rows), "dropped": {r: len(v) for r, v in dropped.items()},
              "dropped_examples": {r: v[:EXAMPLES_PER_REASON] for r, v in dropped.items() if v},
              "negation_reads_like_caption": sum(reads_alike(r.negated, r.caption) for r in rows),
              "crepe_negate_run_skips": {r: len(v) for r, v in skipped.items()},
              "crepe_negate_rows": sum(r.crepe_negated is not None for r in rows),
              "distinct_captions": len(distinct), "distinct_images": len({r.image for r in rows}),
              "distinct_distractors": len({r.distractor_index for r in rows})}
    return rows, counts


def build_set(ccneg_path: Path, ccneg_images: Path, mapping_path: Path, data_root: Path, out_dir: Path,
              seed: int = 0, eval_size: int = EVAL_SIZE) -> dict:
    """``rows.jsonl`` and ``manifest.json`` in ``out_dir`` (one output group)."""
    rows, counts = make_rows(ccneg_path, ccneg_images, mapping_path, data_root, seed, eval_size)
    if not rows:
        raise DatasetError(f"{ccneg_path}: no usable training entry (dropped: {counts['dropped']})")
    manifest = {"kind": SET_KIND, "profile": "full", "seed": seed, "counts": counts,
                "order": "file order of ccneg_preprocessed.pt (training entries 0 .. N - eval_size - 1)",
                "distractor": "COCO train 2017 image mapping[index][0] (top-1), CocoCaptions order",
                "crepe_negate": describe_crepe(),
                "sha256": {"ccneg_preprocessed.pt": sha256_file(ccneg_path),
                           "distractor_image_mapping.pt": sha256_file(mapping_path),
                           "captions_train2017.json": sha256_file(Path(data_root) / COCO_CAPTIONS)}}
    with output_group(Path(out_dir)) as staging:
        write_jsonl(staging / "rows.jsonl", rows)
        write_json_atomic(staging / "manifest.json", manifest)
    return manifest


def main(argv: Sequence[str] | None = None) -> int:
    parser = stage_parser(__spec__.name, __doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("set", help="CC-Neg's training entries with their distractor images and CREPE-Negate "
                                   "negations")
    p.add_argument("--ccneg", default=None, help="ccneg_preprocessed.pt (default: the download registry's, "
                                                 "<data root>/ccneg/)")
    p.add_argument("--ccneg-images", default=None, help=f"default: <data>/{CCNEG_IMAGES.as_posix()}")
    p.add_argument("--mapping", default=None, help="distractor_image_mapping.pt (default: the registry's)")
    p.add_argument("--data", default=None, help="the data root holding the COCO pool (default: <data>)")
    p.add_argument("--eval-size", type=int, default=None, help="the file's last N entries are the evaluation split "
                                                               f"(default: {EVAL_SIZE}; with a cap, params.yaml "
                                                               "full_inputs.cap)")
    p.add_argument("--out", default=None, help="default: build/full/conclip/finetune")
    add_stage_option(p)
    args = parser.parse_args(argv)
    params, section = own_section("conclip.full.finetune", args.stage)
    ccneg_path, ccneg_images = default_paths(args.ccneg, args.ccneg_images)
    mapping = Path(args.mapping) if args.mapping else fetch(MAPPING_KEY, progress=False)
    manifest = build_set(ccneg_path, ccneg_images, mapping, Path(args.data or default_data_root()),
                         Path(args.out or build_dir("full", "conclip") / "finetune"), int(section["seed"]),
                         args.eval_size or eval_size_for(params))
    print(json.dumps({k: v for k, v in manifest["counts"].items() if k != "dropped_examples"}, indent=2))
    return 0


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
