"""BiVLC (Miranda et al.): the three fine-tunes CLIP_COCO, CLIP_TROHN-Text and CLIP_TROHN-Img as jobs of the shared
trainer, both profiles (stages ``mini-finetune@<run>``: ``python -m papers.bivlc.train mini run <run>``;
``finetune-full@<run>``: ``torchrun ... -m papers.bivlc.train full run <run> --device cuda``).

Both profiles train every parameter of the base with the run's loss (``papers.bivlc.runs``) and keep the weights of
the best validation in-batch accuracy (the authors' rule, ``papers.bivlc.validation``; the trainer's
``<stem>.best.safetensors``). Only where the inputs come from differs: the mini profile's in-memory set
(``papers.bivlc.finetune_sets_mini``), the full profile's files (``papers.bivlc.sets_full``).

The full profile follows the authors' recipe (the paper's Appendix E.3 and the released fine-tuning script,
``IMirandaM/BiVLC@84f0d175 src/CLIP_fine_tuning/CLIP_fine_tuning.py:76-79`` "optimizer = AdamW(", each setting cited
in ``papers/bivlc/recipes.toml``): every parameter trained, fp32, AdamW lr 1e-6, betas (0.9, 0.98), eps 1e-6, weight
decay 0.1 on all but tensors of <= 1 dim and names holding "bn", "ln", "bias" or "logit_scale"
(``IMirandaM/BiVLC@84f0d175 src/CLIP_fine_tuning/CLIP_fine_tuning.py:68-79`` "exclude = lambda n, p: p.ndim < 2 or":
the token and positional embeddings ARE decayed), no logit-scale clamp
(``IMirandaM/BiVLC@84f0d175 src/CLIP_fine_tuning/CLIP_fine_tuning.py:136-138`` "optimizer.zero_grad()
loss.backward() optimizer.step()"): the run's recipe in ``papers/bivlc/recipes.toml``, which the shared trainer
builds from; cosine with 50 warmup steps, 10 epochs, seed 42, batches shuffled per epoch; validation after each epoch;
each run's data, loss and batch: the README's "Full profile" and ``papers.bivlc.runs`` (batch sizes from the paper's Appendix E.3. The released script's ``--batch-size`` default is 400 rows,
``IMirandaM/BiVLC@84f0d175 src/CLIP_fine_tuning/CLIP_fine_tuning.py:36`` "'--batch-size', type=int, default=400)",
and the release's instructions change only the dataset for TROHN-Text and TROHN-Img,
``IMirandaM/BiVLC@84f0d175 README.md:352`` "we fine-tuned CLIP with the COCO 2017 training dataset, change
--dataset to", so the code as released trains those two at 400 rows: a paper/code difference, the paper's 200 kept
here; see the README's Deviations.) Weights in ``build/full/bivlc/models/<run>.safetensors``; zoo entries
``bivlc/full-<run>``.

The mini profile fine-tunes ``bivlc.mini.base`` with the same steps, optimiser and seed for every run; its
``batch_size`` counts texts, so every step sees that many (the paper's 400).
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import torch

from common.files.io import sha256_file
from common.files.tasks import DatasetError
from common.paths import build_dir, data_root
from common.pipeline.cli import stage_parser
from common.pipeline.params import own_section
from common.training.distributed import DistributedContext
from common.training.files import FileCaptionBatches, FileImages
from common.training.job import FinetuneJob
from common.training.launch import add_run_command
from common.training.model_init import FromZoo, Init, normalizer
from common.training.recipes import Recipe
from common.training.rendered import CaptionBatches, PairedImageBatches, Tokenize, caption_tokens, pixels
from common.training.trainer import TrainConfig
from common.zoo.trained import tokenizer_for
from papers.bivlc.finetune_sets_mini import TrainSet
from papers.bivlc.runs import RUNS, recipe, run_spec
from papers.bivlc.sets_full import COCO_IMAGES, TrainRow, image_files, load_rows, split_rows
from papers.bivlc.sets_mini import BivlcMiniError
from papers.bivlc.validation import Chunk, InBatchAccuracy

MODULE = "papers.bivlc.train"
PROFILES = ("mini", "full")


def finetune_job(profile: str, run: str, init: Init, train: CaptionBatches | FileCaptionBatches,
                 val: CaptionBatches | FileCaptionBatches, config: TrainConfig, provenance: Mapping) -> FinetuneJob:
    """Both profiles' job, validated by the authors' in-batch accuracy at ``config.batch_size`` samples per batch."""
    mean, std = normalizer(init.build().transform)
    chunk = mini_chunk(val) if isinstance(val, CaptionBatches) else full_chunk(val)
    return FinetuneJob(f"bivlc-{profile}-{run}", init, train, run_spec(run).loss, config, MODULE,
                       validate=InBatchAccuracy(chunk, len(val.captions), config.batch_size, mean, std),
                       provenance=provenance)


# --- the mini profile's inputs: the rendered set, in memory


def mini_batches(data: TrainSet, run: str, tokenize: Tokenize, scenes: slice = slice(None)) -> CaptionBatches:
    """The run's batch source over ``scenes`` (default all: the caller slices the training split): images (M, 3, H,
    W), caption tokens (M, P or 1, L) and the run's extra text and image segments."""
    dataset = run_spec(run).dataset
    index = np.arange(len(data.captions))[scenes]
    if dataset in ("coco", "trohn-text"):
        captions = caption_tokens(tokenize, [data.captions[i] for i in index])
        images = pixels(data.images[index])
        extras = [caption_tokens(tokenize, [data.negatives[i] for i in index])] if dataset == "trohn-text" else []
        fields = {"data": dataset, "texts": ["caption", "negative"][:1 + len(extras)], "images": ["image"]}
        return CaptionBatches(images, captions, extras, f"bivlc-mini-{dataset}", fields)
    pairs = [(i, j) for i, j in data.kept if index[0] <= i <= index[-1]]
    if not pairs:
        raise BivlcMiniError(f"no TROHN-Img pair among scenes {index[0]}..{index[-1]}")
    rows, cols = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    fields = {"data": dataset, "texts": ["caption", "negative"], "images": ["image", "negative image"]}
    return PairedImageBatches(pixels(data.images[rows]),
                              caption_tokens(tokenize, [[data.captions[i][j]] for i, j in pairs]),
                              [pixels(data.negative_images[rows, cols])],
                              [caption_tokens(tokenize, [[data.negatives[i][j]] for i, j in pairs])],
                              f"bivlc-mini-{dataset}", fields)


