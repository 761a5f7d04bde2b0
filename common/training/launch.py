"""A job run as a pipeline stage runs it (``training_process``, ``launch``), and the ``run`` subcommand every paper's
fine-tuning module adds, so that such a module is its job builders and one call::

    def build(args, world, cpu_profile) -> FinetuneJob: ...
    add_run_command(sub, RUNS, build, out_path=lambda args: models / f"{args.run}.safetensors", log_dir=logs)"""
from __future__ import annotations

import argparse
import contextlib
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from common.files.io import write_json_atomic
from common.pipeline import reproducible
from common.training.distributed import DistributedContext, init_from_env, shutdown
from common.training.job import FinetuneJob, run_job
from common.training.trainer import TrainResult

JobBuilder = Callable[[argparse.Namespace, DistributedContext, Mapping[str, Any]], FinetuneJob]
"""``build(args, world, cpu_profile)``: the job of a ``run`` command (``cpu_profile``: the reproducibility profile's
record on the CPU, for the sidecar; ``{}`` on a GPU)."""


@contextlib.contextmanager
def training_process(device: str = "cpu") -> Iterator[tuple[DistributedContext, dict[str, Any]]]:
    """The process a training stage runs in (one job, or a sweep): on the CPU the reproducibility profile (pinned
    re-exec, fixed threads), under ``torchrun`` the process group; yields the world and the CPU profile's record."""
    if device == "cpu":
        reproducible.reexec_pinned()  # before any tensor work: bit-identical weights on any x86-64 CPU
    world = init_from_env(device)
    if device == "cpu":
        reproducible.fix_threads()
    try:
        yield world, (reproducible.describe() if device == "cpu" else {})
    finally:
        shutdown(world)


def launch(build: Callable[[DistributedContext, Mapping[str, Any]], FinetuneJob], out_path: Path, log_path: Path, *,
           device: str = "cpu", steps: int | None = None, progress: bool = True) -> TrainResult:
    """Build the job inside the process the stage runs (``training_process``), train it to ``out_path``, and write
    rank 0's log to ``log_path``. ``steps`` stops the job early (smoke runs)."""
    started = time.perf_counter()
    with training_process(device) as (world, cpu_profile):
        job = build(world, cpu_profile).with_steps(steps)
        result = run_job(job, Path(out_path), world=world, progress=progress and world.is_main)
    if world.is_main:
        seconds = round(time.perf_counter() - started, 1)
        log: dict[str, Any] = {"run": job.name, "seconds": seconds, "train_seconds": result.train_seconds,
                               "resumed_from": result.resumed_from, "final_loss": result.final_loss,
                               "world_size": world.world_size, "machine": reproducible.machine()}
        validated = ""
        if job.validate is not None:
            log.update({"best_step": result.best_step, "best_validation": result.best_score,
                        "validation": [list(v) for v in result.validation]})
            validated = f"; best validation {result.best_score:.4f} at step {result.best_step}"
        write_json_atomic(log_path, log)
        print(f"{job.name}: final loss {result.final_loss:.4f} after {job.config.steps} steps{validated}, {seconds} s; "
              f"weights: {out_path}; log (wall time, not a DVC output): {log_path}", flush=True)
    return result


Launcher = Callable[..., Any]
"""``launcher(build, out_path, log_path, device=, steps=)``: ``launch`` (one job), or a paper's own for several jobs
in one stage (ARO's lr sweep), built on ``training_process`` and ``run_job``."""


def add_run_command(subparsers: argparse._SubParsersAction, runs: Sequence[str], build: JobBuilder, *,  # type: ignore[type-arg]
                    out_path: Callable[[argparse.Namespace], Path], log_dir: Callable[[], Path],
                    configure: Callable[[argparse.ArgumentParser], None] | None = None,
                    help: str = "fine-tune one of the runs", launcher: Launcher = launch) -> argparse.ArgumentParser:
    """Add ``run RUN [--device D] [--out PATH] [--steps N]`` (plus what ``configure`` adds) to a module's CLI:
    ``build(args, world, cpu_profile)`` makes the job (or what ``launcher`` trains); ``out_path(args)`` is where the
    weights go unless ``--out`` says; the log is ``<log_dir()>/<run>.json``."""
    p = subparsers.add_parser("run", help=help)
    p.add_argument("run", choices=list(runs))
    p.add_argument("--device", default="cpu", help="cpu or cuda (one GPU per torchrun rank); default cpu")
    p.add_argument("--out", type=Path, default=None, help="where the weights go (default: where the pipeline reads them)")
    p.add_argument("--steps", type=int, default=None, help="stop after this many steps (smoke runs, tests)")
    if configure is not None:
        configure(p)

    def command(args: argparse.Namespace) -> int:
        out = args.out or out_path(args)
        launcher(lambda world, cpu_profile: build(args, world, cpu_profile), out, log_dir() / f"{args.run}.json",
                 device=args.device, steps=args.steps)
        return 0

    p.set_defaults(func=command)
    return p
