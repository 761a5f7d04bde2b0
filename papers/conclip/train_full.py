"""CoN-CLIP (Singh et al.), the full profile's own fine-tunes: OpenAI CLIP ViT-B/32 on CC-Neg's training split with
distractor images from COCO train 2017 (the set of ``papers.conclip.sets_full``), one run per row of Table 6
(``papers.conclip.runs.RUNS``).

The authors' recipe (Sec. 4.2 and jaisidhsingh/CoN-CLIP's fine-tuning script, its argument defaults and its
``FineTuningDatasetWithNegatives``; every setting is cited in ``papers/conclip/recipes.toml``): image tower frozen,
jaisidhsingh/CoN-CLIP@503388ac src/conclip_fine_tuning.py:98-100 "for param in model.visual.parameters():", text tower
and logit scale trained; AdamW lr 1e-6, weight decay 0.2, cosine with 50 warmup steps, 5 epochs, batch 200
(drop_last; the paper's text says 256, README "Deviations"), mixed precision. Their fine-tuning entry point fails as
published: ``get_finetuning_dataset`` passes two arguments,
jaisidhsingh/CoN-CLIP@503388ac src/data/__init__.py:9 "return FineTuningDatasetWithNegatives(args, preprocess)",
to a constructor that takes one,
jaisidhsingh/CoN-CLIP@503388ac src/data/finetuning_datasets.py:47 "def __init__(self, transform=None):",
a TypeError; so nothing here runs their code. What differs, and why:

* Order: their ``DataLoader`` has no ``shuffle``,
  jaisidhsingh/CoN-CLIP@503388ac src/conclip_fine_tuning.py:107 "pin_memory=True, drop_last=True)": every epoch
  walks the file in order, the same 200 entries in
  every batch. We follow it by default (``shuffle: false``): the in-batch negatives of a contrastive loss depend on
  which entries share a batch, and file order is the only order their runs can have seen. ``shuffle: true`` draws a
  permutation per epoch instead (``common.training.files``' ``default_rng([seed, 0, epoch])``). Either way the batch
  of step s is a pure function of (seed, s), which resume and DDP sharding need.
* Optimiser: theirs (``papers/conclip/recipes.toml``), jaisidhsingh/CoN-CLIP@503388ac
  src/conclip_fine_tuning.py:115-118 "filter(lambda p: p.requires_grad, model.parameters())": AdamW with torch's
  default betas (0.9, 0.999) and eps 1e-8, weight decay on every trainable tensor, the logit scale included.
* Precision: their default amp is fp16 autocast,
  jaisidhsingh/CoN-CLIP@503388ac src/conclip_fine_tuning.py:16 "autocast = torch.cuda.amp.autocast if args.precision"
  with a GradScaler, jaisidhsingh/CoN-CLIP@503388ac src/conclip_fine_tuning.py:120 "torch.cuda.amp.GradScaler()":
  ``precision: fp16`` (the trainer's GradScaler); ``bf16`` is the switch (no scaler).
* Images: resized (shorter side, bicubic) and centre-cropped as open_clip's evaluation transform, which is what
  ``clip.load``'s ``preprocess`` (their training transform,
  jaisidhsingh/CoN-CLIP@503388ac src/conclip_fine_tuning.py:106 "dataset = get_finetuning_dataset(args, preprocess)")
  does.

``run <name>`` (stage ``finetune-full@<name>``, under ``torchrun``): one run of ``RUNS``, a ``FinetuneJob``
(``build_job``) through the shared trainer with ``ConClipLoss`` (its terms; the CREPE-Negate run's c' is the CREPE
negation), from the zoo's ``base``; images [I, I'] and texts [c, c'] per sample, decoded per batch from the files.
Weights in ``build/full/conclip/models/<run>.safetensors`` with the trainer's sidecar; zoo entries
``conclip/full-<run>``; rank 0's timing log in ``build/full/conclip/logs/<run>.json``.
"""
from __future__ import annotations

import argparse
import functools
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import torch