def mini_chunk(batches: CaptionBatches) -> Chunk:
    """The in-memory accessor of ``InBatchAccuracy``: each validation sample's first caption (and its negative),
    its image (and its negative image), in the training layout."""
    def chunk(idx: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        rows = torch.from_numpy(idx)
        images = [batches.images[rows], *(e[rows] for e in getattr(batches, "extra_images", ()))]
        texts = [batches.captions[rows, 0], *(e[rows, 0] for e in batches.extras)]
        return torch.cat(images), torch.cat(texts)

    return chunk


def mini_job(run: str, data: TrainSet, section: Mapping[str, Any], *, init: Init | None = None,
             tokenize: Tokenize | None = None, provenance: Mapping | None = None) -> FinetuneJob:
    """``run`` on the set's training split (``params.yaml bivlc.mini``: its ``batch_size`` counts texts, not
    samples), validating ``section["validations"]`` times."""
    init = init or FromZoo(section["base"])
    tokenize = tokenizer_for(init.describe()["arch"]) if tokenize is None else tokenize
    samples = int(section["batch_size"]) // len(run_spec(run).texts)  # every step sees batch_size texts (paper: 400)
    train = mini_batches(data, run, tokenize, slice(0, data.n_train))
    val = mini_batches(data, run, tokenize, slice(data.n_train, None))
    if len(train.images) < samples:
        raise BivlcMiniError(f"{run}: {len(train.images)} training samples cannot fill a batch of {samples}")
    config = TrainConfig.from_params(section, batch_size=samples,
                                     validate_every=max(1, int(section["steps"]) // int(section["validations"])))
    return finetune_job("mini", run, init, train, val, config,
                        {"run": run, "samples_per_step": samples, **(provenance or {})})


# --- the full profile's inputs: the upstream sets' rows and image files


def run_batch_size(section: Mapping[str, Any], run: str) -> int:
    """The run's samples per step: ``bivlc.full.finetune.batch_size``, a number or one per run."""
    batch = section["batch_size"]
    return int(batch[run]) if isinstance(batch, Mapping) else int(batch)


class PairedFileBatches(FileCaptionBatches):
    """``FileCaptionBatches`` whose samples carry a second image (TROHN-Img's generated one): images [I, I_neg],
    texts [c, c_neg] per sample."""

    def __init__(self, images: FileImages, row_image: np.ndarray, row_negative_image: np.ndarray,
                 captions: Sequence[str], negatives: Sequence[str], tokenize: Tokenize, name: str,
                 fields: Mapping | None = None):
        super().__init__(images, row_image, captions, [negatives], tokenize, name, fields)
        self.row_negative_image = np.asarray(row_negative_image)

    def batch(self, seed: int, step: int, size: int, rows: slice = slice(None)) -> dict[str, torch.Tensor]:
        out = super().batch(seed, step, size, rows)
        idx = self.draws(seed, step, size)[rows]
        negatives = self.images.get(self.row_negative_image[idx], (seed, step, 1)).unsqueeze(1)
        out["images"] = torch.cat([out["images"], negatives], dim=1)
        return out


def full_batches(run: str, rows: Sequence[TrainRow], image_size: int, coco_images: Path, set_dir: Path,
                 tokenize: Tokenize, crop_scale: tuple[float, float] | None = None) -> FileCaptionBatches:
    """The run's batch source over ``rows`` (the caller passes one split); ``crop_scale``: the recipe's training crop
    (``FileImages.crop_scale``; None, BiVLC's own recipes: the centre crop)."""
    spec = run_spec(run)
    files, image, negative = image_files(rows, coco_images, set_dir)
    images = FileImages(files, image_size, crop_scale=crop_scale)
    captions = [r.caption for r in rows]
    fields = {"dataset": spec.dataset, "images": list(spec.images), "texts": list(spec.texts)}
    if "negative_image" in spec.images:
        if (negative < 0).any():
            raise DatasetError(f"{set_dir}: a {spec.dataset} row has no negative image")
        return PairedFileBatches(images, image, negative, captions, [r.negative for r in rows], tokenize,
                                 f"bivlc-full-{spec.dataset}", fields)
    extras = [[r.negative for r in rows]] if "negative" in spec.texts else []
    return FileCaptionBatches(images, image, captions, extras, tokenize, f"bivlc-full-{spec.dataset}", fields)


def full_chunk(batches: FileCaptionBatches) -> Chunk:
    """The file-backed accessor of ``InBatchAccuracy``: the rows' images (then TROHN-Img's generated ones), decoded,
    and their captions (then negative captions), tokenized, in the training layout."""
    def chunk(idx: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        image_sets = [batches.row_image[idx]]
        if isinstance(batches, PairedFileBatches):
            image_sets.append(batches.row_negative_image[idx])
        pixels = torch.cat([batches.images.get(s) for s in image_sets])
        tokens = torch.cat([batches.tokenize([batches.captions[i] for i in idx]),
                            *(batches.tokenize([extra[i] for i in idx]) for extra in batches.extras)])
        return pixels, tokens

    return chunk


def full_job(run: str, rows: Sequence[TrainRow], section: Mapping[str, Any], coco_images: Path, set_dir: Path,
             *, recipe: Recipe | None = None, init: Init | None = None, steps: int | None = None,
             provenance: Mapping | None = None) -> FinetuneJob:
    """``run`` on the set's train split (``params.yaml bivlc.full.finetune``; ``recipe`` None: the mini recipe),
    validating after every epoch (``steps`` overrides the epochs and validates once, at the end)."""
    init = init or FromZoo(section["base"])
    tokenize = tokenizer_for(init.describe()["arch"])
    size, samples = int(section["image_size"]), run_batch_size(section, run)
    train = full_batches(run, split_rows(rows, "train"), size, coco_images, set_dir, tokenize,
                         recipe.train_crop_scale if recipe is not None else None)
    val = full_batches(run, split_rows(rows, "validation"), size, coco_images, set_dir, tokenize)
    per_epoch = train.steps_per_epoch(samples)
    config = TrainConfig.from_params(section, steps_per_epoch=per_epoch, steps=steps, recipe=recipe,
                                     batch_size=samples, validate_every=0 if steps else per_epoch)
    return finetune_job("full", run, init, train, val, config,
                        {"run": run, "dataset": run_spec(run).dataset, "steps_per_epoch": per_epoch,
                         "epochs": config.steps / per_epoch, **(provenance or {})})


# --- the stages


def build(args: argparse.Namespace, world: DistributedContext, cpu_profile: Mapping[str, Any]) -> FinetuneJob:
    """The job of ``<profile> run <run>``: the stage's parameters and the profile's set (its manifest's sha256 and,
    on the CPU, the reproducibility profile in the sidecar)."""
    if args.profile == "mini":
        _, section = own_section("bivlc.mini")
        set_dir = Path(args.set or build_dir("mini", "bivlc") / "train")
        return mini_job(args.run, TrainSet.load(set_dir), section,
                        provenance={"set_manifest_sha256": sha256_file(set_dir / "manifest.json"), **cpu_profile})
    _, section = own_section("bivlc.full.finetune")
    set_dir = Path(args.set or build_dir("full", "bivlc") / "sets" / run_spec(args.run).dataset)
    return full_job(args.run, load_rows(set_dir), section, Path(args.data or data_root()) / COCO_IMAGES, set_dir,
                    recipe=recipe(args.run), steps=args.steps,
                    provenance={"profile": "full", "set_manifest_sha256": sha256_file(set_dir / "manifest.json"),
                                **cpu_profile})


def main(argv: Sequence[str] | None = None) -> int:
    parser = stage_parser(__spec__.name, __doc__)
    profiles = parser.add_subparsers(dest="profile", required=True)
    for profile in PROFILES:
        def options(p: argparse.ArgumentParser, profile: str = profile) -> None:
            p.add_argument("--set", type=Path, default=None, help=f"default: build/{profile}/bivlc/" +
                           ("train" if profile == "mini" else "sets/<the run's dataset>"))
            if profile == "full":
                p.add_argument("--data", type=Path, default=None,
                               help=f"the data root holding {COCO_IMAGES.as_posix()}")

        sub = profiles.add_parser(profile, help=f"the {profile} profile").add_subparsers(dest="command", required=True)
        add_run_command(sub, list(RUNS), build, configure=options,
                        out_path=lambda args: build_dir(args.profile, "bivlc") / "models" / f"{args.run}.safetensors",
                        log_dir=lambda profile=profile: build_dir(profile, "bivlc") / "logs",
                        help="one fine-tune (clip-coco, trohn-text, trohn-img), under torchrun or as one process")
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
