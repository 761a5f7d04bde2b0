"""TROHN-Img's selection of hard negatives (BiVLC, Miranda et al., Sec. 5.2, steps 1-3) as one seeded function.

From TROHN-Text's (image, caption, negative caption) pairs the authors keep the best ~10% to render as images (their
selection script, ``IMirandaM/BiVLC@84f0d175 src/Training_data/TROHN_Img/TROHN_Img_best_selection.py:11-38``
"for subtype in subtypes:"). ``select_negatives`` does the same steps in the same order; each step is also a
function of its own:

1. ``quantile_filter``: a plausibility scorer (Vera) and a grammar scorer (the CoLA model) score every negative;
   per category (SugarCrepe's 7 subtypes) a negative is kept when *both* of its scores are at or above (``>=``,
   inclusive, as upstream: ``IMirandaM/BiVLC@84f0d175 src/Training_data/TROHN_Img/TROHN_Img_best_selection.py:17``
   "(df['NEG_VERA'] >= df_vera) & (df['NEG_CoLA'] >= df_cola)") that category's ``quantile``
   (``IMirandaM/BiVLC@84f0d175 src/Training_data/TROHN_Img/TROHN_Img_best_selection.py:8`` "treshold = 0.645") of the
   scorer's negative scores. The quantile is numpy's default (linear interpolation, ``method="linear"``), which is
   what upstream's ``pandas.Series.quantile`` computes
   (``IMirandaM/BiVLC@84f0d175 src/Training_data/TROHN_Img/TROHN_Img_best_selection.py:15``
   "df_vera = df.NEG_VERA.quantile(treshold)"). The paper describes it otherwise ("select instances in the top 35
   percentile, according to the combined score of both models", Sec. 5.2): upstream's rule is kept.
2. ``form_filter``: a negative is kept when it ends with "." (which drops questions, ending in "?") and is longer
   than ``min_chars`` (10) characters, both on the text as given (upstream replaces a text without a final period
   by its last character, ``IMirandaM/BiVLC@84f0d175 src/Training_data/TROHN_Img/TROHN_Img_best_selection.py:24``
   "else x[-1] for x in data", which the length test then drops,
   ``IMirandaM/BiVLC@84f0d175 src/Training_data/TROHN_Img/TROHN_Img_best_selection.py:25`` ".str.len() > 10]":
   the same rule).
3. ``deduplicate``: over all categories together, the first pair (input order) of each negative caption is kept;
   two negatives are the same when equal once every "." is removed (upstream drops duplicate *prompts*, the
   negative with its periods removed plus a fixed suffix:
   ``IMirandaM/BiVLC@84f0d175 src/Training_data/TROHN_Img/TROHN_Img_best_selection.py:28``
   "data = data.drop_duplicates(subset=['prompt'])").
4. ``common.blind.refine.refine`` (SugarCrepe's Algorithm 1), once over all remaining pairs (upstream refines the
   concatenated subtypes, not each one:
   ``IMirandaM/BiVLC@84f0d175 src/Training_data/TROHN_Img/TROHN_Img_best_selection.py:31``
   "keep = adversarial_refine(list(data["), with the gaps ``g = score(positive) - score(negative)`` of the
   plausibility scorer as M1 and of the grammar scorer as M2; afterwards a blind scorer's gap is positive as often as
   negative. Seeded here; upstream draws from the unseeded global ``np.random``
   (``IMirandaM/BiVLC@84f0d175 src/Training_data/TROHN_Img/adversarial_refine.py:79``
   "keep.extend(list(np.random.choice(idx, len(op_idx), replace=False)))").

Not done here: upstream first drops pairs whose caption and negative have CLIP text similarity >= 0.999 (the LLM
copied the caption: ``IMirandaM/BiVLC@84f0d175 src/Training_data/TROHN_Img/TROHN_Img_best_selection.py:14``
"df = df[df['Similarity'] < 0.999]"); give ``select_negatives`` pairs whose negative differs from the positive.

Scorers are anything with ``scores(texts) -> array in [0, 1]`` (``TextScorer``): the full profile passes
``common.blind.pretrained``'s ``VeraScorer`` and ``GrammarScorer``, the mini profile the world's analogs below:
``WorldPriorPlausibility`` (the world prior of the colour-shape and size-shape combinations a caption states) and
``NgramGrammar`` (a trigram model of the world's training captions, ``common.blind.ngram``).
"""
from __future__ import annotations

