"""A card's numbers (``Measure``), their 95% intervals, two models' paired difference, and ``CardBenchmark`` (a
paper's ``card.py``). Every number is a statistic of per-example 0/1 outcomes, so one bootstrap serves them all; two
models on the same examples share the resampled indices, which makes their difference paired.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from common.errors import WorkspaceError

N_RESAMPLES = 2000
CONFIDENCE = 0.95
SEED = 0


class CardError(WorkspaceError, ValueError):
    """A card cannot be made as asked (a bad SPEC, two measures that do not pair); the message says why."""


class MissingInput(CardError):
    """A benchmark's data is not here: the card is written without it and names it, saying how to get it."""


@dataclass(frozen=True)
class Measure:
    """One number of a card: which examples, what counted as correct on each, and how they aggregate (``strata``: a
    macro average over them; ``blind``: a text-only scorer's outcomes, None with ``blind_note`` saying why)."""

    key: str
    """Stable across models: what pairs two models' numbers and finds the recognition trend (``paper/metric``)."""
    benchmark: str
    metric: str
    rule: str
    """The decision rule in words, tie rule included, with the paper's code it follows."""
    example_ids: tuple[str, ...]
    correct: np.ndarray
    strata: tuple[str, ...] | None = None
    ties: int | None = None
    blind: np.ndarray | None = None
    blind_note: str = ""
    source: str = ""
    """The paper's code that computes the same number (the card's tests compare the two)."""
    precision: str = ""
    """The precision the model was scored at where the card states it; "" for the engine's."""

    def __post_init__(self) -> None:
        n = len(self.example_ids)
        correct = np.asarray(self.correct, dtype=np.float64)
        if correct.shape != (n,) or (self.strata is not None and len(self.strata) != n):
            raise CardError(f"{self.key}: {n} examples but {correct.shape} outcomes"
                            f"{'' if self.strata is None else f' and {len(self.strata)} strata'}")
        if self.blind is not None and np.shape(self.blind) != (n,):
            raise CardError(f"{self.key}: {n} examples but {np.shape(self.blind)} blind outcomes")
        object.__setattr__(self, "correct", correct)
        if self.blind is not None:
            object.__setattr__(self, "blind", np.asarray(self.blind, dtype=np.float64))

    @property
    def n(self) -> int:
        return len(self.example_ids)

    @property
    def aggregate(self) -> str:
        return "micro" if self.strata is None else f"macro over {len(set(self.strata))} strata"

    def value(self) -> float:
        """The number in percent."""
        return statistic(self.correct, self._strata_index())

    def _strata_index(self) -> list[np.ndarray] | None:
        if self.strata is None:
            return None
        labels = np.asarray(self.strata)
        return [np.flatnonzero(labels == s) for s in dict.fromkeys(self.strata)]


def statistic(correct: np.ndarray, strata: list[np.ndarray] | None) -> float:
    """Percent correct: the share, or the unweighted mean of the strata's shares."""
    if strata is None:
        return 100.0 * float(np.mean(correct))
    return 100.0 * float(np.mean([correct[ix].mean() for ix in strata]))


def resample_indices(measure: Measure, n_resamples: int = N_RESAMPLES, seed: int = SEED) -> np.ndarray:
    """(n_resamples, n) example indices: resampled with replacement, within each stratum for a macro average."""
    rng = np.random.default_rng(seed)
    strata = measure._strata_index() or [np.arange(measure.n)]
    return np.concatenate([ix[rng.integers(0, len(ix), size=(n_resamples, len(ix)))] for ix in strata], axis=1)


def _resampled(values: np.ndarray, measure: Measure, indices: np.ndarray) -> np.ndarray:
    """The statistic on every resample (percent)."""
    strata = measure._strata_index()
    if strata is None:
        return 100.0 * values[indices].mean(axis=1)
    # indices are laid out stratum by stratum (resample_indices), so each stratum's columns are contiguous
    bounds = np.cumsum([0, *(len(ix) for ix in strata)])
    return 100.0 * np.mean([values[indices[:, a:b]].mean(axis=1) for a, b in zip(bounds[:-1], bounds[1:])], axis=0)


@dataclass(frozen=True)
class Estimate:
    """A number in percent (points for a difference) with its percentile-bootstrap interval."""

    value: float
    low: float
    high: float
    method: str = f"percentile bootstrap over examples ({N_RESAMPLES} resamples, seed {SEED})"


