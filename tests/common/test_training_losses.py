"""Each shared training loss against a hand-computed example, and every loss's distributed path
against its local one (the papers' losses are checked by hand in ``tests/papers/<paper>/``).

The examples use unit vectors with simple coordinates; the expected values are computed with plain
``math`` from the formula in the loss's docstring, written out again here (a loop over rows, the
log-sum-exp by hand), never by calling the implementation's own matrix code.
"""
from __future__ import annotations

import math
import socket

import pytest
import torch
import torch.distributed as dist

from common.training.distributed import DistributedContext
from common.training.losses import ClipLoss, ExtraTextNegativesLoss, HardNegativeClipLoss
from papers.bivlc.losses import DetectorLoss, TrohnImgLoss, TrohnTextLoss
from papers.conclip.losses import ConClipLoss
from training_support import B_, E1, E2, A, S, ce, dot, mean, t  # noqa: F401


def test_clip_loss_by_hand():
    images, texts = [E1, E2], [A, B_]
    # s * I T^T = [[1.2, 1.6], [1.6, 1.2]]; every row and column is (right 1.2, wrong 1.6):
    # each CE = log(e^1.2 + e^1.6) - 1.2 = log(1 + e^0.4), in both directions.
    expected = math.log(1 + math.exp(0.4))
    got = ClipLoss()(t(images), t(texts), S)["contrastive_loss"].item()
    assert got == pytest.approx(expected, abs=1e-12)


def test_hard_negative_clip_loss_by_hand():
    """B = 1: images [I; I_hard], texts [T; T_hardimg; T_neg; T_neg_hardimg]."""
    images = [E1, A]
    texts = [B_, E2, [0.0, -1.0], [-0.6, 0.8]]
    # image -> text over all 4 texts, image m's positive is text m (m < 2)
    i2t = mean(ce([S * dot(images[m], x) for x in texts], m) for m in range(2))
    # text -> image over the first 2 texts only, text m's positive is image m
    t2i = mean(ce([S * dot(texts[m], i) for i in images], m) for m in range(2))
    got = HardNegativeClipLoss()(t(images), t(texts), S)["contrastive_loss"].item()
    assert got == pytest.approx((i2t + t2i) / 2, abs=1e-12)


class _TwoExtraCaptions(ExtraTextNegativesLoss):
    """The shared base with a layout no paper uses: B images against 3B texts."""

    image_segments = 1
    text_segments = 3


def test_extra_text_negatives_loss_by_hand():
    """B = 2 images against texts [c_1, c_2, x_1, x_2, y_1, y_2]: the extra 4 texts are negatives of the
    image->text direction only (2 x 6); the text->image direction is the first 2 texts against the images."""
    images = [E1, E2]
    texts = [A, B_, [-0.6, 0.8], [0.0, -1.0], [0.8, -0.6], [-1.0, 0.0]]
    i2t = mean(ce([S * dot(images[m], x) for x in texts], m) for m in range(2))  # 2 x 6
    t2i = mean(ce([S * dot(texts[m], i) for i in images], m) for m in range(2))  # 2 x 2
    got = _TwoExtraCaptions()(t(images), t(texts), S)["contrastive_loss"].item()
    assert got == pytest.approx((i2t + t2i) / 2, abs=1e-12)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def one_rank_group():
    """A real gloo process group of one rank, in this process."""
    if dist.is_initialized():
        pytest.skip("a process group is already initialised in this process")
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{_free_port()}", rank=0, world_size=1)
    try:
        yield DistributedContext(rank=0, world_size=1, device="cpu", distributed=True)
    finally:
        dist.destroy_process_group()


LOSSES = {
    "clip": (lambda w: ClipLoss(world=w), 1, 1),
    "hard_negative_clip": (lambda w: HardNegativeClipLoss(world=w), 2, 4),
    "conclip": (lambda w: ConClipLoss(world=w), 2, 2),
    "trohn_text": (lambda w: TrohnTextLoss(world=w), 1, 2),
    "trohn_img": (lambda w: TrohnImgLoss(world=w), 2, 2),
    "detector": (lambda w: DetectorLoss(8, "image", world=w), 1, 1),
}


def test_distributed_path_with_one_rank_equals_local_path(one_rank_group):
    """Gathering (all_gather, slot put back with its gradient scaled by world_size = 1) must change
    nothing: same loss and same gradients, bit for bit, for every loss."""
    b, d = 3, 8
    for name, (make, k_img, k_txt) in LOSSES.items():
        gen = torch.Generator().manual_seed(0)
        image = torch.nn.functional.normalize(torch.randn(k_img * b, d, generator=gen), dim=-1)
        text = torch.nn.functional.normalize(torch.randn(k_txt * b, d, generator=gen), dim=-1)
        batch = {"labels": torch.randint(0, 2, (b,), generator=gen).float()}
        results = []
        for world in (None, one_rank_group):
            torch.manual_seed(1)  # same head initialisation for the detector
            loss = make(world)
            i, x = image.clone().requires_grad_(), text.clone().requires_grad_()
            scale = torch.tensor(3.0, requires_grad=True)
            value = sum(loss(i, x, scale, batch).values())
            value.backward()
            head = [p.grad for p in loss.parameters()]
            results.append((value.detach(), i.grad, x.grad, scale.grad, head))
        local, distributed = results
        assert torch.equal(local[0], distributed[0]), name
        for a, g in zip(local[1:4], distributed[1:4]):
            assert (a is None and g is None) or torch.equal(a, g), name
        assert all(torch.equal(a, g) for a, g in zip(local[4], distributed[4])), name
