"""``params.yaml full_inputs``: what the full profile's stages read, and how much of it; a fine-tune's step budget.

Two facts about a full run's inputs decide what its numbers may be compared with, so they are parameters, not a
mode: ``published`` (the published files, whose published checksums, sizes and counts the stages enforce; false:
files in the same formats that are not the published ones, such as the stand-ins of ``python -m common rehearse``,
which sets it false in its copy of the workspace) and ``cap`` (at most this many examples per benchmark group, or
null for all). The audit compares a number with the paper's only when both hold (``FullInputs.comparable``);
otherwise every number from these inputs is shown as not comparable.

A stage that reads them declares them among its DVC params (``full_inputs`` for both keys,
``full_inputs.published`` or ``full_inputs.cap`` for one), so ``common.params.stage_params`` hands them over and DVC
reruns the stage when they change. A key the stage did not declare reads as its default: published, uncapped.

A full fine-tune's ``max_steps`` (in its own section; null: the recipe's epochs) is read by ``step_budget``: a capped
run sets it, as the recipe's epochs over a few examples per group would prove nothing more.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from common.params import PARAMS_FILE, ParamsError

SECTION = "full_inputs"
"""The section of ``params.yaml`` (and of a stage's declared parameters)."""


@dataclass(frozen=True)
class FullInputs:
    published: bool = True
    """The published files: their published checksums, sizes and counts are enforced (false: not the published
    files; those checks give way and no number is compared with the paper's)."""
    cap: int | None = None
    """At most this many examples per benchmark group are read and scored (None: all)."""

    @property
    def comparable(self) -> bool:
        """Whether numbers computed from these inputs may be compared with the paper's: the published files, all of
        them (a capped run scores a subset, so its numbers are never audited as the paper's)."""
        return self.published and self.cap is None


def full_inputs(params: Mapping[str, Any], path: Path = PARAMS_FILE) -> FullInputs:
    """The ``full_inputs`` section of a stage's parameters (``stage_params``), checked: ``published`` true or false,
    ``cap`` null or a positive integer."""
    node = params.get(SECTION, {})
    if not isinstance(node, dict):
        raise ParamsError(f"{path}: {SECTION}: must be a table (published, cap), got {node!r}")
    published, cap = node.get("published", True), node.get("cap")
    if not isinstance(published, bool):
        raise ParamsError(f"{path}: {SECTION}.published: must be true or false, got {published!r}")
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
        raise ParamsError(f"{path}: {SECTION}.cap: must be null or a positive integer, got {cap!r}")
    return FullInputs(published, cap)


def step_budget(section: Mapping[str, Any], steps: int | None = None, path: Path = PARAMS_FILE) -> int | None:
    """A full fine-tune's steps: ``steps`` when given (a smoke run's ``--steps``), else its section's ``max_steps``
    (None: the recipe's epochs). A run on a few examples per group (``full_inputs.cap``) sets ``max_steps``, so that
    it proves the training runs and hands its checkpoint on without the recipe's epochs over them."""
    if steps is not None:
        return steps
    budget = section.get("max_steps")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
        raise ParamsError(f"{path}: max_steps: must be null or a positive integer, got {budget!r}")
    return budget
