"""Training losses shared by several papers (a paper's own live in ``papers/<paper>/losses.py``, built on these
bases); what a loss receives and declares: docs/training.md, "Three plug points"."""
from __future__ import annotations

from typing import Mapping

import torch
import torch.nn.functional as F
from torch import nn

from common.training.distributed import DistributedContext, gather_segments

Batch = Mapping[str, torch.Tensor]


class ContrastiveLoss(nn.Module):
    """Base of the image-text losses: segment layout and the distributed gather."""

    image_segments = 1
    text_segments = 1
    towers: tuple[str, ...] = ("image", "text")
    frozen: tuple[str, ...] = ()

    def __init__(self, world: DistributedContext | None = None):
        super().__init__()
        self.world = world

    def gather(self, image_features: torch.Tensor, text_features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return (gather_segments(image_features, self.image_segments, self.world),
                gather_segments(text_features, self.text_segments, self.world))

    def describe(self) -> dict:
        return {"name": type(self).__name__}


def arange_labels(n: int, device: torch.device) -> torch.Tensor:
    """Targets 0..n-1: row i's positive is column i (the layout every loss here builds its logits in)."""
    return torch.arange(n, device=device)


class ClipLoss(ContrastiveLoss):
    """Symmetric InfoNCE: 1/2 [CE(s I T^T, arange N) + CE(s T I^T, arange N)].

    The text direction is the transpose of the image logits and the scale multiplies the image features first: the
    mini family's original loop's arithmetic, so its weights stayed bit-identical on the trainer (``test_train.py``)."""

    def forward(self, image_features, text_features, logit_scale, batch: Batch | None = None):
        image, text = self.gather(image_features, text_features)
        logits = logit_scale * image @ text.T
        labels = arange_labels(len(logits), logits.device)
        return {"contrastive_loss": (F.cross_entropy(logits, labels) + F.cross_entropy(logits.T, labels)) / 2}


class ExtraTextNegativesLoss(ContrastiveLoss):
    """M images against M + extra texts, the first M being the images' captions: 1/2 [CE(s X Y^T, arange M) +
    CE(s Y[:M] X^T, arange M)], texts beyond the first M negatives for image->text only (no image to retrieve them)."""

    def forward(self, image_features, text_features, logit_scale, batch: Batch | None = None):
        image, text = self.gather(image_features, text_features)
        logits = logit_scale * image @ text.T  # (M, M + extra)
        m = len(image)
        labels = arange_labels(m, logits.device)
        per_image = F.cross_entropy(logits, labels)
        per_text = F.cross_entropy(logits[:, :m].T, labels)
        return {"contrastive_loss": (per_image + per_text) / 2}


class HardNegativeClipLoss(ExtraTextNegativesLoss):
    """Images [I; I_hard] (2B) against texts [T; T_hardimg; T_neg; T_neg_hardimg] (4B), labels arange(2B): NegCLIP's
    (ARO) loss, which SugarCrepe's Table 5 re-training and the hard-positive fine-tuning use too."""

    image_segments = 2
    text_segments = 4
