"""Which packages and which machine computed a number: recorded in cards and in training records, because the
workspace's bit-for-bit claims hold only for the same torch build on the same CPU kind (docs/reproducibility.md).

Read without importing the packages (``importlib.metadata``: torch's import alone takes seconds), except torch's CUDA
device names and thread count, asked of torch only when the caller already imported it.
"""
from __future__ import annotations

import os
import platform
import sys
from importlib import metadata
from pathlib import Path

PACKAGES = ("torch", "open_clip_torch", "transformers", "numpy")
"""The packages whose versions decide a model's numbers (open_clip's distribution is ``open_clip_torch``)."""


def versions() -> dict[str, str]:
    """Python's version and each of ``PACKAGES``' ("not installed" when absent)."""
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def cpuinfo_field(name: str) -> str | None:
    """The first ``name : value`` of Linux's ``/proc/cpuinfo`` (``model name``, ``vendor_id``), or None."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith(name) and ":" in line:
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def gpu_name(device: str) -> str | None:
    """The CUDA device's name when ``device`` is one and torch is already imported; else None."""
    torch = sys.modules.get("torch")
    if torch is None or not str(device).startswith("cuda") or not torch.cuda.is_available():
        return None
    return torch.cuda.get_device_name(int(str(device).partition(":")[2] or 0))


def hardware(device: str) -> dict:
    """The machine a card ran on: CPU model and core count, the device the model ran on and, on CUDA, its name."""
    cpu = cpuinfo_field("model name") or platform.processor() or platform.machine() or "unknown"
    out = {"cpu": cpu, "cpu_count": os.cpu_count(), "platform": platform.platform(), "device": device}
    gpu = gpu_name(device)
    if gpu is not None:
        out["gpu"] = gpu
    return out


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity mask, which a container or ``taskset`` narrows; all the
    machine's where there is none), for sizing worker pools."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def cpu_vendor() -> str:
    """The CPU's vendor (``GenuineIntel``, ``AuthenticAMD``; Linux ``/proc/cpuinfo``), or "unknown"."""
    return cpuinfo_field("vendor_id") or "unknown"


def training_environment(device: str) -> dict:
    """A training record's ``environment``: the package versions and what docs/reproducibility.md says decides a
    step's bits (the CPU vendor and architecture, torch's intra-op threads, the device and, on CUDA, its name). Not
    the CPU model, core count, kernel or host: two AMD EPYC kinds write the same checkpoints, and their records must
    stay byte-identical too (a record is a DVC output)."""
    torch = sys.modules.get("torch")
    machine = {"cpu_vendor": cpu_vendor(), "architecture": platform.machine(), "device": str(device),
               "torch_threads": torch.get_num_threads() if torch is not None else None}
    gpu = gpu_name(device)
    if gpu is not None:
        machine["gpu"] = gpu
    return {"versions": versions(), "hardware": machine}
