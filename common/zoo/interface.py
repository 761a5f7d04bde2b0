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
INSTALL_HINT = "pip install -e '.[hf]'"


def import_transformers(who: str, error: type[WorkspaceError] = ModelUnavailable):
    """The optional ``transformers`` package, or ``error`` saying that ``who`` needs it and how to install it."""
    try:
        import transformers
    except ImportError as exc:
        raise error(f"{who} needs the Hugging Face transformers package, which is not installed here; install the "
                    f"optional extra: {INSTALL_HINT}") from exc
    return transformers


def digest_weights(digest, model: torch.nn.Module) -> None:
    """Every weight tensor (name, dtype, shape, bytes) into ``digest``: the backends' fingerprints share it."""
    for key, tensor in sorted(model.state_dict().items()):
        t = tensor.detach().cpu().contiguous()
        digest.update(f"{key}:{t.dtype}:{tuple(t.shape)}".encode())
        digest.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
