"""The NegCLIP re-training runs of Tables 5 and 10, both profiles: names, the negatives each trains with, where its
weights start. Data only (no torch), so the set, training and table stages can all read it without importing each
other's code.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from common.errors import unknown_name

KINDS: tuple[str, ...] = ("replace", "swap", "negate")
"""The hard negative types the paper fine-tunes with (Table 5's "Hard Negative Used")."""
REFINED_KINDS: tuple[str, ...] = ("replace", "swap")
"""Kinds with a mini Table 10 run on adversarially refined negatives. Not NEGATE: both blind scorers solve every one
of its training pairs (its "not"/"There is no" never occurs in a true caption), so refinement keeps none of them
(``refined.json`` records it; a run on an empty set refuses to start)."""
ALL = "all"
"""The full profile's scratch run with one kind per caption (Table 5's "Rep + Sw + Neg")."""


@dataclass(frozen=True)
class RunSpec:
    """A run of either profile."""

    hard_negative: str | None
    """A kind of ``KINDS``, ``ALL`` (one kind drawn per caption, full only) or None (CLIP without negatives)."""
    scratch: bool = False
    """Trained from a random initialisation of ``scratch_arch`` instead of fine-tuned from ``base`` (full only)."""
    refined: bool = False
    """Only the (caption, negative) pairs adversarial refinement keeps (Table 10)."""


RUNS: dict[str, RunSpec] = {
    "clip-ft": RunSpec(None),
    **{f"negclip-{k}": RunSpec(k) for k in KINDS},
    **{f"negclip-refined-{k}": RunSpec(k, refined=True) for k in REFINED_KINDS},
}


FULL_RUNS: dict[str, RunSpec] = {
    "clip-ft": RunSpec(None),
    **{f"negclip-{k}": RunSpec(k) for k in KINDS},
    "scratch-clip": RunSpec(None, scratch=True),
    **{f"scratch-negclip-{k}": RunSpec(k, scratch=True) for k in (*KINDS, ALL)},
    **{f"scratch-negclip-refined-{k}": RunSpec(k, scratch=True, refined=True) for k in KINDS},
}


def run_spec(runs: Mapping[str, RunSpec], run: str) -> RunSpec:
    """``runs[run]``, or an error listing the runs there are."""
    if run not in runs:
        raise unknown_name("run", run, runs)
    return runs[run]
