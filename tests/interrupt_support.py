"""Interrupting a writer at every moment it moves a file, and checking what it left (``tests/test_writers_interrupted.py``
and the full-profile set builders' tests)."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Callable
from unittest import mock

import numpy as np

SAMPLED_MOMENTS = 12
"""At most this many interruption points per writer, spread over its run (all of them when it has fewer)."""


def digest(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith((".staging", ".previous")))


class Interrupt:
    """``os.replace`` that raises ``KeyboardInterrupt`` on its ``at``-th call (never when ``at`` is None); counts."""

    def __init__(self, at: int | None):
        self.at, self.calls, self.real = at, 0, os.replace

    def __call__(self, *args, **kwargs):
        self.calls += 1
        if self.calls == self.at:
            raise KeyboardInterrupt
        return self.real(*args, **kwargs)


def moments(total: int) -> list[int]:
    if total <= SAMPLED_MOMENTS:
        return list(range(1, total + 1))
    picked = set(np.linspace(1, total, SAMPLED_MOMENTS).round().astype(int).tolist())
    return sorted(picked | {1, total})  # the first file and the commit's last move always


def count_moves(run: Callable[[], object]) -> int:
    """How many times ``run`` moves a file (``os.replace``), run once uninterrupted."""
    counter = Interrupt(None)
    with mock.patch.object(os, "replace", counter):
        run()
    return counter.calls


def interrupt_at_every_move(run: Callable[[], object], total: int, check: Callable[[int], None],
                            before_each: Callable[[], None] = lambda: None) -> None:
    """Run ``run`` interrupted (``KeyboardInterrupt``) at each of ``moments(total)`` moves, then ``check(at)``:
    ``before_each`` resets what a run may leave (default: nothing)."""
    for at in moments(total):
        before_each()
        with mock.patch.object(os, "replace", Interrupt(at)):
            try:
                run()
            except KeyboardInterrupt:
                pass
            else:
                raise AssertionError(f"the run was not interrupted at move {at} of {total}: it moved fewer files")
        check(at)


def unchanged(folder: Path, before: dict[str, str], what: str) -> Callable[[int], None]:
    """A ``check`` for ``interrupt_at_every_move``: ``folder`` holds ``before`` byte for byte, no staging left."""

    def check(at: int) -> None:
        assert digest(folder) == before, f"{what}: interrupted at move {at}, the files are a mix"
        assert not leftovers(folder) and not leftovers(folder.parent), f"{what}: interrupted at move {at}, staging left"

    return check
