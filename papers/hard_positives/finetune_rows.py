"""The fine-tuning sets' formats, what the runs (``train``) read: mini ``FinetuneSet``, full ``FullRow``. A module of
its own so that the runs depend on the formats, not on the code that makes the sets.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Sequence

import numpy as np

from common.errors import WorkspaceError
from common.files.arrays import load_array
from common.files.jsonl import read_json, read_rows
from common.files.tasks import DatasetError
from papers.hard_positives.runs import TYPES

IMAGES = Path("coco") / "train2017" / "train2017"
"""Under the data root: COCO 2017 train images (group ``coco-train2017``); a ``FullRow``'s ``image`` is a file here."""
MINI_REMEDY = "run the mini-finetune-set stage (`python -m papers.hard_positives.finetune_sets_mini`)"


class HardPositivesRowsError(WorkspaceError):
    """An input of the hard-positive runs that cannot be used as given (the message names the file or the run)."""


@dataclass(frozen=True)
class TrainingRow:
    """A caption with one hard positive and one hard negative of its ``type`` (and the rules that made them)."""

    caption: str
    type: str
    positive: str
    negative: str
    positive_variant: str
    negative_edit: str


@dataclass(frozen=True)
class FinetuneSet:
    """Images (N, H, W, 3) uint8 and per image ``captions_per_image`` training rows."""

    images: np.ndarray
    rows: list[list[TrainingRow]]

    def __post_init__(self):
        if self.images.ndim != 4 or len(self.images) != len(self.rows):
            raise ValueError("FinetuneSet: images (N, H, W, 3) and one list of rows per image")
        if len({len(r) for r in self.rows}) != 1 or not self.rows[0]:
            raise ValueError("FinetuneSet: every image needs the same number of rows, at least one")

    def of_types(self, types: Sequence[str]) -> "FinetuneSet":
        """Only the rows of ``types``, on the images that keep one, each padded by repeating its kept rows in order
        (the batches need as many per image)."""
        kept = [(i, [r for r in rows if r.type in types]) for i, rows in enumerate(self.rows)]
        kept = [(i, rows) for i, rows in kept if rows]
        if not kept:
            raise HardPositivesRowsError(f"the fine-tuning set has no rows of types {list(types)}")
        per_image = len(self.rows[0])
        return FinetuneSet(self.images[[i for i, _ in kept]],
                           [[rows[k % len(rows)] for k in range(per_image)] for _, rows in kept])

    def texts(self, name: str) -> list[list[str]]:
        """One field of every row, per image (``caption``, ``positive`` or ``negative``)."""
        return [[getattr(r, name) for r in rows] for rows in self.rows]

    @classmethod
    def load(cls, root: Path) -> "FinetuneSet":
        root = Path(root)
        try:
            images = load_array(root / "images.npy")
        except FileNotFoundError:
            raise HardPositivesRowsError(f"{root / 'images.npy'}: no fine-tuning set here; {MINI_REMEDY}") from None
        path = root / "rows.json"
        records = read_json(path, list, remedy=MINI_REMEDY)
        if len(records) != len(images):
            raise DatasetError(f"{path}: expected {len(images)} lists of rows (one per image)")
        names = [f.name for f in fields(TrainingRow)]
        rows = []
        for i, image_rows in enumerate(records):
            if not isinstance(image_rows, list) or not image_rows:
                raise DatasetError(f"{path}: record {i}: expected a non-empty list of rows")
            out = []
            for j, row in enumerate(image_rows):
                bad = [n for n in names if not isinstance(row, dict) or not isinstance(row.get(n), str) or not row[n]]
                if bad:
                    raise DatasetError(f"{path}: record {i}: row {j}: no {bad[0]!r}")
                if row["type"] not in TYPES:
                    raise DatasetError(f"{path}: record {i}: row {j}: unknown type {row['type']!r} (one of {TYPES})")
                out.append(TrainingRow(**{n: row[n] for n in names}))
            rows.append(out)
        try:
            return cls(images, rows)
        except ValueError as exc:
            raise DatasetError(f"{root}: {exc}") from None


@dataclass(frozen=True)
class FullRow:
    """A COCO caption with one hard positive and one hard negative of its ``type``."""

    image: str
    caption: str
    type: str
    positive: str
    negative: str


def _known_type(row: FullRow) -> None:
    if row.type not in TYPES:
        raise ValueError(f"unknown type {row.type!r} (one of {list(TYPES)})")


def load_rows(set_dir: Path) -> list[FullRow]:
    """The full set's rows; a bad line is a ``DatasetError`` naming the file and the line."""
    return read_rows(Path(set_dir) / "rows.jsonl", FullRow, "a training row", check=_known_type,
                     remedy="run the finetune-full-set stage (`python -m papers.hard_positives.finetune_sets_full`)")
