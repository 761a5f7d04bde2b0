"""The fine-tunes of Kamath et al. (Table 1(c, d), Table 3), the same in both profiles: what each run trains on and
with which loss weights (``train`` trains them; the tables read their names and weights from here).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

from common.errors import unknown_name
from papers.hard_positives.losses import HardPositiveLoss

TYPES: tuple[str, ...] = ("replace", "swap")
"""The perturbation types of the benchmark and of the fine-tuning rows (the paper's REPLACE and SWAP)."""


@dataclass(frozen=True)
class RunSpec:
    """A fine-tune: the loss weights of hard positives and hard negatives, and the row types it trains on."""

    hard_positive_weight: float
    hard_negative_weight: float
    types: tuple[str, ...] = TYPES
    label: str = ""


RUNS: dict[str, RunSpec] = {
    "clip-ft": RunSpec(0.0, 0.0, label="CLIP fine-tuned (no HP, no HN)"),
    "hn": RunSpec(0.0, 1.0, label="Our HN"),
    "hp-hn": RunSpec(1.0, 1.0, label="Our HP+HN"),
    "hp-hn-swap": RunSpec(1.0, 1.0, ("swap",), "Our HP+HN (Swap-only)"),
    "hp-hn-replace": RunSpec(1.0, 1.0, ("replace",), "Our HP+HN (Replace-only)"),
    **{f"ratio-{w:g}": RunSpec(1.0, w, label=f"{w:.2f} HN") for w in (0.0, 0.25, 0.5, 0.75)},
}
"""Table 1(c, d) and Table 3's runs (``ratio-1`` is ``hp-hn``). Table 3's "ratio" is the paper's Sec. 4.3:
"differing weights of hard negative loss while keeping the weight of hard positives loss fixed", from 0 ("only hard
positives") to 1 (``hp-hn``); it is not the issue's reading ("the share of hard negatives that get a hard
positive"): every run sees every row's HP and HN texts, the weights decide what the loss does with them."""


def run_spec(run: str) -> RunSpec:
    """The run's spec; an unknown name is an error listing the known ones."""
    if run not in RUNS:
        raise unknown_name("run", run, RUNS)
    return RUNS[run]


def loss_for(spec: RunSpec) -> Callable[..., HardPositiveLoss]:
    """The trainer's loss factory for a run: ``HardPositiveLoss`` with its weights."""
    return functools.partial(HardPositiveLoss, hard_positive_weight=spec.hard_positive_weight,
                             hard_negative_weight=spec.hard_negative_weight)
