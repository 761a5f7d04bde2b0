"""BiVLC's model selection (``papers.bivlc.validation``), the one rule of the mini and the full runs, on hand-made
logits: the authors' validation loop (``IMirandaM/BiVLC@84f0d175 src/CLIP_fine_tuning/CLIP_fine_tuning.py:145-172``
"val_acc = (acc_im + acc_text)/2") counts both directions by argmax (a tie goes to the first maximal column), keeps
the last, smaller chunk, and averages the chunks' scores. The mini runs' former rule
(image->text only, strict '>', the last partial chunk dropped) gives other numbers on the same logits."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from papers.bivlc.validation import InBatchAccuracy


class Lookup(torch.nn.Module):
    """Features by id: image k (its pixel value) and text k (its first token) are rows of fixed tables, so the
    logits of a chunk are whatever the test writes."""

    def __init__(self, images: list[list[float]], texts: list[list[float]]):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(1))  # the metric reads the model's device from it
        self.images, self.texts = torch.tensor(images), torch.tensor(texts)

    def encode_image(self, pixels: torch.Tensor, normalize: bool = False) -> torch.Tensor:
        return self.images[pixels[:, 0, 0, 0].round().long()]

    def encode_text(self, tokens: torch.Tensor, normalize: bool = False) -> torch.Tensor:
        return self.texts[tokens[:, 0]]


def accuracy(model: Lookup, rows: int, samples: int, negatives: bool = False) -> float:
    """The metric with a chunk accessor over ids: image k has pixel value k, caption k token k (a TROHN-Text
    layout adds negative caption k as token rows + k after the chunk's captions)."""
    def chunk(idx: np.ndarray):
        ids = torch.from_numpy(idx)
        pixels = ids.view(-1, 1, 1, 1).expand(-1, 3, 1, 1).to(torch.uint8)
        tokens = torch.cat([ids, ids + rows]) if negatives else ids
        return pixels, tokens.view(-1, 1)

    # mean 0, std 1/255: the normalised pixel is the id again
    return InBatchAccuracy(chunk, rows, samples, torch.tensor(0.0), torch.tensor(1 / 255))(model)


# One chunk of 3 (rows 0-2) and a last chunk of 1 (row 3). Logits of the first chunk (image i, caption j):
LOGITS = [[0.5, 0.5, 0.1],    # image 0: a tie between its caption and caption 1; argmax takes its own (first)
          [0.2, 0.9, 0.3],    # image 1: right
          [0.55, 0.1, 0.6]]   # image 2: right; but caption 0's best image is image 2 (0.55 > 0.5): text->image wrong
IMAGES = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
TEXTS = [[LOGITS[i][j] for i in range(3)] for j in range(3)] + [[1.0, 0.0, 0.0]]


def test_both_directions_ties_by_argmax_and_the_last_partial_chunk():
    # chunk 1: image->text 3/3, text->image 2/3 -> 5/6; chunk 2 (one row) 1; the mean over chunks 11/12
    assert accuracy(Lookup(IMAGES, TEXTS), rows=4, samples=3) == pytest.approx(11 / 12)


def test_the_mini_runs_former_rule_gave_another_score():
    """The former mini ``InBatchAccuracy``: image->text only, strict (image 0's tie wrong), the last chunk dropped:
    2/3 here, where the authors' rule gives 11/12."""
    logits = np.array(LOGITS)
    own = logits.diagonal()
    others = np.where(np.eye(3, dtype=bool), -np.inf, logits).max(axis=1)
    former = float(np.mean(own > others))
    assert former == pytest.approx(2 / 3)
    assert accuracy(Lookup(IMAGES, TEXTS), rows=4, samples=3) != pytest.approx(former)


def test_trohn_text_retrieves_images_with_the_positive_captions_only():
    # two rows, one chunk: texts [c0, c1, n0, n1]; image 0 prefers its negative caption n0 (image->text 1/2); n1
    # would retrieve image 0 (wrong) but the negatives retrieve nothing: text->image 2/2
    images = [[1.0, 0.0], [0.0, 1.0]]
    texts = [[0.5, 0.0], [0.0, 0.9], [0.8, 0.0], [0.7, 0.1]]
    assert accuracy(Lookup(images, texts), rows=2, samples=2, negatives=True) == pytest.approx((0.5 + 1.0) / 2)


def test_an_empty_validation_split_is_refused():
    from common.files.tasks import DatasetError

    with pytest.raises(DatasetError, match="validation split is empty"):
        accuracy(Lookup(IMAGES, TEXTS), rows=0, samples=3)
