"""Kamath et al. (hard positives), the fine-tunes of both profiles: the base model trained as each run of
``papers.hard_positives.runs.RUNS``, one ``FinetuneJob`` per run.

Stages ``mini-finetune@<run>`` and ``finetune-full@<run>`` (the README's stage table and "Recipe"): the profiles differ
only in their data (mini: the rendered set in memory; full: COCO train captions, images decoded per batch), read
through their formats (``finetune_rows``) so that neither the sets' code nor the tables rerun the runs.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import torch

from common.files.io import sha256_file
from common.paths import ROOT, build_dir, data_root
from common.pipeline.cli import stage_parser
from common.pipeline.params import own_section
from common.training import FromZoo, Init
from common.training.data import BatchSource
from common.training.distributed import DistributedContext
from common.training.files import FileCaptionBatches, FileImages
from common.training.job import FinetuneJob
from common.training.launch import add_run_command
from common.training.recipes import Recipe, load_recipe
from common.training.rendered import CaptionBatches, caption_tokens, pixels, refuse_same_tokens
from common.training.trainer import TrainConfig
from common.zoo.trained import tokenizer_for
from papers.hard_positives.finetune_rows import IMAGES, FinetuneSet, FullRow, HardPositivesRowsError, load_rows
from papers.hard_positives.runs import RUNS, TYPES, loss_for, run_spec

MODULE = "papers.hard_positives.train"
"""The jobs' module: its import closure keys their resume states."""
RECIPES = "papers/hard_positives/recipes.toml"
"""The full runs' recipe: its table ``finetune`` (NegCLIP's, our choice)."""
DATA_FILES = ("papers/hard_positives/recipes.toml",)
TEXTS = {"texts": ["caption", "hard_positive", "hard_negative"]}
"""Texts per sample, the loss's layout."""


@dataclass(frozen=True)
class Profile:
    """A profile's ``params.yaml`` section, its folder under ``build/<profile>/`` and the set's folder under that."""

    section: str
    build: str
    set_dir: str


PROFILES = {"mini": Profile("hard_positives.mini", "hard_positives", "finetune"),
            "full": Profile("hard_positives.full.finetune", "hard_positives_ft", "set")}


def _job(profile: str, run: str, init: Init, batches: BatchSource, config: TrainConfig,
         provenance: Mapping[str, Any]) -> FinetuneJob:
    """``run``'s loss and facts (``provenance`` after them in the sidecar) around a profile's batches and schedule."""
    spec = run_spec(run)
    facts = {"run": run, "hard_positive_weight": spec.hard_positive_weight,
             "hard_negative_weight": spec.hard_negative_weight, "types": list(spec.types), **provenance}
    return FinetuneJob(f"hard-positives-{profile}-{run}", init, batches, loss_for(spec), config, MODULE,
                       provenance=facts)


def _batches_name(profile: str, run: str) -> str:
    return f"hard-positives-{profile}-{'-'.join(run_spec(run).types)}"


def run_data(run: str, data: FinetuneSet) -> FinetuneSet:
    """What ``run`` trains on in the mini set: every row, or only its types' rows."""
    spec = run_spec(run)
    return data if set(spec.types) == set(TYPES) else data.of_types(spec.types)


def run_rows(run: str, rows: Sequence[FullRow]) -> list[FullRow]:
    """What ``run`` trains on in the full set: every row, or its types' rows."""
    types = run_spec(run).types
    picked = [r for r in rows if r.type in types]
    if not picked:
        raise HardPositivesRowsError(f"{run}: the training set has no rows of types {list(types)}")
    return picked


def batches_for(data: FinetuneSet, tokenize: Callable[[Sequence[str]], torch.Tensor], name: str) -> CaptionBatches:
    """The mini set's batches, refusing a hard positive or negative that tokenizes like its caption."""
    captions = caption_tokens(tokenize, data.texts("caption"))
    extras = {k: caption_tokens(tokenize, data.texts(k)) for k in ("positive", "negative")}
    for k, tokens in extras.items():
        refuse_same_tokens(captions, tokens, data.texts("caption"), f"hard {k}", "the fine-tuning set")
    return CaptionBatches(pixels(data.images), captions, [extras["positive"], extras["negative"]], name, fields=TEXTS)


