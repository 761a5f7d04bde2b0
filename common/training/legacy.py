"""TEMPORARY (removed before this refactor lands): the old entry points of the fine-tunes, on top of the job runner,
so the papers keep running while each moves to job builders (``common.training.job``, ``common.training.launch``)."""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Mapping, Sequence

from common.training.distributed import DistributedContext
from common.training.files import FileCaptionBatches
from common.training.job import FinetuneJob, run_job
from common.training.model_init import Init
from common.training.recipe import FileRunParams
from common.training.trainer import TrainConfig, TrainResult, train


def train_file_run(name: str, batches: FileCaptionBatches, params: FileRunParams, loss_factory: Callable,
                   out_path: Path, init: Init, *, world: DistributedContext | None = None, steps: int | None = None,
                   provenance: Mapping | None = None, code: Sequence[Path] = (), checkpoint_every: int = 500,
                   progress: bool = False, module: str = "common.training.legacy") -> TrainResult:
    per_epoch = batches.steps_per_epoch(params.schedule.batch_size)
    config = params.trainer_config(per_epoch, steps)
    provenance = {**(provenance or {}), "steps_per_epoch": per_epoch, "epochs": config.steps / per_epoch}
    job = FinetuneJob(name, init, batches, loss_factory, config, module, provenance=provenance,
                      checkpoint_every=checkpoint_every)
    return run_job(job, out_path, world=world, progress=progress)


def launch_run(run: str, device: str, out: Path, log_dir: Path,
               train_fn: Callable[[DistributedContext, dict], TrainResult]) -> TrainResult:
    import time

    from common import reproducible
    from common.io import write_json_atomic
    from common.training.distributed import init_from_env, shutdown

    if device == "cpu":
        reproducible.reexec_pinned()
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
        print(f"{run}: final loss {result.final_loss:.4f}, {seconds} s; weights: {out}; log: {log}")
    return result


def resume_path(name: str, key: Mapping, code: Sequence[Path]) -> Path:
    import hashlib
    import json

    import torch

    from common.paths import cache_root

    digest = hashlib.sha256(torch.__version__.encode())
    for path in code:
        digest.update(Path(path).name.encode() + b"\0" + Path(path).read_bytes())
    run_key = hashlib.sha256(json.dumps({**key, "code": digest.hexdigest()}, sort_keys=True, default=str).encode())
    return cache_root() / "training" / name / f"{run_key.hexdigest()[:16]}.resume.pt"


__all__ = ["train_file_run", "launch_run", "resume_path", "TrainConfig", "train"]
