"""The losses of SugarCrepe's NegCLIP re-training (Tables 5 and 10, both profiles).

NegCLIP proper also feeds a hard negative image per sample (``vinid/neg_clip@e680f8e4 src/training/data.py:55-57``
"new_images = self.transforms(Image.open(str(self.images[chose_image_index])))", and
``vinid/neg_clip@e680f8e4 src/training/train.py:84`` "images = torch.cat([images, new_images])"); the paper's
re-training adds hard negative captions only (the SugarCrepe paper, Appendix A.3: "We augment the original CLIP loss
with hard negative captions following NEGCLIP"), so its loss is the shared ``ExtraTextNegativesLoss`` with one image
segment and two text segments. A run without negatives trains with plain ``ClipLoss`` (``negclip_train.job``).
"""
from __future__ import annotations

from common.training.losses import ExtraTextNegativesLoss


class TextNegativeClipLoss(ExtraTextNegativesLoss):
    """B images against 2B texts [T; T_neg]: NegCLIP's caption negatives without its hard negative images.

    loss = 1/2 [CE(B x 2B image->text, arange B) + CE(texts[:B] -> images, B x B, arange B)]: each negative caption
    is one more wrong answer for every image (its own image's most of all) and is never a query itself.
    """

    image_segments = 1
    text_segments = 2
