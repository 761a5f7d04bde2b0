"""Where and with what a card was computed: package versions, the hardware, and the wall time of its evaluation, so
that two cards' numbers (and their cost) can be put side by side knowing what produced each.

Read without importing the packages (``importlib.metadata``: torch's import alone takes seconds), except torch's CUDA
device names, asked of torch only when the card already imported it.
"""
from __future__ import annotations

import platform
import sys
from importlib import metadata
from pathlib import Path

PACKAGES = ("torch", "open_clip_torch", "transformers", "numpy")
"""The packages whose versions decide a card's numbers (open_clip's distribution is ``open_clip_torch``)."""


def versions() -> dict[str, str]:
    """Python's version and each of ``PACKAGES``' ("not installed" when absent)."""
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's model name (Linux: ``/proc/cpuinfo``; elsewhere ``platform.processor()``), or "unknown"."""
    try:
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith("model name") and ":" in line:
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def hardware(device: str) -> dict:
    """The machine the card ran on: CPU model and core count, the device the model ran on and, on CUDA, its name."""
    import os

    out = {"cpu": cpu_model(), "cpu_count": os.cpu_count(), "platform": platform.platform(), "device": device}
    torch = sys.modules.get("torch")
    if torch is not None and str(device).startswith("cuda") and torch.cuda.is_available():
        index = int(str(device).partition(":")[2] or 0)
        out["gpu"] = torch.cuda.get_device_name(index)
    return out


def footer(provenance: dict) -> str:
    """The Markdown footer line of a card: wall time, versions, hardware, commit."""
    env = provenance.get("environment") or {}
    seconds = provenance.get("evaluation_seconds")
    parts = []
    if seconds is not None:
        parts.append(f"evaluated in {seconds:.1f} s")
    hw = env.get("hardware") or {}
    if hw:
        where = f"{hw.get('cpu', 'unknown CPU')} ({hw.get('cpu_count')} cores)"
        parts.append(f"on {hw.get('gpu') or hw.get('device', 'cpu')}, {where}")
    if env.get("versions"):
        parts.append(", ".join(f"{k} {v}" for k, v in env["versions"].items()))
    if provenance.get("commit"):
        parts.append(f"workspace commit {provenance['commit']}")
    return "; ".join(parts)
