"""BiVLC's training losses (papers/bivlc/losses.py) against hand-computed examples.

The examples use unit vectors with simple coordinates; the expected values are computed with plain
``math`` from the formula in the loss's docstring, written out again here (a loop over rows, the
log-sum-exp by hand), never by calling the implementation's own matrix code. Their distributed
path is checked with every other loss in ``tests/common/test_training_losses.py`` (one rank, bit
for bit) and ``tests/common/test_training_ddp.py`` (two processes).
"""
from __future__ import annotations

import math

import pytest
import torch

from papers.bivlc.losses import DetectorLoss, TrohnImgLoss, TrohnTextLoss
from training_support import B_, E1, E2, A, S, ce, dot, mean, t  # noqa: F401


def test_trohn_img_loss_by_hand():
    """[I; I_neg] against [c; c_neg]: the symmetric InfoNCE over 2 x 2, labels arange(2)."""
    images, texts = [E1, A], [B_, E2]  # I, I_neg ; c, c_neg
    logits = [[S * dot(i, c) for c in texts] for i in images]
    i2t = mean(ce(logits[r], r) for r in range(2))
    t2i = mean(ce([logits[r][c] for r in range(2)], c) for c in range(2))
    got = TrohnImgLoss()(t(images), t(texts), S)["contrastive_loss"].item()
    assert got == pytest.approx((i2t + t2i) / 2, abs=1e-12)


def test_trohn_text_loss_by_hand():
    """B = 2 images against texts [c_1, c_2, cneg_1, cneg_2]."""
    images = [E1, E2]
    texts = [A, B_, [-0.6, 0.8], [0.0, -1.0]]
    i2t = mean(ce([S * dot(images[m], x) for x in texts], m) for m in range(2))  # 2 x 4
    t2i = mean(ce([S * dot(texts[m], i) for i in images], m) for m in range(2))  # texts[:2] -> images, 2 x 2
    got = TrohnTextLoss()(t(images), t(texts), S)["contrastive_loss"].item()
    assert got == pytest.approx((i2t + t2i) / 2, abs=1e-12)


@pytest.mark.parametrize("tower", ["image", "text"])
def test_detector_loss_by_hand(tower):
    """Head w = [1, -1], b = 0.5; BCE with logits: -[y log sigma(z) + (1 - y) log(1 - sigma(z))]."""
    features, labels = [A, B_], [1.0, 0.0]
    loss = DetectorLoss(2, tower).double()
    with torch.no_grad():
        loss.head.weight.copy_(t([[1.0, -1.0]]))
        loss.head.bias.fill_(0.5)
    sigma = lambda z: 1 / (1 + math.exp(-z))  # noqa: E731
    zs = [f[0] - f[1] + 0.5 for f in features]  # 0.3 and 0.7
    expected = mean(-(y * math.log(sigma(z)) + (1 - y) * math.log(1 - sigma(z))) for z, y in zip(zs, labels))
    other = t([[9.0, 9.0], [9.0, 9.0]])  # the other tower's features must be ignored
    args = (t(features), other) if tower == "image" else (other, t(features))
    got = loss(*args, S, {"labels": t(labels)})["detector_loss"].item()
    assert got == pytest.approx(expected, abs=1e-12)


def test_detector_loss_names_a_tower():
    with pytest.raises(ValueError, match="tower must be 'image' or 'text'"):
        DetectorLoss(2, "vision")
