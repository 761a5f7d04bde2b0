"""BiVLC (Miranda et al.), the full profile's fine-tunes of OpenAI CLIP ViT-B/32 as jobs: CLIP_COCO, CLIP_TROHN-Text,
CLIP_TROHN-Img (stages ``finetune-full@<run>``: ``torchrun ... -m papers.bivlc.train_full run <run> --device cuda``),
through the shared trainer.

The authors' recipe (the paper's Appendix E.3 and the released fine-tuning script,
``IMirandaM/BiVLC@84f0d175 src/CLIP_fine_tuning/CLIP_fine_tuning.py:76-79`` "optimizer = AdamW(", each setting cited
in ``papers/bivlc/recipes.toml``): every parameter trained, fp32, AdamW lr 1e-6, betas (0.9, 0.98), eps 1e-6, weight
decay 0.1 on all but tensors of <= 1 dim and names holding "bn", "ln", "bias" or "logit_scale"
(``IMirandaM/BiVLC@84f0d175 src/CLIP_fine_tuning/CLIP_fine_tuning.py:68-79`` "exclude = lambda n, p: p.ndim < 2 or":
the token and positional embeddings ARE decayed), no logit-scale clamp
(``IMirandaM/BiVLC@84f0d175 src/CLIP_fine_tuning/CLIP_fine_tuning.py:136-138`` "optimizer.zero_grad()
loss.backward() optimizer.step()"): the run's recipe in ``papers/bivlc/recipes.toml``,
which the shared trainer builds from; cosine with 50 warmup steps, 10
epochs, seed 42, batches shuffled per epoch; after each epoch the in-batch accuracy on the validation split
(``papers.bivlc.validation``), and the epoch with the best one is kept (the trainer's ``<stem>.best.safetensors``):

* CLIP_COCO: COCO 2017 train captions (each caption with its image), ``ClipLoss``, 400 images x 400 captions;
* CLIP_TROHN-Text: ``imirandam/TROHN-Text``, ``TrohnTextLoss``, 200 images x 400 captions (caption and negative
  caption of each row);
* CLIP_TROHN-Img: ``imirandam/TROHN-Img``, ``TrohnImgLoss``, 200 positive pairs and their 200 negative pairs (400
  images x 400 captions);

(batch sizes from the paper's Appendix E.3. The released script's ``--batch-size`` default is 400 rows,
``IMirandaM/BiVLC@84f0d175 src/CLIP_fine_tuning/CLIP_fine_tuning.py:36`` "'--batch-size', type=int, default=400)",
and the release's instructions change only the dataset for TROHN-Text and TROHN-Img,
``IMirandaM/BiVLC@84f0d175 README.md:352`` "we fine-tuned CLIP with the COCO 2017 training dataset, change
--dataset to", so the code as released trains those two at 400 rows: a paper/code difference, the paper's 200 kept
here; see the README's Deviations.) The sets are
``papers.bivlc.sets_full``'s. Weights in ``build/full/bivlc/models/<run>.safetensors`` with the trainer's sidecar and
``<run>.best.safetensors``; zoo entries ``bivlc/full-<run>``.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import torch

from common.io import sha256_file
from common.paths import build_dir
from common.tasks import DatasetError
from common.training.distributed import DistributedContext
from common.training.files import FileCaptionBatches, FileImages
from common.training.job import FinetuneJob
from common.training.launch import add_run_command
from common.training.model_init import FromZoo, Init
from common.training.recipes import Recipe, load_recipe
from common.training.rendered import Tokenize
from common.training.trainer import TrainConfig
from papers.bivlc.runs import RECIPES, RUNS, run_spec
from papers.bivlc.sets_full import COCO_IMAGES, TrainRow, image_files, load_rows, split_rows
from papers.bivlc.validation import Chunk, InBatchAccuracy

MODULE = "papers.bivlc.train_full"


def recipe(name: str) -> Recipe:
    """The run's table of ``papers/bivlc/recipes.toml`` (one per run: the authors' AdamW, embeddings decayed, no clamp)."""
    from common.paths import ROOT

    return load_recipe(ROOT / RECIPES, name)


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
        if len(row_negative_image) != len(captions):
            raise ValueError("PairedFileBatches: one negative image per row")
        self.row_negative_image = np.asarray(row_negative_image)

    def batch(self, seed: int, step: int, size: int, rows: slice = slice(None)) -> dict[str, torch.Tensor]:
        out = super().batch(seed, step, size, rows)
        idx = self.draws(seed, step, size)[rows]
        negatives = self.images.get(self.row_negative_image[idx], (seed, step, 1)).unsqueeze(1)
        out["images"] = torch.cat([out["images"], negatives], dim=1)
        return out


def batches_for(run: str, rows: Sequence[TrainRow], image_size: int, coco_images: Path, set_dir: Path,
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


def validation_chunk(batches: FileCaptionBatches) -> Chunk:
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


def finetune_job(run: str, rows: Sequence[TrainRow], section: Mapping[str, Any], coco_images: Path, set_dir: Path,
                 *, recipe: Recipe | None = None, init: Init | None = None, steps: int | None = None,
                 provenance: Mapping | None = None) -> FinetuneJob:
    """Fine-tune ``init`` (default: the zoo's ``section["base"]``) as ``run`` on the set's train split with
    ``section``'s settings (``params.yaml bivlc.full.finetune``) and ``recipe``'s rules (None: the mini recipe; the
    stage's: the run's table of ``papers/bivlc/recipes.toml``), validating at the end of every epoch (``steps``
    overrides the schedule's epochs and validates once, at the end)."""
    from common.training.model_init import normalizer
    from common.zoo.trained import tokenizer_for

    spec = run_spec(run)
    init = init or FromZoo(section["base"])
    tokenize = tokenizer_for(init.describe()["arch"])
    size, samples = int(section["image_size"]), run_batch_size(section, run)
    train_batches = batches_for(run, split_rows(rows, "train"), size, coco_images, set_dir, tokenize,
                                recipe.train_crop_scale if recipe is not None else None)
    val_batches = batches_for(run, split_rows(rows, "validation"), size, coco_images, set_dir, tokenize)
    per_epoch = train_batches.steps_per_epoch(samples)
    config = TrainConfig.from_params(section, steps_per_epoch=per_epoch, steps=steps, recipe=recipe,
                                     batch_size=samples, validate_every=0 if steps else per_epoch)
    mean, std = normalizer(init.build().transform)
    return FinetuneJob(f"bivlc-full-{run}", init, train_batches, spec.loss, config, MODULE,
                       validate=InBatchAccuracy(validation_chunk(val_batches), len(val_batches.captions),
                                                samples, mean, std),
                       provenance={"run": run, "dataset": spec.dataset, "steps_per_epoch": per_epoch,
                                   "epochs": config.steps / per_epoch, **(provenance or {})})


def build(args: argparse.Namespace, world: DistributedContext, cpu_profile: Mapping[str, Any]) -> FinetuneJob:
    """The job of ``run <run>``: the stage's parameters and the run's set (its manifest's sha256 and, on the CPU,
    the reproducibility profile in the sidecar)."""
    from common.params import own_section
    from common.paths import data_root

    _, section = own_section("bivlc.full.finetune")
    set_dir = Path(args.set or build_dir("full", "bivlc") / "sets" / run_spec(args.run).dataset)
    rows = load_rows(set_dir)
    return finetune_job(args.run, rows, section, Path(args.data or data_root()) / COCO_IMAGES, set_dir,
                        recipe=recipe(args.run), steps=args.steps,
                        provenance={"profile": "full", "set_manifest_sha256": sha256_file(set_dir / "manifest.json"),
                                    **cpu_profile})


def _data_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--set", type=Path, default=None, help="default: build/full/bivlc/sets/<the run's dataset>")
    parser.add_argument("--data", type=Path, default=None, help=f"the data root holding {COCO_IMAGES.as_posix()}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m papers.bivlc.train_full", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    add_run_command(sub, list(RUNS), build,
                    out_path=lambda args: build_dir("full", "bivlc") / "models" / f"{args.run}.safetensors",
                    log_dir=lambda: build_dir("full", "bivlc") / "logs", configure=_data_options,
                    help="one fine-tune (clip-coco, trohn-text, trohn-img), under torchrun or as one process")
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
