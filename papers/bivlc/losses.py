"""BiVLC's training losses: the two TROHN fine-tuning objectives and the detector probe.

They follow the conventions of ``common.training.losses`` (segment-major normalised features, the
logit scale as a multiplier, named ``*_loss`` terms, distributed gather owned by the loss) and
plug into ``common.training.train`` like the shared losses.
"""
from __future__ import annotations

import torch.nn.functional as F
from torch import nn

from common.training.distributed import DistributedContext, gather_plain, gather_segments
from common.training.losses import Batch, ClipLoss, ExtraTextNegativesLoss


class TrohnImgLoss(ClipLoss):
    """Images [I; I_neg] against texts [c; c_neg], the symmetric InfoNCE over 2B x 2B: each negative image is the
    positive of its negative caption, so each half is the other's hard negative."""

    image_segments = 2
    text_segments = 2


class TrohnTextLoss(ExtraTextNegativesLoss):
    """B images against 2B texts [c; c_neg]: 1/2 [CE(B x 2B image->text) + CE(texts[:B] -> images, B x B)]."""

    image_segments = 1
    text_segments = 2


class DetectorLoss(nn.Module):
    """A linear probe on ONE frozen tower's features: BCE with logits against ``batch["labels"]``.

    Labels are 1 for synthetic (generated) inputs and 0 for natural ones. The head belongs to the
    loss, so it is optimised with the model and saved beside it; the towers and the logit scale
    are frozen (``frozen``), which is what makes it a probe of what the encoder already separates.

    ``raw_features`` (default, the authors'): the head reads the tower's unnormalised output, as
    ``CLIP_classifier.forward`` does (``self.classifier(encoder_model.visual(x))``,
    ``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_img_classifier.py:28-31`` "x = self.image_encoder(x)";
    ``encode_text(x)``, ``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_text_classifier.py:30-33``
    "x = self.text_encoder.encode_text(x)"), so the released heads apply to it; False: the L2-normalised
    embedding. BCE on logits equals their ``BCELoss()(sigmoid(logits), label)``
    (``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_img_classifier.py:97`` "criterion = BCELoss()";
    ``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_img_classifier.py:115-119`` "loss = criterion(prob, label)")
    but for the clamp of log(0) that BCELoss applies at -100.
    """

    image_segments = 1
    text_segments = 1
    frozen: tuple[str, ...] = ("image", "text", "logit_scale")

    def __init__(self, embed_dim: int, tower: str, world: DistributedContext | None = None, raw_features: bool = True):
        super().__init__()
        self.raw_features = bool(raw_features)
        if tower not in ("image", "text"):
            raise ValueError(f"DetectorLoss: tower must be 'image' or 'text', not {tower!r}")
        self.tower = tower
        self.towers = (tower,)
        self.world = world
        self.head = nn.Linear(embed_dim, 1)

    def forward(self, image_features, text_features, logit_scale, batch: Batch):
        features = image_features if self.tower == "image" else text_features
        features = gather_segments(features, 1, self.world)
        labels = gather_plain(batch["labels"], self.world)
        logits = self.head(features).squeeze(-1)
        return {"detector_loss": F.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype))}

    def describe(self) -> dict:
        return {"name": type(self).__name__, "tower": self.tower, "embed_dim": self.head.in_features,
                "features": "raw" if self.raw_features else "normalized"}
