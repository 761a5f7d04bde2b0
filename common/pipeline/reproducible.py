"""The CPU reproducibility profile: the settings under which the mini profile's training and evaluation give the
same bits whatever the machine's instruction set and core count (measured: docs/reproducibility.md, "Another
instruction set" and "NumPy's exp and log"): the three libraries' instruction sets pinned to AVX2 (``CPU_PINS``),
torch's threads fixed (``CPU_THREADS``), and ``logistic`` on the C library's ``exp``.

The pins are read when each library first runs, not at import, and setting them later has no effect and no warning;
so ``reexec_pinned`` restarts the process with them before any tensor work. ``VLC_CPU_PROFILE=off`` opts out.
"""
from __future__ import annotations

import math
import os
import platform
import sys
from typing import Iterable, Mapping

import numpy as np

CPU_PINS: dict[str, str] = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"}
CPU_THREADS = 2
OPT_OUT = "VLC_CPU_PROFILE"


def enabled(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the profile is on in ``environ`` (default: this process's environment)."""
    return environ.get(OPT_OUT, "on").lower() not in ("off", "0", "false", "no")


def pinned() -> bool:
    """Whether this process runs with every pin in its environment (set before it started)."""
    return all(os.environ.get(k) == v for k, v in CPU_PINS.items())


def reexec_pinned() -> None:
    """Restart this very command with the pins in its environment, unless they are set (or the profile is off);
    first thing in a command that trains or evaluates on the CPU (``os.execve``: same PID, so ``dvc`` keeps track)."""
    if not enabled() or pinned():
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], {**os.environ, **CPU_PINS})


def fix_threads() -> None:
    """Fix torch's intra-op threads (and with them how reductions split), unless the profile is off."""
    if enabled():
        # deferred: loads torch only when called
        import torch

        torch.set_num_threads(CPU_THREADS)


def pin() -> None:
    """``reexec_pinned`` then ``fix_threads``: the whole CPU profile, first thing in a command that runs on the CPU."""
    reexec_pinned()
    fix_threads()


def describe() -> dict:
    """The profile as a run's provenance records it (identical on every machine that honours it)."""
    if not enabled():
        return {"cpu_profile": "off"}
    return {"cpu_profile": {**CPU_PINS, "threads": CPU_THREADS}}


def machine() -> dict:
    """What this machine and build actually ran with: for logs, never for DVC-hashed outputs."""
    # deferred: loads torch only when called
    import torch

    return {"torch": torch.__version__, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "threads": torch.get_num_threads(), "machine": platform.processor() or platform.machine(),
            "pins_in_environment": {k: os.environ.get(k) for k in CPU_PINS}}


def logistic(z: Iterable[float], clip: float = 50.0):
    """``1 / (1 + exp(-z))`` elementwise (``z`` clipped to +-``clip``), as a float64 array whose bits do not depend on
    the CPU's instruction set: ``math.exp`` per element, not NumPy's AVX-512 ``exp`` (see the module docstring)."""
    values = np.asarray(z, dtype=np.float64).ravel()
    return np.fromiter((1.0 / (1.0 + math.exp(-min(max(v, -clip), clip))) for v in values.tolist()),
                       dtype=np.float64, count=values.size).reshape(np.shape(z))
