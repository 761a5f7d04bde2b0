"""Deterministic tensor transforms applied to a preprocessed image (``common.tasks.ImageRef``).

They run after the model's own preprocessing, on the (C, H, W) tensor the model will encode, so nothing is written
to disk; the embedding cache keys the result by the file's content hash plus ``identity``.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import torch


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
    columns) stays in place.
    """

    rows: int
    cols: int
    seed: int = 0

    def __post_init__(self) -> None:
        if self.rows < 1 or self.cols < 1 or self.rows * self.cols < 2:
            raise ValueError(f"GridShuffle needs at least two cells, got {self.rows} x {self.cols}")

    @property
    def identity(self) -> str:
        return f"grid-shuffle:rows={self.rows}:cols={self.cols}:seed={self.seed}"

    def __call__(self, pixels: torch.Tensor, content_key: str) -> torch.Tensor:
        channels, height, width = pixels.shape
        ch, cw = height // self.rows, width // self.cols
        if ch == 0 or cw == 0:
            raise ValueError(f"a {height}x{width} image cannot be cut into {self.rows}x{self.cols} cells")
        grid = pixels[:, : ch * self.rows, : cw * self.cols]
        cells = grid.reshape(channels, self.rows, ch, self.cols, cw).permute(1, 3, 0, 2, 4).reshape(-1, channels, ch, cw)
        order = torch.randperm(len(cells), generator=_generator(self.seed, content_key, "grid-shuffle"))
        shuffled = cells[order].reshape(self.rows, self.cols, channels, ch, cw).permute(2, 0, 3, 1, 4)
        out = pixels.clone()
        out[:, : ch * self.rows, : cw * self.cols] = shuffled.reshape(channels, ch * self.rows, cw * self.cols)
        return out
