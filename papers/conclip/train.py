"""CoN-CLIP (Singh et al.): the base model's text tower fine-tuned with CoN-CLIP's loss, one run per row of Table 6, in
either profile (``python -m papers.conclip.train <profile> run <name>``; one ``build_job``, the samples and recipe
by ``PROFILES``: the README's "What is reproduced, and how").

The full profile's recipe is the authors' (Sec. 4.2 and jaisidhsingh/CoN-CLIP's fine-tuning script, its argument
defaults and its ``FineTuningDatasetWithNegatives``; every setting is cited in ``papers/conclip/recipes.toml``):
image tower frozen,
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
  walks the file in order. We follow it by default (``shuffle: false``): the in-batch negatives of a contrastive loss
  depend on which entries share a batch, and file order is the only order their runs can have seen. ``shuffle:
  true`` draws a permutation per epoch instead; either way the batch of step s is a pure function of (seed, s).
* Optimiser: theirs, jaisidhsingh/CoN-CLIP@503388ac
  src/conclip_fine_tuning.py:115-118 "filter(lambda p: p.requires_grad, model.parameters())": AdamW with torch's
  default betas and eps, weight decay on every trainable tensor, the logit scale included.
* Precision: their default amp is fp16 autocast,
  jaisidhsingh/CoN-CLIP@503388ac src/conclip_fine_tuning.py:16 "autocast = torch.cuda.amp.autocast if args.precision"
  with a GradScaler, jaisidhsingh/CoN-CLIP@503388ac src/conclip_fine_tuning.py:120 "torch.cuda.amp.GradScaler()":
  ``precision: fp16``; ``bf16`` is the switch (no scaler).
* Images: resized and centre-cropped as open_clip's evaluation transform, which is what ``clip.load``'s
  ``preprocess`` (their training transform,
  jaisidhsingh/CoN-CLIP@503388ac src/conclip_fine_tuning.py:106 "dataset = get_finetuning_dataset(args, preprocess)")
  does.
"""
from __future__ import annotations

import argparse
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Mapping, Sequence

import numpy as np
import torch

from common.errors import WorkspaceError
from common.files.io import sha256_file
from common.paths import ROOT, build_dir, data_root
from common.pipeline.cli import stage_parser
from common.pipeline.params import own_section
from common.training import FromZoo, Init
from common.training.distributed import DistributedContext
from common.training.files import FileCaptionBatches, FileImages
from common.training.job import FinetuneJob
from common.training.launch import add_run_command
from common.training.recipes import Recipe, load_recipe
from common.training.rendered import PairedImageBatches, Tokenize, caption_tokens, pixels, refuse_same_tokens
from common.training.trainer import TrainConfig
from common.zoo.trained import tokenizer_for
from papers.conclip.data_paths import CCNEG_IMAGES, COCO_IMAGES
from papers.conclip.finetune_rows import FinetuneSet, FullRow, load_rows
from papers.conclip.losses import ConClipLoss
from papers.conclip.runs import NEGATIVE_FIELDS, RUNS, run_spec

DATA_FILES = ("papers/conclip/recipes.toml",)


class TrainingSetError(WorkspaceError):
    """A fine-tuning set that cannot feed a run as asked (too few samples for a batch; no CREPE-Negate row)."""


class NegationFileBatches(FileCaptionBatches):
    """``FileCaptionBatches`` with the distractor image as a second image segment: images [I, I'], texts [c, c'].
    ``shuffle=False`` walks the rows in order every epoch (the authors' loader), the tail that does not fill a batch
    dropped; ``shuffle=True`` keeps the parent's permutation per epoch."""

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


def _fields(run: str) -> tuple[str, dict]:
    field = NEGATIVE_FIELDS[run_spec(run).negatives]
    return field, {"texts": ["caption", field], "images": ["image", "distractor"]}


@dataclass(frozen=True)
class RenderedSamples:
    """The mini profile's samples: the rendered set's arrays (rendered images are not cropped)."""

    data: FinetuneSet
    profile: ClassVar[str] = "mini"

    @classmethod
    def load(cls, set_dir: Path, data: str | None = None) -> "RenderedSamples":
        return cls(FinetuneSet.load(set_dir))

    def batches(self, run: str, section: Mapping, tokenize: Tokenize,
                crop_scale: tuple[float, float] | None = None) -> PairedImageBatches:
        """A negation that tokenizes like its caption is refused."""
        field, fields = _fields(run)
        captions = caption_tokens(tokenize, [[c] for c in self.data.texts("caption")])
        negated = caption_tokens(tokenize, [[c] for c in self.data.texts(field)])
        refuse_same_tokens(captions, negated, [[c] for c in self.data.texts("caption")], f"negation ({field})",
                           "the fine-tuning set")
        return PairedImageBatches(pixels(self.data.images), captions, [pixels(self.data.distractors)], [negated],
                                  f"conclip-{self.profile}-{run_spec(run).negatives}", fields)


def run_rows(run: str, rows: Sequence[FullRow]) -> list[FullRow]:
    """The rows ``run`` trains on: all of them for the CC-Neg runs (the authors filter none:
    jaisidhsingh/CoN-CLIP@503388ac src/data/finetuning_datasets.py:55 "self.image_paths[:self.split_size]"), those
    with a CREPE-Negate negation for the CREPE-Negate run."""
    if run_spec(run).negatives != "crepe":
        return list(rows)
    kept = [r for r in rows if r.crepe_negated is not None]
    if not kept:
        raise TrainingSetError(f"{run}: no row of the set has a CREPE-Negate negation; rebuild the finetune-full-set "
                               f"stage")
    return kept


