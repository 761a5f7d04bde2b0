"""The lr sweep's criterion: retrieval on the COCO-val analog (mini) or NegCLIP's validation file (full), the mean
of image->text and text->image R@1, as the paper picks its learning rate."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch

from papers.aro.images import ImageStore, encode_images, encode_texts


def recall_at_1(image_features: torch.Tensor, text_features: torch.Tensor, text_image: np.ndarray) -> dict[str, float]:
    """Image->text and text->image R@1 with several captions per image (``text_image[j]``: caption j's image).

    Ties count wrong: a hit needs a correct item strictly above every incorrect one."""
    scores = (image_features @ text_features.T).double().numpy()
    owner = torch.as_tensor(text_image).numpy()
    positive = owner[None, :] == np.arange(len(image_features))[:, None]
    negatives = np.where(positive, -np.inf, scores)
    i2t = float(np.mean(np.where(positive, scores, -np.inf).max(axis=1) > negatives.max(axis=1)))
    t2i = float(np.mean(scores[owner, np.arange(len(owner))] > negatives.max(axis=0)))
    return {"i2t_recall_at_1": i2t, "t2i_recall_at_1": t2i, "mean_recall_at_1": (i2t + t2i) / 2}


@dataclass
class RetrievalValidator:
    """Retrieval over images and their captions, encoded in memory; ``last`` keeps both directions of the latest
    call (the sweep records it beside each lr's score)."""

    images: ImageStore
    captions: list[list[str]]
    tokens: Callable[[Sequence[str]], torch.Tensor]

    def __post_init__(self):
        self._text_image = np.repeat(np.arange(len(self.captions)), [len(c) for c in self.captions])
        self._tokens = self.tokens([c for caps in self.captions for c in caps])
        self.last: dict[str, float] = {}

    def __call__(self, model: torch.nn.Module) -> float:
        self.last = recall_at_1(encode_images(model, self.images), encode_texts(model, self._tokens), self._text_image)
        return self.last["mean_recall_at_1"]
