"""The fine-tuning sets as ``papers.conclip.train`` reads them: the mini profile's rendered arrays (``FinetuneSet``,
written by ``papers.conclip.sets_mini``) and the full profile's rows over image files (``load_rows``, written by
``papers.conclip.sets_full``); a module of its own, so that the fine-tunes do not depend on the code that builds them.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from common.errors import WorkspaceError
from common.files.arrays import load_array
from common.files.jsonl import read_json, read_rows
from common.files.tasks import DatasetError

ROW_FIELDS = ("caption", "negated", "crepe_negated", "word", "subject", "negated_object")
MINI_REMEDY = "run the mini-finetune-set stage (`python -m papers.conclip.sets_mini finetune-set`)"
FULL_REMEDY = "run the finetune-full-set stage (`python -m papers.conclip.sets_full set`)"


class ConclipMiniError(WorkspaceError):
    """An input of the mini CoN-CLIP runs that cannot be used as given (the message names the file)."""


@dataclass(frozen=True)
class FinetuneSet:
    """The mini set: images and distractor images (N, H, W, 3) uint8, and per image its texts, K and scene objects."""

    images: np.ndarray
    distractors: np.ndarray
    rows: list[dict]

    def __post_init__(self):
        if self.images.shape != self.distractors.shape or len(self.images) != len(self.rows):
            raise ValueError("FinetuneSet: images, distractors and rows need one entry per example")

    def texts(self, name: str) -> list[str]:
        return [r[name] for r in self.rows]

    @classmethod
    def load(cls, root: Path) -> "FinetuneSet":
        root = Path(root)
        try:
            images = load_array(root / "images.npy")
            distractors = load_array(root / "distractors.npy")
        except FileNotFoundError as exc:
            raise ConclipMiniError(f"{exc.filename}: no fine-tuning set here; {MINI_REMEDY}") from None
        path = root / "rows.json"
        rows = read_json(path, list, MINI_REMEDY)
        if len(rows) != len(images):
            raise DatasetError(f"{path}: expected {len(images)} rows (one per image)")
        for i, row in enumerate(rows):
            bad = [f for f in ROW_FIELDS if not isinstance(row, dict) or not isinstance(row.get(f), str) or not row[f]]
            if bad:
                raise DatasetError(f"{path}: row {i}: no {bad[0]!r}")
        try:
            return cls(images, distractors, rows)
        except ValueError as exc:
            raise DatasetError(f"{root}: {exc}") from None


@dataclass(frozen=True)
class FullRow:
    """One training entry of the full set: image and distractor as paths under their folders (CC-Neg's, COCO's)."""

    index: int
    """The entry's index in ``ccneg_preprocessed.pt`` (and its row of the mapping)."""
    image: str
    caption: str
    negated: str
    distractor: str
    distractor_index: int
    """The distractor's index in the COCO pool (``CocoCaptions`` order)."""
    crepe_negated: str | None
    """None where the caption gets no usable CREPE-Negate negation: the CREPE-Negate run skips the row."""


def load_rows(set_dir: Path) -> list[FullRow]:
    return read_rows(Path(set_dir) / "rows.jsonl", FullRow, "a training row", FULL_REMEDY)
