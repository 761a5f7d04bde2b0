"""The authors' model selection of the three fine-tunes, one rule for both profiles: in-batch accuracy on the
validation split.

``IMirandaM/BiVLC@84f0d175 src/CLIP_fine_tuning/CLIP_fine_tuning.py:145-172`` "val_acc = (acc_im + acc_text)/2"
(the validation loop): the validation split is walked by a ``DataLoader``
(``IMirandaM/BiVLC@84f0d175 src/CLIP_fine_tuning/CLIP_fine_tuning.py:89`` "batch_size=args.batch_size,
shuffle=False)": no ``drop_last``, the last batch is smaller); per batch, ``logits_im``
= image features @ text features.T (the images [I; I_neg] for TROHN-Img, the texts [c; c_neg] for both TROHN sets),
``acc_im`` = the share of rows of ``logits_im`` whose argmax is their own index, ``acc_text`` the same over the rows
of ``logits_text = logits_im.T`` (TROHN-Text: only ``logits_text[:n]``, the positive captions,
``IMirandaM/BiVLC@84f0d175 src/CLIP_fine_tuning/CLIP_fine_tuning.py:160`` "softmax(logits_text[:len(logits_im)],
dim=1).argmax(dim=1) == ground_truth"); the batch scores
(acc_im + acc_text) / 2 and the epoch the mean over its batches. ``torch.argmax`` takes the first maximal index, so
a tie counts right when the own column comes first; the same here. The logit scale does not change an argmax, so the
cosines stand in for the logits.

The mini runs hold their sets in memory and the full runs read files, so the rule takes an accessor (``Chunk``) that
gives one chunk of validation rows in the training layout.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from common.files.tasks import DatasetError

Chunk = Callable[[np.ndarray], tuple[torch.Tensor, torch.Tensor]]
"""Validation rows -> (uint8 pixels (k * m, 3, H, W): the rows' images, then their negative images for TROHN-Img;
token ids (t * m, L): the rows' captions, then their negative captions for TROHN), as a training step lays them out."""


@dataclass(frozen=True, eq=False)
class InBatchAccuracy:
    """The validation score the trainer keeps the best weights by: the validation split's ``rows`` in order, in
    chunks of ``samples`` rows (the run's batch), each chunk's (image->text + text->image argmax accuracy) / 2, the
    mean over chunks (module docstring)."""

    chunk: Chunk
    rows: int
    samples: int
    mean: torch.Tensor
    std: torch.Tensor

    def __call__(self, model) -> float:
        # deferred: loads PIL only when called
        from common.zoo import encode_text, padding_is_inert

        if self.rows == 0:
            raise DatasetError("in-batch accuracy: the validation split is empty")
        device = next(model.parameters()).device
        scores = []
        for start in range(0, self.rows, self.samples):
            pixels, tokens = self.chunk(np.arange(start, min(self.rows, start + self.samples)))
            images = ((pixels.to(device).float() / 255.0) - self.mean.to(device)) / self.std.to(device)
            img = model.encode_image(images, normalize=True)
            txt = encode_text(model, tokens.to(device), padding_is_inert(model))
            logits = img @ txt.T
            m = len(img)  # TROHN-Text: texts [c; c_neg] but only the m positive captions retrieve an image
            truth = torch.arange(m, device=device)
            acc_image = (logits.argmax(dim=1) == truth).float().mean()
            acc_text = (logits.T[:m].argmax(dim=1) == truth).float().mean()
            scores.append(float((acc_image + acc_text) / 2))
        return float(np.mean(scores))