from common.errors import WorkspaceError
from common.io import sha256_file
from common.paths import build_dir, data_root
from common.training import FromZoo, Init
from common.training.distributed import DistributedContext
from common.training.files import FileCaptionBatches, FileImages
from common.training.job import FinetuneJob
from common.training.launch import add_run_command
from common.training.recipes import Recipe, load_recipe
from common.training.rendered import Tokenize
from common.training.trainer import TrainConfig
from common.zoo.trained import tokenizer_for
from papers.conclip.data_paths import CCNEG_IMAGES, COCO_IMAGES
from papers.conclip.finetune_rows_full import FullRow, load_rows
from papers.conclip.losses import ConClipLoss
from papers.conclip.runs import NEGATIVE_FIELDS, RUNS, run_spec

RECIPE = "conclip"
RECIPES = "papers/conclip/recipes.toml"
DATA_FILES = ("papers/conclip/recipes.toml",)


def recipe(name: str) -> Recipe:
    """A table of ``papers/conclip/recipes.toml`` (every run trains with ``RECIPE``, the authors' AdamW)."""
    from common.paths import ROOT

    return load_recipe(ROOT / RECIPES, name)


class NegationFileBatches(FileCaptionBatches):
    """``FileCaptionBatches`` (the negated caption as the one extra text) whose samples carry the distractor image
    as a second image segment: images [I, I'], texts [c, c'] per sample, as ``papers.conclip.train_mini``'s
    ``NegationBatches`` over rendered arrays.

    ``shuffle=False`` walks the rows in order every epoch (the authors' loader): step s of an epoch is rows
    ``[j*B, (j+1)*B)``, the tail that does not fill a batch dropped; ``shuffle=True`` keeps the parent's permutation
    per epoch."""

    def __init__(self, images: FileImages, row_image: np.ndarray, row_distractor: np.ndarray,
                 captions: Sequence[str], negated: Sequence[str], tokenize: Tokenize, name: str,
                 fields: Mapping | None = None, shuffle: bool = False):
        super().__init__(images, row_image, captions, [negated], tokenize, name,
                         {**(fields or {}), "order": "shuffled per epoch" if shuffle else "file order"})
        if len(row_distractor) != len(captions):
            raise ValueError("NegationFileBatches: one distractor image per row")
        self.row_distractor, self.shuffle = np.asarray(row_distractor), shuffle

    def draws(self, seed: int, step: int, size: int) -> np.ndarray:
        if self.shuffle:
            return super().draws(seed, step, size)
        j = step % self.steps_per_epoch(size)
        return np.arange(j * size, (j + 1) * size)

    def batch(self, seed: int, step: int, size: int, rows: slice = slice(None)) -> dict[str, torch.Tensor]:
        out = super().batch(seed, step, size, rows)
        idx = self.draws(seed, step, size)[rows]
        distractors = self.images.get(self.row_distractor[idx], (seed, step, 1)).unsqueeze(1)
        out["images"] = torch.cat([out["images"], distractors], dim=1)
        return out


def batches_for(run: str, rows: Sequence[FullRow], section: Mapping, ccneg_images: Path, coco_images: Path,
                tokenize: Tokenize, crop_scale: tuple[float, float] | None = None) -> NegationFileBatches:
    """The run's batches (``section``: ``params.yaml conclip.full.finetune``, its image size and row order;
    ``crop_scale``: the recipe's training crop, None: the centre crop): c' is CC-Neg's negated caption, or the
    CREPE-Negate negation for a ``crepe`` run."""
    field = NEGATIVE_FIELDS[run_spec(run).negatives]
    files = list(dict.fromkeys([*(Path(ccneg_images) / r.image for r in rows),
                                *(Path(coco_images) / r.distractor for r in rows)]))
    where = {path: i for i, path in enumerate(files)}
    images = FileImages(tuple(files), int(section["image_size"]), crop_scale=crop_scale)
    return NegationFileBatches(
        images, np.array([where[Path(ccneg_images) / r.image] for r in rows], dtype=np.int64),
        np.array([where[Path(coco_images) / r.distractor] for r in rows], dtype=np.int64),
        [r.caption for r in rows], [getattr(r, field) for r in rows], tokenize,
        name=f"conclip-full-{run_spec(run).negatives}",
        fields={"texts": ["caption", field], "images": ["image", "distractor"]},
        shuffle=bool(section.get("shuffle", True)))


