"""Compositional beyond what recognition buys: a model's residual from the recognition trend (``Trend``: reference
checkpoints' recognition accuracy x and score y, from a paper's ``card.py``), with the interval docs/card.md states.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Trend:
    x_key: str
    """The card measure that is the model's x (its recognition accuracy)."""
    label: str
    """Which references, from where (the mini family's are labelled so)."""
    points: dict[str, list[tuple[str, float, float]]]
    """Measure key -> (reference model, x, y) for each reference checkpoint."""
    x_published: dict[str, float] = field(default_factory=dict)
    """Zoo name -> the source's x, taken as exact where the card cannot measure x (no ImageNet here)."""


@dataclass(frozen=True)
class Residual:
    value: float
    low: float | None
    high: float | None
    expected: float
    n_references: int
    trend: str
    in_fit: bool
    """The model is one of the references (its residual is in-sample)."""

    def as_dict(self) -> dict:
        return {"residual": round(self.value, 2), "low": _r(self.low), "high": _r(self.high),
                "expected": round(self.expected, 2), "n_references": self.n_references, "trend": self.trend,
                "in_fit": self.in_fit}


def no_trends(profile: str) -> list[Trend]:
    """A paper's ``trends`` when it publishes no trend to measure a model's residual against."""
    return []


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 2)


def residual(points: list[tuple[str, float, float]], x: tuple[float, float, float], y: tuple[float, float, float],
             model: str, label: str, confidence: float = 0.95) -> Residual | None:
    """The residual of (x, y), each given as (value, low, high), from the least-squares line through ``points``."""
    xs = np.array([p[1] for p in points], float)
    ys = np.array([p[2] for p in points], float)
    n = len(points)
    if n < 2 or np.ptp(xs) == 0:
        return None
    slope, intercept = np.polyfit(xs, ys, 1)
    expected = float(intercept + slope * x[0])
    value = float(y[0] - expected)
    in_fit = any(p[0] == model for p in points)
    if n < 3:
        return Residual(value, None, None, expected, n, label, in_fit)
    fitted = intercept + slope * xs
    s2 = float(np.sum((ys - fitted) ** 2) / (n - 2))
    sxx = float(np.sum((xs - xs.mean()) ** 2))
    import scipy.stats  # here, not at the top: scipy takes half a second that `card --help` need not wait for

    z = float(scipy.stats.norm.ppf(0.5 + confidence / 2.0))  # an interval read as a normal's: se = (high - low) / 2z
    variance = (s2 * (1.0 / n + (x[0] - xs.mean()) ** 2 / sxx) + ((y[2] - y[1]) / (2.0 * z)) ** 2
                + (slope * ((x[2] - x[1]) / (2.0 * z))) ** 2)
    half = float(scipy.stats.t.ppf(0.5 + confidence / 2.0, n - 2)) * math.sqrt(variance)
    return Residual(value, value - half, value + half, expected, n, label, in_fit)
