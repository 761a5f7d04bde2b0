"""How long a fine-tune trains in a rehearsal: ``rehearsal.cap`` rows' worth of steps, not the recipe's epochs.

A rehearsal proves that a fine-tune runs and hands its checkpoint on, not what it learns; its stand-in sets are sized
for the stages that filter them (SugarCrepe's Algorithm 1 keeps a batch of every kind only from a few dozen rows), so
the fine-tunes on them stop after ``ceil(cap / batch)`` steps. Imported by the full profile's training stages only.
"""
from __future__ import annotations

from typing import Any, Mapping

from common.rehearsal.settings import rehearsal


def rehearsal_steps(stage_values: Mapping[str, Any], batch_size: int, steps: int | None = None) -> int | None:
    """``steps`` when given (a smoke run's ``--steps``); in a rehearsal with a cap, ``ceil(cap / batch_size)``; else
    None (the recipe's epochs). ``stage_values``: the stage's declared parameters (``rehearsal`` among them)."""
    if steps is not None:
        return steps
    cap = rehearsal(dict(stage_values)).cap
    return None if cap is None else -(-cap // batch_size)
