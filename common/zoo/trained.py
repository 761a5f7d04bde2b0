"""Weights this workspace trained (a paper's fine-tunes), served like the zoo's behind ``EmbeddingModel``, and
``build_from_checkpoint``, the one strict loader of a checkpoint into an open_clip architecture."""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Protocol, Sequence

import torch

from common.zoo import (
    ModelSpec, ModelUnavailable, OpenClipModel, create_model, load_state_dict, quiet_random_init_warning,
    register_local_configs)

Tokenize = Callable[[Sequence[str]], torch.Tensor]


def tokenizer_for(arch: str) -> Tokenize:
    """open_clip's tokenizer of ``arch`` (the zoo's local configs registered first)."""
    open_clip = register_local_configs()
    return open_clip.get_tokenizer(arch)


def build_from_checkpoint(arch: str, path: Path) -> tuple[torch.nn.Module, Callable]:
    """``arch`` (open_clip, the workspace's tiny configs included) with the weights of ``path`` loaded strictly, and
    its evaluation transform."""
    open_clip = register_local_configs()
    with quiet_random_init_warning():  # the weights are loaded (strictly) right below
        model, _, transform = open_clip.create_model_and_transforms(arch, pretrained=None, load_weights=False)
    load_state_dict(model, Path(path), f"{arch} from {Path(path).name}")
    return model, transform


class ServedEntry(Protocol):
    """What ``served`` needs of a table row: its name, its weights (None: the zoo model ``name``), its label."""

    name: str
    checkpoint: Path | None

    @property
    def label(self) -> str: ...


def served(entry: ServedEntry, arch: str, device: str = "cpu", family: str = "mini"):
    """The model behind the engine's interface: the zoo's, or a checkpoint of ``arch`` trained here, loaded
    strictly (``family``: the zoo family its spec is filed under)."""
    # deferred: loads open_clip only when called
    import open_clip

    if entry.checkpoint is None:
        return create_model(entry.name, device=device)
    if not Path(entry.checkpoint).is_file():
        raise ModelUnavailable(f"{entry.checkpoint}: no weights for {entry.name}; run the stage that trains it")
    model, transform = build_from_checkpoint(arch, Path(entry.checkpoint))
    spec = ModelSpec(name=entry.name, arch=arch, family=family, label=entry.label)
    return OpenClipModel(spec, model, transform, open_clip.get_tokenizer(arch), device)