import random
import re
from dataclasses import asdict, dataclass, field
from types import MappingProxyType
from typing import Mapping, Protocol, Sequence

import numpy as np
from numpy.typing import ArrayLike

from common.blind.ngram import NgramFluency
from common.blind.refine import DEFAULT_AXIS_BINS, DEFAULT_BINS, refine, refine_report
from common.files.tasks import DatasetError
from common.miniworld import lexicon
from common.pipeline.reproducible import logistic

DEFAULT_QUANTILE = 0.645
"""Upstream's ``treshold``: "top 35 percentile, we seek to obtain a number of image-text pairs similar to COCO"."""
DEFAULT_MIN_CHARS = 10
"""Negatives of this many characters or fewer are dropped (upstream: ``str.len() > 10`` is kept)."""


class SelectionError(DatasetError):
    """Input the selection cannot use: no pairs, a required category without pairs, a score outside [0, 1]."""


class TextScorer(Protocol):
    """A caption scorer that never sees the image: higher is more plausible (or more grammatical), in [0, 1]."""

    def scores(self, texts: Sequence[str]) -> np.ndarray: ...


@dataclass(frozen=True)
class CaptionPair:
    """One TROHN-Text example: a positive caption and one hard negative of it, in one of SugarCrepe's categories."""

    id: str
    category: str
    positive: str
    negative: str


@dataclass(frozen=True)
class StepCounts:
    """Pairs left after each step (one category, or all)."""

    input: int
    after_quantile: int
    after_form: int
    after_dedup: int
    after_refinement: int


@dataclass(frozen=True)
class PairScores:
    """Both scorers on both captions of every input pair (input order), and the gaps refinement uses."""

    positive_plausibility: np.ndarray
    negative_plausibility: np.ndarray
    positive_grammar: np.ndarray
    negative_grammar: np.ndarray

    @property
    def plausibility_gap(self) -> np.ndarray:
        return self.positive_plausibility - self.negative_plausibility

    @property
    def grammar_gap(self) -> np.ndarray:
        return self.positive_grammar - self.negative_grammar


@dataclass(frozen=True)
class Selection:
    """What ``select_negatives`` kept (ids in input order) and why: the pairs left after each step per category, step
    1's thresholds, every pair's scores and the input indices that reached refinement."""

    kept_ids: tuple[str, ...]
    counts: Mapping[str, StepCounts]
    thresholds: Mapping[str, tuple[float, float]]
    scores: PairScores
    refined: np.ndarray
    kept: np.ndarray
    quantile: float
    min_chars: int
    bins: int
    seed: int

    @property
    def total(self) -> StepCounts:
        return StepCounts(*(sum(getattr(c, f) for c in self.counts.values()) for f in StepCounts.__dataclass_fields__))

    def describe(self) -> dict:
        """A JSON-ready summary: settings, counts per category and in all, thresholds, the gap signs after refinement
        (for each scorer, as many positive as negative gaps if refinement worked)."""
        report = refine_report(self.scores.plausibility_gap[self.refined], self.scores.grammar_gap[self.refined],
                               np.searchsorted(self.refined, self.kept))
        return {
            "quantile": self.quantile, "min_chars": self.min_chars, "bins": self.bins, "axis_bins": DEFAULT_AXIS_BINS,
            "seed": self.seed,
            "total": asdict(self.total),
            "by_category": {k: asdict(v) for k, v in self.counts.items()},
            "thresholds": {k: {"plausibility": p, "grammar": g} for k, (p, g) in self.thresholds.items()},
            "kept_gap_signs": {"plausibility": asdict(report.gap1), "grammar": asdict(report.gap2)},
        }


