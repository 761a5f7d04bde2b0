"""ARO's fine-tunes (Section 5 and Appendix C): the two methods, their losses and weights, the recipe as
``params.yaml`` states it, and one ``FinetuneJob`` per (method, learning rate) of the sweep.

- NegCLIP: ``HardNegativeClipLoss`` over images [I; I_hard] and texts [T; T_hardimg; T_neg; T_neg_hardimg];
- CLIP-FT: ``ClipLoss`` over images [I] and texts [T], on the same captions in the same order (one batch source,
  ``papers.aro.batches``).

AdamW with the paper's recipe (50 warmup steps, weight decay 0.2, 5 epochs) at each learning rate of
``aro.<profile>.finetune.lrs``; ``papers.aro.sweep`` trains them and keeps the one with the best validation retrieval.
The job builders are ``papers.aro.train_mini`` (rendered arrays) and ``papers.aro.train_full`` (NegCLIP's TSVs and
the COCO files).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from common.training import ClipLoss, HardNegativeClipLoss, Init, TrainConfig
from common.training.recipes import Recipe
from common.training.job import FinetuneJob
from papers.aro.batches import FinetuneBatches
from papers.aro.validation import RetrievalValidator

METHODS = {"negclip": HardNegativeClipLoss, "clip-ft": ClipLoss}
"""Each method's loss (the ``run`` command's choices)."""
ZOO_NAMES = {"negclip": "aro/mini-negclip", "clip-ft": "aro/mini-clip-ft"}
"""The mini runs' zoo names: the zoo's checkpoint path of each is where its weights go."""
CHECKPOINT_EVERY = 50
"""Steps between resume states (mini: 15-20 s of NegCLIP on 2 cores)."""


@dataclass(frozen=True)
class FinetuneParams:
    """``params.yaml aro.<profile>.finetune`` (the keys a run reads)."""

    base: str
    lrs: tuple[float, ...]
    epochs: int = 5
    batch_size: int = 128
    warmup_steps: int = 50
    weight_decay: float = 0.2
    seed: int = 0
    precision: str = "fp32"
    accum: int = 1
    recipe: Recipe | None = None
    """The optimiser's rules (None: the mini recipe); the full profile's is NegCLIP's (``papers/aro/recipes.toml``)."""

    @classmethod
    def from_params(cls, section: Mapping) -> "FinetuneParams":
        keys = {k: section[k] for k in ("epochs", "batch_size", "warmup_steps", "weight_decay", "seed",
                                        "precision", "accum") if k in section}
        return cls(base=section["base"], lrs=tuple(float(x) for x in section["lrs"]), **keys)

    def trainer_config(self, lr: float, steps: int) -> TrainConfig:
        return TrainConfig(steps=steps, batch_size=self.batch_size, lr=lr, weight_decay=self.weight_decay,
                           warmup_steps=self.warmup_steps, seed=self.seed, precision=self.precision,
                           accum=self.accum, recipe=self.recipe)


def lr_tag(lr: float) -> str:
    return f"lr{lr:.0e}".replace("e-0", "e-")


@dataclass(frozen=True)
class Sweep:
    """One method's jobs, one per learning rate in ``params`` order (the first of equal scores wins)."""

    name: str
    """``aro-<profile>-<method>``: the folder of the sweep's finished runs (``papers.aro.sweep``)."""
    method: str
    jobs: tuple[FinetuneJob, ...]

    @property
    def lrs(self) -> tuple[float, ...]:
        return tuple(job.config.lr for job in self.jobs)


def sweep_jobs(method: str, profile: str, params: FinetuneParams, init: Init, batches: FinetuneBatches,
               validator: RetrievalValidator, module: str, provenance: Mapping, steps: int | None = None) -> Sweep:
    """The sweep of ``method``: a job per lr, each recording its method, its schedule in epochs and ``provenance``
    (profile, data hashes, the CPU profile) in its sidecar. ``steps`` overrides the epochs (smoke runs, tests), and
    the sidecar's ``epochs`` says so."""
    per_epoch = batches.steps_per_epoch(params.batch_size)
    steps = steps or params.epochs * per_epoch
    record = {"method": method, "steps_per_epoch": per_epoch, "epochs": steps / per_epoch, **provenance,
              "validation_detail": None}  # the sweep fills it in each run's record (both directions' R@1)
    jobs = tuple(FinetuneJob(f"aro-{profile}-{method}-{lr_tag(lr)}", init, batches, METHODS[method],
                             params.trainer_config(lr, steps), module, validate=validator, provenance=record,
                             checkpoint_every=CHECKPOINT_EVERY)
                 for lr in params.lrs)
    return Sweep(f"aro-{profile}-{method}", method, jobs)
