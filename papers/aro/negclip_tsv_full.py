"""NegCLIP's released TSVs read into the full profile's fine-tuning table and validation (ARO's data for NegCLIP and
CLIP-FT): ``train_neg_clip.tsv`` over COCO train 2014, ``valid_neg_clip.tsv`` over COCO val 2014.

Columns: an unnamed index, ``title`` (the caption), ``filepath`` (``coco/train2014/COCO_train2014_...jpg``),
``neg_caption`` and ``neg_image`` (Python list literals: the caption's negatives, and the rows whose images are the
nearest to its own). One unit of an epoch is a TSV row, as in the authors' loader; images are decoded from their
files per batch (``common.training.files.FileImages``). Its own module, so the mini fine-tunes do not depend on it.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from common.files.tasks import DatasetError
from common.text.released_text import NegClipRow, read_negclip_tsv
from common.training.files import FileImages
from papers.aro.batches import PairTable, TokenCache
from papers.aro.images import ArrayImages
from papers.aro.validation import RetrievalValidator


def released_rows(path: Path) -> list[NegClipRow]:
    """The rows of a NegCLIP TSV (``common.text.released_text``'s reader), each with a negative caption."""
    rows = read_negclip_tsv(path)
    if not rows:
        raise DatasetError(f"{path}: no records")
    for number, row in enumerate(rows, start=1):
        if not row.negatives:
            raise DatasetError(f"{path}: row {number}: no negative caption (NegCLIP's file holds only captions with "
                               "one)")
    return rows


def resolve_image(images_dir: Path, filepath: str) -> Path:
    """A TSV ``filepath`` (``coco/train2014/COCO_train2014_...jpg``) under ``images_dir``, by its file name."""
    return Path(images_dir) / Path(filepath).name


def tsv_table(path: Path, images_dir: Path, image_size: int, crop_scale: tuple[float, float] | None = None
              ) -> tuple[PairTable, FileImages]:
    """Units = TSV rows; ``neg_image`` gives each row's neighbour rows (by the index column). ``crop_scale``: the
    recipe's training crop (``FileImages``)."""
    rows = released_rows(path)
    position = {r.index: n for n, r in enumerate(rows)}  # the reader refuses an index twice
    files: dict[str, int] = {}
    row_image, hard = [], []
    width = max(len(r.neighbours) for r in rows)
    for n, r in enumerate(rows, start=1):
        row_image.append(files.setdefault(r.filepath, len(files)))
        try:
            nbrs = [position[i] for i in r.neighbours]
        except KeyError as exc:
            raise DatasetError(f"{path}: row {n}: neg_image names row {exc.args[0]}, which the file lacks") from None
        hard.append((nbrs * width)[:width])  # pad a short list by repeating it: each stays equally likely-ish
    table = PairTable(np.asarray(row_image, dtype=np.int64), tuple(r.title for r in rows),
                      tuple(r.negatives for r in rows), np.arange(len(rows) + 1, dtype=np.int64),
                      np.asarray(hard, dtype=np.int64))
    images = FileImages(tuple(resolve_image(images_dir, f) for f in files), image_size, crop_scale=crop_scale)
    return table, images


def val_from_tsv(path: Path, images_dir: Path, image_size: int, tokens: TokenCache, cap: int | None = None
                 ) -> RetrievalValidator:
    """Validation retrieval on NegCLIP's ``valid_neg_clip.tsv`` (captions grouped by image); ``cap``
    (``full_inputs.cap``): every image must be there, but only the first ``cap`` are validated on."""
    if cap is not None and cap < 1:
        raise ValueError(f"cap must be a positive number of images or None, got {cap}")
    grouped: dict[str, list[str]] = {}
    for r in released_rows(path):
        grouped.setdefault(r.filepath, []).append(r.title)
    files = list(grouped)
    if cap is not None:
        missing = [f for f in files if not resolve_image(images_dir, f).is_file()]
        if missing:
            raise DatasetError(f"{path}: {len(missing)} image(s) missing under {images_dir}, e.g. {missing[0]}")
        files = files[:cap]
    pixels = FileImages(tuple(resolve_image(images_dir, f) for f in files), image_size).get(np.arange(len(files)))
    return RetrievalValidator(ArrayImages(pixels), [grouped[f] for f in files], tokens)
