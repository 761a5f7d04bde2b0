"""BiVLC (Miranda et al.), the full profile's training sets (stages ``finetune-full-set@<dataset>``: ``python -m
papers.bivlc.sets_full set <dataset>``), and their reader, which the fine-tunes (``train``) and the detectors
(``detectors``) share in the full profile.

* CLIP_COCO's set: COCO 2017 train captions (each caption with its image); the validation split is a random 20% of
  the captions, drawn as ``datasets``' ``train_test_split(test_size=0.2, seed=42)`` draws it (``coco_split``), the
  authors' split (``IMirandaM/BiVLC@84f0d175 src/CLIP_fine_tuning/CLIP_fine_tuning.py:84``
  "data = data.train_test_split(test_size=0.2, seed=args.seed)", seed 42 by default);
* CLIP_TROHN-Text's and CLIP_TROHN-Img's: ``imirandam/TROHN-Text`` and ``imirandam/TROHN-Img`` (their own train and
  validation splits).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from common.errors import WorkspaceError
from common.files.io import output_group, sha256_file, write_json_atomic
from common.files.jsonl import coco_captions, read_rows, write_jsonl
from common.files.tasks import DatasetError
from common.paths import build_dir, data_root
from common.pipeline.cli import stage_parser
from common.pipeline.params import own_section
from papers.bivlc.parquet_shards import cache_image, image_bytes, parquet_records, split_files

SET_KIND = "bivlc-finetune-full-set"
COCO_CAPTIONS = Path("coco/annotations_trainval2017/annotations/captions_train2017.json")
COCO_IMAGES = Path("coco/train2017/train2017")
"""Under the data root: COCO 2017 train (registry group ``coco-train2017``), the images every dataset points at."""
DATASETS = ("coco", "trohn-text", "trohn-img")
HF_SOURCES = {"trohn-text": "bivlc/TROHN-Text", "trohn-img": "bivlc/TROHN-Img"}
HF_COLUMNS = {"trohn-text": ("image_id", "caption", "negative_caption"),
              "trohn-img": ("image_id", "caption", "negative_caption", "negative_image")}
SPLITS = ("train", "validation")
VALIDATION_FRACTION = 0.2
"""CLIP_COCO's validation split: ``train_test_split(test_size=0.2, seed=args.seed)``."""


class BivlcFinetuneFullError(WorkspaceError):
    """An input of the full BiVLC runs that cannot be used as given (the message names the file)."""


@dataclass(frozen=True)
class TrainRow:
    """One training row: the COCO image (relative to COCO's train2017 folder), its caption and, for TROHN, the
    negative caption and (TROHN-Img) the generated image (relative to the set's folder)."""

    split: str
    image: str
    caption: str
    negative: str = ""
    negative_image: str = ""


def coco_split(n: int, seed: int, test_fraction: float = VALIDATION_FRACTION) -> tuple[np.ndarray, np.ndarray]:
    """(train, validation) indices of n rows as ``datasets.Dataset.train_test_split(test_size=test_fraction,
    seed=seed)`` draws them: one ``default_rng(seed)`` permutation, the first ceil(fraction * n) for the test side."""
    n_test = math.ceil(test_fraction * n)
    permutation = np.random.default_rng(seed).permutation(n)
    return permutation[n_test:], permutation[:n_test]


def coco_rows(captions_file: Path, seed: int) -> list[TrainRow]:
    """COCO 2017 train captions in file order, each in the split ``coco_split`` puts it."""
    # the caption as the authors' COCO loader cleans it: stripped, newlines replaced by spaces
    # (IMirandaM/BiVLC@84f0d175 src/CLIP_fine_tuning/CLIP_utils.py:49-50 "captions['caption'].str.strip()")
    rows = [("%012d.jpg" % a["image_id"], a["caption"].strip().replace("\n", " "))
            for a in coco_captions(captions_file)["annotations"]]
    validation = set(coco_split(len(rows), seed)[1].tolist())
    return [TrainRow("validation" if k in validation else "train", image, caption)
            for k, (image, caption) in enumerate(rows)]


def hf_rows(dataset: str, snapshot: Path, image_dir: Path | None = None) -> tuple[list[TrainRow], dict[str, str]]:
    """TROHN-Text's or TROHN-Img's rows, train then validation, in file order; TROHN-Img's generated images written
    under ``image_dir``. Returns the rows and each shard's sha256."""
    columns = HF_COLUMNS[dataset]
    rows, hashes = [], {}
    for split in SPLITS:
        for path in split_files(snapshot, split, BivlcFinetuneFullError):
            hashes[path.relative_to(snapshot).as_posix()] = sha256_file(path)
            for where, record in parquet_records(path, columns):
                for c in ("image_id", "caption", "negative_caption"):
                    if not isinstance(record[c], str) or not record[c].strip():
                        raise DatasetError(f"{where}: column {c!r} is {record[c]!r:.40}")
                negative_image = ""
                if "negative_image" in columns:
                    raw = image_bytes(where, "negative_image", record["negative_image"])
                    negative_image = f"images/{cache_image(raw, image_dir, webp=False).name}"
                rows.append(TrainRow(split, record["image_id"], record["caption"], record["negative_caption"],
                                     negative_image))
    return rows, hashes