class NoCrepeRowsError(WorkspaceError):
    """A set with no row that has a CREPE-Negate negation, for the CREPE-Negate run."""


def run_rows(run: str, rows: Sequence[FullRow]) -> list[FullRow]:
    """The rows ``run`` trains on: all of them for the CC-Neg runs (the authors filter none:
    jaisidhsingh/CoN-CLIP@503388ac src/data/finetuning_datasets.py:55 "self.image_paths[:self.split_size]"), those
    with a CREPE-Negate negation for the CREPE-Negate run."""
    if run_spec(run).negatives != "crepe":
        return list(rows)
    kept = [r for r in rows if r.crepe_negated is not None]
    if not kept:
        raise NoCrepeRowsError(f"{run}: no row of the set has a CREPE-Negate negation; rebuild the finetune-full-set "
                               f"stage")
    return kept


def build_job(run: str, rows: Sequence[FullRow], section: Mapping, ccneg_images: Path, coco_images: Path,
              *, recipe: Recipe | None = None, init: Init | None = None, steps: int | None = None,
              provenance: Mapping | None = None) -> FinetuneJob:
    """The run ``run``: ``init`` (default: the zoo's ``section["base"]``) fine-tuned on ``run_rows(run, rows)`` with
    ``section``'s settings (``params.yaml conclip.full.finetune``) and ``recipe``'s rules (None: the mini recipe)
    for the schedule's epochs (``steps`` overrides them: smoke runs, tests), the image tower as it was
    (``ConClipLoss.frozen``); ``provenance`` follows the run's own facts in the sidecar, then the steps per epoch
    and the epochs run."""
    spec = run_spec(run)
    init = init or FromZoo(section["base"])
    rows = run_rows(run, rows)
    batches = batches_for(run, rows, section, ccneg_images, coco_images, tokenizer_for(init.describe()["arch"]),
                          recipe.train_crop_scale if recipe is not None else None)
    per_epoch = batches.steps_per_epoch(int(section["batch_size"]))
    config = TrainConfig.from_params(section, steps_per_epoch=per_epoch, steps=steps, recipe=recipe)
    provenance = {"run": run, "terms": list(spec.terms), "negatives": spec.negatives, **(provenance or {}),
                  "steps_per_epoch": per_epoch, "epochs": config.steps / per_epoch}
    return FinetuneJob(f"conclip-full-{run}", init, batches, functools.partial(ConClipLoss, terms=spec.terms),
                       config, __name__, provenance=provenance)


# ------------------------------------------------------------------------------------------------------------------
# Entry point
# ------------------------------------------------------------------------------------------------------------------
def _build(args: argparse.Namespace, world: DistributedContext, cpu_profile: Mapping) -> FinetuneJob:
    """``run``'s job: this stage's parameters, the set of ``--set``, the images under ``--data``; the set's manifest
    hash and the CPU profile in the sidecar."""
    from common.params import own_section

    _, section = own_section("conclip.full.finetune")
    set_dir = Path(args.set or build_dir("full", "conclip") / "finetune")
    data = Path(args.data or data_root())
    provenance = {"profile": "full", "set_manifest_sha256": sha256_file(set_dir / "manifest.json"), **cpu_profile}
    return build_job(args.run, load_rows(set_dir), section, data / CCNEG_IMAGES, data / COCO_IMAGES,
                     recipe=recipe(RECIPE), steps=args.steps, provenance=provenance)


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--set", default=None, help="default: build/full/conclip/finetune")
    p.add_argument("--data", default=None, help=f"the data root holding {CCNEG_IMAGES.as_posix()} and "
                                                f"{COCO_IMAGES.as_posix()} (default: <data>)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m papers.conclip.train_full", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    add_run_command(sub, list(RUNS), _build, configure=_configure,
                    out_path=lambda args: build_dir("full", "conclip") / "models" / f"{args.run}.safetensors",
                    log_dir=lambda: build_dir("full", "conclip") / "logs",
                    help="fine-tune the base model as one of the runs (under torchrun, or as one process)")
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
