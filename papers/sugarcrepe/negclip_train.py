"""The NegCLIP runs of Tables 5 and 10, both profiles: one ``FinetuneJob`` per run of ``runs.RUNS`` (stages
``negclip-mini@<run>``) or ``runs.FULL_RUNS`` (stages ``negclip-full@<run>``, ``negclip-full-refined@<run>``; GPU,
``torchrun``).

Every run of a profile goes over the same captions in the same order with the same seed: ``ClipLoss`` without
negatives, ``TextNegativeClipLoss`` with them (``losses``), the refined runs (Table 10) on the rows refinement kept.
Only where the batches come from differs by profile: mini, the rendered set (``negclip_rows.run_data``); full, COCO
files decoded per batch (``negclip_rows.run_rows``), fine-tuned runs from ``base`` on the ``finetune`` schedule,
scratch runs from a random ``scratch_arch`` on the ``scratch`` schedule; both schedules are the paper's (the
SugarCrepe paper, Appendix A.3: "number of warmup steps is 1000, batch size is 256, learning rate is 1e-4, weight
decay is 0.1, number of epochs is 30") and both recipes OpenCLIP's training code of the time,
mlfoundations/open_clip@a09d519f (``papers/sugarcrepe/recipes.toml`` cites each rule: its decay groups, betas per
architecture, amp, training crop). Resumable (``common.training.job``); the commands: the README's "Commands".
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
from common.pipeline.inputs import step_budget
from common.pipeline.params import own_section
from common.training.files import FileCaptionBatches, FileImages
from common.training.job import FinetuneJob
from common.training.launch import add_run_command
from common.training.losses import ClipLoss
from common.training.model_init import FromScratch, FromZoo, Init
from common.training.recipes import load_recipe
from common.training.rendered import CaptionBatches, caption_tokens, pixels, refuse_same_tokens
from common.training.trainer import TrainConfig
from common.zoo.trained import tokenizer_for
from papers.sugarcrepe.losses import TextNegativeClipLoss
from papers.sugarcrepe.negclip_rows import FinetuneSet, NegclipSetError, TrainRow, run_data, run_negatives, run_rows
from papers.sugarcrepe.runs import FULL_RUNS, RUNS, RunSpec, run_spec

MODULE = "papers.sugarcrepe.negclip_train"
"""This module's name even when it runs as ``__main__``: its import closure keys the runs' resume states."""
RECIPES = "papers/sugarcrepe/recipes.toml"
DATA_FILES = ("papers/sugarcrepe/recipes.toml",)
OUT = "sugarcrepe_negclip"
"""``build/<profile>/<OUT>``: the set (``set/``), the weights (``models/``) and the wall-time logs (``logs/``)."""


def job(profile: str, run: str, spec: RunSpec, init: Init, batches, config: TrainConfig,
        provenance: Mapping[str, Any]) -> FinetuneJob:
    """The run's job: its loss from its kind of negative, named by profile and run (the resume state's folder)."""
    loss = ClipLoss if spec.hard_negative is None else TextNegativeClipLoss
    return FinetuneJob(f"sugarcrepe-{profile}-{run}", init, batches, loss, config, MODULE,
                       provenance={"run": run, **provenance})


def batches_for(data: FinetuneSet, kind: str | None, tokenize: Callable[[Sequence[str]], torch.Tensor],
                where: str = "the fine-tuning set") -> CaptionBatches:
    """A mini run's batch source; a negative whose tokens equal its caption's (cut at the context length) is refused,
    since the loss would push a text away from itself."""
    captions = caption_tokens(tokenize, data.captions)
    extras = []
    if kind is not None:
        if kind not in data.kinds():
            raise NegclipSetError(f"{where}: no negatives of kind {kind!r} (it has {list(data.kinds())})")
        negatives = caption_tokens(tokenize, [[negs[kind] for negs in image] for image in data.negatives])
        refuse_same_tokens(captions, negatives, data.captions, f"{kind} negative", where)
        extras.append(negatives)
    name = "sugarcrepe-mini-clip-ft" if kind is None else f"sugarcrepe-mini-negclip-{kind}"
    return CaptionBatches(pixels(data.images), captions, extras, name, fields={"negatives": kind is not None})


def mini_job(run: str, data: FinetuneSet, section: Mapping[str, Any], *, init: Init | None = None,
             tokenize: Callable[[Sequence[str]], torch.Tensor] | None = None,
             provenance: Mapping[str, Any] | None = None) -> FinetuneJob:
    """Mini ``run`` as a job: fine-tune ``init`` (default: the zoo's ``section["base"]``) on ``data`` with
    ``section``'s settings; ``provenance`` follows the run's own keys in its sidecar."""
    spec = run_spec(RUNS, run)
    config = TrainConfig.from_params(section)
    if len(data.images) < config.batch_size:
        raise NegclipSetError(f"{run}: {len(data.images)} training images cannot fill a batch of {config.batch_size}")
    init = init or FromZoo(section["base"])
    batches = batches_for(data, spec.hard_negative, tokenize or tokenizer_for(init.describe()["arch"]))
    return job("mini", run, spec, init, batches, config,
               {"hard_negative": spec.hard_negative, "refined": spec.refined, **(provenance or {})})


def full_job(run: str, rows: Sequence[TrainRow], section: Mapping[str, Any], images_dir: Path, *,
             init: Init | None = None, steps: int | None = None,
             provenance: Mapping[str, Any] | None = None) -> FinetuneJob:
    """Full ``run`` as a job over ``rows``, images under ``images_dir``, with ``section``'s settings (its family's
    schedule, then what every run shares); ``steps`` overrides the schedule's epochs (smoke runs, tests)."""
    spec = run_spec(FULL_RUNS, run)
    init = init or (FromScratch(section["scratch_arch"]) if spec.scratch else FromZoo(section["base"]))
    family = "scratch" if spec.scratch else "finetune"  # names its schedule in section and its recipe (RN50, ViT-B/32)
    rules = load_recipe(ROOT / RECIPES, family)
    files = list(dict.fromkeys(r.image for r in rows))
    where = {name: i for i, name in enumerate(files)}
    images = FileImages(tuple(Path(images_dir) / name for name in files), int(section["image_size"]),
                        crop_scale=rules.train_crop_scale)
    negatives = run_negatives(run, rows, int(section["seed"]))
    tokenizer = tokenizer_for(init.describe()["arch"])
    batches = FileCaptionBatches(images, np.array([where[r.image] for r in rows], dtype=np.int64),
                                 [r.caption for r in rows], [] if negatives is None else [negatives],
                                 lambda texts: tokenizer(list(texts)), name=f"sugarcrepe-full-{run}",
                                 fields={"negatives": negatives is not None})
    schedule = section[family]
    per_epoch = batches.steps_per_epoch(int(schedule["batch_size"]))
    config = TrainConfig.from_params(schedule, section, steps_per_epoch=per_epoch, steps=steps, recipe=rules)
    return job("full", run, spec, init, batches, config,
               {"hard_negative": spec.hard_negative, "scratch": spec.scratch, "refined": spec.refined,
                "steps_per_epoch": per_epoch, "epochs": config.steps / per_epoch, **(provenance or {})})


