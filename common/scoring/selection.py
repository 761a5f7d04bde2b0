"""Selection: one image and K captions, or one caption and K images; which candidates must win is a rule.

A ``DecisionRule`` is data: which candidates are positives, which they must beat, whether all / any / exactly one
positive must win, and whether a tie wins. The default is the official strict rule of SugarCrepe's and BiVLC's
code (candidate 0 strictly above every other; a tie is wrong and counted). ``ARGMAX`` is the rule of ARO's and
CLIP_benchmark's code with the positive listed first (``argmax`` returns the first maximal index, so a tie counts
as correct): a paper's table is scored the way its own code scored it, with the rule named in the result.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Literal, Sequence

import numpy as np

from common.engine import Engine
from common.tasks import DatasetError, ImageToTextItem, TextToImageItem


@dataclass(frozen=True)
class DecisionRule:
    """When an item of K scored candidates counts as correct.

    Each positive in ``positives`` wins when it scores above the best of ``negatives`` (default: every candidate
    that is not a positive); strictly, unless ``ties == "correct"``. ``quantifier`` says how many positives must win.
    A *tie* is an item where some positive scores exactly the best negative: counted whatever the rule decides.
    """

    name: str
    positives: tuple[int, ...] = (0,)
    negatives: tuple[int, ...] | None = None
    quantifier: Literal["all", "any", "exactly_one"] = "all"
    ties: Literal["wrong", "correct"] = "wrong"

    def __post_init__(self) -> None:
        if not self.positives:
            raise ValueError(f"rule {self.name!r}: needs at least one positive")
        if self.negatives is not None and (not self.negatives or set(self.negatives) & set(self.positives)):
            raise ValueError(f"rule {self.name!r}: negatives must be non-empty and disjoint from positives")
        if self.quantifier not in ("all", "any", "exactly_one") or self.ties not in ("wrong", "correct"):
            raise ValueError(f"rule {self.name!r}: unknown quantifier {self.quantifier!r} or ties {self.ties!r}")

    def negative_indices(self, k: int) -> list[int]:
        negatives = list(self.negatives) if self.negatives is not None else [i for i in range(k) if i not in self.positives]
        if max([*self.positives, *negatives]) >= k or not negatives:
            raise ValueError(f"rule {self.name!r} does not fit an item with {k} candidates")
        return negatives

    def decide(self, scores: np.ndarray) -> tuple[bool, bool]:
        """(correct, tie) for one item's candidate scores."""
        best_negative = scores[self.negative_indices(len(scores))].max()
        positive = scores[list(self.positives)]
        wins = positive >= best_negative if self.ties == "correct" else positive > best_negative
        tie = bool((positive == best_negative).any())
        if self.quantifier == "all":
            return bool(wins.all()), tie
        if self.quantifier == "any":
            return bool(wins.any()), tie
        return int(wins.sum()) == 1, tie


STRICT = DecisionRule("strict")
"""Candidate 0 strictly above every other; ties wrong (SugarCrepe's ``RAIVNLab/sugar-crepe@0047054b main_eval.py:54``
"return 1 if pos_score.item() > neg_score.item() else 0", BiVLC, hard positives)."""
ARGMAX = DecisionRule("argmax", ties="correct")
"""Candidate 0 at least as high as every other (``argmax == 0`` with the positive first: ARO's Order tasks,
CLIP_benchmark's image-caption selection)."""


@dataclass(frozen=True)
class Outcome:
    item_id: str
    group: str
    scores: tuple[float, ...]
    correct: bool
    tie: bool


@dataclass(frozen=True)
class GroupScore:
    n: int
    correct: int
    ties: int

    @property
    def accuracy(self) -> float:
        return self.correct / self.n if self.n else float("nan")


@dataclass
class SelectionResult:
    """Per-item outcomes of a choose-among-K task for one model, under one decision rule."""

    model: str
    fingerprint: str
    task: str
    rule: str = STRICT.name
    outcomes: list[Outcome] = field(default_factory=list)

    def by_group(self) -> dict[str, GroupScore]:
        counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
        for o in self.outcomes:
            c = counts[o.group]
            c[0] += 1
            c[1] += o.correct
            c[2] += o.tie
        return {g: GroupScore(*c) for g, c in counts.items()}

    def macro_accuracy(self) -> float:
        groups = self.by_group()
        return float(np.mean([g.accuracy for g in groups.values()]))

    @property
    def ties(self) -> int:
        return sum(o.tie for o in self.outcomes)