def mini_job(run: str, data: FinetuneSet, section: Mapping[str, Any], *, init: Init | None = None,
             tokenize: Callable[[Sequence[str]], torch.Tensor] | None = None,
             provenance: Mapping[str, Any] | None = None) -> FinetuneJob:
    """``run`` in the mini profile on ``data``, the whole set (the run keeps its types' rows)."""
    data = run_data(run, data)
    config = TrainConfig.from_params(section)
    if len(data.images) < config.batch_size:
        raise HardPositivesRowsError(f"{run}: {len(data.images)} training images cannot fill a batch of "
                                     f"{config.batch_size}")
    init = init or FromZoo(section["base"])
    batches = batches_for(data, tokenize or tokenizer_for(init.describe()["arch"]), _batches_name("mini", run))
    return _job("mini", run, init, batches, config, provenance or {})


def full_job(run: str, rows: Sequence[FullRow], section: Mapping[str, Any], images_dir: Path, *,
             recipe: Recipe | None = None, init: Init | None = None, steps: int | None = None,
             provenance: Mapping[str, Any] | None = None) -> FinetuneJob:
    """``run`` in the full profile on ``rows``, the whole set, for the schedule's epochs (``steps`` overrides them:
    smoke runs, tests)."""
    rows = run_rows(run, rows)
    init = init or FromZoo(section["base"])
    files = list(dict.fromkeys(r.image for r in rows))
    where = {name: i for i, name in enumerate(files)}
    images = FileImages(tuple(Path(images_dir) / name for name in files), int(section["image_size"]),
                        crop_scale=recipe.train_crop_scale if recipe is not None else None)
    batches = FileCaptionBatches(images, np.array([where[r.image] for r in rows], dtype=np.int64),
                                 [r.caption for r in rows], [[r.positive for r in rows], [r.negative for r in rows]],
                                 tokenizer_for(init.describe()["arch"]), name=_batches_name("full", run),
                                 fields=TEXTS)
    per_epoch = batches.steps_per_epoch(int(section["batch_size"]))
    config = TrainConfig.from_params(section, steps_per_epoch=per_epoch, steps=steps, recipe=recipe)
    return _job("full", run, init, batches, config,
                {**(provenance or {}), "steps_per_epoch": per_epoch, "epochs": config.steps / per_epoch})


def build(args: argparse.Namespace, world: DistributedContext, cpu_profile: Mapping[str, Any]) -> FinetuneJob:
    """The job of ``<profile> run <name>``, the CPU profile (``{}`` on GPUs) in its sidecar."""
    profile = PROFILES[args.profile]
    _, section = own_section(profile.section)
    set_dir = Path(args.set or build_dir(args.profile, profile.build) / profile.set_dir)
    provenance = {"set_manifest_sha256": sha256_file(set_dir / "manifest.json"), **cpu_profile}
    if args.profile == "mini":
        return mini_job(args.run, FinetuneSet.load(set_dir), section, provenance=provenance)
    return full_job(args.run, load_rows(set_dir), section, Path(args.images or data_root() / IMAGES),
                    recipe=load_recipe(ROOT / RECIPES, "finetune"), steps=args.steps, provenance={"profile": "full", **provenance})


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--set", type=Path, default=None,
                        help="default: build/mini/hard_positives/finetune, build/full/hard_positives_ft/set")
    parser.add_argument("--images", type=Path, default=None,
                        help=f"the full profile's COCO images; default: <data>/{IMAGES.as_posix()}")


def _build_dir(args: argparse.Namespace) -> Path:
    return build_dir(args.profile, PROFILES[args.profile].build)


def main(argv: Sequence[str] | None = None) -> int:
    parser = stage_parser(MODULE, __doc__)
    parser.add_argument("profile", choices=list(PROFILES))
    sub = parser.add_subparsers(dest="command", required=True)
    add_run_command(sub, RUNS, build, configure=_options,
                    help="fine-tune the base model as one of the runs (full: under torchrun, or as one process)",
                    out_path=lambda a: _build_dir(a) / "models" / f"{a.run}.safetensors",
                    log_dir=lambda: _build_dir(args) / "logs")  # asked for after parsing: ``args`` below
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
