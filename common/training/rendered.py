"""Batch sources over sets held in memory (the mini profile's rendered sets): what every mini fine-tune trains on, each
a pure function of (seed, step) as the trainer needs."""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import torch

from common.files.tasks import DatasetError
from common.training.data import EpochShuffled, Tokenize


class CaptionBatches(EpochShuffled):
    """Image-caption pairs, ``images`` (N, 3, H, W) uint8 and ``captions`` (N, P, L) tokens, each caption with the
    aligned texts of ``extras`` (each (N, P, L)) as further text segments; ``default_rng([seed, 1, s])`` picks one
    caption per image. The draws ignore ``extras``, so runs with different extras see the same captions in the same
    order. ``fields``: what ``describe`` reports beyond the name and sizes (part of the record and resume key)."""

    unit = "training images"

    def __init__(self, images: torch.Tensor, captions: torch.Tensor, extras: Sequence[torch.Tensor] = (),
                 name: str = "captions", fields: Mapping | None = None):
        if images.ndim != 4 or captions.ndim != 3 or len(images) != len(captions):
            raise ValueError("CaptionBatches: need images (N, 3, H, W) and caption tokens (N, captions_per_image, L)")
        for k, extra in enumerate(extras):
            if extra.shape != captions.shape:
                raise ValueError(f"CaptionBatches: extra text segment {k} {tuple(extra.shape)} must match captions "
                                 f"{tuple(captions.shape)}")
        self.images, self.captions, self.extras, self.name = images, captions, tuple(extras), name
        self.fields = dict(fields) if fields is not None else {"extra_text_segments": len(self.extras)}
        self.n_rows = len(images)

    def draws(self, seed: int, step: int, size: int) -> tuple[np.ndarray, np.ndarray]:  # type: ignore[override]
        """(image indices, caption index per image) of one step's global batch."""
        idx = super().draws(seed, step, size)
        pick = np.random.default_rng([seed, 1, step]).integers(0, self.captions.shape[1], size)
        return idx, pick

    def batch(self, seed: int, step: int, size: int, rows: slice = slice(None)) -> dict[str, torch.Tensor]:
        idx, pick = self.draws(seed, step, size)
        idx, pick = torch.from_numpy(idx[rows]), torch.from_numpy(pick[rows])
        texts = [self.captions[idx, pick], *(extra[idx, pick] for extra in self.extras)]
        return {"images": self.images[idx].unsqueeze(1), "texts": torch.stack(texts, dim=1)}

    def describe(self) -> dict:
        return {"name": self.name, "n_images": len(self.images), "captions_per_image": int(self.captions.shape[1]),
                **self.fields}


def pixels(images: np.ndarray) -> torch.Tensor:
    """(N, H, W, 3) uint8 as rendered to the (N, 3, H, W) uint8 the batches hold (the trainer normalises)."""
    return torch.from_numpy(np.ascontiguousarray(images)).permute(0, 3, 1, 2).contiguous()


def caption_tokens(tokenize: Tokenize, texts: Sequence[Sequence[str]]) -> torch.Tensor:
    """Texts per image (N lists of P) tokenized into an (N, P, L) grid."""
    n = len(texts)
    per_image = {len(t) for t in texts}
    if len(per_image) != 1:
        raise ValueError(f"caption_tokens: every image needs the same number of texts, got {sorted(per_image)}")
    return tokenize([t for image in texts for t in image]).view(n, per_image.pop(), -1)


def refuse_same_tokens(captions: torch.Tensor, other: torch.Tensor, texts: Sequence[Sequence[str]], what: str,
                       where: str) -> None:
    """A ``DatasetError`` naming the first (image, caption) whose ``what`` tokenizes exactly like the caption (cut at
    the context length, lowercased by CLIP's tokenizer): a loss would push a text away from itself."""
    same = (other == captions).all(-1).nonzero()
    if len(same):
        i, j = (int(x) for x in same[0])
        raise DatasetError(f"{where}: image {i}: caption {j}: its {what} tokenizes like the caption "
                           f"({texts[i][j]!r}; {len(same)} such pairs)")


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


class LabelledBatches(EpochShuffled):
    """Inputs with 0/1 labels, one segment per sample: ``key`` is "images" ((N, 3, H, W) uint8) or "texts" ((N, L)
    tokens). A batch holds ``key`` (B, 1, ...) and ``labels`` (B,) float."""

    unit = "labelled inputs"

    def __init__(self, inputs: torch.Tensor, labels: torch.Tensor, key: str, name: str = "labelled"):
        if key not in ("images", "texts"):
            raise ValueError(f"LabelledBatches: key must be 'images' or 'texts', not {key!r}")
        if len(inputs) != len(labels) or labels.ndim != 1:
            raise ValueError("LabelledBatches: one label per input")
        if not bool(((labels == 0) | (labels == 1)).all()):
            raise ValueError("LabelledBatches: labels must be 0 or 1")
        self.inputs, self.labels, self.key, self.name = inputs, labels.float(), key, name
        self.n_rows = len(inputs)

    def batch(self, seed: int, step: int, size: int, rows: slice = slice(None)) -> dict[str, torch.Tensor]:
        idx = torch.from_numpy(self.draws(seed, step, size)[rows])
        return {self.key: self.inputs[idx].unsqueeze(1), "labels": self.labels[idx]}

    def describe(self) -> dict:
        return {"name": self.name, "key": self.key, "n": len(self.inputs), "positives": int(self.labels.sum())}
