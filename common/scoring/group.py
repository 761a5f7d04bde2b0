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

from common.engine import Engine
from common.tasks import DatasetError, GroupItem

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
    decisions, tied = {}, []
    for metric, (win, lose) in COMPARISONS.items():
        a, b = sim[win], sim[lose]
        decisions[metric] = bool(a > b or (ties == "correct" and a == b))
        if a == b:
            tied.append(metric)
    decisions["I2T"] = decisions["Ipos2T"] and decisions["Ineg2T"]
    decisions["T2I"] = decisions["Tpos2I"] and decisions["Tneg2I"]
    decisions["group"] = decisions["I2T"] and decisions["T2I"]
    return decisions, tuple(tied)


@dataclass
class GroupResult:
    model: str
    fingerprint: str
    ties_rule: str = "wrong"
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
    result = GroupResult(*engine.identity, ties)
    for it in items:
        sim = emb.round_scores(emb.texts(list(it.captions)) @ emb.images(list(it.images)).T)
        decisions, tied = decide(sim, ties)
        result.outcomes.append(GroupOutcome(it.item_id, it.group, (tuple(sim[0].tolist()), tuple(sim[1].tolist())),
                                            decisions, tied))
    return result
