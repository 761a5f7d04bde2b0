"""Contrastive pretraining of the mini profile's tiny CLIPs on mini-world image-caption pairs.

The standard CLIP objective (symmetric InfoNCE over the batch, learned temperature), AdamW with
warmup and cosine decay, on CPU: ``common.training.train`` with ``FromScratch`` + ``MiniWorldBatches``
+ ``ClipLoss``. Deterministic for a given seed and thread count, and bit-identical to the loop this
module ran before the shared trainer existed (``tests/common/test_train.py`` pins a short run's
weights). The checkpoint is a plain state dict (safetensors) with a JSON record of how it was
trained next to it. ``python -m common train <name>`` also runs under ``torchrun`` (DDP over the
same global batch; weights then equal the one-process ones up to float rounding).

Kill and resume: every ``checkpoint_every`` steps (default ``CHECKPOINT_EVERY``; ``VLC_CHECKPOINT_EVERY``
overrides, 0 turns it off) a resume state is written under ``<cache root>/training/<out stem>/``, outside the
DVC stage's outputs (DVC deletes those before rerunning a stage), named by a digest of everything that defines
the run, so a run with another recipe, data or world size never picks it up. A rerun after a kill continues
from it and ends with the same bytes as an uninterrupted run; it is deleted once the weights are written.
Neither the setting nor the file enters the sidecar.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from common.errors import WorkspaceError
from common.io import sha256_file
from common.miniworld import VERSION
from common.training import ClipLoss, DistributedContext, FromScratch, MiniWorldBatches, train
from common.training import TrainConfig as TrainerConfig


CHECKPOINT_EVERY = 50
"""Steps between resume states of ``train_clip`` (about 10-20 s of the mini family's training on 2 cores)."""


def checkpoint_every() -> int:
    """``VLC_CHECKPOINT_EVERY`` if set (0: no resume states), else ``CHECKPOINT_EVERY``."""
    value = os.environ.get("VLC_CHECKPOINT_EVERY", "").strip()
    if not value:
        return CHECKPOINT_EVERY
    try:
        every = int(value)
    except ValueError:
        raise WorkspaceError(f"VLC_CHECKPOINT_EVERY={value!r}: expected a number of steps (0: never)") from None
    if every < 0:
        raise WorkspaceError(f"VLC_CHECKPOINT_EVERY={value!r}: expected a number of steps >= 0 (0: never)")
    return every


def resume_path(out_path: Path, record: dict) -> Path:
    """Where a run writing ``out_path`` keeps its resume state: under the cache root, named by the run's record."""
    from common.paths import cache_root

    digest = hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()[:16]
    return cache_root() / "training" / Path(out_path).stem / f"{digest}.resume.pt"


@dataclass(frozen=True)
class TrainConfig:
    arch: str
    n_images: int
    steps: int
    batch_size: int = 128
    lr: float = 1e-3
    weight_decay: float = 0.1
    warmup_steps: int = 100
    seed: int = 0

    def trainer_config(self) -> TrainerConfig:
        """The shared trainer's settings for this recipe (its other settings at their defaults)."""
        return TrainerConfig(steps=self.steps, batch_size=self.batch_size, lr=self.lr,
                             weight_decay=self.weight_decay, warmup_steps=self.warmup_steps, seed=self.seed)


def train_clip(config: TrainConfig, train_dir: Path, out_path: Path, progress: bool = True, *,
               world: DistributedContext | None = None, provenance: dict | None = None,
               checkpoint_steps: int | None = None) -> dict:
    """Train ``config.arch`` on the first ``n_images`` of the mini training set; save to ``out_path``.

    Returns the sidecar record written beside the weights plus ``train_seconds`` (wall time, which
    the sidecar leaves out: DVC hashes it, so it must be identical on every rerun). ``world``: the
    context of a torchrun launch (``common.training.init_from_env``); default one CPU process.
    ``provenance``: more deterministic facts for the sidecar (e.g. the CPU reproducibility profile).
    ``checkpoint_steps``: steps between resume states (default ``checkpoint_every()``; module docstring).
    """
    import open_clip

    from common.zoo import register_local_configs

    register_local_configs()
    train_dir, out_path = Path(train_dir), Path(out_path)
    batches = MiniWorldBatches.load(train_dir, config.n_images, open_clip.get_tokenizer(config.arch))
    if world is None or world.is_main:
        print(f"training {config.arch} from random initialization on {config.n_images} mini-world pairs "
              f"({config.steps} steps of {config.batch_size})", flush=True)
    provenance = {
        "world_version": VERSION,
        "config": asdict(config),
        "train_set": _portable(train_dir),
        "train_images_sha256": sha256_file(train_dir / "images.npy"),
        **(provenance or {}),
    }
    every = checkpoint_every() if checkpoint_steps is None else checkpoint_steps
    run_key = {"out": out_path.name, "provenance": provenance, "data": batches.describe(),
               "world_size": 1 if world is None else world.world_size, "code": _training_code()}
    state = resume_path(out_path, run_key)
    if state.is_file() and (world is None or world.is_main):
        print(f"resuming from {state}", flush=True)
    result = train(config.trainer_config(), FromScratch(config.arch), batches, ClipLoss, out_path,
                   world=world, provenance=provenance, resume=every > 0, progress=progress,
                   checkpoint_every=every, resume_path=state)
    if world is None or world.is_main:
        with contextlib.suppress(OSError):
            state.parent.rmdir()  # only when empty: the states of other runs stay
    return {**result.record, "train_seconds": result.train_seconds}


def _training_code() -> str:
    """sha256 of the training code and torch's version: a resume state written by other code is never continued."""
    import torch

    here = Path(__file__).resolve().parent
    digest = hashlib.sha256(torch.__version__.encode())
    for path in [here / "train.py", *sorted((here / "training").glob("*.py"))]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _portable(path: Path) -> str:
    """``path`` relative to the build root when it lies under it, so records do not embed the clone's location."""
    from common.paths import build_root

    try:
        return path.resolve().relative_to(build_root().resolve()).as_posix()
    except ValueError:
        return path.name


def _cmd_train(args) -> int:
    """``train <name>``: one model of the mini family, its recipe from params.yaml ``train.<name>``.

    Under ``torchrun`` every rank trains its share of each global batch; rank 0 alone prints and
    writes the weights, the sidecar and the log.
    """
    from common import reproducible
    from common.io import write_json_atomic
    from common.params import stage_params
    from common.paths import build_root
    from common.training import init_from_env, shutdown
    from common.zoo import get_spec

    if args.device == "cpu":
        reproducible.reexec_pinned()  # before any tensor work: the pins are read once, at first use
    recipe = dict(stage_params(f"mini/train@{args.name}")["train"][args.name])
    spec = get_spec(f"mini/{args.name}")
    if recipe.get("arch") != spec.arch:
        raise SystemExit(f"params.yaml train.{args.name}.arch={recipe.get('arch')!r} but the zoo says {spec.arch!r}")
    out = spec.checkpoint_path()
    assert out is not None
    train_set = Path(args.train_set) if args.train_set else build_root() / "mini" / "world" / "train"
    world = init_from_env(args.device)
    if args.device == "cpu":
        reproducible.fix_threads()
    try:
        record = train_clip(TrainConfig(**recipe), train_set, out, world=world,
                            provenance=reproducible.describe() if args.device == "cpu" else {})
    finally:
        shutdown(world)
    if world.is_main:
        log = out.parent.parent / "logs" / f"train-{args.name}.json"
        write_json_atomic(log, {**record, "machine": reproducible.machine()})
        print(json.dumps(record, indent=2))
        print(f"log (with wall time, not a DVC output): {log}")
    return 0


def register_cli(subparsers) -> None:
    """Add ``train`` to ``python -m common``."""
    p = subparsers.add_parser("train", help="train one tiny CLIP of the mini family (params.yaml train.<name>)")
    p.add_argument("name")
    p.add_argument("--train-set", default=None, help="default: <build root>/mini/world/train")
    p.add_argument("--device", default="cpu",
                   help="cpu (default: the pipeline's weights are CPU-trained) or cuda (one GPU per torchrun rank)")
    p.set_defaults(func=_cmd_train)
