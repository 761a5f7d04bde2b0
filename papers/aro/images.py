"""Fine-tuning images held in memory, and image and caption embeddings by a model: what the neighbours stage, the
batch source and the validation retrieval share (its own module, so none of them reruns for another's edit)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch

ENCODE_BATCH = 256


class ImageStore(Protocol):
    """Images by index: in memory (``ArrayImages``) or decoded from files per batch (``common.training.files``)."""

    def __len__(self) -> int: ...
    def get(self, indices: np.ndarray, draw: tuple[int, ...] | None = None) -> torch.Tensor:
        """uint8 pixels (n, 3, H, W) of the given images, in the model's input size; ``draw`` (seed, step, segment)
        keys a training batch's random augmentation where the store has one (files under NegCLIP's recipe)."""
        ...


@dataclass(frozen=True)
class ArrayImages:
    """Rendered images held in memory as (N, 3, H, W) uint8 (an NHWC array viewed channels-first)."""

    pixels: torch.Tensor

    @classmethod
    def from_nhwc(cls, images: np.ndarray) -> "ArrayImages":
        return cls(torch.from_numpy(np.ascontiguousarray(images)).permute(0, 3, 1, 2).contiguous())

    def __len__(self) -> int:
        return len(self.pixels)

    def get(self, indices: np.ndarray, draw: tuple[int, ...] | None = None) -> torch.Tensor:
        """The rendered images as they are (the mini recipe has no augmentation: ``draw`` is ignored)."""
        return self.pixels[torch.from_numpy(np.asarray(indices, dtype=np.int64))]


@torch.no_grad()
def encode_images(model: torch.nn.Module, images: ImageStore, batch: int = ENCODE_BATCH) -> torch.Tensor:
    """L2-normalised image embeddings (N, D) on the CPU, the pixels normalised as open_clip's evaluation does."""
    # deferred: loads open_clip only when called
    import open_clip

    device = next(model.parameters()).device
    cfg = open_clip.get_model_preprocess_cfg(model)
    mean, std = (torch.tensor(cfg[k]).view(1, 3, 1, 1).to(device) for k in ("mean", "std"))
    out = []
    for start in range(0, len(images), batch):
        pixels = images.get(np.arange(start, min(start + batch, len(images)))).to(device)
        out.append(model.encode_image((pixels.float() / 255.0 - mean) / std, normalize=True).float().cpu())
    return torch.cat(out)


@torch.no_grad()
def encode_texts(model: torch.nn.Module, tokens: torch.Tensor, batch: int = ENCODE_BATCH) -> torch.Tensor:
    # deferred: loads PIL only when called
    from common.zoo import encode_text, padding_is_inert

    device = next(model.parameters()).device
    unpadded = padding_is_inert(model)
    return torch.cat([encode_text(model, chunk.to(device), unpadded).float().cpu() for chunk in tokens.split(batch)])
