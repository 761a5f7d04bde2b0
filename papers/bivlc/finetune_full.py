"""BiVLC (Miranda et al.), the full profile's own training: the three fine-tunes of OpenAI CLIP ViT-B/32 (CLIP_COCO,
CLIP_TROHN-Text, CLIP_TROHN-Img) and the natural-vs-synthetic detectors (CLIPDet, CLIPTROHN-Img/Det), through the
shared trainer under ``torchrun``.

The authors' recipe (App. E; IMirandaM/BiVLC ``src/CLIP_fine_tuning/CLIP_fine_tuning.py``, ``CLIP_utils.py``,
``src/Detectors/Detector_*_classifier.py``, ``Detector_utils.py``):

* fine-tunes: every parameter trained, fp32, AdamW lr 1e-6, betas (0.9, 0.98), eps 1e-6, weight decay 0.1 on all
  but gains, biases and the logit scale (the shared optimiser's ``param_groups`` does the same by dimension), cosine
  with 50 warmup steps, 10 epochs, seed 42, batches shuffled per epoch; after each epoch the in-batch accuracy on the
  validation split, and the epoch with the best one is kept (the trainer's ``<stem>.best.safetensors``);
  - CLIP_COCO: COCO 2017 train captions (each caption with its image), ``ClipLoss``, 400 images x 400 captions; the
    validation split is a random 20% of the captions, drawn as ``datasets``' ``train_test_split(test_size=0.2,
    seed=42)`` draws it (``coco_split``);
  - CLIP_TROHN-Text: ``imirandam/TROHN-Text`` (its train and validation splits), ``TrohnTextLoss``, 200 images x 400
    captions (caption and negative caption of each row);
  - CLIP_TROHN-Img: ``imirandam/TROHN-Img`` (its train and validation splits), ``TrohnImgLoss``, 200 positive pairs
    and their 200 negative pairs (400 images x 400 captions);
  (batch sizes from App. E; the released script's ``--batch-size`` default is 400 rows for all three.)
* detectors: the tower frozen, a ``Linear(512, 1)`` head with sigmoid + BCE (``DetectorLoss``), Adam lr 1e-3 (the
  scripts' ``--lr`` flag is never used), 1 epoch for the image detector, 10 for the text detector, batch 400, trained
  on TROHN-Img (label 0: the COCO image / caption, 1: the generated image / negative caption), the epoch with the
  best validation accuracy kept. Adam is AdamW with weight decay 0, which is what the shared trainer runs here; it
  also decays the rate by a cosine (no warmup), where the authors keep it constant.

Top to bottom:

1. ``set <dataset>`` (stages ``finetune-full-set@<dataset>``): the rows of ``coco``, ``trohn-text`` or ``trohn-img``
   (split, image file under COCO's train2017 folder, caption, negative caption, negative image file), as
   ``rows.jsonl`` and ``manifest.json`` in ``build/full/bivlc/sets/<dataset>/`` (one output group); TROHN-Img's
   generated images are written from the parquet bytes to ``images/<sha256>.<ext>`` in the same group.
2. ``run <name>`` (under ``torchrun``): one of ``RUNS`` (the fine-tunes, stages ``finetune-full@<name>``) or a
   detector ``det-<encoder>-<tower>`` (stages ``detectors-full-<encoder>@<tower>``). Weights in ``build/full/bivlc/models/<name>.safetensors`` with the
   trainer's sidecar and ``<name>.best.safetensors`` (a detector's head: ``<name>.best.loss.safetensors``, which
   ``papers.bivlc.full`` reads); zoo entries ``bivlc/full-<run>``.
"""
from __future__ import annotations

import argparse
import functools
import hashlib
import json
import math
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np
import torch

from common.errors import WorkspaceError
from common.training.files import FileCaptionBatches
from common.training.recipe import FileRunParams, Schedule
from common.training.rendered import Tokenize
from common.training.legacy import launch_run
from common.training.files import FileImages
from common.io import output_group, sha256_file, write_json_atomic
from common.jsonl import read_jsonl, write_jsonl
from common.tasks import DatasetError
from common.training import DistributedContext, FromZoo, Init, TrainResult
from common.training.losses import ClipLoss
from papers.bivlc.losses import DetectorLoss, TrohnImgLoss, TrohnTextLoss

