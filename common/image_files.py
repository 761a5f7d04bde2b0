"""Training images decoded from files per batch (COCO for ARO's and SugarCrepe's full-profile fine-tunes).

Kept out of ``common/training`` on purpose: the trainer's stages depend on every module there, and a batch source
that only the full profile uses should not make the mini family retrain when it changes.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from common.errors import WorkspaceError


class ImageFileError(WorkspaceError):
    """An image file that cannot be decoded (the message names it)."""


@dataclass(frozen=True)
class FileImages:
    """Image files decoded per batch on a thread pool: resized (shorter side, bicubic) and centre-cropped to
    ``size``, as open_clip's evaluation transform does before normalising (the trainer normalises)."""

    paths: tuple[Path, ...]
    size: int
    workers: int = 8

    def __len__(self) -> int:
        return len(self.paths)

    def _load(self, index: int) -> np.ndarray:
        from PIL import Image

        path = self.paths[index]
        try:
            with Image.open(path) as image:
                image = image.convert("RGB")
                w, h = image.size
                scale = self.size / min(w, h)
                image = image.resize((max(self.size, round(w * scale)), max(self.size, round(h * scale))),
                                     Image.Resampling.BICUBIC)
                w, h = image.size
                left, top = (w - self.size) // 2, (h - self.size) // 2
                return np.asarray(image.crop((left, top, left + self.size, top + self.size)))
        except OSError as exc:
            raise ImageFileError(f"{path}: cannot read image ({exc})") from None

    def get(self, indices: np.ndarray) -> torch.Tensor:
        """uint8 pixels (n, 3, size, size) of the given images."""
        with ThreadPoolExecutor(self.workers) as pool:
            arrays = list(pool.map(self._load, [int(i) for i in indices]))
        return torch.from_numpy(np.stack(arrays)).permute(0, 3, 1, 2)
