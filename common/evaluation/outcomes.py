"""A scored item's record and the percent a results table prints: a module without the engine (no torch), so that
a stage that reads per-example predictions back, or prints shares as points, does not import it."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Outcome:
    """One item of a choose-among-K task: a row of ``results.write_predictions``'s file."""

    item_id: str
    group: str
    scores: tuple[float, ...]
    correct: bool
    tie: bool


def percent(x: float) -> float:
    """A share as points, to the two decimals the papers print (NaN stays NaN)."""
    return round(100.0 * x, 2)
