"""``params.yaml full_inputs``: how much of the full profile's inputs a stage reads (``cap``); a fine-tune's step
budget. What the inputs must be is no mode here (checksums are the registry's, counts each paper's full section), so
the stand-ins of ``make rehearse`` pass the same checks. The audit compares only uncapped numbers with the paper's
(``FullInputs.comparable``); the rehearsal always caps. A stage that reads the cap declares it among its DVC params;
undeclared, it reads as uncapped.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from common.pipeline.params import PARAMS_FILE, ParamsError

SECTION = "full_inputs"
"""The section of ``params.yaml`` (and of a stage's declared parameters)."""


@dataclass(frozen=True)
class FullInputs:
    cap: int | None = None
    """At most this many examples per benchmark group are read and scored (None: all)."""

    @property
    def comparable(self) -> bool:
        """Whether numbers computed from these inputs may be compared with the paper's: all of them (a capped run
        scores a subset, so its numbers are never audited as the paper's)."""
        return self.cap is None


def full_inputs(params: Mapping[str, Any], path: Path = PARAMS_FILE) -> FullInputs:
    """The ``full_inputs`` section of a stage's parameters (``stage_params``), checked: ``cap`` null or a positive
    integer, and no other key (``published`` is gone: checksums and counts are the registry's and the papers')."""
    node = params.get(SECTION, {})
    if not isinstance(node, dict):
        raise ParamsError(f"{path}: {SECTION}: must be a table (cap), got {node!r}")
    unknown = sorted(set(node) - {"cap"})
    if unknown:
        raise ParamsError(f"{path}: {SECTION}: unknown key(s) {unknown} (known: cap; what the files must be is "
                          f"stated by the registry's checksums and each paper's full section)")
    cap = node.get("cap")
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
        raise ParamsError(f"{path}: {SECTION}.cap: must be null or a positive integer, got {cap!r}")
    return FullInputs(cap)


def step_budget(section: Mapping[str, Any], steps: int | None = None, path: Path = PARAMS_FILE) -> int | None:
    """A full fine-tune's steps: ``steps`` when given (a smoke run's ``--steps``), else its section's ``max_steps``
    (None: the recipe's epochs; a capped run sets it, as the recipe's epochs over a few examples prove nothing more)."""
    if steps is not None:
        return steps
    budget = section.get("max_steps")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
        raise ParamsError(f"{path}: max_steps: must be null or a positive integer, got {budget!r}")
    return budget