# -- The steps ----------------------------------------------------------------------------------------------------
def _check_quantile(quantile: float) -> float:
    if isinstance(quantile, bool) or not isinstance(quantile, (int, float, np.floating)) or not 0 <= quantile <= 1:
        raise SelectionError(f"selection: quantile must be a number in [0, 1], got {quantile!r}")
    return float(quantile)


def quantile_filter(categories: Sequence[str], plausibility: ArrayLike, grammar: ArrayLike,
                    quantile: float = DEFAULT_QUANTILE) -> tuple[np.ndarray, dict[str, tuple[float, float]]]:
    """Step 1 (module docstring): the keep mask of the negatives (of ``categories[i]``) at or above their category's
    ``quantile`` under both scorers, and {category: (plausibility threshold, grammar threshold)}; ``>=`` keeps every
    tie, so a category can keep more than ``1 - quantile`` of its pairs."""
    q = _check_quantile(quantile)
    p, g = np.asarray(plausibility, dtype=np.float64), np.asarray(grammar, dtype=np.float64)
    if not (p.shape == g.shape == (len(categories),)):
        raise SelectionError(f"quantile_filter: {len(categories)} categories but scores of shapes {p.shape}, {g.shape}")
    keep = np.zeros(len(categories), dtype=bool)
    thresholds: dict[str, tuple[float, float]] = {}
    labels = np.asarray(categories, dtype=object)
    for category in dict.fromkeys(categories):  # first-appearance order
        members = labels == category
        tp, tg = float(np.quantile(p[members], q)), float(np.quantile(g[members], q))
        keep[members] = (p[members] >= tp) & (g[members] >= tg)
        thresholds[category] = (tp, tg)
    return keep, thresholds


def form_filter(negatives: Sequence[str], min_chars: int = DEFAULT_MIN_CHARS) -> np.ndarray:
    """Step 2: keep a negative that ends with "." and has more than ``min_chars`` characters (text as given)."""
    if isinstance(min_chars, bool) or not isinstance(min_chars, (int, np.integer)) or min_chars < 0:
        raise SelectionError(f"selection: min_chars must be a non-negative integer, got {min_chars!r}")
    return np.array([text.endswith(".") and len(text) > min_chars for text in negatives], dtype=bool)


def deduplicate(negatives: Sequence[str]) -> np.ndarray:
    """Step 3: True for the first occurrence (input order) of each negative caption; two negatives are duplicates
    when equal without their periods (upstream deduplicates prompts built so)."""
    first: dict[str, int] = {}
    for i, text in enumerate(negatives):
        first.setdefault(text.replace(".", ""), i)
    keep = np.zeros(len(negatives), dtype=bool)
    keep[list(first.values())] = True
    return keep


# -- The pipeline -------------------------------------------------------------------------------------------------
def _score_texts(scorer: TextScorer, role: str, pairs: Sequence[CaptionPair]) -> tuple[np.ndarray, np.ndarray]:
    """The scorer on every distinct caption once (sorted, so the call does not depend on input order)."""
    texts = sorted({p.positive for p in pairs} | {p.negative for p in pairs})
    name = getattr(scorer, "name", type(scorer).__name__)
    values = np.asarray(scorer.scores(texts), dtype=np.float64)
    if values.shape != (len(texts),):
        raise SelectionError(f"selection: {role} scorer {name!r} returned {values.shape} scores for {len(texts)} "
                             "texts")
    bad = np.flatnonzero(~((values >= 0) & (values <= 1)))  # NaN fails too
    if bad.size:
        text = texts[int(bad[0])]
        pair = next(p for p in pairs if text in (p.positive, p.negative))
        which = "positive" if pair.positive == text else "negative"
        raise SelectionError(f"selection: {role} scorer {name!r} gave {float(values[bad[0]])!r} to the {which} of "
                             f"pair {pair.id!r} ({text!r}); scores must be in [0, 1]"
                             + (f" ({bad.size - 1} more texts out of range)" if bad.size > 1 else ""))
    by_text = dict(zip(texts, values.tolist()))
    return (np.array([by_text[p.positive] for p in pairs], dtype=np.float64),
            np.array([by_text[p.negative] for p in pairs], dtype=np.float64))


