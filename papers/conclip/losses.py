"""CoN-CLIP's fine-tuning loss (negated captions and distractor images).

It follows the conventions of ``common.training.losses`` (segment-major normalised features, the
logit scale as a multiplier, named ``*_loss`` terms, distributed gather owned by the loss) and
plugs into ``common.training.train`` like the shared losses.
"""
from __future__ import annotations

import torch.nn.functional as F

from common.training.losses import Batch, ContrastiveLoss, arange_labels


class ConClipLoss(ContrastiveLoss):
    """Images [I; I'] and texts [c; c_neg] (each B); mean of three cross-entropies, labels arange(B):

    - image I against [c; c_neg] (B x 2B): its caption, not the negated one;
    - caption c against [I; I'] (B x 2B): its image, not the distractor;
    - distractor image I' against [c_neg; c] (B x 2B): the negated caption it depicts.
    The third is computed on the rows of I' in the (2B x 2B) logits with labels B + i, which is the
    same cross-entropy as reordering the columns to [c_neg; c] with labels i.
    The method trains the text tower only: pass ``freeze=("image",)`` in the train config.
    """

    image_segments = 2
    text_segments = 2

    def forward(self, image_features, text_features, logit_scale, batch: Batch | None = None):
        image, text = self.gather(image_features, text_features)
        logits = logit_scale * image @ text.T  # rows [I; I'], columns [c; c_neg]
        b = len(image) // 2
        labels = arange_labels(b, logits.device)
        image_term = F.cross_entropy(logits[:b], labels)
        caption_term = F.cross_entropy(logits[:, :b].T, labels)
        distractor_term = F.cross_entropy(logits[b:], labels + b)
        return {"contrastive_loss": (image_term + caption_term + distractor_term) / 3}
