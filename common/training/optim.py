"""AdamW with CLIP's weight-decay groups (or plain Adam), warmup + cosine schedule (or a constant rate), and the
logit-scale clamp."""
from __future__ import annotations

import math
from typing import Iterable

import torch

LOGIT_SCALE_MAX = math.log(100)
"""CLIP caps the temperature multiplier at 100 (stored as its log); beyond it training destabilises."""


def exclude_from_wd(name: str, p: torch.Tensor) -> bool:
    """Biases, norms' gains, embeddings and the logit scale are not decayed.

    Dimension catches every bias and norm gain whatever a model names them; the names add the
    embedding tables (decay would pull rare tokens' rows to zero) and the temperature, which are
    >= 2-D or deliberately learned scalars.
    """
    return p.ndim < 2 or "embedding" in name or "logit_scale" in name


def param_groups(named_parameters: Iterable[tuple[str, torch.nn.Parameter]], weight_decay: float) -> list[dict]:
    """[decayed, not decayed] groups over the parameters that require grad, in the given order."""
    decay, no_decay = [], []
    for name, p in named_parameters:
        if not p.requires_grad:
            continue
        (no_decay if exclude_from_wd(name, p) else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def make_adamw(groups: list[dict], lr: float) -> torch.optim.AdamW:
    """CLIP's AdamW (betas 0.9/0.98, eps 1e-6), the fused kernel where this torch has one for the device."""
    try:
        return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.98), eps=1e-6, fused=True)
    except (RuntimeError, ValueError):  # no fused kernel for this device/dtype
        return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.98), eps=1e-6)


def make_adam(groups: list[dict], lr: float) -> torch.optim.Adam:
    """torch's Adam with its defaults (betas 0.9/0.999, eps 1e-8): what a recipe written as ``Adam(params, lr)``
    runs (e.g. a linear probe's), which is not CLIP's AdamW; the fused kernel where this torch has one."""
    try:
        return torch.optim.Adam(groups, lr=lr, fused=True)
    except (RuntimeError, ValueError):  # no fused kernel for this device/dtype
        return torch.optim.Adam(groups, lr=lr)


OPTIMIZERS = {"adamw": make_adamw, "adam": make_adam}
"""``TrainConfig.optimizer`` -> the function that builds it from the parameter groups and the peak rate."""
SCHEDULES = ("warmup_cosine", "constant")
"""``TrainConfig.schedule``: linear warmup then cosine to 0 (``cosine_with_warmup``), or the peak rate at every step."""


def make_optimizer(name: str, groups: list[dict], lr: float) -> torch.optim.Optimizer:
    """The optimiser ``name`` (a key of ``OPTIMIZERS``) over ``groups``."""
    if name not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {name!r}; known: {', '.join(OPTIMIZERS)}")
    return OPTIMIZERS[name](groups, lr)


def learning_rate(schedule: str, step: int, lr: float, warmup_steps: int, total_steps: int) -> float:
    """The rate of 0-based ``step`` under ``schedule`` (one of ``SCHEDULES``)."""
    if schedule == "constant":
        return lr
    if schedule == "warmup_cosine":
        return cosine_with_warmup(step, lr, warmup_steps, total_steps)
    raise ValueError(f"unknown schedule {schedule!r}; known: {', '.join(SCHEDULES)}")


def cosine_with_warmup(step: int, lr: float, warmup_steps: int, total_steps: int) -> float:
    """Learning rate for 0-based ``step``: linear warmup to ``lr`` (reached at step warmup-1), then cosine to 0.

    The warmup counts ``step + 1`` so the first step already moves; the cosine runs over the
    remaining steps and would reach 0 at ``total_steps`` (one past the last step).
    """
    if step < warmup_steps:
        return lr * (step + 1) / warmup_steps
    progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
    return 0.5 * lr * (1 + math.cos(math.pi * progress))


def set_lr(optimizer: torch.optim.Optimizer, lr: float) -> None:
    for group in optimizer.param_groups:
        group["lr"] = lr


@torch.no_grad()
def clamp_logit_scale(model: torch.nn.Module) -> None:
    """Keep the stored log-scale in [0, ln 100] after every optimiser step (CLIP's cap on the multiplier)."""
    scale = getattr(model, "logit_scale", None)
    if isinstance(scale, torch.Tensor):
        scale.clamp_(0, LOGIT_SCALE_MAX)
