"""Distractor images by CoN-CLIP's eq. 4 (Supplementary 0.B): from a pool X of images, the one that shows the
subject s and not the negated object o_n,

    I' = argmax_{x in X}  phi(x, s) - phi(x, o_n),

with phi CLIP's image-text similarity. The authors mined COCO train 2017 this way (the retrieval code is not
released; ``distractor_image_mapping.pt`` holds its result, top-k indices per CC-Neg training entry, into
torchvision's ``CocoCaptions`` order). This is the rule on features any model computes, for both profiles.
"""
from __future__ import annotations

import numpy as np


def distractor_scores(images: np.ndarray, subjects: np.ndarray, objects: np.ndarray) -> np.ndarray:
    """(M, N) eq. 4 scores phi(x, s_m) - phi(x, o_m) of N pool images for M (subject, negated object) pairs, from
    L2-normalised features: images (N, D), subjects and objects (M, D) (phi = cosine similarity)."""
    images, subjects, objects = (np.asarray(a, dtype=np.float64) for a in (images, subjects, objects))
    if images.ndim != 2 or subjects.shape != objects.shape or subjects.ndim != 2 or \
            subjects.shape[1] != images.shape[1]:
        raise ValueError(f"distractor_scores: need images (N, D) and subjects, objects (M, D); got "
                         f"{images.shape}, {subjects.shape}, {objects.shape}")
    return (subjects - objects) @ images.T


def mine_distractors(images: np.ndarray, subjects: np.ndarray, objects: np.ndarray, top_k: int = 1,
                     exclude: np.ndarray | None = None) -> np.ndarray:
    """(M, top_k) pool indices by decreasing eq. 4 score (ties by lower index, a stable order); ``exclude`` (M,)
    is a pool index per pair that may not be chosen (e.g. the pair's own image), or -1 for none."""
    scores = distractor_scores(images, subjects, objects)
    if not 1 <= top_k <= scores.shape[1] - (exclude is not None):
        raise ValueError(f"mine_distractors: top_k={top_k} with a pool of {scores.shape[1]} images")
    if exclude is not None:
        rows = np.flatnonzero(np.asarray(exclude) >= 0)
        scores[rows, np.asarray(exclude)[rows]] = -np.inf
    return np.argsort(-scores, axis=1, kind="stable")[:, :top_k]
