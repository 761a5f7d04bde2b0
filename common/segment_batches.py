"""Two more batch shapes for fine-tuning on rendered sets, beside ``common.finetune.CaptionBatches``:

* ``PairedImageBatches``: a caption batch whose samples also carry aligned extra images (a hard negative image, a
  distractor) as further image segments: images [I, *extras], texts [c, *extra texts] per sample;
* ``LabelledBatches``: one input per sample (an image, or a text's tokens) with a 0/1 label, for a linear probe on a
  frozen tower.

Both keep the trainer's contract: the batch of step s is a pure function of (seed, s) (an epoch is
``default_rng([seed, 0, epoch])``'s permutation, the tail that does not fill a batch dropped, as ``CaptionBatches``).
A module of its own, not an edit of ``common.finetune``: every paper's fine-tuning stage depends on that file.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import torch

from common.finetune import CaptionBatches


class PairedImageBatches(CaptionBatches):
    """``CaptionBatches`` whose samples carry ``extra_images`` (each (N, 3, H, W), aligned with ``images``) as image
    segments after the image: ``images`` (B, 1 + len(extra_images), 3, H, W)."""

    def __init__(self, images: torch.Tensor, captions: torch.Tensor, extra_images: Sequence[torch.Tensor],
                 extras: Sequence[torch.Tensor] = (), name: str = "paired-images", fields: Mapping | None = None):
        super().__init__(images, captions, extras, name, fields)
        for k, extra in enumerate(extra_images):
            if extra.shape != images.shape:
                raise ValueError(f"PairedImageBatches: extra image segment {k} {tuple(extra.shape)} must match the "
                                 f"images {tuple(images.shape)}")
        self.extra_images = tuple(extra_images)

    def batch(self, seed: int, step: int, size: int, rows: slice = slice(None)) -> dict[str, torch.Tensor]:
        out = super().batch(seed, step, size, rows)
        idx = torch.from_numpy(self.draws(seed, step, size)[0][rows])
        out["images"] = torch.stack([self.images[idx], *(extra[idx] for extra in self.extra_images)], dim=1)
        return out


class LabelledBatches:
    """Inputs with 0/1 labels, one segment per sample: ``key`` is "images" ((N, 3, H, W) uint8) or "texts" ((N, L)
    tokens). A batch holds ``key`` (B, 1, ...) and ``labels`` (B,) float."""

    def __init__(self, inputs: torch.Tensor, labels: torch.Tensor, key: str, name: str = "labelled"):
        if key not in ("images", "texts"):
            raise ValueError(f"LabelledBatches: key must be 'images' or 'texts', not {key!r}")
        if len(inputs) != len(labels) or labels.ndim != 1:
            raise ValueError("LabelledBatches: one label per input")
        if not bool(((labels == 0) | (labels == 1)).all()):
            raise ValueError("LabelledBatches: labels must be 0 or 1")
        self.inputs, self.labels, self.key, self.name = inputs, labels.float(), key, name
        self._perm: tuple[tuple[int, int], np.ndarray] | None = None

    def steps_per_epoch(self, size: int) -> int:
        if size > len(self.inputs):
            raise ValueError(f"batch of {size} is larger than the {len(self.inputs)} labelled inputs")
        return len(self.inputs) // size

    def batch(self, seed: int, step: int, size: int, rows: slice = slice(None)) -> dict[str, torch.Tensor]:
        epoch, j = divmod(step, self.steps_per_epoch(size))
        if self._perm is None or self._perm[0] != (seed, epoch):
            self._perm = ((seed, epoch), np.random.default_rng([seed, 0, epoch]).permutation(len(self.inputs)))
        idx = torch.from_numpy(self._perm[1][j * size: (j + 1) * size][rows])
        return {self.key: self.inputs[idx].unsqueeze(1), "labels": self.labels[idx]}

    def describe(self) -> dict:
        return {"name": self.name, "key": self.key, "n": len(self.inputs), "positives": int(self.labels.sum())}
