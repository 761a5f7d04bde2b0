"""CoN-CLIP's fine-tunes (Table 6 and its breakdowns, Tables 10-12 and 14), shared by both profiles and trained by
``papers.conclip.train``."""
from __future__ import annotations

from dataclasses import dataclass

from common.errors import unknown_name


@dataclass(frozen=True)
class RunSpec:
    """A fine-tune: which terms of the CoN-CLIP loss, and whose negated captions (CC-Neg's or CREPE-Negate's)."""

    terms: tuple[str, ...]
    negatives: str = "ccneg"
    label: str = ""


RUNS: dict[str, RunSpec] = {
    "conclip": RunSpec(("l1", "l2", "l3"), label="CC-Neg - L_conclip (CoN-CLIP)"),
    "l1": RunSpec(("l1",), label="CC-Neg - L1"),
    "l2": RunSpec(("l2",), label="CC-Neg - L2"),
    "l1-l2": RunSpec(("l1", "l2"), label="CC-Neg - L1+L2"),
    "crepe-negate-l1": RunSpec(("l1",), "crepe", "CREPE-Negate - L1"),
}
"""Table 6's rows (Tables 10-12 and 14 break them down)."""
NEGATIVE_FIELDS: dict[str, str] = {"ccneg": "negated", "crepe": "crepe_negated"}
"""``RunSpec.negatives`` -> the training row's field that is the run's c' (both profiles' sets name them alike)."""


def run_spec(run: str) -> RunSpec:
    if run not in RUNS:
        raise unknown_name("run", run, RUNS)
    return RUNS[run]
