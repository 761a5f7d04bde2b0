"""CoN-CLIP's fine-tuning loss (negated captions and distractor images), with the paper's ablations.

How the paper's notation (Sec. 4.2, eqs. 1-3) is read against the released code (jaisidhsingh/CoN-CLIP's
``CustomLossWithNegatives``): the paper builds P, Q, R as M x 2M matrices and applies "a column-wise softmax
operation" with the target where i = j; the code takes a cross-entropy over each *row* of the three M x 2M logit
matrices (a softmax over the 2M candidates of each anchor), with target column i,
jaisidhsingh/CoN-CLIP@503388ac src/training_utils/loss_functions.py:69
"F.cross_entropy(logits1, labels) + F.cross_entropy(logits2, labels) + F.cross_entropy(logits3, labels))/3". A
softmax over columns of an M x 2M matrix would normalise over the M anchors instead, which has no 2M-way choice in
it; we follow the code (row-wise), which is what makes each term a choice among 2M candidates:

* L1 (image to all captions): image I_i against [c; c'] (B x 2B), target c_i,
  jaisidhsingh/CoN-CLIP@503388ac src/training_utils/loss_functions.py:65
  "logits1 = logit_scale * image_features[:batch_size] @ text_features.T";
* L2 (caption to all images): caption c_i against [I; I'] (B x 2B), target I_i,
  jaisidhsingh/CoN-CLIP@503388ac src/training_utils/loss_functions.py:66
  "logits2 = logit_scale * text_features[:batch_size] @ image_features.T";
* L3 (distractor to all captions): distractor I'_i against [c'; c] (B x 2B), target c'_i,
  jaisidhsingh/CoN-CLIP@503388ac src/training_utils/loss_functions.py:63-67
  "logits3 = logit_scale * image_features[batch_size:] @ text_features_rev.T".

``L_conclip = (L1 + L2 + L3) / 3`` (the paper's Sec. 4.2 and the code above). The ablations of Table 6 are the means
of the terms they name (L1, L2, (L1 + L2) / 2); the released code has no entry point for them: its criterion is
L_conclip or a "no distractor" variant, jaisidhsingh/CoN-CLIP@503388ac src/training_utils/loss_functions.py:74-78
"return CustomLossWithNegatives()", that variant being (CE(I -> [c; c']) + CE(c -> I)) / 2,
jaisidhsingh/CoN-CLIP@503388ac src/training_utils/loss_functions.py:29-31
"F.cross_entropy(logits_per_image, labels) + F.cross_entropy(logits_per_text, labels)", which the paper does not
report. The image tower is frozen (the paper
fine-tunes the text encoder and logit scale only): ``frozen``.
"""
from __future__ import annotations

from typing import Sequence

import torch.nn.functional as F

from common.training.distributed import DistributedContext
from common.training.losses import Batch, ContrastiveLoss, arange_labels

TERMS: tuple[str, ...] = ("l1", "l2", "l3")


class ConClipLoss(ContrastiveLoss):
    """Images [I; I'] and texts [c; c'] (each B): the mean of the chosen terms of ``TERMS`` (default all three:
    L_conclip), reported as ``contrastive_loss``.

    L3 is computed on the rows of I' in the (2B x 2B) logits with targets B + i, the same cross-entropy as reordering
    the columns to [c'; c] with targets i.
    """

    image_segments = 2
    text_segments = 2
    frozen = ("image",)

    def __init__(self, terms: Sequence[str] = TERMS, world: DistributedContext | None = None):
        super().__init__(world)
        unknown = [t for t in terms if t not in TERMS]
        if not terms or unknown:
            raise ValueError(f"ConClipLoss: terms must be a non-empty subset of {TERMS}, got {list(terms)}")
        self.terms = tuple(t for t in TERMS if t in terms)

    def forward(self, image_features, text_features, logit_scale, batch: Batch | None = None):
        image, text = self.gather(image_features, text_features)
        logits = logit_scale * image @ text.T  # rows [I; I'], columns [c; c']
        b = len(image) // 2
        labels = arange_labels(b, logits.device)
        values = {"l1": lambda: F.cross_entropy(logits[:b], labels),
                  "l2": lambda: F.cross_entropy(logits[:, :b].T, labels),
                  "l3": lambda: F.cross_entropy(logits[b:], labels + b)}
        return {"contrastive_loss": sum(values[t]() for t in self.terms) / len(self.terms)}

    def describe(self) -> dict:
        return {"name": type(self).__name__, "terms": list(self.terms)}
