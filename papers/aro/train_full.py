"""NegCLIP and CLIP-FT in the full profile, as jobs: the paper's recipe (Appendix C.3) from CLIP ViT-B/32 on COCO
train 2014 with NegCLIP's released ``train_neg_clip.tsv`` (its negatives and ``neg_image`` neighbour rows,
``papers.aro.negclip_tsv_full``), one job per lr of ``aro.full.finetune.lrs``, picked on
``valid_neg_clip.tsv``'s retrieval over COCO val 2014 (``papers.aro.sweep``).

``aro.full.finetune.batch_size`` counts samples (TSV rows) per step. A NegCLIP sample brings two images (its own and a
hard-negative neighbour) and four texts (their captions and a negative caption of each; ``papers.aro.batches``), so
``HardNegativeClipLoss`` scores 2B images against 4B texts: the default 256 is the authors' 512 x 1,024
(``mertyg/vision-language-models-are-bows@81fdd20d README.md:85`` "would result in a matrix of size `512x1024` with
negatives"; the ARO paper's "N=1024 batch size", Appendix C.3, counts the texts). A CLIP-FT step is B x B.

Runs under ``torchrun`` on GPUs (``--device cuda``, one GPU per rank: ``params.yaml aro.full.device``; a
rehearsal's is ``cpu``, gloo). With ``params.yaml full_inputs.cap`` it validates on the first ``cap`` images, and
``aro.full.finetune.max_steps`` stops each run early (``common.inputs``). The weights go to
``build/full/aro/models/<method>.safetensors``. Stages ``finetune-full@negclip`` and ``finetune-full@clip-ft`` of
``papers/aro/dvc.yaml``: ``torchrun --standalone --nproc_per_node N -m papers.aro.train_full run negclip|clip-ft
--device <aro.full.device>``.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Mapping, Sequence

from common.io import sha256_file
from common.training import FromZoo
from common.training.distributed import DistributedContext
from common.training.recipes import Recipe, load_recipe
from papers.aro.batches import FinetuneBatches, TokenCache
from papers.aro.negclip_tsv_full import tsv_table, val_from_tsv
from papers.aro.sweep import Sweep, add_sweep_command, sweep_jobs

RECIPES = "papers/aro/recipes.toml"
DATA_FILES = ("papers/aro/recipes.toml",)
RECIPE = "negclip"
"""NegCLIP's released recipe (vinid/neg_clip's code, the authors' reproduce command in ARO's README, and the ARO paper,
Appendix C.3): both methods train with it (CLIP-FT's code is not in the release)."""


def recipe() -> Recipe:
    """``[negclip]`` of ``papers/aro/recipes.toml``."""
    from common.paths import ROOT

    return load_recipe(ROOT / RECIPES, RECIPE)


def build(args: argparse.Namespace, world: DistributedContext, cpu_profile: Mapping[str, Any]) -> Sweep:
    """The sweep of ``args.run`` (``negclip`` or ``clip-ft``) on NegCLIP's TSVs and the COCO images."""
    from common.inputs import full_inputs, step_budget
    from common.params import own_section
    from common.paths import data_root
    from common.zoo import get_spec
    from common.zoo.trained import tokenizer_for

    stage_values, section = own_section("aro.full.finetune")
    negclip = recipe()
    size = int(section.get("image_size", 224))
    train_tsv = Path(args.train_tsv or data_root() / "negclip" / "train_neg_clip.tsv")
    val_tsv = Path(args.val_tsv or data_root() / "negclip" / "valid_neg_clip.tsv")
    table, images = tsv_table(train_tsv, Path(args.train_images or data_root() / "coco" / "train2014" / "train2014"),
                              size, negclip.train_crop_scale)
    tokens = TokenCache(tokenizer_for(get_spec(section["base"]).arch), memo=False)
    cap = full_inputs(stage_values).cap
    validator = val_from_tsv(val_tsv, Path(args.val_images or data_root() / "coco" / "val2014" / "val2014"), size,
                             tokens, cap=cap)
    batches = FinetuneBatches(table, images, tokens, hard=args.run == "negclip")
    provenance = {"profile": "full", "train_tsv_sha256": sha256_file(train_tsv),
                  "val_tsv_sha256": sha256_file(val_tsv), **cpu_profile,
                  **({"validation_images_cap": cap} if cap is not None else {})}
    return sweep_jobs(args.run, "full", section, FromZoo(section["base"]), batches, validator, __name__, provenance,
                      steps=step_budget(section, args.steps), recipe=negclip)


def weights_path(args: argparse.Namespace) -> Path:
    """``build/full/aro/models/<method>.safetensors``: the full profile's runs beside where the mini ones go."""
    from common.paths import build_dir

    return build_dir("full", "aro") / "models" / f"{args.run}.safetensors"


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--train-tsv", default=None, help="default <data>/negclip/train_neg_clip.tsv")
    p.add_argument("--val-tsv", default=None, help="default <data>/negclip/valid_neg_clip.tsv")
    p.add_argument("--train-images", default=None, help="default <data>/coco/train2014/train2014")
    p.add_argument("--val-images", default=None, help="default <data>/coco/val2014/val2014")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m papers.aro.train_full", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    add_sweep_command(sub, build, out_path=weights_path, profile="full", configure=_configure)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
