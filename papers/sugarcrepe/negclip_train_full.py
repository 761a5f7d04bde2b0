"""The full NegCLIP runs of Tables 5 and 10 (stages ``negclip-full@<run>``, ``negclip-full-refined@<run>``; GPU,
``torchrun``): one ``FinetuneJob`` per run of ``runs.FULL_RUNS``.

Every run goes over the same rows in the same order (the batch of step s is a pure function of (seed, s)); images
are decoded from the COCO files per batch (``common.training.files.FileImages``). ``ClipLoss`` over images [I] and
texts [T] without negatives; ``TextNegativeClipLoss`` over [I] and [T; T_neg] with them. Fine-tuned runs start from
``base`` (``openai/ViT-B-32``) on the ``finetune`` schedule, scratch runs from a random ``scratch_arch`` (``RN50``)
on the ``scratch`` schedule; both schedules are the paper's (the SugarCrepe paper, Appendix A.3: "number of warmup
steps is 1000, batch size is 256, learning rate is 1e-4, weight decay is 0.1, number of epochs is 30") and both
recipes OpenCLIP's training code of the time, mlfoundations/open_clip@a09d519f (``papers/sugarcrepe/recipes.toml``
cites each rule: its decay groups, betas per architecture, amp, training crop). The refined runs are a stage group of their own: only they wait for the refinement
(Vera, GPU), whose rows they read through ``negclip_rows_full`` without importing the refinement's code.

``torchrun ... -m papers.sugarcrepe.negclip_train_full run <run> --device ${sugarcrepe.negclip_full.device}``: weights in
``build/full/sugarcrepe_negclip/models/``, rank 0's wall-time log in ``build/full/sugarcrepe_negclip/logs/``.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import torch

from common.training.files import FileCaptionBatches, FileImages
from common.training.job import FinetuneJob
from common.training.model_init import FromScratch, FromZoo, Init
from common.training.recipes import Recipe, load_recipe
from common.training.trainer import TrainConfig
from common.zoo.trained import tokenizer_for as shared_tokenizer_for
from papers.sugarcrepe.losses import loss_for
from papers.sugarcrepe.negclip_rows_full import TrainRow, run_negatives, run_rows
from papers.sugarcrepe.runs import FULL_RUNS, run_spec

MODULE = "papers.sugarcrepe.negclip_train_full"
"""This module's name even when it runs as ``__main__``: its import closure keys the runs' resume states."""
RECIPES = "papers/sugarcrepe/recipes.toml"
DATA_FILES = ("papers/sugarcrepe/recipes.toml",)
OUT = "sugarcrepe_negclip"
"""``build/full/<OUT>``: the set (``set/``), ``refined.json``, the weights (``models/``) and the logs (``logs/``)."""


def recipe(name: str) -> Recipe:
    """A table of ``papers/sugarcrepe/recipes.toml``: ``finetune`` (ViT-B/32) or ``scratch`` (RN50)."""
    from common.paths import ROOT

    return load_recipe(ROOT / RECIPES, name)


def family(run: str) -> str:
    """The run's family: ``scratch`` or ``finetune``, the name of its schedule (a subsection of
    ``params.yaml sugarcrepe.negclip_full``) and of its recipe."""
    return "scratch" if run_spec(FULL_RUNS, run).scratch else "finetune"


def default_init(run: str, section: Mapping[str, Any]) -> Init:
    return FromScratch(section["scratch_arch"]) if run_spec(FULL_RUNS, run).scratch else FromZoo(section["base"])


def tokenizer_for(arch: str) -> Callable[[Sequence[str]], torch.Tensor]:
    """The zoo tokenizer of ``arch``, over any sequence of texts (the batches pass lists of rows)."""
    tokenizer = shared_tokenizer_for(arch)
    return lambda texts: tokenizer(list(texts))


def build_job(run: str, rows: Sequence[TrainRow], section: Mapping[str, Any], images_dir: Path, *,
              init: Init | None = None, steps: int | None = None,
              provenance: Mapping[str, Any] | None = None) -> FinetuneJob:
    """``run`` as a job over ``rows`` (``run_rows``), images under ``images_dir``, with ``section``'s settings
    (``params.yaml sugarcrepe.negclip_full``: its family's schedule, then what every run shares); ``steps`` overrides
    the schedule's epochs (smoke runs, tests) and is recorded as a fraction of an epoch; ``provenance`` follows the
    run's keys."""
    spec = run_spec(FULL_RUNS, run)
    init = init or default_init(run, section)
    rules = recipe(family(run))
    files = list(dict.fromkeys(r.image for r in rows))
    where = {name: i for i, name in enumerate(files)}
    images = FileImages(tuple(Path(images_dir) / name for name in files), int(section["image_size"]),
                        crop_scale=rules.train_crop_scale)
    negatives = run_negatives(run, rows, int(section["seed"]))
    batches = FileCaptionBatches(images, np.array([where[r.image] for r in rows], dtype=np.int64),
                                 [r.caption for r in rows], [] if negatives is None else [negatives],
                                 tokenizer_for(init.describe()["arch"]), name=f"sugarcrepe-full-{run}",
                                 fields={"negatives": negatives is not None})
    schedule = section[family(run)]
    per_epoch = batches.steps_per_epoch(int(schedule["batch_size"]))
    config = TrainConfig.from_params(schedule, section, steps_per_epoch=per_epoch, steps=steps, recipe=rules)
    return FinetuneJob(
        f"sugarcrepe-full-{run}", init, batches, loss_for(spec.hard_negative), config, MODULE,
        provenance={"run": run, "hard_negative": spec.hard_negative, "scratch": spec.scratch, "refined": spec.refined,
                    "steps_per_epoch": per_epoch, "epochs": config.steps / per_epoch, **(provenance or {})})


def build(args: argparse.Namespace, world, cpu_profile: Mapping[str, Any]) -> FinetuneJob:
    """The job of ``run <run>``: the stage's parameters, the set (``--set``), the refinement (``--refined``), the
    images (``--images``) and the set manifest's hash."""
    from common.inputs import step_budget
    from common.io import sha256_file
    from common.params import own_section
    from common.paths import build_dir, data_root

    _, section = own_section("sugarcrepe.negclip_full")
    set_dir = Path(args.set or build_dir("full", OUT) / "set")
    rows = run_rows(args.run, set_dir, Path(args.refined or build_dir("full", OUT) / "refined.json"))
    images = Path(args.images or data_root() / "coco" / "train2014" / "train2014")
    return build_job(args.run, rows, section, images, steps=step_budget(section, args.steps),
                     provenance={"profile": "full", "set_manifest_sha256": sha256_file(set_dir / "manifest.json"),
                                 **cpu_profile})


def main(argv: Sequence[str] | None = None) -> int:
    from common.paths import build_dir
    from common.training.launch import add_run_command

    parser = argparse.ArgumentParser(prog=f"python -m {MODULE}", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    def configure(p: argparse.ArgumentParser) -> None:
        p.add_argument("--set", default=None, help="default: build/full/sugarcrepe_negclip/set")
        p.add_argument("--refined", default=None, help="default: build/full/sugarcrepe_negclip/refined.json")
        p.add_argument("--images", default=None, help="default: <data>/coco/train2014/train2014")

    add_run_command(sub, list(FULL_RUNS), build,
                    out_path=lambda args: build_dir("full", OUT) / "models" / f"{args.run}.safetensors",
                    log_dir=lambda: build_dir("full", OUT) / "logs", configure=configure,
                    help="train one run (fine-tuned or from scratch, with or without negatives)")
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
