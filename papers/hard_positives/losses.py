"""The hard-positive fine-tuning loss of Kamath et al. (Sec. 4.1), which follows SVLC (Doveh et al.), on the
conventions of ``common.training.losses`` (``runs.loss_for`` makes its factory)."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from common.training.distributed import DistributedContext
from common.training.losses import Batch, ContrastiveLoss, arange_labels


def clip_loss(image: torch.Tensor, text: torch.Tensor, logit_scale: torch.Tensor) -> torch.Tensor:
    """Symmetric InfoNCE of B images against their B texts (row i's positive is column i), as ``ClipLoss``."""
    logits = logit_scale * image @ text.T
    labels = arange_labels(len(logits), logits.device)
    return (F.cross_entropy(logits, labels) + F.cross_entropy(logits.T, labels)) / 2


def pairwise_negative_loss(image: torch.Tensor, positive: torch.Tensor, negative: torch.Tensor,
                           logit_scale: torch.Tensor) -> torch.Tensor:
    """mean_i CE([s<I_i, P_i>, s<I_i, N_i>], 0): each image's hard negative below its positive text, two-way."""
    logits = logit_scale * torch.stack([(image * positive).sum(-1), (image * negative).sum(-1)], dim=1)
    return F.cross_entropy(logits, torch.zeros(len(logits), dtype=torch.long, device=logits.device))


class HardPositiveLoss(ContrastiveLoss):
    """B images [I] against 3B texts [T; T_p; T_n] (caption, hard positive, hard negative of each sample):

        L = CLIP(I, T) + w_hp * CLIP(I, T_p) + w_hn * mean_{P in Ps} mean_i CE([s(I_i, P_i), s(I_i, T_n,i)], 0)

    with Ps = {T, T_p} when w_hp > 0, else {T}: one hard negative per image in a two-way softmax, as in SVLC's
    negatives loss. A term whose weight is 0 is neither computed nor reported: ``w_hp = w_hn = 0`` is ``ClipLoss``
    (the paper's "fine-tuned on COCO alone" control), ``w_hn = 0`` hard positives only (Table 3's "0 HN").
    """

    image_segments = 1
    text_segments = 3

    def __init__(self, hard_positive_weight: float = 1.0, hard_negative_weight: float = 1.0,
                 world: DistributedContext | None = None):
        super().__init__(world)
        if hard_positive_weight < 0 or hard_negative_weight < 0:
            raise ValueError(f"HardPositiveLoss: weights must be >= 0, got hard positives {hard_positive_weight}, "
                             f"hard negatives {hard_negative_weight}")
        self.hard_positive_weight = float(hard_positive_weight)
        self.hard_negative_weight = float(hard_negative_weight)

    def forward(self, image_features, text_features, logit_scale, batch: Batch | None = None):
        image, text = self.gather(image_features, text_features)
        b = len(image)
        captions, positives, negatives = text[:b], text[b:2 * b], text[2 * b:]
        terms = {"contrastive_loss": clip_loss(image, captions, logit_scale)}
        if self.hard_positive_weight:
            terms["hard_positive_loss"] = self.hard_positive_weight * clip_loss(image, positives, logit_scale)
        if self.hard_negative_weight:
            anchors = [captions, positives] if self.hard_positive_weight else [captions]
            pairwise = [pairwise_negative_loss(image, p, negatives, logit_scale) for p in anchors]
            terms["hard_negative_loss"] = self.hard_negative_weight * torch.stack(pairwise).mean()
        return terms

    def describe(self) -> dict:
        return {"name": type(self).__name__, "hard_positive_weight": self.hard_positive_weight,
                "hard_negative_weight": self.hard_negative_weight}
