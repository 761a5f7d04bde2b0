"""The hard-positive loss (Kamath et al. Sec. 4.1) against a hand computation on 2-D features."""
from __future__ import annotations

import functools

import pytest

from common.training import ClipLoss
from papers.hard_positives.losses import HardPositiveLoss
from training_support import B_, E1, E2, A, S, ce, dot, mean, t

# Two samples: images, captions T, hard positives T_p, hard negatives T_n (unit vectors).
IMAGES = [E1, E2]
CAPTIONS = [A, B_]
POSITIVES = [[0.28, 0.96], [0.96, -0.28]]
NEGATIVES = [[0.0, -1.0], [-0.6, 0.8]]


def clip_by_hand(images, texts) -> float:
    i2t = mean(ce([S * dot(images[m], x) for x in texts], m) for m in range(len(images)))
    t2i = mean(ce([S * dot(texts[m], i) for i in images], m) for m in range(len(texts)))
    return (i2t + t2i) / 2


def pairwise_by_hand(images, anchors, negatives) -> float:
    """mean_i CE([s<I_i, P_i>, s<I_i, N_i>], 0)."""
    return mean(ce([S * dot(images[m], anchors[m]), S * dot(images[m], negatives[m])], 0) for m in range(len(images)))


def loss(w_hp: float, w_hn: float) -> dict[str, float]:
    terms = HardPositiveLoss(w_hp, w_hn)(t(IMAGES), t(CAPTIONS + POSITIVES + NEGATIVES), S)
    return {k: v.item() for k, v in terms.items()}


@pytest.mark.parametrize("w_hp, w_hn", [(1.0, 1.0), (1.0, 0.25), (0.5, 2.0)])
def test_hard_positives_and_negatives_by_hand(w_hp, w_hn):
    got = loss(w_hp, w_hn)
    assert got["contrastive_loss"] == pytest.approx(clip_by_hand(IMAGES, CAPTIONS), abs=1e-12)
    assert got["hard_positive_loss"] == pytest.approx(w_hp * clip_by_hand(IMAGES, POSITIVES), abs=1e-12)
    hn = (pairwise_by_hand(IMAGES, CAPTIONS, NEGATIVES) + pairwise_by_hand(IMAGES, POSITIVES, NEGATIVES)) / 2
    assert got["hard_negative_loss"] == pytest.approx(w_hn * hn, abs=1e-12)


def test_hard_negatives_only_compare_with_the_caption_alone():
    got = loss(0.0, 1.0)
    assert set(got) == {"contrastive_loss", "hard_negative_loss"}
    assert got["hard_negative_loss"] == pytest.approx(pairwise_by_hand(IMAGES, CAPTIONS, NEGATIVES), abs=1e-12)


def test_zero_weights_are_the_clip_loss_and_ignore_the_extra_texts():
    got = loss(0.0, 0.0)
    assert set(got) == {"contrastive_loss"}
    assert got["contrastive_loss"] == pytest.approx(ClipLoss()(t(IMAGES), t(CAPTIONS), S)["contrastive_loss"].item(),
                                                    abs=1e-12)
    other = HardPositiveLoss(0.0, 0.0)(t(IMAGES), t(CAPTIONS + NEGATIVES + POSITIVES), S)["contrastive_loss"].item()
    assert other == got["contrastive_loss"]


def test_a_hard_negative_closer_to_its_image_costs_more():
    easy = loss(1.0, 1.0)["hard_negative_loss"]
    NEGATIVES_CLOSE = [[0.99, 0.141], NEGATIVES[1]]
    harder = HardPositiveLoss(1.0, 1.0)(t(IMAGES), t(CAPTIONS + POSITIVES + NEGATIVES_CLOSE), S)
    assert harder["hard_negative_loss"].item() > easy


def test_gradient_reaches_every_text_segment_it_uses():
    texts = t(CAPTIONS + POSITIVES + NEGATIVES).requires_grad_(True)
    terms = HardPositiveLoss(1.0, 1.0)(t(IMAGES), texts, S)
    sum(terms.values()).backward()
    assert (texts.grad.abs().sum(-1) > 0).all()
    texts.grad = None
    sum(HardPositiveLoss(0.0, 1.0)(t(IMAGES), texts, S).values()).backward()
    assert (texts.grad[2:4] == 0).all() and (texts.grad[4:].abs().sum(-1) > 0).all()


def test_layout_weights_and_description():
    assert (HardPositiveLoss.image_segments, HardPositiveLoss.text_segments) == (1, 3)
    factory = functools.partial(HardPositiveLoss, hard_positive_weight=1.0, hard_negative_weight=0.5)
    assert factory(world=None).describe() == {"name": "HardPositiveLoss", "hard_positive_weight": 1.0,
                                              "hard_negative_weight": 0.5}
    with pytest.raises(ValueError, match="weights must be >= 0"):
        HardPositiveLoss(-1.0, 1.0)
