"""Group items: 2 images x 2 captions, scored both ways (BiVLC; Winoground's text/image/group are this shape).

With s(C, I) the similarity and caption k describing image k (BiVLC: C0/I0 the original pair, C1/I1 the
negative pair):

* Ipos2T = s(C0,I0) > s(C1,I0), Ineg2T = s(C1,I1) > s(C0,I1) (image to text, from each image);
* Tpos2I = s(C0,I0) > s(C0,I1), Tneg2I = s(C1,I1) > s(C1,I0) (text to image, from each caption);
* I2T = Ipos2T and Ineg2T (Winoground's text score), T2I = Tpos2I and Tneg2I (image score), group = I2T and T2I.

Comparisons are strict by default (BiVLC's code and Winoground's): a tie is wrong, and ties are counted per
comparison. ``ties="correct"`` scores ties as wins, for a paper whose code does.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Literal, Sequence

import numpy as np

from common.evaluation.engine import Engine
from common.files.tasks import DatasetError, GroupItem

COMPARISONS: dict[str, tuple[tuple[int, int], tuple[int, int]]] = {
    "Ipos2T": ((0, 0), (1, 0)),
    "Ineg2T": ((1, 1), (0, 1)),
    "Tpos2I": ((0, 0), (0, 1)),
    "Tneg2I": ((1, 1), (1, 0)),
}
"""metric -> ((caption, image) that must win, (caption, image) it must beat)."""
METRICS: tuple[str, ...] = (*COMPARISONS, "I2T", "T2I", "group")


@dataclass(frozen=True)
class GroupOutcome:
    item_id: str
    group: str
    similarities: tuple[tuple[float, float], tuple[float, float]]
    """``similarities[c][i]`` = s(caption c, image i)."""
    decisions: dict[str, bool]
    ties: tuple[str, ...]
    """The comparisons (``COMPARISONS`` keys) whose two similarities are equal."""


def decide(sim: np.ndarray, ties: Literal["wrong", "correct"] = "wrong") -> tuple[dict[str, bool], tuple[str, ...]]:
    """Every metric of one item from its 2x2 similarity matrix ``sim[c, i]``."""
    decisions, tied = decide_all(np.asarray(sim)[None], ties)
    return {m: bool(d[0]) for m, d in decisions.items()}, tuple(m for m, t in tied.items() if t[0])


def decide_all(sims: np.ndarray, ties: Literal["wrong", "correct"] = "wrong"
               ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """``decide`` for many items at once (``sims[n, c, i]``): per metric, a boolean per item, and per comparison,
    whether its two similarities are equal. Comparisons are exact, so each item's decisions are ``decide``'s."""
    decisions, tied = {}, {}
    for metric, ((win_c, win_i), (lose_c, lose_i)) in COMPARISONS.items():
        a, b = sims[:, win_c, win_i], sims[:, lose_c, lose_i]
        tied[metric] = a == b
        decisions[metric] = (a > b) | tied[metric] if ties == "correct" else a > b
    decisions["I2T"] = decisions["Ipos2T"] & decisions["Ineg2T"]
    decisions["T2I"] = decisions["Tpos2I"] & decisions["Tneg2I"]
    decisions["group"] = decisions["I2T"] & decisions["T2I"]
    return decisions, tied


SCORE_CHUNK = 1024
"""Items scored per numpy operation (bounded memory)."""


@dataclass
class GroupResult:
    model: str
    fingerprint: str
    outcomes: list[GroupOutcome] = field(default_factory=list)

    def accuracy(self, outcomes: Sequence[GroupOutcome] | None = None) -> dict[str, float]:
        """Each metric's share of items (a fraction), over ``outcomes`` (default: all)."""
        chosen = self.outcomes if outcomes is None else outcomes
        if not chosen:
            raise DatasetError("no group items to average")
        return {m: sum(o.decisions[m] for o in chosen) / len(chosen) for m in METRICS}

    def by_group(self) -> dict[str, dict[str, float]]:
        groups: dict[str, list[GroupOutcome]] = defaultdict(list)
        for o in self.outcomes:
            groups[o.group].append(o)
        return {g: self.accuracy(v) for g, v in groups.items()}

    def tie_counts(self) -> dict[str, int]:
        return {m: sum(m in o.ties for o in self.outcomes) for m in COMPARISONS}


def evaluate(engine: Engine, items: Sequence[GroupItem], ties: Literal["wrong", "correct"] = "wrong") -> GroupResult:
    """All metrics of every item; images and captions shared between items are encoded once."""
    if not items:
        raise DatasetError("no group items to score")
    emb = engine.embed(((img, it.origin or it.item_id) for it in items for img in it.images),
                       (c for it in items for c in it.captions))
    result = GroupResult(*engine.identity)
    for start in range(0, len(items), SCORE_CHUNK):
        chunk = items[start: start + SCORE_CHUNK]
        captions = emb.texts([c for it in chunk for c in it.captions]).reshape(len(chunk), 2, -1)
        images = emb.images([i for it in chunk for i in it.images]).reshape(len(chunk), 2, -1)
        # Stacked matmul: per item the BLAS call of ``captions[n] @ images[n].T``, so the same bits.
        sims = emb.round_scores(np.matmul(captions, images.transpose(0, 2, 1)))
        decisions, tied = decide_all(sims, ties)
        decided = {m: d.tolist() for m, d in decisions.items()}
        equal = {m: t.tolist() for m, t in tied.items()}
        for n, (it, sim) in enumerate(zip(chunk, sims.tolist())):
            result.outcomes.append(GroupOutcome(it.item_id, it.group, (tuple(sim[0]), tuple(sim[1])),
                                                {m: d[n] for m, d in decided.items()},
                                                tuple(m for m, t in equal.items() if t[n])))
    return result