SET_STAGE = "papers/bivlc/dvc.yaml:finetune-full-set@{dataset}"
RUN_STAGE = "papers/bivlc/dvc.yaml:finetune-full@{run}"
DETECTOR_STAGE = "papers/bivlc/dvc.yaml:detectors-full-{encoder}@{tower}"
SET_KIND = "bivlc-finetune-full-set"
DATA_FILES = ("papers/bivlc/models.toml",)
"""Read at run time (``common.stage_deps``): the zoo entries of the detectors' encoders (``run det-...``: the
TROHN-Img rerun ``bivlc/full-trohn-img`` or the released ``bivlc/clip-trohn-img``)."""
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
CHECKPOINT_EVERY = 500


class BivlcFinetuneFullError(WorkspaceError):
    """An input of the full BiVLC runs that cannot be used as given (the message names the file)."""


# ------------------------------------------------------------------------------------------------------------------
# 1. The sets
# ------------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TrainRow:
    """One training row: the COCO image (relative to COCO's train2017 folder), its caption and, for TROHN, the
    negative caption and (TROHN-Img) the generated image (relative to the set's folder)."""

    split: str
    image: str
    caption: str
    negative: str = ""
    negative_image: str = ""


def clean_caption(text: str) -> str:
    """As the authors' COCO loader: stripped, newlines replaced by spaces."""
    return text.strip().replace("\n", " ")


def coco_split(n: int, seed: int, test_fraction: float = VALIDATION_FRACTION) -> tuple[np.ndarray, np.ndarray]:
    """(train, validation) indices of n rows as ``datasets.Dataset.train_test_split(test_size=test_fraction,
    seed=seed)`` draws them: one ``default_rng(seed)`` permutation, the first ceil(fraction * n) for the test side."""
    n_test = math.ceil(test_fraction * n)
    permutation = np.random.default_rng(seed).permutation(n)
    return permutation[n_test:], permutation[:n_test]


