"""ARO's fine-tunes (Section 5 and Appendix C) as an lr sweep: one ``FinetuneJob`` per (method, learning rate), the
best by validation retrieval kept, as the paper picks its learning rate. NegCLIP's loss is ``HardNegativeClipLoss``,
CLIP-FT's ``ClipLoss`` over the same captions in the same order (one batch source, ``papers.aro.batches``).

A sweep is several runs in one process, so it has its own launcher (``launch_sweep``). Each finished run waits under
``<cache root>/training/<sweep name>/<digest>/`` (outside the stage's outputs, which DVC deletes before a rerun) until
the chosen one is copied out, so a killed sweep resumes at the lr it was training.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from common.files.io import output_group, write_json_atomic
from common.files.jsonl import read_json
from common.paths import cache_root
from common.pipeline import reproducible
from common.training import ClipLoss, HardNegativeClipLoss, Init, TrainConfig
from common.training.distributed import DistributedContext
from common.training.job import FinetuneJob, code_digest, run_job
from common.training.launch import training_process
from common.training.recipes import Recipe
from papers.aro.batches import FinetuneBatches
from papers.aro.validation import RetrievalValidator

METHODS = {"negclip": HardNegativeClipLoss, "clip-ft": ClipLoss}
"""Each method's loss (the ``run`` command's choices)."""


def lr_tag(lr: float) -> str:
    return f"lr{lr:.0e}".replace("e-0", "e-")


@dataclass(frozen=True)
class Sweep:
    """One method's jobs, one per learning rate in ``params`` order (the first of equal scores wins)."""

    name: str
    """``aro-<profile>-<method>``: the folder of the sweep's finished runs."""
    method: str
    jobs: tuple[FinetuneJob, ...]


def sweep_jobs(method: str, profile: str, section: Mapping[str, Any], init: Init, batches: FinetuneBatches,
               validator: RetrievalValidator, module: str, provenance: Mapping, steps: int | None = None,
               recipe: Recipe | None = None) -> Sweep:
    """A job per lr of ``section["lrs"]`` (``recipe`` None: the mini recipe's optimiser), each recording its method,
    its schedule in epochs and ``provenance`` in its sidecar; ``steps`` overrides the epochs, as the sidecar says."""
    per_epoch = batches.steps_per_epoch(int(section["batch_size"]))
    configs = [TrainConfig.from_params(section, steps_per_epoch=per_epoch, recipe=recipe, steps=steps, lr=float(lr))
               for lr in section["lrs"]]
    record = {"method": method, "steps_per_epoch": per_epoch, "epochs": configs[0].steps / per_epoch, **provenance,
              "validation_detail": None}  # the sweep fills it in each run's record (both directions' R@1)
    jobs = tuple(FinetuneJob(f"aro-{profile}-{method}-{lr_tag(config.lr)}", init, batches, METHODS[method], config,
                             module, validate=validator, provenance=record)
                 for config in configs)
    return Sweep(f"aro-{profile}-{method}", method, jobs)


SELECTION = ("the lr with the highest validation mean R@1 (image->text, text->image); the first in params order on a "
             "tie")


def sweep_dir(sweep: Sweep, world_size: int = 1) -> Path:
    """Where the sweep's finished runs wait: named by everything that defines its runs and by their code."""
    key = {"jobs": [job.describe() for job in sweep.jobs], "world_size": world_size,
           "code": code_digest(sweep.jobs[0].module)}
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    return cache_root() / "training" / sweep.name / digest


def run_sweep(sweep: Sweep, out_path: Path, *, world: DistributedContext | None = None,
              progress: bool = True) -> dict:
    """Train every job of ``sweep`` (reusing those finished earlier), keep the best in ``out_path``; returns its sidecar
    plus ``seconds_per_lr`` (wall time, left out of the sidecar: DVC hashes it)."""
    world = world or DistributedContext.local("cpu")
    method = sweep.method
    folder = sweep_dir(sweep, world.world_size)
    swept: list[dict] = []
    seconds: dict[str, float] = {}
    say = print if world.is_main else (lambda *args, **kwargs: None)  # rank 0 speaks for the sweep
    for job in sweep.jobs:
        lr = job.config.lr
        run_out = folder / f"{method}-{lr_tag(lr)}.safetensors"
        done = run_out.with_suffix(".json")
        if done.is_file():
            record = read_json(done, expect=dict, remedy="delete the folder to rerun the sweep")
            say(f"{method} lr={lr:g}: finished earlier, reusing {run_out}", flush=True)
        else:
            say(f"{method} lr={lr:g}: {job.config.steps} steps of {job.config.batch_size} ({job.name})", flush=True)
            started = time.perf_counter()
            record = run_job(job, run_out, world=world, progress=progress).record
            record["validation_detail"] = dict(getattr(job.validate, "last", {})) if world.is_main else None
            if world.is_main:
                write_json_atomic(done, record)
            seconds[lr_tag(lr)] = round(time.perf_counter() - started, 1)
        score = record["validation"]["best_score"]
        swept.append({"lr": lr, "validation_mean_recall_at_1": score, "final_loss": record["final_loss"],
                     **{k: v for k, v in (record.get("validation_detail") or {}).items() if k != "mean_recall_at_1"}})
        say(f"{method} lr={lr:g}: validation mean R@1 {score:.4f}, final loss {record['final_loss']:.4f}", flush=True)
    best = max(range(len(swept)), key=lambda i: (swept[i]["validation_mean_recall_at_1"], -i))  # first of equals
    chosen = sweep.jobs[best].config.lr
    chosen_out = folder / f"{method}-{lr_tag(chosen)}.safetensors"
    record = read_json(chosen_out.with_suffix(".json"), expect=dict) if world.is_main else {}
    record.pop("validation_detail", None)
    record.update({"chosen_lr": chosen, "lr_sweep": swept, "selection": SELECTION})
    if world.is_main:
        out_path = Path(out_path)
        with output_group(out_path.parent) as staging:  # the chosen weights and their sidecar, together or not at all
            shutil.copyfile(chosen_out, staging / out_path.name)
            write_json_atomic(staging / out_path.with_suffix(".json").name, record)
        shutil.rmtree(folder, ignore_errors=True)
    return {**record, "seconds_per_lr": seconds}


def launch_sweep(build: Callable[[DistributedContext, Mapping[str, Any]], Sweep], out_path: Path, log_path: Path, *,
                 device: str = "cpu", steps: int | None = None, progress: bool = True) -> dict:
    """``add_run_command``'s launcher for a sweep: build and run it in the stage's process (``training_process``);
    rank 0's log (wall times: not a DVC output) goes to ``log_path``. The builder applies ``steps``."""
    with training_process(device) as (world, cpu_profile):
        record = run_sweep(build(world, cpu_profile), out_path, world=world, progress=progress)
    if world.is_main:
        summary = {k: record[k] for k in ("chosen_lr", "lr_sweep", "seconds_per_lr")}
        write_json_atomic(log_path, {**summary, "machine": reproducible.machine()})
        print(json.dumps(summary, indent=2))
        print(f"weights: {out_path}; log (wall times, not a DVC output): {log_path}")
    return record

