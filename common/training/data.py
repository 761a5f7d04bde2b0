"""Batch sources: the global batch of step s is a pure function of (seed, s), which makes resuming and DDP sharding
exact; a batch's layout: docs/training.md, "Three plug points"."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol, Sequence

import numpy as np
import torch

from common.files.arrays import load_array
from common.files.jsonl import read_json

Batch = dict[str, torch.Tensor]
Tokenize = Callable[[Sequence[str]], torch.Tensor]


class BatchSource(Protocol):
    def batch(self, seed: int, step: int, size: int, rows: slice = slice(None)) -> Batch:
        """Rows ``rows`` of the global batch of ``size`` samples for 0-based ``step``."""
        ...

    def describe(self) -> dict:
        """What the data is, for the provenance sidecar: JSON-able, no absolute paths."""
        ...


class EpochShuffled:
    """A batch source whose epoch is ``default_rng([seed, 0, epoch])``'s permutation of its ``n`` rows (the tail that
    does not fill a batch dropped), kept for the epoch. ``size`` is always what ``batch`` takes; a source whose row
    holds several samples says how many rows that is (``rows_per_step``), so no caller converts."""

    n_rows: int
    unit = "training rows"
    """What an error calls the rows."""
    _perm: tuple[tuple[int, int], np.ndarray] | None = None

    def rows_per_step(self, size: int) -> int:
        """The rows a step of ``size`` draws: one per sample here."""
        return size

    def steps_per_epoch(self, size: int) -> int:
        rows = self.rows_per_step(size)
        if rows > self.n_rows:
            raise ValueError(f"batch of {size} is larger than the {self.n_rows} {self.unit}")
        return self.n_rows // rows

    def draws(self, seed: int, step: int, size: int) -> np.ndarray:
        """The rows of one step's global batch."""
        epoch, j = divmod(step, self.steps_per_epoch(size))
        rows = self.rows_per_step(size)
        if self._perm is None or self._perm[0] != (seed, epoch):
            self._perm = ((seed, epoch), np.random.default_rng([seed, 0, epoch]).permutation(self.n_rows))
        return self._perm[1][j * rows: (j + 1) * rows]


class MiniWorldBatches:
    """Image-caption pairs in the mini world's layout (``images.npy`` uint8 NHWC, ``captions.json`` lists), drawn
    exactly as the mini family's original loop drew them: one sequential ``default_rng(seed)`` stream (a permutation
    per epoch, the tail dropped; per step one caption per image), replayed up to the asked step (memoised)."""

    def __init__(self, images: torch.Tensor, tokens: torch.Tensor):
        if images.ndim != 4 or tokens.ndim != 3 or len(images) != len(tokens):
            raise ValueError("MiniWorldBatches: need images (N, 3, H, W) and tokens (N, captions_per_image, L)")
        self.images = images
        self.tokens = tokens
        self._replay: dict | None = None

    @classmethod
    def load(cls, train_dir: Path, n_images: int, tokenizer: Callable) -> "MiniWorldBatches":
        """The first ``n_images`` pairs of ``train_dir``, every caption tokenised once."""
        train_dir = Path(train_dir)
        images = load_array(train_dir / "images.npy", mmap=True)
        captions = read_json(train_dir / "captions.json", list, "rerun the stage that renders the training set")
        if n_images > len(images):
            raise ValueError(f"{train_dir}: asked for {n_images} images, the training set has {len(images)}")
        # Same tensor (and memory layout: an NHWC buffer viewed as NCHW) as the original loop, so
        # convolution kernels see identical strides and the weights match it bit for bit.
        pixels = torch.from_numpy(np.array(images[:n_images])).permute(0, 3, 1, 2)
        captions = captions[:n_images]
        per_image = len(captions[0])
        if any(len(c) != per_image for c in captions):
            raise ValueError(f"{train_dir / 'captions.json'}: every image needs {per_image} captions")
        tokens = tokenizer([c for caps in captions for c in caps]).view(n_images, per_image, -1)
        return cls(pixels, tokens)

    def batch(self, seed: int, step: int, size: int, rows: slice = slice(None)) -> Batch:
        n, per_image = len(self.images), self.tokens.shape[1]
        if size > n:
            raise ValueError(f"batch of {size} is larger than the {n} training images")
        r = self._replay
        if r is None or (r["seed"], r["size"]) != (seed, size) or r["next_step"] > step + 1:
            rng = np.random.default_rng(seed)
            r = {"seed": seed, "size": size, "rng": rng, "order": rng.permutation(n), "cursor": 0,
                 "next_step": 0, "last": None}
        while r["next_step"] <= step:
            if r["cursor"] + size > n:
                r["order"], r["cursor"] = r["rng"].permutation(n), 0
            idx = r["order"][r["cursor"]: r["cursor"] + size]
            r["cursor"] += size
            pick = r["rng"].integers(0, per_image, size=len(idx))
            r["last"] = (idx, pick)
            r["next_step"] += 1
        self._replay = r
        idx, pick = r["last"]
        idx, pick = torch.from_numpy(idx[rows]), torch.from_numpy(pick[rows])
        return {"images": self.images[idx].unsqueeze(1), "texts": self.tokens[idx, pick].unsqueeze(1)}

    def describe(self) -> dict:
        return {"name": "mini-world pairs", "n_images": len(self.images),
                "captions_per_image": int(self.tokens.shape[1]), "image_shape": list(self.images.shape[1:])}


@dataclass(frozen=True)
class SyntheticBatches:
    """Random images and token sequences (SOT, ids, EOT, padding), any number of segments per sample, for tests and the
    smoke run: a fresh ``default_rng([seed, step])`` per step; the EOT id is the largest, as argmax-pooled CLIP text
    towers expect."""

    image_size: int = 48
    context_length: int = 32
    images_per_sample: int = 1
    texts_per_sample: int = 1
    labels: bool = False
    vocab_size: int = 49408

    def batch(self, seed: int, step: int, size: int, rows: slice = slice(None)) -> Batch:
        rng = np.random.default_rng([seed, step])
        k_img, k_txt, length = self.images_per_sample, self.texts_per_sample, self.context_length
        images = rng.integers(0, 256, (size, k_img, 3, self.image_size, self.image_size), dtype=np.uint8)
        content = rng.integers(1, length - 1, (size, k_txt, 1))  # tokens between SOT and EOT
        ids = rng.integers(1, self.vocab_size - 2, (size, k_txt, length))
        pos = np.arange(length)
        sot, eot = self.vocab_size - 2, self.vocab_size - 1
        tokens = np.where(pos == 0, sot, np.where(pos <= content, ids, np.where(pos == content + 1, eot, 0)))
        out = {"images": torch.from_numpy(images[rows]), "texts": torch.from_numpy(tokens[rows]).long()}
        if self.labels:
            out["labels"] = torch.from_numpy(rng.integers(0, 2, size)[rows]).float()
        return out

    def describe(self) -> dict:
        return {"name": "synthetic", "image_size": self.image_size, "context_length": self.context_length,
                "images_per_sample": self.images_per_sample, "texts_per_sample": self.texts_per_sample,
                "labels": self.labels}
