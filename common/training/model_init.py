"""Where a run's weights start: from scratch, an open_clip pretrained tag, a local file, or the zoo. Each ``describe``
is portable provenance (names and hashes, never absolute paths); the trainer seeds every RNG before ``build``, so a
from-scratch model is the same on every rank and every rerun."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

import torch

from common.files.io import sha256_file
from common.zoo import create_model, get_spec, quiet_random_init_warning, register_local_configs
from common.zoo.trained import build_from_checkpoint


@dataclass(frozen=True)
class Initialized:
    model: torch.nn.Module
    transform: Callable
    arch: str


class Init(Protocol):
    def build(self) -> Initialized: ...
    def describe(self) -> dict: ...


def normalizer(transform) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean/std of the model's own preprocessing, so training sees exactly what evaluation sees."""
    for t in getattr(transform, "transforms", []):
        if type(t).__name__ == "Normalize":
            return torch.tensor(t.mean).view(1, 3, 1, 1), torch.tensor(t.std).view(1, 3, 1, 1)
    raise ValueError("model transform has no Normalize step")


@dataclass(frozen=True)
class FromScratch:
    """Random initialisation of an open_clip architecture (the workspace's tiny ones included)."""

    arch: str

    def build(self) -> Initialized:
        open_clip = register_local_configs()
        with quiet_random_init_warning():  # random weights are the point here
            model, _, transform = open_clip.create_model_and_transforms(self.arch, pretrained=None)
        return Initialized(model, transform, self.arch)

    def describe(self) -> dict:
        return {"kind": "scratch", "arch": self.arch}


@dataclass(frozen=True)
class FromPretrained:
    """An open_clip pretrained tag (downloaded or taken from open_clip's cache)."""

    arch: str
    pretrained: str
    cache_dir: str | None = None

    def build(self) -> Initialized:
        # deferred: loads open_clip only when called
        import open_clip

        model, _, transform = open_clip.create_model_and_transforms(
            self.arch, pretrained=self.pretrained, cache_dir=self.cache_dir)
        return Initialized(model, transform, self.arch)

    def describe(self) -> dict:
        return {"kind": "open_clip", "arch": self.arch, "pretrained": self.pretrained}


@dataclass(frozen=True)
class FromCheckpoint:
    """A local weights file for ``arch`` (safetensors or a weights-only torch file), loaded strictly."""

    arch: str
    path: Path

    def build(self) -> Initialized:
        model, transform = build_from_checkpoint(self.arch, Path(self.path))
        return Initialized(model, transform, self.arch)

    def describe(self) -> dict:
        return {"kind": "checkpoint", "arch": self.arch, "file": Path(self.path).name,
                "sha256": sha256_file(self.path)}


@dataclass(frozen=True)
class FromZoo:
    """A registered zoo model (``common.zoo.create_model(name).model``), whatever its origin."""

    name: str

    def build(self) -> Initialized:
        served = create_model(self.name)
        return Initialized(served.model, served.transform, served.spec.arch)

    def describe(self) -> dict:
        spec = get_spec(self.name)
        return {"kind": "zoo", "name": self.name, "arch": spec.arch,
                "weights": spec.pretrained if spec.pretrained is not None else spec.checkpoint}
