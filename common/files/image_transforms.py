"""Images as the models see them: the one decoding to RGB every image reader uses (``to_rgb``, ``open_rgb``), and
deterministic tensor transforms applied to a preprocessed image (``common.files.tasks.ImageRef``).

The transforms run after the model's own preprocessing, on the (C, H, W) tensor the model will encode, so nothing is
written to disk; the embedding cache keys the result by the file's content hash plus ``identity``.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np
import torch
from PIL import Image

from common.errors import WorkspaceError


# ----------------------------------------------------------------------------------------------------------------
# decoding: any mode Pillow opens -> 8-bit RGB, or a one-line refusal
# ----------------------------------------------------------------------------------------------------------------
class ImageModeError(WorkspaceError, ValueError):
    """An image whose pixels have no faithful 8-bit RGB form (a float image outside [0, 1], a mode Pillow cannot
    convert); the message names the file and the mode."""


SIXTEEN_BIT_MODES = frozenset({"I;16", "I;16L", "I;16B", "I;16N"})
DECODED_AS_BEFORE = frozenset({"RGB", "L"})
"""Modes whose RGB pixels, and so their embeddings, are those of the decoding before ``to_rgb`` (the model's transform
on the opened file, converting after resizing): every other mode's embeddings are cached under another key
(``decoding_identity``), so that none computed from a clipped or differently resampled decoding is reused."""
DECODING = "to_rgb-v1"


def _refuse(path: str | os.PathLike | None, mode: str, why: str) -> ImageModeError:
    where = f"{os.fspath(path)}: " if path is not None else ""
    return ImageModeError(f"{where}image mode {mode!r} {why}; save it as 8-bit RGB (or grey) and rerun")


def _grey_to_rgb(values: np.ndarray) -> Image.Image:
    return Image.fromarray(np.repeat(values.astype(np.uint8)[..., None], 3, axis=-1), "RGB")


def _sixteen_to_8(values: np.ndarray) -> np.ndarray:
    """round(v * 255 / 65535): 0 -> 0, 65535 -> 255, evenly in between (``.convert`` clips everything above 255)."""
    return (values.astype(np.uint32) * 255 + 32767) // 65535


def to_rgb(image: Image.Image, path: str | os.PathLike | None = None) -> Image.Image:
    """``image`` as 8-bit RGB, the conversion every image reader uses before a model's preprocessing. Alpha is
    dropped, as the papers' own loaders (``Image.open(p).convert("RGB")``) drop it, so scores stay comparable with
    theirs; 16-bit grey (what 16-bit PNG, TIFF and PGM files open as) is scaled to 8 bits and float grey in [0, 1] to
    [0, 255], never clipped. Anything else raises ``ImageModeError`` rather than scoring a silently wrong image."""
    mode = image.mode
    if mode == "RGB":
        return image
    if mode in SIXTEEN_BIT_MODES:
        return _grey_to_rgb(_sixteen_to_8(np.asarray(image).astype(np.uint16)))
    if mode == "I":
        values = np.asarray(image)
        low, high = (int(values.min()), int(values.max())) if values.size else (0, 0)
        if low < 0 or high > 65535:
            raise _refuse(path, mode, f"holds values in [{low}, {high}], outside the 16-bit range [0, 65535]")
        return _grey_to_rgb(_sixteen_to_8(values))
    if mode == "F":
        with np.errstate(invalid="ignore"):  # a signalling NaN warns when cast; it is refused just below
            values = np.asarray(image).astype(np.float64)
        if values.size and np.isnan(values).any():
            raise _refuse(path, mode, "holds NaN values")
        low, high = (float(values.min()), float(values.max())) if values.size else (0.0, 0.0)
        if low < 0 or high > 1:
            raise _refuse(path, mode, f"holds values in [{low:g}, {high:g}], outside [0, 1] (a float image's range)")
        return _grey_to_rgb(np.round(values * 255))
    try:
        if mode in ("P", "PA"):  # via RGBA: the same colours, without Pillow's warning about transparency
            return image.convert("RGBA").convert("RGB")
        if mode in ("RGBa", "La"):  # premultiplied: undo it first
            return image.convert({"RGBa": "RGBA", "La": "LA"}[mode]).convert("RGB")
        return image.convert("RGB")
    except (ValueError, OSError) as exc:
        raise _refuse(path, mode, f"cannot be converted to RGB ({exc})") from exc


def open_rgb(file: str | os.PathLike | IO[bytes]) -> Image.Image:
    """The image in ``file`` decoded to 8-bit RGB (``to_rgb``), read whole so that the file is closed."""
    with Image.open(file) as image:
        image.load()
        path = file if isinstance(file, (str, os.PathLike)) else getattr(file, "name", None)
        out = to_rgb(image, path)
        return out.copy() if out is image else out


def decoding_identity(file: str | os.PathLike | IO[bytes]) -> str | None:
    """What, beside the file's bytes, an embedding of this image depends on: None for RGB and grey files (decoded as
    they always were) and for what Pillow cannot open (its decoding reports it), else the decoding's name and mode."""
    try:
        with Image.open(Path(file) if isinstance(file, (str, os.PathLike)) else file) as image:
            mode = image.mode
    except Exception:  # noqa: BLE001 - not an image: its decoding reports it
        return None
    return None if mode in DECODED_AS_BEFORE else f"{DECODING}:{mode}"