@dataclass(frozen=True)
class FileSamples:
    """The full profile's samples: the set's rows over CC-Neg's and COCO's image folders."""

    rows: Sequence[FullRow]
    ccneg_images: Path
    coco_images: Path
    profile: ClassVar[str] = "full"

    @classmethod
    def load(cls, set_dir: Path, data: str | None = None) -> "FileSamples":
        root = Path(data or data_root())
        return cls(load_rows(set_dir), root / CCNEG_IMAGES, root / COCO_IMAGES)

    def batches(self, run: str, section: Mapping, tokenize: Tokenize,
                crop_scale: tuple[float, float] | None = None) -> NegationFileBatches:
        field, fields = _fields(run)
        rows = run_rows(run, self.rows)
        files = list(dict.fromkeys([*(self.ccneg_images / r.image for r in rows),
                                    *(self.coco_images / r.distractor for r in rows)]))
        where = {path: i for i, path in enumerate(files)}
        images = FileImages(tuple(files), int(section["image_size"]), crop_scale=crop_scale)
        return NegationFileBatches(
            images, np.array([where[self.ccneg_images / r.image] for r in rows], dtype=np.int64),
            np.array([where[self.coco_images / r.distractor] for r in rows], dtype=np.int64),
            [r.caption for r in rows], [getattr(r, field) for r in rows], tokenize,
            f"conclip-{self.profile}-{run_spec(run).negatives}", fields, bool(section.get("shuffle", True)))


Samples = RenderedSamples | FileSamples
"""A profile's training samples: ``batches(run, section, tokenize, crop_scale)`` (``section``: the run's params;
``crop_scale``: the recipe's training crop, None: the centre crop)."""


def build_job(run: str, samples: Samples, section: Mapping, *, recipe: Recipe | None = None,
              init: Init | None = None, steps: int | None = None, provenance: Mapping | None = None) -> FinetuneJob:
    """``init`` default: the zoo's ``section["base"]``; ``recipe`` None: the mini one; ``steps`` None: the section's."""
    spec = run_spec(run)
    init = init or FromZoo(section["base"])
    batches = samples.batches(run, section, tokenizer_for(init.describe()["arch"]),
                              recipe.train_crop_scale if recipe is not None else None)
    try:
        per_epoch = batches.steps_per_epoch(int(section["batch_size"]))
    except ValueError as exc:
        raise TrainingSetError(f"{run}: {exc}") from None
    config = TrainConfig.from_params(section, steps_per_epoch=per_epoch, steps=steps, recipe=recipe)
    epochs = {"steps_per_epoch": per_epoch, "epochs": config.steps / per_epoch} if "epochs" in section else {}
    provenance = {"run": run, "terms": list(spec.terms), "negatives": spec.negatives, **(provenance or {}), **epochs}
    return FinetuneJob(f"conclip-{samples.profile}-{run}", init, batches,
                       functools.partial(ConClipLoss, terms=spec.terms), config, __name__, provenance=provenance)


@dataclass(frozen=True)
class Profile:
    """What a profile's runs read: their params section, samples, recipe (None: the mini recipe), sidecar facts."""

    section: str
    samples: type[RenderedSamples] | type[FileSamples]
    recipe: str | None
    facts: Mapping[str, str]


PROFILES = {"mini": Profile("conclip.mini", RenderedSamples, None, {}),
            "full": Profile("conclip.full.finetune", FileSamples, "conclip", {"profile": "full"})}


def _build(args: argparse.Namespace, world: DistributedContext, cpu_profile: Mapping) -> FinetuneJob:
    profile = PROFILES[args.profile]
    _, section = own_section(profile.section)
    set_dir = Path(args.set or build_dir(args.profile, "conclip") / "finetune")
    provenance = {**profile.facts, "set_manifest_sha256": sha256_file(set_dir / "manifest.json"), **cpu_profile}
    return build_job(args.run, profile.samples.load(set_dir, args.data), section, steps=args.steps,
                     recipe=load_recipe(ROOT / DATA_FILES[0], profile.recipe) if profile.recipe else None,
                     provenance=provenance)


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--set", default=None, help="default: build/<profile>/conclip/finetune")
    p.add_argument("--data", default=None, help=f"the full profile's data root, holding {CCNEG_IMAGES.as_posix()} "
                                                f"and {COCO_IMAGES.as_posix()} (default: <data>)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = stage_parser(__spec__.name, __doc__)
    by_profile = parser.add_subparsers(dest="profile", required=True)
    for name in PROFILES:
        commands = by_profile.add_parser(name, help=f"the {name} profile's runs")
        add_run_command(commands.add_subparsers(dest="command", required=True), list(RUNS), _build,
                        configure=_configure, log_dir=lambda name=name: build_dir(name, "conclip") / "logs",
                        out_path=lambda args: build_dir(args.profile, "conclip") / "models" / f"{args.run}.safetensors",
                        help="fine-tune the base model's text tower as one of the runs (full: under torchrun)")
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
