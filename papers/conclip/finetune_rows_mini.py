"""The mini profile's fine-tuning set as files (``images.npy``, ``distractors.npy``, ``rows.json``): what
``papers.conclip.sets_mini`` writes (stage ``mini-finetune-set``) and ``papers.conclip.train_mini`` reads (stages
``mini-finetune@<run>``). A module of its own, so that the fine-tunes do not depend on the code that renders the set.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from common.arrays import load_array
from common.errors import WorkspaceError
from common.jsonl import read_json
from common.tasks import DatasetError

ROW_FIELDS = ("caption", "negated", "crepe_negated", "word", "subject", "negated_object")
"""Per row, the texts every row must carry (non-empty strings)."""
REMEDY = "run the mini-finetune-set stage (`python -m papers.conclip.sets_mini finetune-set`)"


class ConclipMiniError(WorkspaceError):
    """An input of the mini CoN-CLIP runs that cannot be used as given (the message names the file)."""


@dataclass(frozen=True)
class FinetuneSet:
    """Images and distractor images (N, H, W, 3) uint8, and per image its caption, negated caption, the
    CREPE-Negate analog, K, negation word, subject, negated object and every object of its scene (colour and shape:
    what eq. 4's mining is checked against)."""

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
            raise ConclipMiniError(f"{exc.filename}: no fine-tuning set here; {REMEDY}") from None
        path = root / "rows.json"
        rows = read_json(path, list, REMEDY)
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