def select_negatives(pairs: Sequence[CaptionPair], plausibility: TextScorer, grammar: TextScorer, *,
                     quantile: float = DEFAULT_QUANTILE, min_chars: int = DEFAULT_MIN_CHARS,
                     bins: int = DEFAULT_BINS, seed: int = 0) -> Selection:
    """TROHN-Img's steps 1-3 (module docstring) on TROHN-Text-style pairs, per category the pairs name;
    ``plausibility`` and ``grammar`` score captions in [0, 1] (Vera and the CoLA model, or the world's analogs); the
    same ``seed`` keeps the same pairs."""
    pairs = list(pairs)
    if not pairs:
        raise SelectionError("selection: no pairs to select from")
    seen: set[str] = set()
    for i, p in enumerate(pairs):
        if not isinstance(p, CaptionPair):
            raise SelectionError(f"selection: pair {i} is a {type(p).__name__}, expected a CaptionPair")
        if p.id in seen:
            raise SelectionError(f"selection: pair id {p.id!r} appears more than once")
        seen.add(p.id)
    q = _check_quantile(quantile)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise SelectionError(f"selection: seed must be an integer, got {seed!r}")
    pos_p, neg_p = _score_texts(plausibility, "plausibility", pairs)
    pos_g, neg_g = _score_texts(grammar, "grammar", pairs)
    scores = PairScores(pos_p, neg_p, pos_g, neg_g)
    labels = [p.category for p in pairs]
    negatives = [p.negative for p in pairs]

    after_quantile, thresholds = quantile_filter(labels, neg_p, neg_g, q)
    after_form = after_quantile & form_filter(negatives, min_chars)
    survivors = np.flatnonzero(after_form)
    after_dedup = np.zeros(len(pairs), dtype=bool)
    after_dedup[survivors[deduplicate([negatives[i] for i in survivors])]] = True
    refined = np.flatnonzero(after_dedup)
    kept = refined[refine(scores.plausibility_gap[refined], scores.grammar_gap[refined], bins=bins, seed=int(seed))]
    after_refinement = np.zeros(len(pairs), dtype=bool)
    after_refinement[kept] = True

    label_array = np.asarray(labels, dtype=object)
    counts = {}
    for category in dict.fromkeys(labels):
        members = label_array == category
        counts[category] = StepCounts(*(int(np.sum(mask[members])) for mask in
                                        (members, after_quantile, after_form, after_dedup, after_refinement)))
    return Selection(kept_ids=tuple(pairs[i].id for i in kept), counts=MappingProxyType(counts),
                     thresholds=MappingProxyType(thresholds), scores=scores, refined=refined, kept=kept,
                     quantile=q, min_chars=int(min_chars), bins=int(bins), seed=int(seed))


# -- The world's analogs of the two scorers -----------------------------------------------------------------------
_WORD = re.compile(r"[a-z]+")
_ADJECTIVE_KINDS = {**{c: "color" for c in lexicon.COLORS}, **{s: "size" for s in lexicon.SIZES}}


