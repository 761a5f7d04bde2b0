"""Contrastive pretraining of the mini profile's tiny CLIPs on mini-world image-caption pairs: ``common.training.train``
with ``FromScratch`` + ``MiniWorldBatches`` + ``ClipLoss`` on CPU, bit-identical to the loop this module ran before the
shared trainer existed (``tests/common/test_train.py`` pins a short run's weights). Each model is a ``FinetuneJob``
run like every paper's fine-tune, so a run killed and rerun resumes to the same bytes (docs/training.md)."""
from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

from common.errors import unknown_name
from common.files.io import sha256_file, write_json_atomic
from common.miniworld import VERSION
from common.paths import build_root
from common.pipeline import reproducible
from common.pipeline.params import PARAMS_FILE, ParamsError, own_params, read_params
from common.training.data import MiniWorldBatches
from common.training.distributed import DistributedContext
from common.training.job import FinetuneJob, checkpoint_every, run_job
from common.training.launch import training_process
from common.training.losses import ClipLoss
from common.training.model_init import FromScratch
from common.training.trainer import REQUIRED, STATED_OR_DEFAULT, TrainConfig
from common.zoo import get_spec, register_local_configs

RECORDED = ("steps", "batch_size", "lr", "weight_decay", "warmup_steps", "seed")
"""The settings the sidecar's ``config`` lists after the model's ``arch`` and ``n_images`` (its keys, in its order)."""


def train_clip(arch: str, n_images: int, config: TrainConfig, train_dir: Path, out_path: Path,
               progress: bool = True, *, world: DistributedContext | None = None,
               provenance: dict | None = None) -> dict:
    """Train ``arch`` from scratch on the first ``n_images`` of the mini training set with ``config``; save to
    ``out_path``. Returns the sidecar record plus ``train_seconds`` (wall time, which the sidecar leaves out: DVC hashes
    it). ``provenance``: more deterministic facts for the sidecar (e.g. the CPU reproducibility profile)."""
    open_clip = register_local_configs()
    train_dir, out_path = Path(train_dir), Path(out_path)
    batches = MiniWorldBatches.load(train_dir, n_images, open_clip.get_tokenizer(arch))
    if world is None or world.is_main:
        print(f"training {arch} from random initialization on {n_images} mini-world pairs "
              f"({config.steps} steps of {config.batch_size})", flush=True)
    try:  # relative to the build root when it lies under it, so records do not embed the clone's location
        train_set = train_dir.resolve().relative_to(build_root().resolve()).as_posix()
    except ValueError:
        train_set = train_dir.name
    provenance = {
        "world_version": VERSION,
        "config": {"arch": arch, "n_images": n_images, **{key: getattr(config, key) for key in RECORDED}},
        "train_set": train_set,
        "train_images_sha256": sha256_file(train_dir / "images.npy"),
        **(provenance or {}),
    }
    every = checkpoint_every(config.checkpoint_every)
    job = FinetuneJob(f"mini-{out_path.stem}", FromScratch(arch), batches, ClipLoss,
                      replace(config, checkpoint_every=every), __name__, provenance=provenance, resume=every > 0)
    result = run_job(job, out_path, world=world, progress=progress)
    return {**result.record, "train_seconds": result.train_seconds}


MODEL_KEYS = ("arch", "n_images")
"""What ``params.yaml train.<name>`` states beside the training settings (``TrainConfig.from_params``)."""


def family_config(name: str, section: dict) -> tuple[str, int, TrainConfig]:
    """``params.yaml train.<name>`` as the model's arch, its number of training images and its ``TrainConfig``; an
    unknown or missing key is one line naming it (the types are checked when the file is read)."""
    known = (*MODEL_KEYS, "steps", *REQUIRED, *STATED_OR_DEFAULT)
    unknown = [key for key in section if key not in known]
    if unknown:
        raise ParamsError(f"{PARAMS_FILE}: train.{name}.{unknown[0]}: unknown key; a model has {', '.join(known)}")
    needed = (*MODEL_KEYS, "steps", *REQUIRED)
    missing = [key for key in needed if key not in section]
    if missing:
        raise ParamsError(f"{PARAMS_FILE}: train.{name}.{missing[0]}: missing; a model needs {', '.join(needed)}")
    return section["arch"], int(section["n_images"]), TrainConfig.from_params(section)


def _cmd_train(args) -> int:
    """``train <name>``: one model of the mini family, its settings from params.yaml ``train.<name>``; under
    ``torchrun`` rank 0 alone prints and writes the weights, the sidecar and the log."""
    known = read_params().get("train")  # a typo is one line, before DVC reads a stage it lacks
    known = known if isinstance(known, dict) else {}
    if args.name not in known:
        raise unknown_name("mini-family model (params.yaml train.<name>)", args.name, known)
    # this module's stage (also run as `python -m common train <name>`): the one whose arguments are these
    arch, n_images, config = family_config(args.name, own_params(module=__spec__.name)["train"][args.name])
    spec = get_spec(f"mini/{args.name}")
    if arch != spec.arch:
        raise ParamsError(f"{PARAMS_FILE}: train.{args.name}.arch: {arch!r}, but the zoo's mini/{args.name} is "
                          f"{spec.arch!r}; make them agree (common/zoo/models.toml)")
    out = spec.checkpoint_path()
    assert out is not None
    train_set = Path(args.train_set) if args.train_set else build_root() / "mini" / "world" / "train"
    with training_process(args.device) as (world, cpu_profile):
        record = train_clip(arch, n_images, config, train_set, out, world=world, provenance=cpu_profile)
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


def main(argv=None) -> int:
    """``python -m common.training.family train <name>``: the ``mini/train`` stage's command (under ``torchrun``), the
    same as ``python -m common train <name>`` without importing every command of the workspace's CLI."""
    parser = argparse.ArgumentParser(prog="python -m common.training.family")
    register_cli(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
