"""Zero-shot classification: each class's classifier is the mean of its prompts' normalised text embeddings
(renormalised), each image goes to the class of highest cosine similarity.

Top-k follows the ranking rule of ``common.evaluation.scoring.retrieval``: an image is right at k when fewer than k other
classes score above its true class (``ties="wrong"``: a class scoring exactly as high counts against it).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Sequence

import numpy as np

from common.evaluation.engine import Engine
from common.files.tasks import ClassificationSet


@dataclass(frozen=True)
class ClassificationResult:
    model: str
    fingerprint: str
    dataset: str
    class_names: tuple[str, ...]
    labels: np.ndarray
    ranks: np.ndarray
    """Per image: classes ranked at or above the true class."""
    predictions: np.ndarray
    """Per image: the highest-scoring class (the first one among equals)."""
    ties: int

    def top_k(self, ks: Sequence[int] = (1, 5)) -> dict[str, float]:
        return {f"top{k}": float((self.ranks < k).mean()) for k in ks}


def classifier_weights(text_embeddings: np.ndarray, prompts_per_class: Sequence[int]) -> np.ndarray:
    """One unit vector per class: the renormalised mean of its prompts' (unit) embeddings, rows in class order."""
    weights, start = [], 0
    for n in prompts_per_class:
        mean = text_embeddings[start: start + n].mean(axis=0)
        weights.append(mean / np.linalg.norm(mean))
        start += n
    return np.stack(weights)


def evaluate(engine: Engine, dataset: ClassificationSet, ties: Literal["wrong", "correct"] = "wrong",
             chunk_size: int = 1024) -> ClassificationResult:
    prompts = [p for class_prompts in dataset.class_prompts for p in class_prompts]
    emb = engine.embed(((img, f"{dataset.name} image {i}") for i, img in enumerate(dataset.images)), prompts)
    weights = classifier_weights(emb.texts(prompts), [len(p) for p in dataset.class_prompts])
    images = emb.images(list(dataset.images))
    labels = np.asarray(dataset.labels)
    ranks = np.empty(len(labels), dtype=np.int64)
    predictions = np.empty(len(labels), dtype=np.int64)
    n_ties = 0
    for start in range(0, len(labels), chunk_size):
        logits = emb.round_scores(images[start: start + chunk_size] @ weights.T)
        rows = np.arange(len(logits))
        true = logits[rows, labels[start: start + chunk_size]][:, None]
        others = np.ones_like(logits, dtype=bool)
        others[rows, labels[start: start + chunk_size]] = False
        level = ((logits == true) & others).sum(axis=1)
        ranks[start: start + chunk_size] = ((logits > true) & others).sum(axis=1) + (level if ties == "wrong" else 0)
        predictions[start: start + chunk_size] = logits.argmax(axis=1)
        n_ties += int((level > 0).sum())
    return ClassificationResult(*engine.identity, dataset.name, dataset.class_names, labels, ranks, predictions, n_ties)
