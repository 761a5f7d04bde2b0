"""What a caller gets from the zoo, whatever the backend: the ``EmbeddingModel`` interface, the factory's signature,
and ``ModelUnavailable``, raised (never a fallback to random weights) when a model's weights cannot be had."""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Protocol, Sequence

import torch

from common.errors import WorkspaceError


class ModelUnavailable(WorkspaceError, RuntimeError):
    """The weights of a registered model cannot be obtained here; the message says how to get them."""


class EmbeddingModel(Protocol):
    """What the scoring engine needs from a model, whatever its backend."""

    name: str
    fingerprint: str
    load_image: Callable[[Path], torch.Tensor]

    def encode_images(self, pixels: torch.Tensor) -> torch.Tensor: ...
    def tokenize(self, texts: Sequence[str]) -> torch.Tensor: ...
    def encode_tokens(self, tokens: torch.Tensor) -> torch.Tensor: ...


ModelFactory = Callable[..., EmbeddingModel]
"""``create_model(name, device=...)``: the zoo's, or a stand-in in tests."""


def digest_weights(digest, model: torch.nn.Module) -> None:
    """Every weight tensor (name, dtype, shape, bytes) into ``digest``: the backends' fingerprints share it."""
    for key, tensor in sorted(model.state_dict().items()):
        t = tensor.detach().cpu().contiguous()
        digest.update(f"{key}:{t.dtype}:{tuple(t.shape)}".encode())
        digest.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
