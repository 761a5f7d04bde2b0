"""Cross-fitting: every text is scored by a blind model that never saw its image's captions. Examples are grouped by
their image (a COCO image id is one group across COCO 2014 and 2017 file names and across benchmarks), groups are
dealt into ``k`` folds by a hash of the group and a seed, and fold f is scored by a model fitted on the other folds:
a positive caption two benchmarks share (SugarCrepe's refined and unrefined sets) sits in the same fold everywhere."""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Callable, Protocol, Sequence

import numpy as np

_COCO_ID = re.compile(r"(?:^|[_/])0*(\d+)\.jpg$")


@dataclass(frozen=True)
class TextPair:
    """One image-to-text example seen blind: its positive and negative caption and the image it belongs to."""

    benchmark: str
    category: str
    group: str
    positive: str
    negative: str
    key: str = ""
    """The example's id in its release (for per-example outputs)."""


class TextScorer(Protocol):
    """Anything that scores captions without their image: higher means more plausible."""

    name: str

    def scores(self, texts: Sequence[str]) -> np.ndarray: ...


def coco_group(filename: str) -> str:
    """``coco:<id>`` from a COCO file name of either release ("000000467315.jpg", "COCO_val2014_000000467315.jpg")."""
    match = _COCO_ID.search(filename)
    if match is None:
        raise ValueError(f"{filename!r} is not a COCO image file name")
    return f"coco:{int(match.group(1))}"


def fold_of(group: str, k: int, seed: int = 0) -> int:
    digest = hashlib.sha256(f"{seed}:{group}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % k


@dataclass(frozen=True)
class PairScores:
    """Cross-fitted scores of each pair's two captions (same order as the pairs)."""

    scorer: str
    positive: np.ndarray
    negative: np.ndarray

    @property
    def gap(self) -> np.ndarray:
        return self.positive - self.negative

    @property
    def correct(self) -> np.ndarray:
        """Solved blind: the positive scores strictly higher (a tie is wrong, as in the released evaluation)."""
        return self.positive > self.negative


def crossfit(pairs: Sequence[TextPair], fit: Callable[[Sequence[TextPair]], TextScorer], k: int = 5,
             seed: int = 0) -> PairScores:
    """Score every pair's captions with ``fit(pairs outside its fold)``; ``k`` models are fitted in all."""
    if k < 2:
        raise ValueError(f"cross-fitting needs at least 2 folds, got {k}")
    folds = np.array([fold_of(p.group, k, seed) for p in pairs], dtype=np.int64)
    positive = np.full(len(pairs), np.nan)
    negative = np.full(len(pairs), np.nan)
    name = ""
    for fold in range(k):
        held = np.flatnonzero(folds == fold)
        if held.size == 0:
            continue
        scorer = fit([p for p, f in zip(pairs, folds) if f != fold])
        name = scorer.name
        texts = [pairs[i].positive for i in held] + [pairs[i].negative for i in held]
        values = scorer.scores(texts)
        positive[held], negative[held] = values[:held.size], values[held.size:]
    return PairScores(name, positive, negative)
