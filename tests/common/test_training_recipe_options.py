"""The trainer's options for a recipe other than CLIP's: plain Adam at a constant rate (a ``Recipe`` naming them, as
BiVLC's detectors' does), and a loss that asks for the towers' raw outputs (``raw_features``) instead of normalised embeddings.
A tiny random ``mini-vit-xs`` and synthetic batches, CPU, a few steps."""
from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from common.training import SyntheticBatches, Towers, TrainConfig, train
from common.training.checkpoint import load_weights, seed_everything
from common.training.model_init import FromScratch, normalizer
from common.training.optim import lr_at, make_optimizer, param_groups
from common.training.recipes import Recipe, mini_recipe

ARCH = "mini-vit-xs"
ADAM_CONSTANT = Recipe("adam-constant", optimizer="adam", betas=(0.9, 0.999), eps=1e-8, decay_rule="all",
                       schedule="constant", clamp_logit_scale=False, augmentation="center_crop")
"""What ``Adam(params, lr)`` with no scheduler runs (BiVLC's detectors, ``IMirandaM/BiVLC@84f0d175
src/Detectors/Detector_img_classifier.py:98`` "optimizer = Adam(model.parameters(), lr=0.001)")."""


class Probe(nn.Module):
    """A linear head on the text tower (everything else frozen), BCE against the labels; ``raw`` toggles
    ``raw_features``."""

    towers = ("text",)
    frozen = ("image", "text", "logit_scale")

    def __init__(self, raw: bool, world=None):
        super().__init__()
        self.raw_features = raw
        self.head = nn.Linear(64, 1)
        self.seen: list[torch.Tensor] = []

    def forward(self, image_features, text_features, logit_scale, batch):
        self.seen.append(text_features.detach())
        logits = self.head(text_features).squeeze(-1)
        return {"probe_loss": F.binary_cross_entropy_with_logits(logits, batch["labels"])}


@pytest.mark.parametrize("raw", [True, False])
def test_a_loss_gets_raw_outputs_only_when_it_asks(raw):
    seed_everything(0)
    built = FromScratch(ARCH).build()
    probe = Probe(raw)
    towers = Towers(built.model, probe, *normalizer(built.transform))
    texts = SyntheticBatches(labels=True).batch(0, 0, 4)["texts"][:, 0]
    _, features, _ = towers(None, texts)
    with torch.no_grad():
        expected = built.model.encode_text(texts, normalize=not raw)
    assert torch.allclose(features, expected, atol=1e-5)
    norms = features.norm(dim=-1)
    assert (not torch.allclose(norms, torch.ones_like(norms), atol=1e-3)) if raw else torch.allclose(
        norms, torch.ones_like(norms), atol=1e-5)


def test_adam_at_a_constant_rate_is_torchs_adam(tmp_path):
    """The trainer under an Adam-at-a-constant-rate recipe gives the head a hand-written loop gives:
    ``torch.optim.Adam(params, lr)`` (betas 0.9/0.999, eps 1e-8) at the same rate every step, on raw outputs."""
    batches = SyntheticBatches(labels=True)
    config = TrainConfig(steps=5, batch_size=8, lr=1e-2, warmup_steps=0, weight_decay=0.0, seed=3,
                         recipe=ADAM_CONSTANT)
    train(config, FromScratch(ARCH), batches, lambda world=None: Probe(True), tmp_path / "m.safetensors")
    got = load_weights(tmp_path / "m.loss.safetensors")

    seed_everything(3)
    model = FromScratch(ARCH).build().model.eval()
    head = Probe(True).head
    optimizer = torch.optim.Adam(head.parameters(), lr=1e-2)
    for step in range(5):
        batch = batches.batch(3, step, 8)
        with torch.no_grad():
            features = model.encode_text(batch["texts"][:, 0])
        loss = F.binary_cross_entropy_with_logits(head(features).squeeze(-1), batch["labels"])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert torch.allclose(got["head.weight"], head.weight.detach(), atol=1e-5, rtol=0)
    assert torch.allclose(got["head.bias"], head.bias.detach(), atol=1e-5, rtol=0)


def test_optimizer_and_schedule_options():
    head = nn.Linear(3, 1)
    adam = make_optimizer(param_groups(head.named_parameters(), 0.0), 1e-3, ADAM_CONSTANT)
    assert type(adam) is torch.optim.Adam
    assert adam.defaults["betas"] == (0.9, 0.999) and adam.defaults["eps"] == 1e-8
    adamw = make_optimizer(param_groups(head.named_parameters(), 0.1), 1e-3, mini_recipe())
    assert type(adamw) is torch.optim.AdamW and adamw.defaults["betas"] == (0.9, 0.98)
    assert [lr_at("constant", s, 1e-3, 0, 10) for s in (0, 5, 9)] == [1e-3] * 3
    assert lr_at("warmup_cosine", 9, 1e-3, 2, 10) < 1e-4
    assert TrainConfig(steps=1, batch_size=1).recipe is None  # the mini recipe


@pytest.mark.parametrize("bad", [{"betas": (0.9, 1.0)}, {"eps": -1.0}])
def test_a_bad_setting_is_torch_s_one_error_not_retried_without_fused(bad):
    """Only a missing fused kernel makes ``make_optimizer`` retry without ``fused``; torch's own refusal of a setting
    comes once (no second error raised while handling the first)."""
    from dataclasses import replace

    head = nn.Linear(3, 1)
    with pytest.raises(ValueError) as info:
        make_optimizer(param_groups(head.named_parameters(), 0.0), 1e-3, replace(ADAM_CONSTANT, **bad))
    assert info.value.__context__ is None