def build_mini(args: argparse.Namespace, world, cpu_profile: Mapping[str, Any]) -> FinetuneJob:
    """The job of ``mini run <run>``: the stage's parameters, the set (``--set``) and its manifest's hash."""
    _, section = own_section("sugarcrepe.negclip_mini")
    set_dir = Path(args.set or build_dir("mini", OUT) / "set")
    return mini_job(args.run, run_data(args.run, set_dir), section,
                    provenance={"set_manifest_sha256": sha256_file(set_dir / "manifest.json"), **cpu_profile})


def build_full(args: argparse.Namespace, world, cpu_profile: Mapping[str, Any]) -> FinetuneJob:
    """The job of ``full run <run>``: the stage's parameters, the set, the refinement, the images."""
    _, section = own_section("sugarcrepe.negclip_full")
    set_dir = Path(args.set or build_dir("full", OUT) / "set")
    rows = run_rows(args.run, set_dir, Path(args.refined or build_dir("full", OUT) / "refined.json"))
    images = Path(args.images or data_root() / "coco" / "train2014" / "train2014")
    return full_job(args.run, rows, section, images, steps=step_budget(section, args.steps),
                    provenance={"profile": "full", "set_manifest_sha256": sha256_file(set_dir / "manifest.json"),
                                **cpu_profile})


@dataclass(frozen=True)
class Profile:
    """A profile's command: its runs, its job builder and the inputs' options (flag, default shown in the help)."""

    runs: Sequence[str]
    build: Callable[[argparse.Namespace, Any, Mapping[str, Any]], FinetuneJob]
    options: Mapping[str, str]
    help: str


PROFILES = {
    "mini": Profile(sorted(RUNS), build_mini, {"--set": "build/mini/sugarcrepe_negclip/set"},
                    "fine-tune the base model: CLIP-FT or NegCLIP with one kind of negative"),
    "full": Profile(list(FULL_RUNS), build_full, {"--set": "build/full/sugarcrepe_negclip/set",
                                                  "--refined": "build/full/sugarcrepe_negclip/refined.json",
                                                  "--images": "<data>/coco/train2014/train2014"},
                    "train one run (fine-tuned or from scratch, with or without negatives)"),
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = stage_parser(MODULE, __doc__)
    profiles = parser.add_subparsers(dest="profile", required=True)
    for name, profile in PROFILES.items():
        sub = profiles.add_parser(name, help=f"the {name} runs").add_subparsers(dest="command", required=True)

        def configure(p: argparse.ArgumentParser, options: Mapping[str, str] = profile.options) -> None:
            for flag, default in options.items():
                p.add_argument(flag, default=None, help=f"default: {default}")

        add_run_command(sub, profile.runs, profile.build,
                        out_path=lambda args: build_dir(args.profile, OUT) / "models" / f"{args.run}.safetensors",
                        log_dir=lambda name=name: build_dir(name, OUT) / "logs", configure=configure, help=profile.help)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
