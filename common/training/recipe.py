"""A family of runs' optimiser settings, as ``params.yaml`` states them, turned into the trainer's ``TrainConfig``.

* ``RunParams``: the mini profile's fine-tunes (a fixed number of steps over a rendered set);
* ``Schedule`` and ``FileRunParams``: the full profile's fine-tunes (epochs over a file-backed set of rows, with the
  base model, image size, seed, precision and row order).

A paper's job builder reads its section into one of these; the runner (``common.training.job``) trains with it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from common.training.recipes import Recipe
from common.training.trainer import TrainConfig


@dataclass(frozen=True)
class RunParams:
    """A ``params.yaml`` section's optimiser settings, shared by every run of one paper's mini fine-tunes."""

    base: str = "mini/xs-32k"
    steps: int = 200
    batch_size: int = 128
    lr: float = 1e-3
    warmup_steps: int = 20
    weight_decay: float = 0.1
    seed: int = 0

    KEYS = ("base", "steps", "batch_size", "lr", "warmup_steps", "weight_decay", "seed")

    @classmethod
    def from_params(cls, section: Mapping) -> "RunParams":
        return cls(**{k: section[k] for k in cls.KEYS})

    def trainer_config(self) -> TrainConfig:
        return TrainConfig(steps=self.steps, batch_size=self.batch_size, lr=float(self.lr),
                           warmup_steps=self.warmup_steps, weight_decay=self.weight_decay, seed=self.seed)


@dataclass(frozen=True)
class Schedule:
    """One family of runs' optimiser settings, in epochs over its rows (a ``params.yaml`` section)."""

    lr: float
    epochs: int
    batch_size: int
    warmup_steps: int
    weight_decay: float

    @classmethod
    def from_params(cls, section: Mapping) -> "Schedule":
        return cls(float(section["lr"]), int(section["epochs"]), int(section["batch_size"]),
                   int(section["warmup_steps"]), float(section["weight_decay"]))


@dataclass(frozen=True)
class FileRunParams:
    """What every run of one family shares (a ``params.yaml`` section): the base model, the image size, the
    schedule, the seed, the precision, and whether the rows are shuffled per epoch (``FileCaptionBatches``' order;
    a batch source that can walk them in file order reads ``shuffle=False``)."""

    base: str
    image_size: int
    schedule: Schedule
    seed: int = 0
    precision: str = "fp32"
    shuffle: bool = True
    recipe: Recipe | None = None
    """The family's recipe (``common.training.recipes``): the optimiser's rules and the training crop; None: the
    mini recipe. A paper's job builder sets it from its ``recipes.toml``."""

    @classmethod
    def from_params(cls, section: Mapping) -> "FileRunParams":
        return cls(section["base"], int(section["image_size"]), Schedule.from_params(section), int(section["seed"]),
                   section.get("precision", "fp32"), bool(section.get("shuffle", True)))

    def trainer_config(self, steps_per_epoch: int, steps: int | None = None, **overrides) -> TrainConfig:
        """The schedule's epochs as steps (``steps`` overrides them: smoke runs, tests)."""
        s = self.schedule
        return TrainConfig(steps=steps or s.epochs * steps_per_epoch, batch_size=s.batch_size, lr=s.lr,
                           warmup_steps=s.warmup_steps, weight_decay=s.weight_decay, seed=self.seed,
                           precision=self.precision, recipe=self.recipe, **overrides)

    @property
    def crop_scale(self) -> tuple[float, float] | None:
        """The recipe's training crop (``Recipe.train_crop_scale``; ``FileImages.crop_scale``); None: the centre crop."""
        return self.recipe.train_crop_scale if self.recipe is not None else None
