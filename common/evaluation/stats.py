"""Confidence intervals shared by the papers' tables and figures (of accuracies, means of 0/1 correctness, and of
correlations between benchmarks), seeded so that a rerun prints the same interval. Degenerate inputs (one value,
constant sides, n <= 3) give a defined answer, never a warning.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.stats
from numpy.typing import ArrayLike

from common.errors import WorkspaceError


class StatsInputError(WorkspaceError, ValueError):
    """Values a statistic cannot use (empty, NaN, mismatched lengths, a confidence outside (0, 1))."""


@dataclass(frozen=True)
class Interval:
    """A point estimate and its two-sided confidence interval, with how it was computed (``n_resamples`` 0 for a
    closed form; ``dropped``: bootstrap resamples on which the statistic was undefined, left out)."""

    estimate: float
    low: float
    high: float
    confidence: float
    n_resamples: int
    method: str
    dropped: int = 0


def interval_fields(name: str, interval, value: float | None = None, *, point: bool = True) -> dict[str, float]:
    """A difference as the papers' comparison JSONs write it: ``name`` (``value``, else ``interval.estimate``; left
    out when not ``point``), ``name_ci_low`` and ``name_ci_high``, rounded to 2 places."""
    head = {name: round(interval.estimate if value is None else value, 2)} if point else {}
    return {**head, f"{name}_ci_low": round(interval.low, 2), f"{name}_ci_high": round(interval.high, 2)}


def _sample(name: str, values: ArrayLike, min_size: int = 1) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1 or array.size < min_size:
        raise StatsInputError(f"{name}: expected a 1-D sequence of at least {min_size} numbers, got shape "
                              f"{array.shape}")
    not_finite = np.flatnonzero(~np.isfinite(array))
    if not_finite.size:
        raise StatsInputError(f"{name}[{int(not_finite[0])}] = {float(array[not_finite[0]])!r} is not a finite number")
    return array


def _pair(x: ArrayLike, y: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    xs, ys = _sample("x", x, min_size=2), _sample("y", y, min_size=2)
    if xs.size != ys.size:
        raise StatsInputError(f"x has {xs.size} values but y has {ys.size}")
    return xs, ys


def _check_settings(confidence: float, n_resamples: int | None = None) -> None:
    if not 0.0 < confidence < 1.0:
        raise StatsInputError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")
    if n_resamples is not None and n_resamples < 1:
        raise StatsInputError(f"n_resamples must be at least 1, got {n_resamples!r}")


def _is_constant(values: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.max(values, axis=axis) == np.min(values, axis=axis)


def bootstrap_mean_ci(values: ArrayLike, n_resamples: int = 2000, confidence: float = 0.95,
                      seed: int = 0) -> Interval:
    """Percentile-bootstrap interval of a mean (e.g. accuracy from 0/1 correctness), via ``scipy.stats.bootstrap``;
    [mean, mean] for an all-equal sample, without resampling."""
    sample = _sample("values", values)
    _check_settings(confidence, n_resamples)
    estimate = float(np.mean(sample))
    if _is_constant(sample):
        return Interval(estimate, estimate, estimate, confidence, n_resamples, "percentile bootstrap (constant sample)")
    result = scipy.stats.bootstrap((sample,), np.mean, n_resamples=n_resamples, confidence_level=confidence,
                                   method="percentile", vectorized=True, axis=-1, rng=np.random.default_rng(seed))
    ci = result.confidence_interval
    return Interval(estimate, float(ci.low), float(ci.high), confidence, n_resamples, "percentile bootstrap")


def pearson_r(x: ArrayLike, y: ArrayLike) -> float:
    """Pearson's r by ``scipy.stats.pearsonr`` (at least two pairs); NaN, without a warning, when a side is constant."""
    xs, ys = _pair(x, y)
    if _is_constant(xs) or _is_constant(ys):
        return math.nan
    return float(scipy.stats.pearsonr(xs, ys).statistic)


def bootstrap_pearson_ci(x: ArrayLike, y: ArrayLike, n_resamples: int = 2000, confidence: float = 0.95,
                         seed: int = 0) -> Interval:
    """Percentile-bootstrap interval of Pearson's r, resampling (x, y) pairs together. A resample whose x or y is
    constant has no r: it is dropped (``dropped``), and the percentiles come from the rest; a constant input, or every
    resample dropped, gives a NaN interval. Done with numpy, as ``scipy.stats.bootstrap`` cannot drop a resample."""
    xs, ys = _pair(x, y)
    _check_settings(confidence, n_resamples)
    estimate = pearson_r(xs, ys)
    if math.isnan(estimate):
        return Interval(estimate, math.nan, math.nan, confidence, 0, "percentile bootstrap (undefined: constant input)")
    picks = np.random.default_rng(seed).integers(0, xs.size, size=(n_resamples, xs.size))
    resampled_x, resampled_y = xs[picks], ys[picks]
    defined = ~(_is_constant(resampled_x) | _is_constant(resampled_y))
    dropped = int(n_resamples - defined.sum())
    if not defined.any():
        return Interval(estimate, math.nan, math.nan, confidence, n_resamples,
                        "percentile bootstrap (every resample constant)", dropped=dropped)
    rs = scipy.stats.pearsonr(resampled_x[defined], resampled_y[defined], axis=1).statistic
    tail = 100.0 * (1.0 - confidence) / 2.0
    low, high = np.percentile(rs, [tail, 100.0 - tail])
    return Interval(estimate, float(low), float(high), confidence, n_resamples, "percentile bootstrap (pairs)",
                    dropped=dropped)


def fisher_pearson_ci(r: float, n: int, confidence: float = 0.95) -> Interval:
    """Closed-form interval of Pearson's r: ``tanh(atanh(r) +- z_{(1+c)/2} / sqrt(n - 3))`` (Fisher's z); all of
    [-1, 1] for n <= 3, [r, r] for ``|r| == 1``, NaN for a NaN r."""
    _check_settings(confidence)
    if not (math.isnan(r) or -1.0 <= r <= 1.0):
        raise StatsInputError(f"r = {r!r} is not a correlation in [-1, 1]")
    if math.isnan(r):
        return Interval(r, math.nan, math.nan, confidence, 0, "Fisher z (undefined: r is NaN)")
    if n <= 3:
        return Interval(r, -1.0, 1.0, confidence, 0, f"Fisher z (undefined for n = {n} <= 3)")
    if abs(r) == 1.0:
        return Interval(r, r, r, confidence, 0, "Fisher z (|r| = 1)")
    half_width = scipy.stats.norm.ppf(0.5 + confidence / 2.0) / math.sqrt(n - 3)
    z = math.atanh(r)
    return Interval(r, math.tanh(z - half_width), math.tanh(z + half_width), confidence, 0, "Fisher z")
