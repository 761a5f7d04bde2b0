"""The full fine-tuning set's format: one row per COCO caption, with one hard positive and one hard negative of its
type, the image named by its file under ``IMAGES``.

Written by stage ``finetune-full-set`` (``papers.hard_positives.finetune_sets_full``: ``rows.jsonl``) and read by
the runs (``papers.hard_positives.train_full``). A module of its own so that the GPU runs depend on the format, not
on the spaCy, WordNet and CREPE-style code that makes the rows (``rules.py``, also the real-text stage's): editing
that code reruns the runs only when the rows it writes change.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from common.jsonl import read_rows
from papers.hard_positives.runs import TYPES

IMAGES = Path("coco") / "train2017" / "train2017"
"""Under the data root: COCO 2017 train images (group ``coco-train2017``); a row's ``image`` is a file name here."""


@dataclass(frozen=True)
class FullRow:
    """A caption with one hard positive and one hard negative of its ``type``."""

    image: str
    caption: str
    type: str
    positive: str
    negative: str


def _known_type(row: FullRow) -> None:
    if row.type not in TYPES:
        raise ValueError(f"unknown type {row.type!r} (one of {list(TYPES)})")


def load_rows(set_dir: Path) -> list[FullRow]:
    """The set's rows; a bad line is a ``DatasetError`` naming the file and the line."""
    return read_rows(Path(set_dir) / "rows.jsonl", FullRow, "a training row", check=_known_type,
                     remedy="run the finetune-full-set stage (`python -m papers.hard_positives.finetune_sets_full`)")
