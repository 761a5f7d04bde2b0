"""Selection: one image and K captions, or one caption and K images; which candidates must win is a rule
(``DecisionRule``, data: ``STRICT`` by default, ``ARGMAX``), so that a paper's table is scored the way its own code
scored it, with the rule named in the result.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Callable, Literal, Sequence, TypeVar

import numpy as np

from common.evaluation.engine import Embeddings, Engine
from common.evaluation.outcomes import Outcome
from common.files.tasks import DatasetError, ImageToTextItem, TextToImageItem


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
        correct, tie = self.decide_rows(np.asarray(scores)[None])
        return bool(correct[0]), bool(tie[0])

    def decide_rows(self, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(correct, tie), boolean arrays, for each row of ``scores`` (items x K candidates): ``decide`` for a whole
        task in a few numpy operations (exact, so each row's decision is ``decide``'s)."""
        best_negative = scores[:, self.negative_indices(scores.shape[1])].max(axis=1, keepdims=True)
        positive = scores[:, list(self.positives)]
        wins = positive >= best_negative if self.ties == "correct" else positive > best_negative
        tie = (positive == best_negative).any(axis=1)
        if self.quantifier == "all":
            return wins.all(axis=1), tie
        if self.quantifier == "any":
            return wins.any(axis=1), tie
        return wins.sum(axis=1) == 1, tie


STRICT = DecisionRule("strict")
"""Candidate 0 strictly above every other; ties wrong (SugarCrepe's ``RAIVNLab/sugar-crepe@0047054b main_eval.py:54``
"return 1 if pos_score.item() > neg_score.item() else 0", BiVLC, hard positives)."""
ARGMAX = DecisionRule("argmax", ties="correct")
"""Candidate 0 at least as high as every other (``argmax == 0`` with the positive first, ``argmax`` returning the
first maximal index: ARO's Order tasks, CLIP_benchmark's image-caption selection)."""


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


Item = TypeVar("Item", ImageToTextItem, TextToImageItem, Outcome)
"""What ``_decided`` decides: anything with an ``item_id`` and a ``group``."""
SCORE_CHUNK = 1024
"""Items scored per numpy operation: bounded memory (1,024 items x 5 candidates x 768 float64 is 31 MB)."""


def _decided(items: Sequence[Item], candidates: Callable[[Item], Sequence], scores_of: Callable[[list[Item], int],
             np.ndarray], rule: DecisionRule) -> list[Outcome]:
    """Each item's ``Outcome``, in order: items with the same number of candidates are scored together
    (``scores_of(items, k)``: items x k), a chunk at a time, and decided by ``rule.decide_rows``."""
    by_count: dict[int, list[int]] = defaultdict(list)
    for i, it in enumerate(items):
        by_count[len(candidates(it))].append(i)
    outcomes: list[Outcome | None] = [None] * len(items)
    for k, positions in by_count.items():
        for start in range(0, len(positions), SCORE_CHUNK):
            chunk = positions[start: start + SCORE_CHUNK]
            scores = scores_of([items[i] for i in chunk], k)
            correct, tie = rule.decide_rows(scores)
            for i, row, is_correct, is_tie in zip(chunk, scores.tolist(), correct.tolist(), tie.tolist()):
                outcomes[i] = Outcome(items[i].item_id, items[i].group, tuple(row), is_correct, is_tie)
    return outcomes  # type: ignore[return-value]


def candidate_scores(candidates: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """``s[n, k] = candidates[n, k] . queries[n]`` (items x K x D against items x D), bit for bit the per-item
    ``candidates[n] @ queries[n]``: numpy's stacked matmul makes for each item the BLAS gemv call the per-item
    product makes, so every sum is added in the same order (an einsum, or a sum of products, adds in another and
    can move the last bit of a written score)."""
    return np.matmul(candidates, queries[:, :, None])[:, :, 0]


def rescore(result: SelectionResult, rule: DecisionRule) -> SelectionResult:
    """The same scores decided by another rule (nothing is encoded again)."""
    return SelectionResult(result.model, result.fingerprint, result.task, rule.name, _decided(
        result.outcomes, lambda o: o.scores,
        lambda outcomes, k: np.array([o.scores for o in outcomes], dtype=np.float64).reshape(-1, k), rule))


def _selected(engine: Engine, emb: Embeddings, task: str, items: Sequence[Item], rule: DecisionRule,
              candidates: Callable[[Item], Sequence], embed_candidates: Callable[[list], np.ndarray],
              embed_queries: Callable[[list[Item]], np.ndarray]) -> SelectionResult:
    """Each item's query scored against its K candidates (``emb``: the task's embeddings) and decided by ``rule``."""
    def scores_of(chunk: list[Item], k: int) -> np.ndarray:
        stacked = embed_candidates([c for it in chunk for c in candidates(it)]).reshape(len(chunk), k, -1)
        return emb.round_scores(candidate_scores(stacked, embed_queries(chunk)))

    return SelectionResult(*engine.identity, task, rule.name, _decided(items, candidates, scores_of, rule))


def image_to_text(engine: Engine, items: Sequence[ImageToTextItem], rule: DecisionRule = STRICT) -> SelectionResult:
    """Choose among K captions for each image."""
    emb = engine.embed(((it.image, it.origin or it.item_id) for it in items), (c for it in items for c in it.captions))
    return _selected(engine, emb, "image_to_text", items, rule, lambda it: it.captions, emb.texts,
                     lambda chunk: emb.images([it.image for it in chunk]))


def text_to_image(engine: Engine, items: Sequence[TextToImageItem], rule: DecisionRule = STRICT) -> SelectionResult:
    """Choose among K images for each caption."""
    emb = engine.embed(((p, it.origin or it.item_id) for it in items for p in it.images), (it.caption for it in items))
    return _selected(engine, emb, "text_to_image", items, rule, lambda it: it.images, emb.images,
                     lambda chunk: emb.texts([it.caption for it in chunk]))


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