def build_set(dataset: str, data_root: Path, out_dir: Path, seed: int = 42, snapshot: Path | None = None) -> dict:
    """``rows.jsonl``, ``manifest.json`` (and TROHN-Img's ``images/``) in ``out_dir``, one output group. Every row's
    COCO image must exist (a missing one is an error naming the row)."""
    if dataset not in DATASETS:
        raise BivlcFinetuneFullError(f"unknown dataset {dataset!r}; known: {', '.join(DATASETS)}")
    data_root = Path(data_root)
    with output_group(Path(out_dir)) as staging:
        if dataset == "coco":
            captions = data_root / COCO_CAPTIONS
            rows, hashes = coco_rows(captions, seed), {COCO_CAPTIONS.name: sha256_file(captions)}
        else:
            snapshot = Path(snapshot or data_root / HF_SOURCES[dataset])
            if not snapshot.is_dir():
                raise BivlcFinetuneFullError(f"{snapshot}: no {dataset} snapshot here; fetch it with "
                                             f"`python -m common fetch {HF_SOURCES[dataset]}`")
            rows, hashes = hf_rows(dataset, snapshot, staging / "images" if dataset == "trohn-img" else None)
        images = data_root / COCO_IMAGES
        for k, image in enumerate(dict.fromkeys(r.image for r in rows)):
            if not (images / image).is_file():
                raise DatasetError(f"{images / image}: missing (row image {k} of {dataset}); fetch group "
                                   "coco-train2017")
        counts = {s: sum(r.split == s for r in rows) for s in SPLITS}
        if not counts["train"] or not counts["validation"]:
            raise DatasetError(f"{dataset}: empty split ({counts})")
        manifest = {"kind": SET_KIND, "profile": "full", "dataset": dataset, "seed": seed, "rows": counts,
                    "distinct_images": len({r.image for r in rows}),
                    "split": ("datasets' train_test_split(test_size=0.2, seed) of the captions" if dataset == "coco"
                              else "the release's train and validation splits"),
                    "sha256": hashes}
        write_jsonl(staging / "rows.jsonl", rows)
        write_json_atomic(staging / "manifest.json", manifest)
    return manifest


def _check_row(row: TrainRow) -> None:
    if row.split not in SPLITS:
        raise DatasetError(f"'split' is {row.split!r}, not one of {SPLITS}")


def load_rows(set_dir: Path) -> list[TrainRow]:
    """The set's rows; a bad line is a ``DatasetError`` naming the file and the line (a COCO or TROHN-Text row's
    empty negative is its field's default, which ``read_rows`` accepts)."""
    return read_rows(Path(set_dir) / "rows.jsonl", TrainRow, "a training row",
                     remedy="run its finetune-full-set stage (`python -m papers.bivlc.sets_full set <dataset>`)",
                     check=_check_row)


def split_rows(rows: Sequence[TrainRow], split: str) -> list[TrainRow]:
    """The rows of one split (one is never empty: ``build_set`` refuses that)."""
    chosen = [r for r in rows if r.split == split]
    if not chosen:
        raise DatasetError(f"no {split} rows in the set")
    return chosen


def image_files(rows: Sequence[TrainRow], coco_images: Path, set_dir: Path
                ) -> tuple[tuple[Path, ...], np.ndarray, np.ndarray]:
    """Every distinct image file of ``rows`` (for one ``FileImages``); each row's index of its image and of its
    negative image (-1: none)."""
    files = [Path(coco_images) / r.image for r in rows] + [Path(set_dir) / r.negative_image for r in rows
                                                             if r.negative_image]
    distinct = list(dict.fromkeys(files))
    where = {p: i for i, p in enumerate(distinct)}
    image = np.array([where[Path(coco_images) / r.image] for r in rows], dtype=np.int64)
    negative = np.array([where[Path(set_dir) / r.negative_image] if r.negative_image else -1 for r in rows],
                        dtype=np.int64)
    return tuple(distinct), image, negative


def main(argv: Sequence[str] | None = None) -> int:
    parser = stage_parser(__spec__.name, __doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("set", help="one training set's rows (COCO captions, TROHN-Text, TROHN-Img)")
    p.add_argument("dataset", choices=DATASETS)
    p.add_argument("--data", default=None, help="the data root holding COCO 2017 train and the snapshots")
    p.add_argument("--snapshot", default=None, help="the TROHN snapshot (default: <data>/bivlc/TROHN-Text|Img)")
    p.add_argument("--out", default=None, help="default: build/full/bivlc/sets/<dataset>")
    args = parser.parse_args(argv)
    _, section = own_section("bivlc.full.finetune")
    manifest = build_set(args.dataset, Path(args.data or data_root()),
                         Path(args.out or build_dir("full", "bivlc") / "sets" / args.dataset), int(section["seed"]),
                         Path(args.snapshot) if args.snapshot else None)
    print(json.dumps({k: manifest[k] for k in ("dataset", "rows", "distinct_images")}, indent=2))
    return 0


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
