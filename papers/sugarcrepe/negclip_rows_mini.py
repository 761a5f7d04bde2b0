"""The mini NegCLIP fine-tuning set as the runs read it: ``FinetuneSet`` (loaded from the ``negclip-mini-set``
stage's output) and what each run of ``runs.RUNS`` trains on (``run_data``: the whole set, or the rows refinement
kept). Its own module so that the runs (``negclip_train_mini``) read the set without importing the code that renders
and refines it (``negclip_sets_mini``: the mini world's generators, the blind scorers).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from common.arrays import load_array
from common.errors import WorkspaceError
from common.jsonl import read_json
from common.tasks import DatasetError
from papers.sugarcrepe.runs import RUNS, run_spec

REMEDY = "rebuild the fine-tuning set (`python -m papers.sugarcrepe.negclip_sets_mini`, stage negclip-mini-set)"


class NegclipMiniError(WorkspaceError):
    """An input of the mini NegCLIP runs that cannot be used as given (the message names the file)."""


@dataclass(frozen=True)
class FinetuneSet:
    """Images (N, H, W, 3) uint8; per image ``captions_per_image`` captions; per caption a negative of each kind."""

    images: np.ndarray
    captions: list[list[str]]
    negatives: list[list[dict[str, str]]]

    def __post_init__(self):
        if self.images.ndim != 4 or len(self.images) != len(self.captions) or len(self.captions) != len(self.negatives):
            raise ValueError("FinetuneSet: images (N, H, W, 3), captions and negatives need one entry per image")
        per_image = {len(c) for c in self.captions}
        if len(per_image) != 1 or any(len(c) != len(n) for c, n in zip(self.captions, self.negatives)):
            raise ValueError("FinetuneSet: every image needs the same number of captions, each with its negatives")

    @property
    def captions_per_image(self) -> int:
        return len(self.captions[0])

    def kinds(self) -> tuple[str, ...]:
        return tuple(self.negatives[0][0])

    def rows(self) -> list[tuple[int, int]]:
        """(image, caption) of every caption, image-major: the order ``refined.json`` indexes."""
        return [(i, j) for i in range(len(self.captions)) for j in range(self.captions_per_image)]

    def subset(self, rows: Sequence[Sequence[int]]) -> "FinetuneSet":
        """Only the given (image, caption) rows: the images that keep one, each caption list padded to the same
        length by repeating its kept captions in order (the layout needs as many per image)."""
        kept: dict[int, list[int]] = {}
        for i, j in rows:
            kept.setdefault(int(i), []).append(int(j))
        images = sorted(kept)
        if not images:
            raise NegclipMiniError("the subset of the fine-tuning set is empty")
        per_image = self.captions_per_image
        picks = {i: [kept[i][k % len(kept[i])] for k in range(per_image)] for i in images}
        return FinetuneSet(self.images[images], [[self.captions[i][j] for j in picks[i]] for i in images],
                           [[self.negatives[i][j] for j in picks[i]] for i in images])

    @classmethod
    def load(cls, root: Path) -> "FinetuneSet":
        root = Path(root)
        try:
            images = load_array(root / "images.npy")
        except FileNotFoundError:
            raise NegclipMiniError(f"{root / 'images.npy'}: no fine-tuning set here; run the negclip-mini-set stage "
                                   "(`python -m papers.sugarcrepe.negclip_sets_mini`)") from None
        captions = read_json(root / "captions.json", list, REMEDY)
        negatives = read_json(root / "negatives.json", list, REMEDY)
        if len(captions) != len(images):
            raise DatasetError(f"{root / 'captions.json'}: expected {len(images)} caption lists (one per image)")
        if len(negatives) != len(images):
            raise DatasetError(f"{root / 'negatives.json'}: expected {len(images)} records (one per image)")
        kinds = None
        for i, (caps, negs) in enumerate(zip(captions, negatives)):
            if len(caps) != len(negs):
                raise DatasetError(f"{root / 'negatives.json'}: record {i}: {len(negs)} negative sets for "
                                   f"{len(caps)} captions")
            for j, n in enumerate(negs):
                kinds = kinds or sorted(n)
                if sorted(n) != kinds or not all(isinstance(v, str) and v for v in n.values()):
                    raise DatasetError(f"{root / 'negatives.json'}: record {i}: caption {j}: needs one non-empty "
                                       f"negative of each kind {kinds}, has {n}")
        try:
            return cls(images, captions, negatives)
        except ValueError as exc:
            raise DatasetError(f"{root}: {exc}") from None


def run_data(run: str, set_dir: Path) -> FinetuneSet:
    """What ``run`` trains on: the whole set, or (a refined run) the rows ``refined.json`` keeps for its kind."""
    spec = run_spec(RUNS, run)
    data = FinetuneSet.load(set_dir)
    if not spec.refined:
        return data
    path = Path(set_dir) / "refined.json"
    refined = read_json(path, dict, REMEDY)
    try:
        rows = refined["kinds"][spec.hard_negative]["kept"]
    except (KeyError, TypeError):
        raise DatasetError(f"{path}: no refinement of kind {spec.hard_negative!r}") from None
    if not rows:
        raise NegclipMiniError(f"{path}: refinement kept no {spec.hard_negative} negative "
                               f"of {refined['kinds'][spec.hard_negative]['n_in']}; {run} has nothing to train on")
    return data.subset(rows)
