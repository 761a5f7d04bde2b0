"""``Card``: one model's numbers, as the command computes them and the report writes them."""
from __future__ import annotations

from dataclasses import dataclass, field

from common.card.core import Estimate, Measure
from common.card.models import CardModel
from common.card.trend import Residual


@dataclass
class Card:
    """One model's card: its numbers with intervals, blind baselines and residuals, and what was not scored."""

    model: CardModel
    profile: str
    measures: list[Measure]
    estimates: dict[str, Estimate]
    blind: dict[str, Estimate]
    residuals: dict[str, Residual]
    missing: list[dict]
    provenance: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    """What the reader must know before reading a number (a real model scored on the mini world)."""
    published: list[dict] = field(default_factory=list)
    """The papers' published rows for the same numbers (``common.card.published.published_rows``)."""
