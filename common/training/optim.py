"""The optimiser a recipe names (AdamW or Adam) over its weight-decay groups, its schedule (warmup + cosine, or
constant), and the logit-scale clamp. The mini recipe (``common.training.recipes.mini_recipe``) is CLIP's AdamW with
``exclude_from_wd``'s groups, built exactly as before recipes existed (same groups, same calls)."""
from __future__ import annotations

import math
from typing import Callable, Iterable, Protocol

import torch

LOGIT_SCALE_MAX = math.log(100)
"""CLIP caps the temperature multiplier at 100 (stored as its log); beyond it training destabilises."""


def exclude_from_wd(name: str, p: torch.Tensor) -> bool:
    """Biases, norms' gains, embeddings and the logit scale are not decayed: the dimension catches every bias and gain
    whatever a model names them; the names add the embedding tables (decay would pull rare tokens' rows to zero)."""
    return p.ndim < 2 or "embedding" in name or "logit_scale" in name


def param_groups(named_parameters: Iterable[tuple[str, torch.nn.Parameter]], weight_decay: float,
                 exclude: Callable[[str, torch.Tensor], bool] = exclude_from_wd) -> list[dict]:
    """[decayed, not decayed] groups over the parameters that require grad, in the given order; ``exclude`` is the
    recipe's decay rule (default this workspace's, ``exclude_from_wd``)."""
    decay, no_decay = [], []
    for name, p in named_parameters:
        if not p.requires_grad:
            continue
        (no_decay if exclude(name, p) else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


class OptimizerRules(Protocol):
    """What ``make_optimizer`` reads of a recipe (``common.training.recipes.Recipe``, which imports this module)."""

    optimizer: str
    betas: tuple[float, float]
    eps: float


def make_optimizer(groups: list[dict], lr: float, recipe: OptimizerRules) -> torch.optim.Optimizer:
    """The recipe's optimiser with its betas and eps, fused where this torch has a kernel for the device; only a missing
    fused kernel (torch's RuntimeError naming ``fused``) is retried without it."""
    cls = {"adamw": torch.optim.AdamW, "adam": torch.optim.Adam}[recipe.optimizer]
    kwargs = {"lr": lr, "betas": tuple(recipe.betas), "eps": recipe.eps}
    try:
        return cls(groups, **kwargs, fused=True)
    except RuntimeError as exc:  # no fused kernel for this device/dtype
        if "fused" not in str(exc):
            raise
    return cls(groups, **kwargs)


def lr_at(schedule: str, step: int, lr: float, warmup_steps: int, total_steps: int) -> float:
    """The learning rate of 0-based ``step`` under the named schedule: ``warmup_cosine`` (``cosine_with_warmup``) or
    ``constant`` (``lr`` at every step: BiVLC's detectors' Adam has no scheduler)."""
    if schedule == "constant":
        return lr
    return cosine_with_warmup(step, lr, warmup_steps, total_steps)


def cosine_with_warmup(step: int, lr: float, warmup_steps: int, total_steps: int) -> float:
    """Learning rate for 0-based ``step``: linear warmup to ``lr`` counting ``step + 1`` (so the first step already
    moves), then cosine over the remaining steps, reaching 0 at ``total_steps`` (one past the last step)."""
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
