"""NegCLIP's and CLIP-FT's batches (ARO, Section 5 and Appendix C), one source for both methods and both profiles: the
table comes from the rendered set (``papers.aro.train.mini_table``) or NegCLIP's TSV (``papers.aro.negclip_tsv_full``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch

from common.training.data import EpochShuffled
from papers.aro.images import ImageStore


@dataclass(frozen=True)
class PairTable:
    """Rows (a caption, its hard negatives, its image) grouped in units, the things an epoch permutes: unit u's rows
    are ``unit_offsets[u]:unit_offsets[u+1]``, ``hard_units[u]`` the units whose images are the nearest to u's. Every
    row has at least one negative (captions without are dropped)."""

    row_image: np.ndarray
    captions: tuple[str, ...]
    negatives: tuple[tuple[str, ...], ...]
    unit_offsets: np.ndarray
    hard_units: np.ndarray

    @property
    def n_units(self) -> int:
        return len(self.unit_offsets) - 1

    def describe(self) -> dict:
        return {"units": self.n_units, "rows": len(self.captions),
                "images": int(len(np.unique(self.row_image))), "neighbours_per_unit": int(self.hard_units.shape[1]),
                "negatives": int(sum(map(len, self.negatives)))}


class TokenCache:
    """The model's tokenizer with an optional memo (the mini sweep tokenises the same captions every run)."""

    def __init__(self, tokenizer: Callable, memo: bool = True):
        self.tokenizer, self.memo = tokenizer, memo
        self._cache: dict[str, torch.Tensor] = {}

    def __call__(self, texts: Sequence[str]) -> torch.Tensor:
        if not self.memo:
            return self.tokenizer(list(texts))
        missing = sorted({t for t in texts if t not in self._cache})
        if missing:
            self._cache.update(zip(missing, self.tokenizer(missing)))
        return torch.stack([self._cache[t] for t in texts])


class FinetuneBatches(EpochShuffled):
    """NegCLIP's (``hard=True``) or CLIP-FT's batches over one ``PairTable``: an epoch permutes its units
    (``EpochShuffled``); per step, ``default_rng([seed, 1, step])`` draws every sample's row, negative, neighbour unit,
    its row and negative. Both modes draw the same numbers: CLIP-FT trains on NegCLIP's captions."""

    unit = "training units"

    def __init__(self, table: PairTable, images: ImageStore, tokens: Callable[[Sequence[str]], torch.Tensor],
                 hard: bool):
        self.table, self.images, self.tokens, self.hard = table, images, tokens, hard
        self.n_rows = table.n_units

    def draws(self, seed: int, step: int, size: int) -> np.ndarray:
        """(4, size): the global batch's rows, their negatives, hard rows and theirs (indices into the table)."""
        t = self.table
        units = super().draws(seed, step, size)
        u = np.random.default_rng([seed, 1, step]).random((5, size))

        def pick(n: np.ndarray, x: np.ndarray) -> np.ndarray:
            return np.minimum((x * n).astype(np.int64), n - 1)

        counts = np.diff(t.unit_offsets)
        n_neg = np.fromiter((len(n) for n in t.negatives), dtype=np.int64, count=len(t.negatives))
        rows = t.unit_offsets[units] + pick(counts[units], u[0])
        hard_units = t.hard_units[units, pick(np.full(size, t.hard_units.shape[1]), u[1])]
        hard_rows = t.unit_offsets[hard_units] + pick(counts[hard_units], u[2])
        return np.stack([rows, pick(n_neg[rows], u[3]), hard_rows, pick(n_neg[hard_rows], u[4])])

    def batch(self, seed: int, step: int, size: int, rows: slice = slice(None)) -> dict[str, torch.Tensor]:
        r, neg, hr, hard_neg = self.draws(seed, step, size)[:, rows]
        t = self.table
        captions = [t.captions[i] for i in r]
        if not self.hard:
            return {"images": self.images.get(t.row_image[r], (seed, step, 0)).unsqueeze(1),
                    "texts": self.tokens(captions).unsqueeze(1)}
        negs = [t.negatives[i][k] for i, k in zip(r, neg)]
        hard_caps = [t.captions[i] for i in hr]
        hard_negs = [t.negatives[i][k] for i, k in zip(hr, hard_neg)]
        images = torch.stack([self.images.get(t.row_image[r], (seed, step, 0)),
                              self.images.get(t.row_image[hr], (seed, step, 1))], dim=1)
        texts = torch.stack([self.tokens(x) for x in (captions, hard_caps, negs, hard_negs)], dim=1)
        return {"images": images, "texts": texts}

    def describe(self) -> dict:
        return {"name": "aro-negclip" if self.hard else "aro-clip-ft", **self.table.describe()}

