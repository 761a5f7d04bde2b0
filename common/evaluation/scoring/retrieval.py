"""Retrieval: N images and M captions (several per image), Recall@k in both directions, in bounded memory.

The similarity matrix is never held whole: queries are scored a chunk at a time against the full gallery (COCO's is
1 GB in float64). A query's *rank* is the number of wrong candidates scoring strictly above its best right one (also
those scoring exactly as high under the default ``ties="wrong"``); Recall@k is the share of queries ranked below k.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal, Sequence

import numpy as np

from common.evaluation.engine import Engine
from common.files.tasks import RetrievalSet


@dataclass(frozen=True)
class RetrievalResult:
    model: str
    fingerprint: str
    dataset: str
    t2i_ranks: np.ndarray
    """Per caption: wrong images ranked at or above its image (see the module docstring)."""
    i2t_ranks: np.ndarray
    """Per image: wrong captions ranked at or above its best caption."""
    t2i_ties: int
    i2t_ties: int

    def recall(self, ks: Sequence[int] = (1, 5, 10)) -> dict[str, float]:
        """``t2i_recall_at_<k>`` and ``i2t_recall_at_<k>`` as fractions."""
        out = {}
        for direction, ranks in (("t2i", self.t2i_ranks), ("i2t", self.i2t_ranks)):
            for k in ks:
                out[f"{direction}_recall_at_{k}"] = float((ranks < k).mean())
        return out


def _first_copies(gallery: np.ndarray) -> np.ndarray | None:
    """For each gallery row, the index of the first row equal to it; None when every row is distinct."""
    _, first, inverse = np.unique(gallery, axis=0, return_index=True, return_inverse=True)
    if len(first) == len(gallery):
        return None
    return first[np.asarray(inverse).reshape(-1)]


def _ranks(query: np.ndarray, gallery: np.ndarray, query_labels: np.ndarray, gallery_labels: np.ndarray,
           ties: str, chunk_size: int, round_scores: Callable[[np.ndarray], np.ndarray] = lambda s: s
           ) -> tuple[np.ndarray, int]:
    """Rank of each query's best right candidate; a candidate is right when its label equals the query's.

    Equal gallery rows (one caption given to two images, an image file present twice) get their first copy's
    score: a BLAS kernel may compute the same dot product in another order at another column (AVX-512 tails),
    which would turn an exact tie into a win or a loss depending on where a row sits in the gallery.
    """
    ranks = np.empty(len(query), dtype=np.int64)
    n_ties = 0
    copies = _first_copies(gallery)
    for start in range(0, len(query), chunk_size):
        sims = round_scores(query[start: start + chunk_size] @ gallery.T)
        if copies is not None:
            sims = sims[:, copies]
        right = query_labels[start: start + chunk_size, None] == gallery_labels[None, :]
        best = np.where(right, sims, -np.inf).max(axis=1, keepdims=True)
        above = ((sims > best) & ~right).sum(axis=1)
        level = ((sims == best) & ~right).sum(axis=1)
        ranks[start: start + chunk_size] = above + (level if ties == "wrong" else 0)
        n_ties += int((level > 0).sum())
    return ranks, n_ties


def evaluate(engine: Engine, dataset: RetrievalSet, ties: Literal["wrong", "correct"] = "wrong",
             chunk_size: int = 256) -> RetrievalResult:
    """Ranks of every caption (text to image) and every image (image to text)."""
    emb = engine.embed(((img, f"{dataset.name} image {i}") for i, img in enumerate(dataset.images)), dataset.captions)
    images = emb.images(list(dataset.images))
    texts = emb.texts(list(dataset.captions))
    caption_image = np.asarray(dataset.caption_image)
    image_ids = np.arange(len(dataset.images))
    t2i, t2i_ties = _ranks(texts, images, caption_image, image_ids, ties, chunk_size, emb.round_scores)
    i2t, i2t_ties = _ranks(images, texts, image_ids, caption_image, ties, chunk_size, emb.round_scores)
    return RetrievalResult(*engine.identity, dataset.name, t2i, i2t, t2i_ties, i2t_ties)
