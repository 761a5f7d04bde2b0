"""The mini fine-tuning set read back (``papers.aro.finetune_sets_mini`` writes it): what the neighbours stage and
the mini fine-tunes read, apart from the code that renders it, so an edit of the set's builder reruns neither."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from common.errors import WorkspaceError
from common.files.arrays import load_array
from common.files.jsonl import read_json
from common.files.tasks import DatasetError

REMEDY = "rerun the stage that writes it (dvc repro papers/aro/dvc.yaml:mini-finetune-set)"


class AroFinetuneError(WorkspaceError):
    """A fine-tuning input that cannot be used as given (the message names the file and the record)."""


@dataclass(frozen=True)
class FinetuneSplit:
    """One split as read back: images (N, H, W, 3) uint8, captions, and (train only) negatives."""

    images: np.ndarray
    captions: list[list[str]]
    negatives: list[list[list[dict]]] | None

    @classmethod
    def load(cls, root: Path, split: str) -> "FinetuneSplit":
        folder = Path(root) / split
        images = load_array(folder / "images.npy")
        captions = read_json(folder / "captions.json", expect=list, remedy=REMEDY)
        if len(captions) != len(images):
            raise DatasetError(f"{folder / 'captions.json'}: expected {len(images)} caption lists (one per image)")
        negatives = None
        if (folder / "negatives.json").is_file():
            negatives = read_json(folder / "negatives.json", expect=list, remedy=REMEDY)
            for i, (caps, negs) in enumerate(zip(captions, negatives)):
                if len(caps) != len(negs):
                    raise DatasetError(f"{folder / 'negatives.json'}: record {i}: {len(negs)} negative lists for "
                                       f"{len(caps)} captions")
            if len(negatives) != len(captions):
                raise DatasetError(f"{folder / 'negatives.json'}: {len(negatives)} records for {len(captions)} images")
        return cls(images, captions, negatives)
