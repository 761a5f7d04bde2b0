"""NegCLIP's released TSVs read into the full profile's fine-tuning table and validation (ARO's data for NegCLIP and
CLIP-FT): ``train_neg_clip.tsv`` over COCO train 2014, ``valid_neg_clip.tsv`` over COCO val 2014.

Columns: an unnamed index, ``title`` (the caption), ``filepath`` (``coco/train2014/COCO_train2014_...jpg``),
``neg_caption`` and ``neg_image`` (Python list literals: the caption's negatives, and the rows whose images are the
nearest to its own). One unit of an epoch is a TSV row, as in the authors' loader; images are decoded from their
files per batch (``common.training.files.FileImages``). Its own module, so the mini fine-tunes do not depend on it.
"""
from __future__ import annotations

import ast
import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from common.files.tasks import DatasetError
from common.training.files import FileImages
from papers.aro.batches import PairTable, TokenCache
from papers.aro.images import ArrayImages
from papers.aro.validation import RetrievalValidator


@dataclass(frozen=True)
class TsvRow:
    caption: str
    filepath: str
    negatives: tuple[str, ...]
    neighbours: tuple[int, ...]


def read_negclip_tsv(path: Path) -> tuple[list[int], list[TsvRow]]:
    """The released NegCLIP TSV: (index column, rows); ``neg_caption``/``neg_image`` are Python list literals."""
    path = Path(path)
    indices, rows = [], []
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh, delimiter="\t")
        need = {"title", "filepath", "neg_caption", "neg_image"}
        if reader.fieldnames is None or not need <= set(reader.fieldnames):
            raise DatasetError(f"{path}: expected columns {sorted(need)}, found {reader.fieldnames}")
        index_column = reader.fieldnames[0]
        for n, rec in enumerate(reader):
            where = f"{path}: record {n}"
            try:
                negs = ast.literal_eval(rec["neg_caption"])
                nbrs = ast.literal_eval(rec["neg_image"])
                index = int(rec[index_column]) if index_column not in need else n
            except (ValueError, SyntaxError) as exc:
                raise DatasetError(f"{where}: unreadable neg_caption/neg_image/index ({exc})") from None
            if not isinstance(negs, list) or not all(isinstance(x, str) for x in negs):
                raise DatasetError(f"{where}: neg_caption is not a list of strings")
            if not isinstance(nbrs, list) or not nbrs or not all(isinstance(x, int) for x in nbrs):
                raise DatasetError(f"{where}: neg_image is not a non-empty list of row indices")
            if not negs:
                raise DatasetError(f"{where}: no negative caption (NegCLIP's file holds only captions with one)")
            indices.append(index)
            rows.append(TsvRow(rec["title"], rec["filepath"], tuple(negs), tuple(nbrs)))
    if not rows:
        raise DatasetError(f"{path}: no records")
    return indices, rows


def resolve_image(images_dir: Path, filepath: str) -> Path:
    """A TSV ``filepath`` (``coco/train2014/COCO_train2014_...jpg``) under ``images_dir``, by its file name."""
    return Path(images_dir) / Path(filepath).name


def tsv_table(path: Path, images_dir: Path, image_size: int, crop_scale: tuple[float, float] | None = None
              ) -> tuple[PairTable, FileImages]:
    """Units = TSV rows; ``neg_image`` gives each row's neighbour rows (by the index column). ``crop_scale``: the
    recipe's training crop (``FileImages``)."""
    indices, rows = read_negclip_tsv(path)
    position = {index: n for n, index in enumerate(indices)}
    if len(position) != len(indices):
        raise DatasetError(f"{path}: the index column repeats a value")
    files: dict[str, int] = {}
    row_image, hard = [], []
    width = max(len(r.neighbours) for r in rows)
    for n, r in enumerate(rows):
        row_image.append(files.setdefault(r.filepath, len(files)))
        try:
            nbrs = [position[i] for i in r.neighbours]
        except KeyError as exc:
            raise DatasetError(f"{path}: record {n}: neg_image names row {exc.args[0]}, which the file lacks") from None
        hard.append((nbrs * width)[:width])  # pad a short list by repeating it: each stays equally likely-ish
    table = PairTable(np.asarray(row_image, dtype=np.int64), tuple(r.caption for r in rows),
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
    _, rows = read_negclip_tsv(path)
    grouped: dict[str, list[str]] = {}
    for r in rows:
        grouped.setdefault(r.filepath, []).append(r.caption)
    files = list(grouped)
    if cap is not None:
        missing = [f for f in files if not resolve_image(images_dir, f).is_file()]
        if missing:
            raise DatasetError(f"{path}: {len(missing)} image(s) missing under {images_dir}, e.g. {missing[0]}")
        files = files[:cap]
    pixels = FileImages(tuple(resolve_image(images_dir, f) for f in files), image_size).get(np.arange(len(files)))
    return RetrievalValidator(ArrayImages(pixels), [grouped[f] for f in files], tokens)
