"""CoN-CLIP's training loss (papers/conclip/losses.py) against a hand-computed example.

The expected value is computed with plain ``math`` from the formula in the loss's docstring (the
log-sum-exp by hand), never by calling the implementation's own matrix code. Its distributed path
is checked with every other loss in ``tests/common/test_training_losses.py`` (one rank, bit for
bit) and ``tests/common/test_training_ddp.py`` (two processes).
"""
from __future__ import annotations

import pytest

from papers.conclip.losses import ConClipLoss
from training_support import B_, E1, A, S, ce, dot, t


def test_conclip_loss_by_hand():
    """B = 1: images [I; I'], texts [c; c_neg]; mean of the three cross-entropies."""
    I, I2 = E1, A  # image, distractor image
    c, cneg = B_, [0.0, -1.0]  # caption, negated caption
    image_term = ce([S * dot(I, c), S * dot(I, cneg)], 0)  # I against [c; c_neg], label c
    caption_term = ce([S * dot(c, I), S * dot(c, I2)], 0)  # c against [I; I'], label I
    distractor_term = ce([S * dot(I2, cneg), S * dot(I2, c)], 0)  # I' against [c_neg; c], label c_neg
    got = ConClipLoss()(t([I, I2]), t([c, cneg]), S)["contrastive_loss"].item()
    assert got == pytest.approx((image_term + caption_term + distractor_term) / 3, abs=1e-12)


def test_conclip_loss_with_two_samples_by_hand():
    """B = 2: each of the three terms averages over the two samples, every row over 4 candidates."""
    images = [[1.0, 0.0], [0.0, 1.0], [0.6, 0.8], [0.8, 0.6]]  # I_1, I_2, I'_1, I'_2
    texts = [[0.8, 0.6], [-0.6, 0.8], [0.0, -1.0], [1.0, 0.0]]  # c_1, c_2, cneg_1, cneg_2
    b = 2
    image_term = sum(ce([S * dot(images[i], x) for x in texts], i) for i in range(b)) / b
    caption_term = sum(ce([S * dot(texts[i], x) for x in images], i) for i in range(b)) / b
    distractor_term = sum(ce([S * dot(images[b + i], x) for x in texts[b:] + texts[:b]], i) for i in range(b)) / b
    got = ConClipLoss()(t(images), t(texts), S)["contrastive_loss"].item()
    assert got == pytest.approx((image_term + caption_term + distractor_term) / 3, abs=1e-12)


@pytest.mark.parametrize("terms", [("l1",), ("l2",), ("l3",), ("l1", "l2")])
def test_the_ablations_are_the_means_of_their_terms(terms):
    """Table 6's ablations: L1, L2, (L1 + L2) / 2 (and L3 alone), each term as in the by-hand example above."""
    images = [[1.0, 0.0], [0.0, 1.0], [0.6, 0.8], [0.8, 0.6]]
    texts = [[0.8, 0.6], [-0.6, 0.8], [0.0, -1.0], [1.0, 0.0]]
    b = 2
    by_hand = {
        "l1": sum(ce([S * dot(images[i], x) for x in texts], i) for i in range(b)) / b,
        "l2": sum(ce([S * dot(texts[i], x) for x in images], i) for i in range(b)) / b,
        "l3": sum(ce([S * dot(images[b + i], x) for x in texts[b:] + texts[:b]], i) for i in range(b)) / b,
    }
    loss = ConClipLoss(terms=terms)
    got = loss(t(images), t(texts), S)["contrastive_loss"].item()
    assert got == pytest.approx(sum(by_hand[k] for k in terms) / len(terms), abs=1e-12)
    assert loss.describe()["terms"] == list(terms) and loss.frozen == ("image",)


def test_unknown_or_no_terms_are_refused():
    with pytest.raises(ValueError, match="non-empty subset"):
        ConClipLoss(terms=())
    with pytest.raises(ValueError, match="non-empty subset"):
        ConClipLoss(terms=("l4",))
