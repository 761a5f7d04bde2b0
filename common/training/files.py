"""Batch sources over image files (the full profile's COCO, CC-Neg and TROHN images), decoded per batch: each rank
decodes and tokenises only its own rows, and a batch is a pure function of (seed, step) as the trainer needs."""
from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import torch
from PIL import Image

from common.errors import WorkspaceError
from common.files.image_transforms import to_rgb
from common.training.data import EpochShuffled, Tokenize


class ImageFileError(WorkspaceError):
    """An image file that cannot be decoded (the message names it)."""


def resized_size(w: int, h: int, size: int) -> tuple[int, int]:
    """torchvision's ``Resize(size)`` of a w x h image: the shorter side becomes ``size``, the longer one
    ``int(size * long / short)`` (truncated, as ``_compute_resized_output_size`` does)."""
    short, long = (w, h) if w <= h else (h, w)
    new_long = int(size * long / short)
    return (size, new_long) if w <= h else (new_long, size)


def centre_offset(extent: int, size: int) -> int:
    """torchvision's ``CenterCrop``: the crop starts at ``int(round((extent - size) / 2))`` (Python's rounding, half
    to even), not at the floor of the half."""
    return int(round((extent - size) / 2.0))


@dataclass(frozen=True)
class FileImages:
    """Image files decoded per batch on a thread pool: resized (shorter side, bicubic) and centre-cropped to
    ``size``, as open_clip's evaluation transform does before normalising (the trainer normalises)."""

    paths: tuple[Path, ...]
    size: int
    workers: int = 8
    crop_scale: tuple[float, float] | None = None
    """A recipe's ``random_resized_crop`` area range (NegCLIP's (0.9, 1)): training batches (``get`` with ``draw``)
    take a random crop of that share of the image, aspect in [3/4, 4/3], resized to ``size`` (torchvision's
    ``RandomResizedCrop``, which open_clip's training transform is); None: always the centre crop."""
    reads_files = True
    """A batch source holding these as ``images`` is decoded from files: the trainer prepares its batches in worker
    processes ahead of the step (``common.training.loader.LoaderConfig.for_source``)."""

    def __len__(self) -> int:
        return len(self.paths)

    def _random_crop(self, image, rng: np.random.Generator):
        """torchvision ``RandomResizedCrop.get_params`` (10 tries, then the centre crop of the clamped aspect),
        drawn from ``rng``; the crop resized (bicubic) to ``size`` x ``size``."""
        w, h = image.size
        area = w * h
        box = None
        for _ in range(10):
            target = area * rng.uniform(*self.crop_scale)
            aspect = math.exp(rng.uniform(math.log(3 / 4), math.log(4 / 3)))
            cw, ch = round(math.sqrt(target * aspect)), round(math.sqrt(target / aspect))
            if 0 < cw <= w and 0 < ch <= h:
                top, left = int(rng.integers(0, h - ch + 1)), int(rng.integers(0, w - cw + 1))
                box = (left, top, left + cw, top + ch)
                break
        if box is None:  # torchvision's fallback: the centre crop at the nearest allowed aspect
            ratio = w / h
            cw, ch = (w, round(w / (3 / 4))) if ratio < 3 / 4 else (round(h * 4 / 3), h) if ratio > 4 / 3 else (w, h)
            left, top = (w - cw) // 2, (h - ch) // 2
            box = (left, top, left + cw, top + ch)
        # crop, then resize (torchvision's resized_crop): no pixel outside the box enters the filter
        return np.asarray(image.crop(box).resize((self.size, self.size), Image.Resampling.BICUBIC))

    def _load(self, index: int, key: tuple[int, ...] | None = None) -> np.ndarray:
        path = self.paths[index]
        try:
            with Image.open(path) as image:
                image = to_rgb(image, path)
                if key is not None and self.crop_scale is not None:
                    return self._random_crop(image, np.random.default_rng([*key, index]))
                image = image.resize(resized_size(*image.size, self.size), Image.Resampling.BICUBIC)
                left, top = centre_offset(image.size[0], self.size), centre_offset(image.size[1], self.size)
                return np.asarray(image.crop((left, top, left + self.size, top + self.size)))
        except OSError as exc:
            raise ImageFileError(f"{path}: cannot read image ({exc})") from None

    def get(self, indices: np.ndarray, draw: tuple[int, ...] | None = None) -> torch.Tensor:
        """uint8 pixels (n, 3, size, size) of the given images; with ``crop_scale``, each image's random crop comes from
        ``default_rng([*draw, image index])`` (``draw``: a training batch's (seed, step, segment)), whatever the
        number of ranks."""
        key = None if draw is None else tuple(int(k) for k in draw)
        with ThreadPoolExecutor(self.workers) as pool:
            arrays = list(pool.map(lambda i: self._load(int(i), key), indices))
        return torch.from_numpy(np.stack(arrays)).permute(0, 3, 1, 2)


class FileCaptionBatches(EpochShuffled):
    """Caption rows over image files (``row_image[i]``: the index in ``images`` of row i's image), each row's texts
    of ``extras`` as further text segments; the draws ignore the extras. ``fields`` as ``CaptionBatches``'."""

    def __init__(self, images: FileImages, row_image: np.ndarray, captions: Sequence[str],
                 extras: Sequence[Sequence[str]], tokenize: Tokenize, name: str = "captions",
                 fields: Mapping | None = None):
        if len(row_image) != len(captions) or any(len(extra) != len(captions) for extra in extras):
            raise ValueError("FileCaptionBatches: row_image, captions and every extra need one entry per row")
        self.images, self.row_image, self.captions = images, np.asarray(row_image), captions
        self.extras, self.tokenize, self.name = tuple(extras), tokenize, name
        self.fields = dict(fields) if fields is not None else {"extra_text_segments": len(self.extras)}
        self.n_rows = len(captions)

    def batch(self, seed: int, step: int, size: int, rows: slice = slice(None)) -> dict[str, torch.Tensor]:
        idx = self.draws(seed, step, size)[rows]
        texts = [self.tokenize([self.captions[i] for i in idx]),
                 *(self.tokenize([extra[i] for i in idx]) for extra in self.extras)]
        return {"images": self.images.get(self.row_image[idx], (seed, step, 0)).unsqueeze(1),
                "texts": torch.stack(texts, dim=1)}

    def describe(self) -> dict:
        return {"name": self.name, "rows": len(self.captions), "images": len(self.images), **self.fields}