def coco_rows(captions_file: Path, seed: int) -> list[TrainRow]:
    """COCO 2017 train captions in file order, each in the split ``coco_split`` puts it."""
    try:
        data = json.loads(Path(captions_file).read_text(encoding="utf-8"))
        annotations = data["annotations"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DatasetError(f"{captions_file}: not a COCO captions file ({type(exc).__name__}: {exc})") from None
    rows = []
    for k, a in enumerate(annotations):
        if not isinstance(a, dict) or not isinstance(a.get("image_id"), int) or not isinstance(a.get("caption"), str):
            raise DatasetError(f"{captions_file}: annotation {k}: no integer 'image_id' or string 'caption'")
        rows.append(("%012d.jpg" % a["image_id"], clean_caption(a["caption"])))
    _, validation = coco_split(len(rows), seed)
    is_val = np.zeros(len(rows), dtype=bool)
    is_val[validation] = True
    return [TrainRow("validation" if v else "train", image, caption) for (image, caption), v in zip(rows, is_val)]


def split_files(snapshot: Path, split: str) -> list[Path]:
    """A Hugging Face dataset snapshot's parquet shards of one split (``data/<split>-*.parquet``), in name order."""
    snapshot = Path(snapshot)
    files = sorted(p for p in snapshot.rglob("*.parquet")
                   if p.name.split("-")[0] == split or split in p.relative_to(snapshot).parts[:-1])
    if not files:
        raise BivlcFinetuneFullError(f"{snapshot}: no parquet file of split {split!r} "
                                     f"(expected data/{split}-*.parquet)")
    return files


def _store_image(data, where: str, image_dir: Path) -> str:
    from common.io import atomic_path

    raw = data.get("bytes") if isinstance(data, dict) else data
    if not isinstance(raw, (bytes, bytearray)) or not raw:
        raise DatasetError(f"{where}: column 'negative_image' holds no image bytes")
    raw = bytes(raw)
    ext = ".png" if raw.startswith(b"\x89PNG") else ".jpg" if raw.startswith(b"\xff\xd8") else ".img"
    name = hashlib.sha256(raw).hexdigest() + ext
    path = Path(image_dir) / name
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp:
            Path(tmp).write_bytes(raw)
    return f"images/{name}"


def hf_rows(dataset: str, snapshot: Path, image_dir: Path | None = None) -> tuple[list[TrainRow], dict[str, str]]:
    """TROHN-Text's or TROHN-Img's rows, train then validation, in file order; TROHN-Img's generated images written
    under ``image_dir``. Returns the rows and each shard's sha256."""
    import pyarrow.parquet as pq

    columns = HF_COLUMNS[dataset]
    rows, hashes = [], {}
    for split in SPLITS:
        for path in split_files(snapshot, split):
            handle = pq.ParquetFile(path)
            missing = [c for c in columns if c not in handle.schema_arrow.names]
            if missing:
                raise DatasetError(f"{path}: no column(s) {missing} (found {handle.schema_arrow.names})")
            hashes[path.relative_to(snapshot).as_posix()] = sha256_file(path)
            k = 0
            for batch in handle.iter_batches(batch_size=256, columns=list(columns)):
                for record in batch.to_pylist():
                    where = f"{path.name}: row {k}"
                    for c in ("image_id", "caption", "negative_caption"):
                        if not isinstance(record[c], str) or not record[c].strip():
                            raise DatasetError(f"{where}: column {c!r} is {record[c]!r:.40}")
                    negative_image = ""
                    if "negative_image" in columns:
                        if image_dir is None:
                            raise ValueError("hf_rows: TROHN-Img needs an image folder")
                        negative_image = _store_image(record["negative_image"], where, image_dir)
                    rows.append(TrainRow(split, record["image_id"], record["caption"], record["negative_caption"],
                                         negative_image))
                    k += 1
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


def load_rows(set_dir: Path) -> list[TrainRow]:
    """The set's rows; a bad line is a ``DatasetError`` naming the file and the line."""
    path = Path(set_dir) / "rows.jsonl"
    if not path.is_file():
        raise BivlcFinetuneFullError(f"{path}: no training set here; run its finetune-full-set stage "
                                     "(`python -m papers.bivlc.finetune_full set <dataset>`)")
    names = [f.name for f in fields(TrainRow)]

    def parse(record: dict) -> TrainRow:
        if not isinstance(record, dict):
            raise DatasetError("not an object")
        for name in names:
            value = record.get(name, "")
            if not isinstance(value, str):
                raise DatasetError(f"{name!r} is {value!r:.40}")
        if record.get("split") not in SPLITS:
            raise DatasetError(f"'split' is {record.get('split')!r}, not one of {SPLITS}")
        if not record.get("image") or not record.get("caption"):
            raise DatasetError("no 'image' or 'caption'")
        return TrainRow(**{n: record.get(n, "") for n in names})

    rows = list(read_jsonl(path, parse, "a training row"))
    if not rows:
        raise DatasetError(f"{path}: no rows")
    return rows


# ------------------------------------------------------------------------------------------------------------------
# 2. Batches and validation
# ------------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RunSpec:
    """One fine-tune: its data and loss; ``images``/``texts`` are the segments of a sample."""

    dataset: str
    loss: Callable
    images: tuple[str, ...]
    texts: tuple[str, ...]


RUNS: dict[str, RunSpec] = {
    "clip-coco": RunSpec("coco", ClipLoss, ("image",), ("caption",)),
    "trohn-text": RunSpec("trohn-text", TrohnTextLoss, ("image",), ("caption", "negative")),
    "trohn-img": RunSpec("trohn-img", TrohnImgLoss, ("image", "negative_image"), ("caption", "negative")),
}
DETECTOR_TOWERS = ("image", "text")
DETECTOR_EPOCHS = {"image": 1, "text": 10}


def run_spec(run: str) -> RunSpec:
    if run not in RUNS:
        raise BivlcFinetuneFullError(f"unknown run {run!r}; known: {', '.join(RUNS)}")
    return RUNS[run]


def detector_name(encoder: str, tower: str) -> str:
    return f"det-{encoder}-{tower}"


def parse_detector(name: str, encoders: Mapping[str, str]) -> tuple[str, str]:
    """``det-<encoder>-<tower>`` -> (encoder row, tower)."""
    for encoder in encoders:
        for tower in DETECTOR_TOWERS:
            if name == detector_name(encoder, tower):
                return encoder, tower
    known = [detector_name(e, t) for e in encoders for t in DETECTOR_TOWERS]
    raise BivlcFinetuneFullError(f"unknown detector run {name!r}; known: {', '.join(known)}")


class PairedFileBatches(FileCaptionBatches):
    """``FileCaptionBatches`` whose samples carry a second image (TROHN-Img's generated one): images [I, I_neg],
    texts [c, c_neg] per sample."""

    def __init__(self, images: FileImages, row_image: np.ndarray, row_negative_image: np.ndarray,
                 captions: Sequence[str], negatives: Sequence[str], tokenize: Tokenize, name: str,
                 fields: Mapping | None = None):
        super().__init__(images, row_image, captions, [negatives], tokenize, name, fields)
        if len(row_negative_image) != len(captions):
            raise ValueError("PairedFileBatches: one negative image per row")
        self.row_negative_image = np.asarray(row_negative_image)

    def batch(self, seed: int, step: int, size: int, rows: slice = slice(None)) -> dict[str, torch.Tensor]:
        out = super().batch(seed, step, size, rows)
        idx = self.draws(seed, step, size)[rows]
        negatives = self.images.get(self.row_negative_image[idx]).unsqueeze(1)
        out["images"] = torch.cat([out["images"], negatives], dim=1)
        return out


def _image_index(rows: Sequence[TrainRow], coco_images: Path, set_dir: Path, size: int
                 ) -> tuple[FileImages, np.ndarray, np.ndarray]:
    """One ``FileImages`` over every distinct file; each row's index of its image and of its negative image (-1)."""
    files = [Path(coco_images) / r.image for r in rows] + [Path(set_dir) / r.negative_image for r in rows
                                                             if r.negative_image]
    distinct = list(dict.fromkeys(files))
    where = {p: i for i, p in enumerate(distinct)}
    image = np.array([where[Path(coco_images) / r.image] for r in rows], dtype=np.int64)
    negative = np.array([where[Path(set_dir) / r.negative_image] if r.negative_image else -1 for r in rows],
                        dtype=np.int64)
    return FileImages(tuple(distinct), size), image, negative


def batches_for(run: str, rows: Sequence[TrainRow], image_size: int, coco_images: Path, set_dir: Path,
                tokenize: Tokenize) -> FileCaptionBatches:
    """The run's batch source over ``rows`` (the caller passes one split)."""
    spec = run_spec(run)
    images, image, negative = _image_index(rows, coco_images, set_dir, image_size)
    captions = [r.caption for r in rows]
    fields_ = {"dataset": spec.dataset, "images": list(spec.images), "texts": list(spec.texts)}
    if "negative_image" in spec.images:
        if (negative < 0).any():
            raise DatasetError(f"{set_dir}: a {spec.dataset} row has no negative image")
        return PairedFileBatches(images, image, negative, captions, [r.negative for r in rows], tokenize,
                                 f"bivlc-full-{spec.dataset}", fields_)
    extras = [[r.negative for r in rows]] if "negative" in spec.texts else []
    return FileCaptionBatches(images, image, captions, extras, tokenize, f"bivlc-full-{spec.dataset}", fields_)


def _pixels(images: torch.Tensor, mean: torch.Tensor, std: torch.Tensor, device) -> torch.Tensor:
    return ((images.to(device).float() / 255.0) - mean.to(device)) / std.to(device)


class InBatchAccuracy:
    """The authors' model selection: the validation split walked in order in chunks of the run's batch (the last
    one smaller, as a ``DataLoader`` without ``drop_last``); per chunk (image->text accuracy + text->image accuracy)
    / 2 with argmax over the chunk's logits, the texts laid out as in training ([c; c_neg], and for TROHN-Img the
    images [I; I_neg]); TROHN-Text's text->image side only over the positive captions (``logits_text[:B]``). The
    score is the mean over chunks."""

    def __init__(self, batches: FileCaptionBatches, samples: int, mean: torch.Tensor, std: torch.Tensor):
        self.batches, self.samples, self.mean, self.std = batches, samples, mean, std

    def __call__(self, model) -> float:
        from common.zoo import encode_text_unpadded, padding_is_inert

        b = self.batches
        device = next(model.parameters()).device
        n = len(b.captions)
        if n == 0:
            raise BivlcFinetuneFullError("empty validation split")
        scores = []
        for start in range(0, n, self.samples):
            idx = np.arange(start, min(n, start + self.samples))
            image_sets = [b.row_image[idx]]
            if isinstance(b, PairedFileBatches):
                image_sets.append(b.row_negative_image[idx])
            pixels = torch.cat([b.images.get(s) for s in image_sets])
            img = model.encode_image(_pixels(pixels, self.mean, self.std, device), normalize=True)
            tokens = torch.cat([b.tokenize([b.captions[i] for i in idx]),
                                *(b.tokenize([extra[i] for i in idx]) for extra in b.extras)]).to(device)
            txt = (encode_text_unpadded(model, tokens) if padding_is_inert(model)
                   else model.encode_text(tokens, normalize=True))
            logits = img @ txt.T  # the logit scale does not change an argmax
            m = len(img)
            truth = torch.arange(m, device=device)
            acc_image = (logits.argmax(dim=1) == truth).float().mean()
            acc_text = (logits.T[:m].argmax(dim=1) == truth).float().mean()
            scores.append(float((acc_image + acc_text) / 2))
        return float(np.mean(scores))


class FileLabelledBatches:
    """Detector data: each TROHN-Img row gives a natural input (label 0: the COCO image or the caption) and a
    synthetic one (label 1: the generated image or the negative caption). A step draws ``size // 2`` rows of a
    per-epoch permutation (``default_rng([seed, 0, epoch])``) and holds both inputs of each, naturals first, as
    the authors' collate does; ``key`` is "images" or "texts"."""

    def __init__(self, key: str, natural: Sequence, synthetic: Sequence, name: str, *,
                 images: FileImages | None = None, tokenize: Tokenize | None = None):
        if key not in ("images", "texts"):
            raise ValueError(f"FileLabelledBatches: key must be 'images' or 'texts', not {key!r}")
        if len(natural) != len(synthetic):
            raise ValueError("FileLabelledBatches: one synthetic input per natural one")
        if (key == "images") != (images is not None) or (key == "texts") != (tokenize is not None):
            raise ValueError("FileLabelledBatches: images need a FileImages, texts a tokenizer")
        self.key, self.natural, self.synthetic, self.name = key, natural, synthetic, name
        self.images, self.tokenize = images, tokenize
        self._perm: tuple[tuple[int, int], np.ndarray] | None = None

    def steps_per_epoch(self, size: int) -> int:
        if size % 2:
            raise ValueError(f"detector batch {size} is odd: it holds the natural and synthetic input of each row")
        if size // 2 > len(self.natural):
            raise ValueError(f"batch of {size} inputs needs {size // 2} rows; there are {len(self.natural)}")
        return len(self.natural) // (size // 2)

    def _inputs(self, idx: np.ndarray) -> torch.Tensor:
        if self.key == "images":
            return torch.cat([self.images.get(np.asarray(self.natural)[idx]),
                              self.images.get(np.asarray(self.synthetic)[idx])])
        return torch.cat([self.tokenize([self.natural[i] for i in idx]),
                          self.tokenize([self.synthetic[i] for i in idx])])

    def draws(self, seed: int, step: int, size: int) -> np.ndarray:
        epoch, j = divmod(step, self.steps_per_epoch(size))
        if self._perm is None or self._perm[0] != (seed, epoch):
            self._perm = ((seed, epoch), np.random.default_rng([seed, 0, epoch]).permutation(len(self.natural)))
        half = size // 2
        return self._perm[1][j * half: (j + 1) * half]

    def labels_for(self, m: int) -> torch.Tensor:
        return torch.cat([torch.zeros(m), torch.ones(m)])

    def batch(self, seed: int, step: int, size: int, rows: slice = slice(None)) -> dict[str, torch.Tensor]:
        idx = self.draws(seed, step, size)
        inputs, labels = self._inputs(idx), self.labels_for(len(idx))
        return {self.key: inputs[rows].unsqueeze(1), "labels": labels[rows]}

    def describe(self) -> dict:
        return {"name": self.name, "key": self.key, "rows": len(self.natural)}


def detector_batches(tower: str, rows: Sequence[TrainRow], image_size: int, coco_images: Path, set_dir: Path,
                     tokenize: Tokenize | None) -> FileLabelledBatches:
    """TROHN-Img rows (one split) as natural (0) and synthetic (1) inputs of ``tower``."""
    if tower == "image":
        images, image, negative = _image_index(rows, coco_images, set_dir, image_size)
        if (negative < 0).any():
            raise DatasetError(f"{set_dir}: the image detector needs TROHN-Img rows (a row has no generated image)")
        return FileLabelledBatches("images", image, negative, "bivlc-full-image-detector", images=images)
    return FileLabelledBatches("texts", [r.caption for r in rows], [r.negative for r in rows],
                               "bivlc-full-text-detector", tokenize=tokenize)


class DetectorAccuracy:
    """The detector's validation accuracy (``round(sigmoid) == label``, i.e. p > 0.5 is synthetic) over every
    input of the validation split, in chunks; the head is the one the trainer is optimising (``holder``)."""

    def __init__(self, batches: FileLabelledBatches, holder: dict, chunk: int, mean: torch.Tensor, std: torch.Tensor):
        self.batches, self.holder, self.chunk, self.mean, self.std = batches, holder, chunk, mean, std

    def __call__(self, model) -> float:
        from common.zoo import encode_text_unpadded, padding_is_inert
        from papers.bivlc.detection import is_synthetic

        b, head = self.batches, self.holder["loss"].head
        device = next(model.parameters()).device
        correct = total = 0
        half = max(1, self.chunk // 2)
        for start in range(0, len(b.natural), half):
            idx = np.arange(start, min(len(b.natural), start + half))
            x = b._inputs(idx)
            if b.key == "images":
                feats = model.encode_image(_pixels(x, self.mean, self.std, device), normalize=True)
            else:
                x = x.to(device)
                feats = encode_text_unpadded(model, x) if padding_is_inert(model) else model.encode_text(
                    x, normalize=True)
            p = torch.sigmoid(head(feats.float()).squeeze(-1)).double().cpu().numpy()
            labels = b.labels_for(len(idx)).numpy().astype(bool)
            correct += int((is_synthetic(p) == labels).sum())
            total += len(p)
        return correct / total


# ------------------------------------------------------------------------------------------------------------------
# 3. Runs
# ------------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DetectorParams:
    """``params.yaml bivlc.full.detectors``: what every detector shares; ``encoders``: row -> zoo model."""

    lr: float
    batch_size: int
    seed: int
    image_size: int
    encoders: dict

    @classmethod
    def from_params(cls, section: Mapping) -> "DetectorParams":
        return cls(float(section["lr"]), int(section["batch_size"]), int(section["seed"]), int(section["image_size"]),
                   dict(section["encoders"]))


def run_params(section: Mapping, run: str) -> FileRunParams:
    """``bivlc.full.finetune`` -> the run's ``FileRunParams`` (its own batch size: samples per step)."""
    batch = section["batch_size"]
    size = int(batch[run]) if isinstance(batch, Mapping) else int(batch)
    return FileRunParams(section["base"], int(section["image_size"]),
                         Schedule(float(section["lr"]), int(section["epochs"]), size, int(section["warmup_steps"]),
                                  float(section["weight_decay"])),
                         int(section["seed"]), section.get("precision", "fp32"), True)


def _code() -> list[Path]:
    here = Path(__file__)
    root = here.parents[2]
    return [here, here.with_name("losses.py"), here.with_name("detection.py"), root / "common" / "file_batches.py",
            root / "common" / "image_files.py"]


def _split(rows: Sequence[TrainRow], split: str) -> list[TrainRow]:
    chosen = [r for r in rows if r.split == split]
    if not chosen:
        raise DatasetError(f"no {split} rows in the set")
    return chosen


def train_full_run(run: str, rows: Sequence[TrainRow], params: FileRunParams, coco_images: Path, set_dir: Path,
                   out_path: Path, *, init: Init | None = None, world: DistributedContext | None = None,
                   steps: int | None = None, provenance: Mapping | None = None,
                   checkpoint_every: int = CHECKPOINT_EVERY, progress: bool = False) -> TrainResult:
    """Fine-tune ``init`` (default: the zoo's ``params.base``) as ``run`` on the set's train split, validating at the
    end of every epoch (``steps`` overrides the schedule's epochs and validates once, at the end)."""
    from common.training.legacy import resume_path
    from common.zoo.trained import tokenizer_for
    from common.training import TrainConfig, train
    from common.training.model_init import normalizer

    spec = run_spec(run)
    init = init or FromZoo(params.base)
    tokenize = tokenizer_for(init.describe()["arch"])
    schedule = params.schedule
    train_batches = batches_for(run, _split(rows, "train"), params.image_size, coco_images, set_dir, tokenize)
    val_batches = batches_for(run, _split(rows, "validation"), params.image_size, coco_images, set_dir, tokenize)
    per_epoch = train_batches.steps_per_epoch(schedule.batch_size)
    total = steps or schedule.epochs * per_epoch
    mean, std = normalizer(init.build().transform)
    config = TrainConfig(steps=total, batch_size=schedule.batch_size, lr=schedule.lr,
                         warmup_steps=schedule.warmup_steps, weight_decay=schedule.weight_decay, seed=params.seed,
                         precision=params.precision, validate_every=0 if steps else per_epoch)
    provenance = {"run": run, "dataset": spec.dataset, "steps_per_epoch": per_epoch, "epochs": total / per_epoch,
                  **(provenance or {})}
    key = {"name": run, "params": asdict(params), "init": init.describe(), "data": train_batches.describe(),
           "validation": val_batches.describe(), "provenance": provenance,
           "world_size": world.world_size if world else 1}
    return train(config, init, train_batches, spec.loss, out_path,
                 validate=InBatchAccuracy(val_batches, schedule.batch_size, mean, std), world=world,
                 provenance=provenance, resume=True, progress=progress, checkpoint_every=checkpoint_every,
                 resume_path=resume_path(f"bivlc-full-{run}", key, _code()))


def embed_dim_of(arch: str) -> int:
    """The joint embedding's width: the detector head's input (512 for ViT-B/32)."""
    import open_clip

    from common.zoo import register_local_configs

    register_local_configs()
    config = open_clip.get_model_config(arch)
    if config is None:
        raise BivlcFinetuneFullError(f"{arch}: no open_clip model config")
    return int(config["embed_dim"])


def train_detector(tower: str, rows: Sequence[TrainRow], params: DetectorParams, init: Init, coco_images: Path,
                   set_dir: Path, out_path: Path, *, world: DistributedContext | None = None,
                   steps: int | None = None, provenance: Mapping | None = None, progress: bool = False
                   ) -> TrainResult:
    """A ``DetectorLoss`` head on ``init``'s frozen ``tower``, ``DETECTOR_EPOCHS[tower]`` epochs on TROHN-Img's train
    split, validated at the end of every epoch; the best head is ``<stem>.best.loss.safetensors``. Weight decay 0
    (Adam == AdamW with weight decay 0, the authors' optimiser) and no warmup; the trainer's cosine decay stays."""
    from common.zoo.trained import tokenizer_for
    from common.training import TrainConfig, train
    from common.training.model_init import normalizer

    arch = init.describe()["arch"]
    tokenize = tokenizer_for(arch) if tower == "text" else None
    train_batches = detector_batches(tower, _split(rows, "train"), params.image_size, coco_images, set_dir, tokenize)
    val_batches = detector_batches(tower, _split(rows, "validation"), params.image_size, coco_images, set_dir,
                                   tokenize)
    per_epoch = train_batches.steps_per_epoch(params.batch_size)
    total = steps or DETECTOR_EPOCHS[tower] * per_epoch
    holder: dict = {}

    def loss_factory(world=None):
        holder["loss"] = DetectorLoss(embed_dim_of(arch), tower, world=world)
        return holder["loss"]

    mean, std = normalizer(init.build().transform)
    config = TrainConfig(steps=total, batch_size=params.batch_size, lr=params.lr, warmup_steps=0, weight_decay=0.0,
                         seed=params.seed, validate_every=0 if steps else per_epoch)
    return train(config, init, train_batches, loss_factory, out_path,
                 validate=DetectorAccuracy(val_batches, holder, params.batch_size, mean, std), world=world,
                 provenance={"tower": tower, "steps_per_epoch": per_epoch, "epochs": total / per_epoch,
                             **(provenance or {})},
                 resume=False, progress=progress)


# ------------------------------------------------------------------------------------------------------------------
# Entry points
# ------------------------------------------------------------------------------------------------------------------
def default_dir() -> Path:
    from common.paths import build_root

    return build_root() / "full" / "bivlc"


def _data_root() -> Path:
    from common.paths import data_root

    return data_root()


def _params(stage: str) -> dict:
    from common.params import stage_params

    return stage_params(stage)["bivlc"]["full"]


def _cmd_set(args) -> int:
    section = _params(SET_STAGE.format(dataset=args.dataset))["finetune"]
    manifest = build_set(args.dataset, Path(args.data or _data_root()),
                         Path(args.out or default_dir() / "sets" / args.dataset), int(section["seed"]),
                         Path(args.snapshot) if args.snapshot else None)
    print(json.dumps({k: manifest[k] for k in ("dataset", "rows", "distinct_images")}, indent=2))
    return 0


def _cmd_run(args) -> int:
    data = Path(args.data or _data_root())
    out = Path(args.out or default_dir() / "models" / f"{args.run}.safetensors")
    if args.run in RUNS:
        section = _params(RUN_STAGE.format(run=args.run))
        params = run_params(section["finetune"], args.run)
        set_dir = Path(args.set or default_dir() / "sets" / run_spec(args.run).dataset)
        rows = load_rows(set_dir)
        provenance = {"profile": "full", "set_manifest_sha256": sha256_file(set_dir / "manifest.json")}
        launch_run(args.run, args.device, out, default_dir() / "logs", lambda world, machine: train_full_run(
            args.run, rows, params, data / COCO_IMAGES, set_dir, out, world=world, steps=args.steps, progress=True,
            provenance={**provenance, **machine}))
        return 0
    encoder, _, tower = args.run.removeprefix("det-").rpartition("-")
    if not args.run.startswith("det-") or not encoder or tower not in DETECTOR_TOWERS:
        raise BivlcFinetuneFullError(f"unknown run {args.run!r}: one of {', '.join(RUNS)} or a detector "
                                     f"det-<encoder>-<{'|'.join(DETECTOR_TOWERS)}>")
    params = DetectorParams.from_params(_params(DETECTOR_STAGE.format(encoder=encoder, tower=tower))["detectors"])
    encoder, tower = parse_detector(args.run, params.encoders)
    set_dir = Path(args.set or default_dir() / "sets" / "trohn-img")
    rows = load_rows(set_dir)
    provenance = {"profile": "full", "encoder": params.encoders[encoder],
                  "set_manifest_sha256": sha256_file(set_dir / "manifest.json")}
    launch_run(args.run, args.device, out, default_dir() / "logs", lambda world, machine: train_detector(
        tower, rows, params, FromZoo(params.encoders[encoder]), data / COCO_IMAGES, set_dir, out, world=world,
        steps=args.steps, progress=True, provenance={**provenance, **machine}))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m papers.bivlc.finetune_full", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("set", help="one training set's rows (COCO captions, TROHN-Text, TROHN-Img)")
    p.add_argument("dataset", choices=DATASETS)
    p.add_argument("--data", default=None, help="the data root holding COCO 2017 train and the snapshots")
    p.add_argument("--snapshot", default=None, help="the TROHN snapshot (default: <data>/bivlc/TROHN-Text|Img)")
    p.add_argument("--out", default=None, help="default: build/full/bivlc/sets/<dataset>")
    p.set_defaults(func=_cmd_set)
    p = sub.add_parser("run", help="one fine-tune (clip-coco, trohn-text, trohn-img) or detector "
                                   "(det-<encoder>-<image|text>), under torchrun or as one process")
    p.add_argument("run")
    p.add_argument("--device", default="cpu", help="cpu, or cuda (one GPU per torchrun rank)")
    p.add_argument("--set", default=None, help="default: build/full/bivlc/sets/<the run's dataset>")
    p.add_argument("--data", default=None, help=f"the data root holding {COCO_IMAGES.as_posix()}")
    p.add_argument("--out", default=None, help="default: build/full/bivlc/models/<run>.safetensors")
    p.add_argument("--steps", type=int, default=None, help="steps instead of the epochs (smoke runs; one validation)")
    p.set_defaults(func=_cmd_run)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
