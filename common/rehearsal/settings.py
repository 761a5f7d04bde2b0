"""``params.yaml rehearsal``, as a stage reads it: whether this workspace is a rehearsal's copy (the full profile on
stand-ins, never the papers' numbers: ``common.rehearsal``) and its size cap. Only the rehearsal's own copy of the file
turns it on; the workspace's says ``enabled: false``, ``cap: null``.

A stage that reads it declares it among its DVC params (``rehearsal`` for both keys, ``rehearsal.enabled`` for the
switch), so ``common.params.stage_params`` hands it over. Kept out of ``common.params``, which every stage imports:
only the stages that read the section depend on this module.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common.params import PARAMS_FILE, ParamsError


@dataclass(frozen=True)
class Rehearsal:
    enabled: bool = False
    cap: int | None = None
    """At most this many examples per benchmark group are scored (None: all); only in a rehearsal."""


def rehearsal(params: dict[str, Any], path: Path = PARAMS_FILE) -> Rehearsal:
    """The ``rehearsal`` section of a stage's parameters (``stage_params``), checked: ``enabled`` true or false, ``cap``
    null or a positive integer, and a cap outside a rehearsal refused (a capped full run would be audited as the
    paper's numbers). A section the stage did not declare reads as off."""
    node = params.get("rehearsal", {})
    if not isinstance(node, dict):
        raise ParamsError(f"{path}: rehearsal: must be a table (enabled, cap), got {node!r}")
    enabled, cap = node.get("enabled", False), node.get("cap")
    if not isinstance(enabled, bool):
        raise ParamsError(f"{path}: rehearsal.enabled: must be true or false, got {enabled!r}")
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
        raise ParamsError(f"{path}: rehearsal.cap: must be null or a positive integer, got {cap!r}")
    if cap is not None and not enabled:
        raise ParamsError(f"{path}: rehearsal.cap: {cap} outside a rehearsal (rehearsal.enabled: false); only a "
                          "rehearsal caps the sets (a capped full run would be audited as the paper's numbers): set it "
                          "back to null")
    return Rehearsal(enabled, cap)