def _surface_index() -> dict[tuple[str, ...], tuple[str, str]]:
    """Every surface form of a shape, colour or size, as a word tuple -> (kind, concept)."""
    index: dict[tuple[str, ...], tuple[str, str]] = {}
    for concept in (*lexicon.SHAPES, *lexicon.COLORS, *lexicon.SIZES):
        kind = _ADJECTIVE_KINDS.get(concept, "shape")
        for form in lexicon.SURFACE[concept]:
            key = tuple(form.split())
            if index.setdefault(key, (kind, concept)) != (kind, concept):  # pragma: no cover - a lexicon bug
                raise AssertionError(f"surface form {form!r} names two concepts")
    return index


_SURFACE_INDEX = _surface_index()
_LONGEST_FORM = max(len(k) for k in _SURFACE_INDEX)
_ARTICLES = frozenset({"a", "an", "the"})


def stated_combinations(text: str) -> tuple[tuple[str, str, str], ...]:
    """The (kind, value, shape) combinations a caption states (("color", "red", "circle") for "a red circle"): an
    adjective attaches to the next shape across articles and adjectives only, as the world's grammar writes a noun
    phrase, so a shuffled "a circle red" states nothing."""
    words = _WORD.findall(text.lower())
    found: list[tuple[str, str, str]] = []
    pending: list[tuple[str, str]] = []
    i = 0
    while i < len(words):
        for width in range(min(_LONGEST_FORM, len(words) - i), 0, -1):
            hit = _SURFACE_INDEX.get(tuple(words[i:i + width]))
            if hit is not None:
                break
        else:
            width = 1
        if hit is None:
            if words[i] not in _ARTICLES:
                pending = []
        elif hit[0] == "shape":
            found += [(kind, value, hit[1]) for kind, value in pending]
            pending = []
        else:
            pending.append(hit)
        i += width
    return tuple(found)


@dataclass(frozen=True)
class WorldPriorPlausibility:
    """The mini world's Vera: the mean over a caption's stated combinations of ``P(value | shape) / max_v P(v |
    shape)`` (relative, so that colour's 8 values and size's 2 weigh alike), 1 when it states none; relations and
    counts are not judged, as the world has no prior on them."""

    name: str = "world-prior"

    def scores(self, texts: Sequence[str]) -> np.ndarray:
        out = np.ones(len(texts), dtype=np.float64)
        for i, text in enumerate(texts):
            priors = [(lexicon.attribute_prior(kind, shape), value) for kind, value, shape in stated_combinations(text)]
            if priors:
                out[i] = sum(prior[value] / max(prior.values()) for prior, value in priors) / len(priors)
        return out


CENTER_SAMPLE = 2000
"""Fitting captions whose median mean log-probability centres ``NgramGrammar``'s logistic (a fixed-size sample)."""


@dataclass(frozen=True)
class NgramGrammar:
    """The mini world's CoLA model: the logistic of a trigram model's mean log2-probability per token ``m``, centred
    on the fitting captions' median ``m``; ``scale_bits`` is fixed, not fitted, so that a score gap means the same
    log-probability gap on any corpus (refinement bins gaps)."""

    fluency: NgramFluency = field(repr=False, compare=False)
    center: float
    scale_bits: float = 1.0
    name: str = "ngram-grammar"

    @classmethod
    def fit(cls, texts: Sequence[str]) -> "NgramGrammar":
        """A trigram model fitted on well-formed captions (the world's training captions), seed 0; deterministic."""
        distinct = sorted(set(texts))
        if len(distinct) < 2:
            raise SelectionError(f"NgramGrammar.fit: {len(distinct)} distinct caption(s) to fit on, need at least 2")
        fluency = NgramFluency(order=3, seed=0).fit(distinct)
        sample = random.Random(0).sample(distinct, min(CENTER_SAMPLE, len(distinct)))
        return cls(fluency, float(np.median(fluency.mean_logprob(sorted(sample)))))

    def scores(self, texts: Sequence[str]) -> np.ndarray:
        z = (self.fluency.mean_logprob(list(texts)) - self.center) / self.scale_bits
        return logistic(z)
