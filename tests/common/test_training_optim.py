"""Weight-decay groups, the warmup + cosine schedule, and the logit-scale clamp."""
from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from common.training.optim import (
    LOGIT_SCALE_MAX, clamp_logit_scale, cosine_with_warmup, exclude_from_wd, make_optimizer, param_groups)
from common.training.recipes import mini_recipe


class _Toy(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(3, 2)  # weight 2-D: decayed; bias 1-D: not
        self.token_embedding = nn.Embedding(5, 2)  # 2-D but an embedding table: not decayed
        self.positional_embedding = nn.Parameter(torch.zeros(4, 2))  # ditto, by name
        self.ln = nn.LayerNorm(2)  # gain and bias 1-D: not decayed
        self.logit_scale = nn.Parameter(torch.tensor(1.0))  # 0-D: not decayed
        self.frozen = nn.Linear(2, 2)
        self.frozen.requires_grad_(False)  # not in any group


def test_weight_decay_groups():
    model = _Toy()
    decay, no_decay = param_groups(model.named_parameters(), weight_decay=0.1)
    names = {id(p): n for n, p in model.named_parameters()}
    assert [names[id(p)] for p in decay["params"]] == ["proj.weight"]
    assert sorted(names[id(p)] for p in no_decay["params"]) == sorted([
        "proj.bias", "token_embedding.weight", "positional_embedding", "ln.weight", "ln.bias", "logit_scale"])
    assert decay["weight_decay"] == 0.1 and no_decay["weight_decay"] == 0.0
    assert exclude_from_wd("visual.class_embedding", torch.zeros(4))
    assert not exclude_from_wd("visual.conv1.weight", torch.zeros(4, 3, 2, 2))


def test_the_mini_recipe_s_adamw_is_clips():
    optimizer = make_optimizer(param_groups(_Toy().named_parameters(), 0.1), 1e-3, mini_recipe())
    assert type(optimizer) is torch.optim.AdamW
    group = optimizer.param_groups[0]
    assert group["betas"] == (0.9, 0.98) and group["eps"] == 1e-6 and group["lr"] == 1e-3
    assert group["fused"]  # torch >= 2.4 has a fused CPU kernel


def test_schedule_values():
    """lr 1, warmup 2, 6 steps: (s+1)/2 while warming up, then 0.5 (1 + cos(pi (s - 2) / 4))."""
    got = [cosine_with_warmup(s, lr=1.0, warmup_steps=2, total_steps=6) for s in range(6)]
    half_sqrt2 = math.sqrt(2) / 2
    expected = [0.5, 1.0, 1.0, 0.5 * (1 + half_sqrt2), 0.5, 0.5 * (1 - half_sqrt2)]
    assert got == pytest.approx(expected, abs=1e-15)
    assert cosine_with_warmup(0, lr=2.0, warmup_steps=0, total_steps=4) == 2.0  # no warmup: cosine from the start


def test_logit_scale_clamp():
    model = _Toy()
    with torch.no_grad():
        model.logit_scale.fill_(7.0)
    clamp_logit_scale(model)
    assert model.logit_scale.item() == pytest.approx(math.log(100)) and LOGIT_SCALE_MAX == math.log(100)
    with torch.no_grad():
        model.logit_scale.fill_(-1.0)
    clamp_logit_scale(model)
    assert model.logit_scale.item() == 0.0
