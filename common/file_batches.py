"""Caption rows over image files, batched for the shared trainer: what the full profile's fine-tunes on COCO share.

SugarCrepe's NegCLIP re-training (``papers/sugarcrepe/negclip_full.py``) and the hard-positive fine-tunes
(``papers/hard_positives/finetune_full.py``) both train on hundreds of thousands of (COCO image file, caption) rows,
each caption with aligned extra texts (a hard negative; a hard positive and a hard negative). The images are decoded
per batch (``common.image_files.FileImages``); the batch of a step is a pure function of (seed, step), as the
trainer's resume and DDP sharding need.

``launch_run`` is the entry point's part of a run: the process group, the CPU reproducibility profile, the log.

A module of its own, outside ``common/finetune.py`` and ``common/image_files.py``: the mini profile's fine-tunes
depend on those, and a batch source only the full profile uses should not make them retrain when it changes.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np
import torch

from common.image_files import FileImages
from common.training import DistributedContext, Init, TrainResult

Tokenize = Callable[[Sequence[str]], torch.Tensor]


class FileCaptionBatches:
    """Caption rows over image files, each row's texts of ``extras`` as further text segments.

    ``row_image[i]`` is the index in ``images`` of row i's image; ``captions[i]`` its caption; each extra a sequence
    of one text per row. A batch holds ``images`` (B, 1, 3, H, W) uint8 and ``texts`` (B, 1 + len(extras), L):
    [caption, *extras] per sample.

    The batch of step s is a pure function of (seed, s): an epoch is a permutation of the rows
    (``default_rng([seed, 0, epoch])``; the tail that does not fill a batch is dropped). The draws ignore the
    extras, so every run over the same rows sees the same captions in the same order. Images are decoded and texts
    tokenised per batch, only the rows of this rank. ``fields`` are what ``describe`` reports beyond the name and
    sizes (default: the number of extra segments); they enter the trainer's record and resume key.
    """

    def __init__(self, images: FileImages, row_image: np.ndarray, captions: Sequence[str],
                 extras: Sequence[Sequence[str]], tokenize: Tokenize, name: str = "captions",
                 fields: Mapping | None = None):
        if len(row_image) != len(captions) or any(len(extra) != len(captions) for extra in extras):
            raise ValueError("FileCaptionBatches: row_image, captions and every extra need one entry per row")
        self.images, self.row_image, self.captions = images, np.asarray(row_image), captions
        self.extras, self.tokenize, self.name = tuple(extras), tokenize, name
        self.fields = dict(fields) if fields is not None else {"extra_text_segments": len(self.extras)}
        self._perm: tuple[tuple[int, int], np.ndarray] | None = None

    def steps_per_epoch(self, size: int) -> int:
        if size > len(self.captions):
            raise ValueError(f"batch of {size} is larger than the {len(self.captions)} training rows")
        return len(self.captions) // size

    def draws(self, seed: int, step: int, size: int) -> np.ndarray:
        """The rows of one step's global batch."""
        epoch, j = divmod(step, self.steps_per_epoch(size))
        if self._perm is None or self._perm[0] != (seed, epoch):
            self._perm = ((seed, epoch), np.random.default_rng([seed, 0, epoch]).permutation(len(self.captions)))
        return self._perm[1][j * size: (j + 1) * size]

    def batch(self, seed: int, step: int, size: int, rows: slice = slice(None)) -> dict[str, torch.Tensor]:
        idx = self.draws(seed, step, size)[rows]
        texts = [self.tokenize([self.captions[i] for i in idx]),
                 *(self.tokenize([extra[i] for i in idx]) for extra in self.extras)]
        return {"images": self.images.get(self.row_image[idx]).unsqueeze(1), "texts": torch.stack(texts, dim=1)}

    def describe(self) -> dict:
        return {"name": self.name, "rows": len(self.captions), "images": len(self.images), **self.fields}


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

    @classmethod
    def from_params(cls, section: Mapping) -> "FileRunParams":
        return cls(section["base"], int(section["image_size"]), Schedule.from_params(section), int(section["seed"]),
                   section.get("precision", "fp32"), bool(section.get("shuffle", True)))


def train_file_run(name: str, batches: FileCaptionBatches, params: FileRunParams, loss_factory: Callable,
                   out_path: Path, init: Init, *, world: DistributedContext | None = None, steps: int | None = None,
                   provenance: Mapping | None = None, code: Sequence[Path] = (), checkpoint_every: int = 500,
                   progress: bool = False) -> TrainResult:
    """One run over ``batches`` for the schedule's epochs (``steps`` overrides them: smoke runs, tests), through the
    shared trainer, resumable: its resume state is keyed by ``name``, the settings, the data and ``code`` (with this
    module and the image reader). Writes ``out_path`` and its sidecar."""
    from common.finetune import resume_path
    from common.training import TrainConfig, train

    schedule = params.schedule
    per_epoch = batches.steps_per_epoch(schedule.batch_size)
    total = steps or schedule.epochs * per_epoch
    config = TrainConfig(steps=total, batch_size=schedule.batch_size, lr=schedule.lr,
                         warmup_steps=schedule.warmup_steps, weight_decay=schedule.weight_decay, seed=params.seed,
                         precision=params.precision)
    provenance = {**(provenance or {}), "steps_per_epoch": per_epoch, "epochs": total / per_epoch}
    key = {"name": name, "params": asdict(params), "init": init.describe(), "data": batches.describe(),
           "provenance": provenance, "world_size": (world.world_size if world else 1)}
    here = Path(__file__)
    code = [*code, here, here.with_name("image_files.py")]
    return train(config, init, batches, loss_factory, out_path, world=world, provenance=provenance, resume=True,
                 progress=progress, checkpoint_every=checkpoint_every, resume_path=resume_path(name, key, code))


def launch_run(run: str, device: str, out: Path, log_dir: Path,
               train_fn: Callable[[DistributedContext, dict], TrainResult]) -> TrainResult:
    """One run under ``torchrun`` (or as one process): on CPU the reproducibility profile (pinned re-exec, fixed
    threads; its record is passed to ``train_fn`` for the provenance, else ``{}``), the process group joined and left
    around ``train_fn(world, record)``, and rank 0's wall time written to ``<log_dir>/<run>.json`` (not a DVC
    output: seconds differ between reruns)."""
    from common import reproducible
    from common.io import write_json_atomic
    from common.training import init_from_env, shutdown

    if device == "cpu":
        reproducible.reexec_pinned()  # before any tensor work
    world = init_from_env(device)
    if device == "cpu":
        reproducible.fix_threads()
    started = time.perf_counter()
    try:
        result = train_fn(world, reproducible.describe() if device == "cpu" else {})
    finally:
        shutdown(world)
    if world.is_main:
        seconds = round(time.perf_counter() - started, 1)
        log = Path(log_dir) / f"{run}.json"
        write_json_atomic(log, {"run": run, "seconds": seconds, "train_seconds": result.train_seconds,
                                "resumed_from": result.resumed_from, "final_loss": result.final_loss,
                                "world_size": world.world_size, "machine": reproducible.machine()})
        print(f"{run}: final loss {result.final_loss:.4f}, {seconds} s; weights: {out}; log (wall time, not a DVC "
              f"output): {log}")
    return result
