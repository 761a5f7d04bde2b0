"""One fine-tuning job shape for every paper and both profiles (everything that defines a run, nothing about how it
is launched: ``common.training.launch``), and ``run_job``, which trains it with its resume state outside DVC's outputs
(docs/training.md, "Kill and resume in the pipeline")."""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping

import torch
from torch import nn

from common.errors import WorkspaceError
from common.paths import ROOT, cache_root
from common.pipeline.import_closure import closure
from common.training.data import BatchSource
from common.training.distributed import DistributedContext
from common.training.loader import LoaderConfig
from common.training.model_init import Init
from common.training.trainer import LossFactory, TrainConfig, TrainResult, recipe_record, train, trainer_fields


@dataclass(frozen=True)
class FinetuneJob:
    """Everything that defines one training run; ``run_job`` trains it."""

    name: str
    """Unique among the workspace's runs (``conclip-mini-l1``): the resume state's folder and the log's name."""
    init: Init
    batches: BatchSource
    loss: LossFactory
    config: TrainConfig
    """Every hyper-parameter (``TrainConfig.from_params``: the stage's ``params.yaml`` section)."""
    module: str
    """The module that builds the job (its ``__name__``): its import closure keys the resume state."""
    validate: Callable[[nn.Module], float] | None = None
    """Higher is better; the best validated weights are kept beside the last (``<stem>.best.safetensors``)."""
    provenance: Mapping[str, Any] = field(default_factory=dict)
    """Deterministic facts for the sidecar (data hashes, the CPU profile): never wall times or absolute paths."""
    resume: bool = True
    """Continue an interrupted run from its resume state (False: start over every time)."""
    loader: LoaderConfig | None = None
    """How the batches are prepared (None: ``LoaderConfig.for_source``); not part of ``describe`` (same tensors)."""

    def with_steps(self, steps: int | None) -> "FinetuneJob":
        """The same job stopped after ``steps`` (smoke runs, tests); None leaves it as it is."""
        return self if steps is None else replace(self, config=replace(self.config, steps=steps))

    def describe(self) -> dict:
        """What defines the run, JSON-able (the resume key, without the code)."""
        return json.loads(json.dumps({
            "name": self.name, "config": {**trainer_fields(self.config), "recipe": recipe_record(self.config)}, "init": self.init.describe(),
            "data": self.batches.describe(), "loss": describe_loss(self.loss), "module": module_name(self.module),
            "validated": self.validate is not None, "provenance": dict(self.provenance),
        }, sort_keys=True, default=str))


def describe_loss(factory: LossFactory) -> dict:
    """A loss factory's identity: its class's qualified name and any bound keywords (``functools.partial``)."""
    keywords: dict = {}
    while isinstance(factory, functools.partial):
        keywords = {**factory.keywords, **keywords}
        factory = factory.func
    name = f"{getattr(factory, '__module__', '?')}.{getattr(factory, '__qualname__', repr(factory))}"
    return {"class": name, "keywords": {k: keywords[k] for k in sorted(keywords)}}


def checkpoint_every(stated: int) -> int:
    """``VLC_CHECKPOINT_EVERY`` when set (0: never), else ``stated``: the environment changes a run's interval without
    changing its stage's parameters, so DVC does not rerun it (the interval changes no number)."""
    value = os.environ.get("VLC_CHECKPOINT_EVERY", "").strip()
    if not value:
        return stated
    try:
        every = int(value)
    except ValueError:
        raise WorkspaceError(f"VLC_CHECKPOINT_EVERY={value!r}: expected a number of steps (0: never)") from None
    if every < 0:
        raise WorkspaceError(f"VLC_CHECKPOINT_EVERY={value!r}: expected a number of steps >= 0 (0: never)")
    return every


def module_name(module: str) -> str:
    """``module``, or for ``"__main__"`` (a builder's ``__name__`` when run as ``python -m papers.x.train``) the
    name it was run under, so the key is the same however the module was started."""
    if module == "__main__":
        spec = getattr(sys.modules.get("__main__"), "__spec__", None)
        if spec is not None and spec.name:
            return spec.name
    return module


def code_files(module: str, root: Path | None = None) -> list[str]:
    """The repository files ``module`` runs: its import closure, as the DVC stages' code deps are derived."""
    module = module_name(module)
    files = sorted(closure([module], root or ROOT).files)
    if not files:
        raise WorkspaceError(f"{module}: not a module of this repository (a job's module must be)")
    return files


def code_digest(module: str, root: Path | None = None) -> str:
    """sha256 of torch's version and of the bytes of every file of ``code_files(module)``, so a resume state
    written by other code is never continued."""
    digest = hashlib.sha256(torch.__version__.encode())
    for relative in code_files(module, root):
        digest.update(relative.encode() + b"\0" + ((root or ROOT) / relative).read_bytes())
    return digest.hexdigest()


def resume_state_path(job: FinetuneJob, world_size: int = 1) -> Path:
    """``<cache root>/training/<job name>/<digest>.resume.pt``: outside the stage's outputs (DVC deletes those before
    a rerun), named by a digest of everything that defines the run, its process count and its code."""
    key = {**job.describe(), "world_size": world_size, "code": code_digest(job.module)}
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    return cache_root() / "training" / job.name / f"{digest}.resume.pt"


def run_job(job: FinetuneJob, out_path: Path, *, world: DistributedContext | None = None,
            progress: bool = False) -> TrainResult:
    """Train ``job`` and write ``out_path`` (safetensors) with its sidecar (and ``<stem>.best.safetensors`` when the
    job validates); an interrupted run with the same definition and code continues from its resume state."""
    world = world or DistributedContext.local("cpu")
    config = replace(job.config, checkpoint_every=checkpoint_every(job.config.checkpoint_every))
    state = resume_state_path(job, world.world_size)
    if job.resume and state.is_file() and world.is_main:
        print(f"{job.name}: resuming from {state}", flush=True)
    try:  # the training processes on this machine (torchrun's LOCAL_WORLD_SIZE) share its cores between their loaders
        local = max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
    except ValueError:
        local = 1
    loader = job.loader or LoaderConfig.for_source(job.batches, local)
    result = train(config, job.init, job.batches, job.loss, Path(out_path), world=world, validate=job.validate,
                   provenance=job.provenance, resume=job.resume, progress=progress, resume_path=state, loader=loader)
    if world.is_main:
        with contextlib.suppress(OSError):
            state.parent.rmdir()  # only when empty: the states of other runs stay
    return result