def _interval(value: float, samples: np.ndarray) -> Estimate:
    tail = 100.0 * (1.0 - CONFIDENCE) / 2.0
    low, high = np.percentile(samples, [tail, 100.0 - tail])
    return Estimate(value, float(low), float(high))


def estimate(measure: Measure, n_resamples: int = N_RESAMPLES) -> Estimate:
    """The measure's value with its interval; a stratified resample for a macro average."""
    indices = resample_indices(measure, n_resamples)
    return _interval(measure.value(), _resampled(measure.correct, measure, indices))


def paired_difference(a: Measure, b: Measure, n_resamples: int = N_RESAMPLES, seed: int = SEED) -> Estimate:
    """a - b in points on the same examples (paired: one set of resampled indices for both)."""
    if a.key != b.key or a.example_ids != b.example_ids or a.strata != b.strata:
        raise CardError(f"{a.key} vs {b.key}: the two numbers were not computed on the same examples; a paired "
                        f"difference needs the same benchmark data for both models")
    indices = resample_indices(a, n_resamples, seed)
    samples = _resampled(a.correct, a, indices) - _resampled(b.correct, b, indices)
    return _interval(a.value() - b.value(), samples)


@dataclass(frozen=True)
class CardBenchmark:
    """One benchmark as a paper's ``card.py`` offers it (``score`` is called again with ``common.card.blind``'s
    ``BlindEngine`` for the blind baseline)."""

    key: str
    title: str
    paper: str
    inputs: tuple[Path, ...]
    how_to_get: str
    load: Callable[[], Any]
    score: Callable[[Any, Any], list[Measure]]
    blind_applies: Callable[[Measure], str | None] = field(default=lambda m: None)
    """None when the blind baseline applies to ``m``, else why it does not (e.g. text-to-image)."""
    not_on_card: str | None = None
    """Why this profile's benchmark is not scored by the card yet (listed as such, never silently left out)."""
    authors_precision: Callable[[Any], tuple[str, str] | None] = field(default=lambda spec: None)
    """The card's model spec -> the precision the paper's own evaluation ran it at and why, or None (the engine's).
    Where it differs, the benchmark is scored at both (the engine's keyed ``<key>@<precision>``); full profile only."""

    def missing(self) -> list[Path]:
        return [p for p in self.inputs if not p.exists()]


def clip_load_fp16(why: str) -> Callable[[Any], tuple[str, str] | None]:
    """The authors' precision of a paper whose evaluator loads OpenAI's CLIP with ``clip.load`` on CUDA
    (``common.zoo.FP16_WHY``): fp16 for OpenAI's weights, None for every other model; ``why`` cites the paper's code."""

    def precision(spec) -> tuple[str, str] | None:
        return ("fp16", why) if getattr(spec, "pretrained", None) == "openai" and not getattr(
            spec, "checkpoint", None) else None

    return precision


def close_ids(measures: Sequence[Measure]) -> None:
    """Refuse two measures under one key (a plugin bug, named)."""
    seen: set[str] = set()
    for m in measures:
        if m.key in seen:
            raise CardError(f"two numbers of the card are both keyed {m.key!r}")
        seen.add(m.key)


def selection_measures(result, prefix: str, benchmark: str, rule: str, source: str, groups: Sequence[str] | None = None,
                       overall: str | None = "macro", overall_name: str = "average",
                       names: dict[str, str] | None = None) -> list[Measure]:
    """A choose-among-K result as a measure per group, then the ``overall`` one ("macro", "micro" or None)."""
    by_group: dict[str, list] = {}
    for o in result.outcomes:
        by_group.setdefault(o.group, []).append(o)
    chosen = list(groups) if groups is not None else list(by_group)
    names = names or {}
    out = []
    for g in chosen:
        outcomes = by_group.get(g, [])
        if not outcomes:
            continue
        out.append(Measure(f"{prefix}/{g}", benchmark, names.get(g, g), rule, tuple(o.item_id for o in outcomes),
                           np.array([o.correct for o in outcomes], float), ties=sum(o.tie for o in outcomes),
                           source=source))
    if overall is not None and out:
        pooled = [o for g in chosen for o in by_group.get(g, [])]
        strata = tuple(o.group for o in pooled) if overall == "macro" else None
        out.append(Measure(f"{prefix}/{overall_name}", benchmark, f"{overall_name} ({overall})", rule,
                           tuple(o.item_id for o in pooled), np.array([o.correct for o in pooled], float),
                           strata=strata, ties=sum(o.tie for o in pooled), source=source))
    return out