def rescore(result: SelectionResult, rule: DecisionRule) -> SelectionResult:
    """The same scores decided by another rule (nothing is encoded again)."""
    out = SelectionResult(result.model, result.fingerprint, result.task, rule.name)
    for o in result.outcomes:
        out.outcomes.append(Outcome(o.item_id, o.group, o.scores, *rule.decide(np.asarray(o.scores))))
    return out


def image_to_text(engine: Engine, items: Sequence[ImageToTextItem], rule: DecisionRule = STRICT) -> SelectionResult:
    """Choose among K captions for each image."""
    emb = engine.embed(((it.image, it.origin or it.item_id) for it in items), (c for it in items for c in it.captions))
    result = SelectionResult(*engine.identity, "image_to_text", rule.name)
    for it in items:
        scores = emb.round_scores(emb.texts(it.captions) @ emb.images([it.image])[0])
        result.outcomes.append(Outcome(it.item_id, it.group, tuple(scores.tolist()), *rule.decide(scores)))
    return result


def text_to_image(engine: Engine, items: Sequence[TextToImageItem], rule: DecisionRule = STRICT) -> SelectionResult:
    """Choose among K images for each caption."""
    emb = engine.embed(((p, it.origin or it.item_id) for it in items for p in it.images), (it.caption for it in items))
    result = SelectionResult(*engine.identity, "text_to_image", rule.name)
    for it in items:
        scores = emb.round_scores(emb.images(it.images) @ emb.texts([it.caption])[0])
        result.outcomes.append(Outcome(it.item_id, it.group, tuple(scores.tolist()), *rule.decide(scores)))
    return result


def evaluate(engine: Engine, items: Sequence[ImageToTextItem] | Sequence[TextToImageItem],
             rule: DecisionRule = STRICT) -> SelectionResult:
    """Score a homogeneous list of image-to-text or text-to-image items."""
    if not items:
        raise DatasetError("no items to score")
    if all(isinstance(it, ImageToTextItem) for it in items):
        return image_to_text(engine, items, rule)  # type: ignore[arg-type]
    if all(isinstance(it, TextToImageItem) for it in items):
        return text_to_image(engine, items, rule)  # type: ignore[arg-type]
    raise DatasetError("items mix image-to-text and text-to-image records; score them separately")


TIE = "tie"


def negative_position(scores: Sequence[float], positives: Sequence[int], negative: int) -> str:
    """Where a negative falls among several positives: which positives score strictly above it.

    With positives (c, c_p) = (0, 1) and negative c_n = 2 this is the five counts of the hard-positives code:
    ``"0,1"`` (c_n below both), ``"0"`` (c > c_n > c_p), ``"1"`` (c_p > c_n > c), ``""`` (c_n above both), and
    ``"tie"`` (c_n equal to c or to c_p).
    """
    s = np.asarray(scores)
    if (s[list(positives)] == s[negative]).any():
        return TIE
    return ",".join(str(p) for p in positives if s[p] > s[negative])


def negative_position_counts(result: SelectionResult, positives: Sequence[int], negative: int) -> dict[str, Counter]:
    """Per group, how many items fall in each ``negative_position``."""
    counts: dict[str, Counter] = defaultdict(Counter)
    for o in result.outcomes:
        counts[o.group][negative_position(o.scores, positives, negative)] += 1
    return dict(counts)


def mean_scores(result: SelectionResult) -> dict[str, tuple[float, ...]]:
    """Per group, the mean score of each candidate position (e.g. the mean similarity of c, c_p and c_n)."""
    by_group: dict[str, list[tuple[float, ...]]] = defaultdict(list)
    for o in result.outcomes:
        by_group[o.group].append(o.scores)
    return {g: tuple(np.mean(np.asarray(rows), axis=0).tolist()) for g, rows in by_group.items()}
