"""Helpers shared by the training tests: the arithmetic of hand-computed losses, a one-thread context, and a run
under the CPU reproducibility profile."""
from __future__ import annotations

import contextlib
import hashlib
import math
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from common.paths import ROOT
from common.pipeline.machine import cpu_vendor
from common.pipeline.reproducible import CPU_PINS, OPT_OUT

PINNED_ON = ("2.14.1+cu130", "AuthenticAMD")
"""torch build and CPU vendor the pinned weights of the original training loop were taken with, under the CPU
profile's kernels (AVX2: docs/reproducibility.md, measured the same on AVX2 and AVX-512 AMD EPYCs); another torch
rounds otherwise, and an Intel CPU too (MKL does not honour its pin on AMD, so the two vendors' products differ)."""


def dot(u, v) -> float:
    return sum(a * b for a, b in zip(u, v))


def ce(row: list[float], label: int) -> float:
    """Cross-entropy of one row of logits: log(sum_j exp(row_j)) - row_label."""
    return math.log(sum(math.exp(x) for x in row)) - row[label]


def mean(xs) -> float:
    xs = list(xs)
    return sum(xs) / len(xs)


def t(rows) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float64)


S = 2.0  # logit scale (the multiplier, i.e. exp of the stored log)
E1, E2, A, B_ = [1.0, 0.0], [0.0, 1.0], [0.6, 0.8], [0.8, 0.6]


@contextlib.contextmanager
def one_thread():
    """Float sums are split across threads, so a bit-exact pin holds for one thread count: 1 here."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class Interrupted(RuntimeError):
    """What ``KilledAt`` raises: a run stopped as a kill would stop it."""


@dataclass
class KilledAt:
    """A batch source that dies when asked for step ``at``, as a killed run would (in the training process, or in a
    loader worker, whence it comes back as itself)."""

    inner: object
    at: int

    def batch(self, seed, step, size, rows=slice(None)):
        if step == self.at:
            raise Interrupted(f"killed at step {step}")
        return self.inner.batch(seed, step, size, rows)

    def describe(self):
        return self.inner.describe()


def mini_section(**changes) -> dict:
    """A mini profile's training section (``params.yaml <paper>.mini``'s keys) for a few-step test run: what the
    removed ``RunParams`` defaulted, no resume states; ``changes`` replace or add keys."""
    return {"base": "unused", "steps": 2, "batch_size": 4, "lr": 1e-3, "warmup_steps": 1, "weight_decay": 0.1,
            "seed": 0, "checkpoint_every": 0, **changes}


def full_section(**changes) -> dict:
    """A full profile's training section (epochs of a file-backed set) for a few-step test run; ``changes`` replace
    or add keys."""
    return {"base": "unused", "image_size": 48, "seed": 0, "lr": 1e-3, "epochs": 1, "batch_size": 4,
            "warmup_steps": 1, "weight_decay": 0.1, "checkpoint_every": 0, **changes}


def pinned_run(code: str, *args: Path) -> tuple[str, float]:
    """The sha256 of the weights ``code`` writes to its last argument, and the final loss it prints (its last word),
    run in a fresh interpreter under the CPU profile (``common.pipeline.reproducible.CPU_PINS``), as the pipeline's
    training runs. The pins are read when torch starts, so this process's own kernels cannot be changed: on an
    AVX-512 machine an in-process run rounds otherwise and could only be skipped. Skips off ``PINNED_ON``."""
    here = (torch.__version__, cpu_vendor())
    if here != PINNED_ON:
        pytest.skip(f"weights pinned with torch {PINNED_ON[0]} on {PINNED_ON[1]} CPUs; this is {here}")
    env = {**{k: v for k, v in os.environ.items() if k != OPT_OUT}, **CPU_PINS}
    done = subprocess.run([sys.executable, "-c", code, *map(str, args)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return hashlib.sha256(Path(args[-1]).read_bytes()).hexdigest(), float(done.stdout.split()[-1])
