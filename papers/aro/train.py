"""NegCLIP and CLIP-FT, as jobs, in either profile: one job per lr of ``aro.<profile>.finetune.lrs``, the best picked
on validation retrieval (``papers.aro.sweep``). The profiles differ only in where the pairs come from (``INPUTS``):
the rendered set and its neighbours (mini: one unit of an epoch is an image), or NegCLIP's released TSVs over COCO
2014 (full: ``papers.aro.negclip_tsv_full``, with the paper's recipe, ``papers/aro/recipes.toml``; capped by
``full_inputs.cap`` and ``aro.full.finetune.max_steps``: ``common.pipeline.inputs``).

``aro.full.finetune.batch_size`` counts samples (TSV rows) per step. A NegCLIP sample brings two images (its own and a
hard-negative neighbour) and four texts (their captions and a negative caption of each; ``papers.aro.batches``), so
``HardNegativeClipLoss`` scores 2B images against 4B texts: the default 256 is the authors' 512 x 1,024
(``mertyg/vision-language-models-are-bows@81fdd20d README.md:85`` "would result in a matrix of size `512x1024` with
negatives"; the ARO paper's "N=1024 batch size", Appendix C.3, counts the texts). A CLIP-FT step is B x B.

The stages (``finetune-mini@...`` on the CPU, ``finetune-full@...`` under torchrun): README.md's "From params.yaml to
the loop".
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from common.files.arrays import load_array
from common.files.io import sha256_file
from common.paths import ROOT, build_dir, data_root
from common.pipeline import inputs
from common.pipeline.cli import stage_parser
from common.pipeline.inputs import step_budget
from common.pipeline.params import own_section
from common.training import FromZoo
from common.training.distributed import DistributedContext
from common.training.launch import add_run_command
from common.training.recipes import Recipe, load_recipe
from common.zoo import get_spec
from common.zoo.trained import tokenizer_for
from papers.aro.batches import FinetuneBatches, PairTable, TokenCache
from papers.aro.finetune_rows_mini import AroFinetuneError, FinetuneSplit
from papers.aro.images import ArrayImages, ImageStore
from papers.aro.negclip_tsv_full import tsv_table, val_from_tsv
from papers.aro.sweep import METHODS, Sweep, launch_sweep, sweep_jobs
from papers.aro.validation import RetrievalValidator

DATA_FILES = ("papers/aro/models.toml", "papers/aro/recipes.toml")
"""Read at run time: where the zoo keeps the runs' weights, and NegCLIP's recipe (the full runs')."""
ZOO_NAMES = {"mini": {"negclip": "aro/mini-negclip", "clip-ft": "aro/mini-clip-ft"},
             "full": {"negclip": "aro/negclip-rerun", "clip-ft": "aro/clip-ft"}}
"""Each profile's runs by zoo name: the zoo's checkpoint path of each is where its weights go."""
RECIPES = "papers/aro/recipes.toml"
RECIPE = "negclip"
"""NegCLIP's released recipe (vinid/neg_clip's code, the authors' reproduce command in ARO's README, and the ARO paper,
Appendix C.3): both methods of the full profile train with it (CLIP-FT's code is not in the release); the mini runs
keep the mini family's."""


def recipe() -> Recipe:
    """``[negclip]`` of ``papers/aro/recipes.toml`` (tests replace it)."""
    return load_recipe(ROOT / RECIPES, RECIPE)


@dataclass(frozen=True)
class Inputs:
    """What the profiles differ in; the sidecar records ``sources`` before the CPU profile, ``notes`` after it."""

    table: PairTable
    images: ImageStore
    validator: RetrievalValidator
    sources: dict[str, Any]
    notes: dict[str, Any]


def mini_table(split: FinetuneSplit, neighbours: np.ndarray) -> PairTable:
    """Units = training images with at least one caption that has a negative; rows = those captions."""
    if split.negatives is None:
        raise AroFinetuneError("the mini fine-tuning set has no negatives.json in its train split")
    if neighbours.shape[0] != len(split.captions):
        raise AroFinetuneError(f"neighbours.npy has {neighbours.shape[0]} rows for {len(split.captions)} training "
                               "images")
    row_image, captions, negatives, offsets = [], [], [], [0]
    unit_of_image = np.full(len(split.captions), -1, dtype=np.int64)
    for i, (caps, negs) in enumerate(zip(split.captions, split.negatives)):
        kept = [(c, tuple(n["text"] for n in ns)) for c, ns in zip(caps, negs) if ns]
        if not kept:
            continue
        unit_of_image[i] = len(offsets) - 1
        row_image += [i] * len(kept)
        captions += [c for c, _ in kept]
        negatives += [ns for _, ns in kept]
        offsets.append(len(captions))
    units = np.flatnonzero(unit_of_image >= 0)
    hard = unit_of_image[neighbours[units]]
    if hard.size and hard.min() < 0:
        bad = int(units[np.argwhere(hard < 0)[0, 0]])
        raise AroFinetuneError(f"neighbours.npy: image {bad}: a neighbour has no caption with a negative "
                               "(neighbours must be computed among eligible images; rerun the neighbours stage)")
    return PairTable(np.asarray(row_image, dtype=np.int64), tuple(captions), tuple(negatives),
                     np.asarray(offsets, dtype=np.int64), hard)


def mini_inputs(args: argparse.Namespace, stage_values: Mapping[str, Any], section: Mapping[str, Any],
                tokens: TokenCache, negclip: Recipe | None) -> Inputs:
    """The rendered set's train split (with its neighbours) and its val split."""
    set_dir = Path(args.set or build_dir("mini", "aro") / "finetune")
    nbr_dir = Path(args.neighbours or build_dir("mini", "aro") / "neighbours")
    split = FinetuneSplit.load(set_dir, "train")
    table = mini_table(split, load_array(nbr_dir / "neighbours.npy"))
    val = FinetuneSplit.load(set_dir, "val")
    return Inputs(table, ArrayImages.from_nhwc(split.images),
                  RetrievalValidator(ArrayImages.from_nhwc(val.images), val.captions, tokens),
                  {"finetune_manifest_sha256": sha256_file(set_dir / "manifest.json"),
                   "neighbours_sha256": sha256_file(nbr_dir / "neighbours.npy")}, {})


def full_inputs(args: argparse.Namespace, stage_values: Mapping[str, Any], section: Mapping[str, Any],
                tokens: TokenCache, negclip: Recipe | None) -> Inputs:
    """NegCLIP's TSVs and the COCO 2014 images, at the section's image size, cropped as ``negclip`` says."""
    assert negclip is not None
    size = int(section.get("image_size", 224))
    train_tsv = Path(args.train_tsv or data_root() / "negclip" / "train_neg_clip.tsv")
    val_tsv = Path(args.val_tsv or data_root() / "negclip" / "valid_neg_clip.tsv")
    table, images = tsv_table(train_tsv, Path(args.train_images or data_root() / "coco" / "train2014" / "train2014"),
                              size, negclip.train_crop_scale)
    cap = inputs.full_inputs(stage_values).cap
    validator = val_from_tsv(val_tsv, Path(args.val_images or data_root() / "coco" / "val2014" / "val2014"), size,
                             tokens, cap=cap)
    return Inputs(table, images, validator,
                  {"train_tsv_sha256": sha256_file(train_tsv), "val_tsv_sha256": sha256_file(val_tsv)},
                  {"validation_images_cap": cap} if cap is not None else {})


INPUTS = {"mini": mini_inputs, "full": full_inputs}
OPTIONS = {"mini": (("--set", "the fine-tuning set (default build/mini/aro/finetune)"),
                    ("--neighbours", "the neighbours folder (default build/mini/aro/neighbours)")),
           "full": (("--train-tsv", "default <data>/negclip/train_neg_clip.tsv"),
                    ("--val-tsv", "default <data>/negclip/valid_neg_clip.tsv"),
                    ("--train-images", "default <data>/coco/train2014/train2014"),
                    ("--val-images", "default <data>/coco/val2014/val2014"))}
"""Each profile's ``run`` command's input options (flag, help)."""


def build(args: argparse.Namespace, world: DistributedContext, cpu_profile: Mapping[str, Any]) -> Sweep:
    """The sweep of ``args.run`` (``negclip`` or ``clip-ft``) in ``args.profile``."""
    stage_values, section = own_section(f"aro.{args.profile}.finetune")
    negclip = recipe() if args.profile == "full" else None
    # the mini sweep tokenises the same few captions every run: memoised
    tokens = TokenCache(tokenizer_for(get_spec(section["base"]).arch), memo=args.profile == "mini")
    given = INPUTS[args.profile](args, stage_values, section, tokens, negclip)
    batches = FinetuneBatches(given.table, given.images, tokens, hard=args.run == "negclip")
    provenance = {"profile": args.profile, **given.sources, **cpu_profile, **given.notes}
    return sweep_jobs(args.run, args.profile, section, FromZoo(section["base"]), batches, given.validator, __name__,
                      provenance, steps=step_budget(section, args.steps), recipe=negclip)


def weights_path(args: argparse.Namespace) -> Path:
    """Where the zoo expects the run's weights (the checkpoint of its ``ZOO_NAMES`` model)."""
    path = get_spec(ZOO_NAMES[args.profile][args.run]).checkpoint_path()
    assert path is not None
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = stage_parser(__spec__.name, __doc__)
    profiles = parser.add_subparsers(dest="profile", required=True)
    for name, options in OPTIONS.items():
        def configure(p: argparse.ArgumentParser, options: tuple[tuple[str, str], ...] = options) -> None:
            for flag, text in options:
                p.add_argument(flag, default=None, help=text)

        sub = profiles.add_parser(name, help=f"the {name} profile's runs").add_subparsers(dest="command", required=True)
        add_run_command(sub, sorted(METHODS), build, out_path=weights_path,
                        log_dir=lambda name=name: build_dir(name, "aro") / "logs", configure=configure,
                        launcher=launch_sweep, help="fine-tune the base model: NegCLIP or CLIP-FT, with the lr sweep")
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
