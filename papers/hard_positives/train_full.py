"""Kamath et al. (hard positives), the full profile's own fine-tunes: CLIP ViT-B/32 on COCO train captions, each
with one hard positive and one hard negative, as each run of ``papers.hard_positives.runs.RUNS``, one ``FinetuneJob``
per run.

Stage ``finetune-full@<run>`` (``torchrun ... -m papers.hard_positives.train_full run <run> --device cuda``): the
mini profile's runs (CLIP-FT, HN, HP+HN, Swap-only, Replace-only, Table 3's hard-negative weights) through the shared
trainer with ``HardPositiveLoss``, from the zoo's ``base``; every run over its rows in the same order (the batch of
step s is a pure function of (seed, s); the type-only runs see their type's rows), images decoded per batch from the
COCO files (``common.training.files``). The schedule (``hard_positives.full.finetune``) is ours: the paper defers to
SVLC's supplementary; NegCLIP's recipe at its public lr, as SugarCrepe's re-training uses. The rows come from stage
``finetune-full-set`` (``papers.hard_positives.finetune_sets_full``), read through their format
(``finetune_rows_full``); ``papers.hard_positives.tables`` (stage ``table1-full``) scores the runs.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import torch

from common.errors import WorkspaceError
from common.io import sha256_file
from common.paths import build_dir
from common.training import FromZoo, Init
from common.training.distributed import DistributedContext
from common.training.files import FileCaptionBatches, FileImages
from common.training.job import FinetuneJob
from common.training.launch import add_run_command
from common.training.recipes import Recipe, load_recipe
from common.training.trainer import TrainConfig
from common.zoo.trained import tokenizer_for as shared_tokenizer_for
from papers.hard_positives.finetune_rows_full import IMAGES, FullRow, load_rows
from papers.hard_positives.runs import RUNS, loss_for, run_spec

MODULE = "papers.hard_positives.train_full"
"""The jobs' module: its import closure keys their resume states."""
RECIPE = "finetune"
RECIPES = "papers/hard_positives/recipes.toml"
DATA_FILES = ("papers/hard_positives/recipes.toml",)


def recipe(name: str) -> Recipe:
    """A table of ``papers/hard_positives/recipes.toml`` (every run: ``RECIPE``, NegCLIP's, our choice)."""
    from common.paths import ROOT

    return load_recipe(ROOT / RECIPES, name)


class HardPositivesFinetuneFullError(WorkspaceError):
    """An input of the full fine-tunes that cannot be used as given."""


def run_rows(run: str, rows: Sequence[FullRow]) -> list[FullRow]:
    """What ``run`` trains on: every row, or its types' rows."""
    types = run_spec(run).types
    picked = [r for r in rows if r.type in types]
    if not picked:
        raise HardPositivesFinetuneFullError(f"{run}: the training set has no rows of types {list(types)}")
    return picked


def tokenizer_for(arch: str) -> Callable[[Sequence[str]], torch.Tensor]:
    """The zoo tokenizer of ``arch``, over any sequence of texts (the batches pass lists of rows)."""
    tokenizer = shared_tokenizer_for(arch)
    return lambda texts: tokenizer(list(texts))


def job_for(run: str, rows: Sequence[FullRow], section: Mapping[str, Any], images_dir: Path, *,
            recipe: Recipe | None = None, init: Init | None = None, steps: int | None = None,
            provenance: Mapping[str, Any] | None = None) -> FinetuneJob:
    """``run`` as a job: ``init`` (default: the zoo's ``section["base"]``) fine-tuned on ``rows`` (the whole set: the
    run keeps its types' rows) with ``section``'s settings (``params.yaml hard_positives.full.finetune``) and
    ``recipe``'s rules (None: the mini recipe) for the schedule's epochs (``steps`` overrides them: smoke runs,
    tests); ``provenance`` is added to the run's own facts in the sidecar, then the epochs as steps."""
    spec = run_spec(run)
    rows = run_rows(run, rows)
    init = init or FromZoo(section["base"])
    files = list(dict.fromkeys(r.image for r in rows))
    where = {name: i for i, name in enumerate(files)}
    images = FileImages(tuple(Path(images_dir) / name for name in files), int(section["image_size"]),
                        crop_scale=recipe.train_crop_scale if recipe is not None else None)
    batches = FileCaptionBatches(images, np.array([where[r.image] for r in rows], dtype=np.int64),
                                 [r.caption for r in rows], [[r.positive for r in rows], [r.negative for r in rows]],
                                 tokenizer_for(init.describe()["arch"]),
                                 name=f"hard-positives-full-{'-'.join(spec.types)}",
                                 fields={"texts": ["caption", "hard_positive", "hard_negative"]})
    per_epoch = batches.steps_per_epoch(int(section["batch_size"]))
    config = TrainConfig.from_params(section, steps_per_epoch=per_epoch, steps=steps, recipe=recipe)
    facts = {"run": run, "hard_positive_weight": spec.hard_positive_weight,
             "hard_negative_weight": spec.hard_negative_weight, "types": list(spec.types), **(provenance or {}),
             "steps_per_epoch": per_epoch, "epochs": config.steps / per_epoch}
    return FinetuneJob(f"hard-positives-full-{run}", init, batches, loss_for(spec), config, MODULE,
                       provenance=facts)


def build(args: argparse.Namespace, world: DistributedContext, cpu_profile: Mapping[str, Any]) -> FinetuneJob:
    """The job of ``run <name>``: the stage's parameters, the rows, the COCO images and the CPU profile (``{}`` on
    GPUs) for the sidecar; ``--steps`` enters the recorded epochs as it enters the schedule."""
    from common.params import own_section
    from common.paths import data_root

    _, section = own_section("hard_positives.full.finetune")
    set_dir = Path(args.set or build_dir("full", "hard_positives_ft") / "set")
    rows = load_rows(set_dir)
    provenance = {"profile": "full", "set_manifest_sha256": sha256_file(set_dir / "manifest.json"), **cpu_profile}
    return job_for(args.run, rows, section, Path(args.images or data_root() / IMAGES), recipe=recipe(RECIPE),
                   steps=args.steps, provenance=provenance)


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--set", type=Path, default=None, help="default: build/full/hard_positives_ft/set")
    parser.add_argument("--images", type=Path, default=None, help=f"default: <data>/{IMAGES.as_posix()}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {MODULE}", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    add_run_command(sub, RUNS, build, configure=_options,
                    help="fine-tune the base model as one of the runs (under torchrun, or as one process)",
                    out_path=lambda args: build_dir("full", "hard_positives_ft") / "models" / f"{args.run}.safetensors",
                    log_dir=lambda: build_dir("full", "hard_positives_ft") / "logs")
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
