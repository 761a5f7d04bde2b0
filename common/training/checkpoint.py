"""Weights (safetensors), their provenance sidecar and the resume state, all written atomically. The sidecar is
identical across reruns (DVC hashes it); the resume state is read back with ``weights_only=True`` (plain containers
and tensors only, so loading a file cannot run code)."""
from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import torch

from common.files.io import atomic_path


def portable_state(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The state dict on CPU, each tensor contiguous (safetensors refuses views)."""
    return {k: v.detach().cpu().contiguous() for k, v in module.state_dict().items()}


def save_weights(path: Path, state: Mapping[str, torch.Tensor]) -> Path:
    # deferred: loads safetensors only when called
    from safetensors.torch import save

    # save_file's bytes, written through a Python file: a full disk is the OSError atomic_path reports (safetensors'
    # own file writer raises a SafetensorError)
    data = save(dict(state))
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        fh.write(data)
    return Path(path)


def load_weights(path: Path) -> dict[str, torch.Tensor]:
    # deferred: loads safetensors only when called
    from safetensors.torch import load_file

    return load_file(str(path))


def save_resume(path: Path, state: Mapping[str, Any]) -> Path:
    # through a Python file: a full disk is the OSError atomic_path reports (torch's own file writer raises a
    # RuntimeError), and the archive's inner folder is "archive", not the random temporary file's name
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        torch.save(dict(state), fh)
    return Path(path)


def load_resume(path: Path) -> dict[str, Any]:
    return torch.load(path, map_location="cpu", weights_only=True)


def capture_rng(device: str = "cpu") -> dict[str, Any]:
    """Python, numpy, torch (and this rank's CUDA) generator states, as weights-only-loadable values."""
    version, mt, gauss = random.getstate()
    name, keys, pos, has_gauss, cached = np.random.get_state()
    state: dict[str, Any] = {
        "python": [version, list(mt), gauss],
        "numpy": [name, torch.from_numpy(keys.astype(np.int64)), int(pos), int(has_gauss), float(cached)],
        "torch": torch.get_rng_state(),
    }
    if str(device).startswith("cuda"):
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def restore_rng(state: Mapping[str, Any], device: str = "cpu") -> None:
    version, mt, gauss = state["python"]
    random.setstate((version, tuple(mt), gauss))
    name, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((name, keys.numpy().astype(np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and str(device).startswith("cuda"):
        torch.cuda.set_rng_state(state["cuda"], device)


def seed_everything(seed: int) -> None:
    """Python, numpy and torch (all devices) from one seed; 0 is a seed like any other."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
