"""Losses named on a command line (``python -m common.training smoke|cost``): a shared loss by short name, or any loss
class by import path with keywords, so a paper's loss runs without this package naming it."""
from __future__ import annotations

import argparse
import functools
import importlib
import inspect
import json
from dataclasses import dataclass

from common.training.losses import ClipLoss, HardNegativeClipLoss

SHARED_LOSSES = {"clip": ClipLoss, "hard-negative-clip": HardNegativeClipLoss}
"""Short names for ``--loss``; anything else is named by import path with ``--loss-class``."""


@dataclass(frozen=True)
class SmokeLoss:
    """One loss of a smoke run: its output name, class, and constructor keywords."""

    name: str
    cls: type
    kwargs: tuple[tuple[str, object], ...] = ()

    def factory(self, embed_dim: int):
        """What ``train`` calls with ``world=``: the class, with its keywords (and ``embed_dim``) bound."""
        kwargs = dict(self.kwargs)
        if "embed_dim" in inspect.signature(self.cls).parameters and "embed_dim" not in kwargs:
            kwargs["embed_dim"] = embed_dim
        return functools.partial(self.cls, **kwargs) if kwargs else self.cls


def shared_loss(name: str) -> SmokeLoss:
    """``--loss`` value: a short name of ``SHARED_LOSSES``."""
    if name not in SHARED_LOSSES:
        raise argparse.ArgumentTypeError(f"unknown loss {name!r}; shared losses: {', '.join(SHARED_LOSSES)} "
                                         "(name any other by --loss-class MODULE:CLASS)")
    return SmokeLoss(name, SHARED_LOSSES[name])


def _value(text: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def loss_by_path(spec: str) -> SmokeLoss:
    """``--loss-class`` value: ``MODULE:CLASS`` then optional ``,KEY=VALUE`` constructor keywords."""
    path, *pairs = spec.split(",")
    module_name, sep, class_name = path.partition(":")
    if not sep or not module_name or not class_name:
        raise argparse.ArgumentTypeError(f"{spec!r}: expected MODULE:CLASS[,KEY=VALUE...]")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise argparse.ArgumentTypeError(f"{spec!r}: cannot import {module_name}: {e}") from None
    cls = getattr(module, class_name, None)
    if not isinstance(cls, type):
        raise argparse.ArgumentTypeError(f"{spec!r}: {module_name} has no class {class_name!r}")
    kwargs = []
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key:
            raise argparse.ArgumentTypeError(f"{spec!r}: {pair!r} is not KEY=VALUE")
        kwargs.append((key, _value(value)))
    name = "-".join([class_name, *(str(v) for _, v in kwargs)])
    return SmokeLoss(name, cls, tuple(kwargs))