# ----------------------------------------------------------------------------------------------------------------
# tensor transforms
# ----------------------------------------------------------------------------------------------------------------
def _generator(seed: int, content_key: str, name: str) -> torch.Generator:
    """One random stream per (seed, image content, transform): the same image is shuffled the same way in every
    run and every process, and two images are shuffled independently."""
    digest = hashlib.sha256(f"{name}:{seed}:{content_key}".encode()).digest()
    return torch.Generator().manual_seed(int.from_bytes(digest[:8], "little"))


@dataclass(frozen=True)
class GridShuffle:
    """Cut the image into ``rows`` x ``cols`` equal cells and permute them at random (seeded per image).

    ``rows=4, cols=1`` shuffles horizontal strips, ``rows=1, cols=4`` vertical strips, ``3 x 3`` patches. When the
    side is not a multiple of the grid, the cells take ``side // n`` pixels and the remainder (bottom rows, right
    columns: 2 pixels of a 224-pixel side cut in 3) is set to zero, as ARO's shuffles leave it: they ``unfold`` the
    cells and ``fold`` them back, and ``fold`` writes nothing where no cell lies
    (``mertyg/vision-language-models-are-bows@81fdd20d dataset_zoo/perturbations.py:183-189`` "patch_size_x =
    x.shape[-2]//n_ratio"; the cells are folded back with ``nnf.fold``; the same in ``shuffle_rows`` and
    ``shuffle_columns``), applied after the model's preprocessing
    (``mertyg/vision-language-models-are-bows@81fdd20d dataset_zoo/retrieval.py:91-95``
    "image = self.image_preprocess(image)"): zero is the normalised tensor's zero.
    """

    rows: int
    cols: int
    seed: int = 0

    def __post_init__(self) -> None:
        if self.rows < 1 or self.cols < 1 or self.rows * self.cols < 2:
            raise ValueError(f"GridShuffle needs at least two cells, got {self.rows} x {self.cols}")

    @property
    def identity(self) -> str:
        """The cache key's part for this transform; ``border=zero`` keeps apart the embeddings of the earlier
        transform, which left the uncovered border in place."""
        return f"grid-shuffle:rows={self.rows}:cols={self.cols}:seed={self.seed}:border=zero"

    def __call__(self, pixels: torch.Tensor, content_key: str) -> torch.Tensor:
        channels, height, width = pixels.shape
        ch, cw = height // self.rows, width // self.cols
        if ch == 0 or cw == 0:
            raise ValueError(f"a {height}x{width} image cannot be cut into {self.rows}x{self.cols} cells")
        grid = pixels[:, : ch * self.rows, : cw * self.cols]
        cells = grid.reshape(channels, self.rows, ch, self.cols, cw).permute(1, 3, 0, 2, 4).reshape(-1, channels, ch, cw)
        order = torch.randperm(len(cells), generator=_generator(self.seed, content_key, "grid-shuffle"))
        shuffled = cells[order].reshape(self.rows, self.cols, channels, ch, cw).permute(2, 0, 3, 1, 4)
        out = torch.zeros_like(pixels)
        out[:, : ch * self.rows, : cw * self.cols] = shuffled.reshape(channels, ch * self.rows, cw * self.cols)
        return out
