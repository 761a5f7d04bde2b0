"""BiVLC (Miranda et al.) in the mini profile: the three fine-tunes CLIP_COCO, TROHN-Text and TROHN-Img as jobs
(stages ``mini-finetune@<run>``: ``python -m papers.bivlc.train_mini run <run>``).

The base fine-tuned by the shared trainer, all parameters, same steps, optimiser and seed for every run, the best
validation in-batch accuracy of ``validations`` evaluations kept (the authors keep the best of 10 epochs; the rule is
theirs, ``papers.bivlc.validation``): CLIP_COCO (``ClipLoss``, ``batch_size`` pairs), TROHN-Text (``TrohnTextLoss``,
half as many images, each with its caption and negative caption) and TROHN-Img (``TrohnImgLoss``, half as many pairs,
each with its negative pair): every step sees ``batch_size`` texts, as the paper's 400. The sets are
``papers.bivlc.finetune_sets_mini``'s; the weights go to ``build/mini/bivlc/models/<run>.safetensors`` with
``<run>.best.safetensors`` (the best validation), the timing log to ``build/mini/bivlc/logs/<run>.json``.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import torch

from common.io import sha256_file
from common.paths import build_dir
from common.training.distributed import DistributedContext
from common.training.job import FinetuneJob
from common.training.launch import add_run_command
from common.training.model_init import FromZoo, Init
from common.training.rendered import CaptionBatches, PairedImageBatches, Tokenize, caption_tokens, pixels
from common.training.trainer import TrainConfig
from papers.bivlc.finetune_sets_mini import TrainSet
from papers.bivlc.runs import RUNS, run_spec
from papers.bivlc.sets_mini import BivlcMiniError
from papers.bivlc.validation import Chunk, InBatchAccuracy

MODULE = "papers.bivlc.train_mini"


def _split_tensors(data: TrainSet, dataset: str, tokenize: Tokenize, scenes: slice) -> dict[str, Any]:
    """images (M, 3, H, W), caption tokens (M, P or 1, L), the extra text and image segments of one split."""
    index = np.arange(len(data.captions))[scenes]
    if dataset in ("coco", "trohn-text"):
        captions = caption_tokens(tokenize, [data.captions[i] for i in index])
        images = pixels(data.images[index])
        extras = [caption_tokens(tokenize, [data.negatives[i] for i in index])] if dataset == "trohn-text" else []
        return {"images": images, "captions": captions, "extras": extras, "extra_images": []}
    pairs = [(i, j) for i, j in data.kept if index[0] <= i <= index[-1]]
    if not pairs:
        raise BivlcMiniError(f"no TROHN-Img pair among scenes {index[0]}..{index[-1]}")
    rows, cols = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    return {"images": pixels(data.images[rows]),
            "captions": caption_tokens(tokenize, [[data.captions[i][j]] for i, j in pairs]),
            "extras": [caption_tokens(tokenize, [[data.negatives[i][j]] for i, j in pairs])],
            "extra_images": [pixels(data.negative_images[rows, cols])]}


def batches_for(data: TrainSet, run: str, tokenize: Tokenize, scenes: slice = slice(None)) -> CaptionBatches:
    """The run's batch source over ``scenes`` (default all: the caller slices the training split)."""
    dataset = run_spec(run).dataset
    parts = _split_tensors(data, dataset, tokenize, scenes)
    fields = {"data": dataset, "texts": ["caption", "negative"][:1 + len(parts["extras"])],
              "images": ["image", "negative image"][:1 + len(parts["extra_images"])]}
    if parts["extra_images"]:
        return PairedImageBatches(parts["images"], parts["captions"], parts["extra_images"], parts["extras"],
                                  f"bivlc-mini-{dataset}", fields)
    return CaptionBatches(parts["images"], parts["captions"], parts["extras"], f"bivlc-mini-{dataset}", fields)


def validation_chunk(batches: CaptionBatches) -> Chunk:
    """The in-memory accessor of ``InBatchAccuracy``: each validation sample's first caption (and its negative),
    its image (and its negative image), in the training layout."""
    def chunk(idx: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        rows = torch.from_numpy(idx)
        images = [batches.images[rows], *(e[rows] for e in getattr(batches, "extra_images", ()))]
        texts = [batches.captions[rows, 0], *(e[rows, 0] for e in batches.extras)]
        return torch.cat(images), torch.cat(texts)

    return chunk


def finetune_job(run: str, data: TrainSet, section: Mapping[str, Any], *, init: Init | None = None,
                 tokenize: Tokenize | None = None, provenance: Mapping | None = None) -> FinetuneJob:
    """Fine-tune ``init`` (default: the zoo's ``section["base"]``) as ``run`` on the set's training split with
    ``section``'s settings (``params.yaml bivlc.mini``: its ``batch_size`` counts texts, so a step has that many
    divided by the run's texts per sample), validating ``section["validations"]`` times; the best weights go beside
    the last (``<stem>.best.safetensors``)."""
    from common.training.model_init import normalizer
    from common.zoo.trained import tokenizer_for

    spec = run_spec(run)
    init = init or FromZoo(section["base"])
    if tokenize is None:
        tokenize = tokenizer_for(init.describe()["arch"])
    samples = int(section["batch_size"]) // spec.texts_per_sample
    train_batches = batches_for(data, run, tokenize, slice(0, data.n_train))
    val_batches = batches_for(data, run, tokenize, slice(data.n_train, None))
    if len(train_batches.images) < samples:
        raise BivlcMiniError(f"{run}: {len(train_batches.images)} training samples cannot fill a batch of {samples}")
    mean, std = normalizer(init.build().transform)
    config = TrainConfig.from_params(section, batch_size=samples,
                                     validate_every=max(1, int(section["steps"]) // int(section["validations"])))
    return FinetuneJob(f"bivlc-mini-{run}", init, train_batches, spec.loss, config, MODULE,
                       validate=InBatchAccuracy(validation_chunk(val_batches), len(val_batches.images), samples,
                                                mean, std),
                       provenance={"run": run, "samples_per_step": samples, **(provenance or {})})


def build(args: argparse.Namespace, world: DistributedContext, cpu_profile: Mapping[str, Any]) -> FinetuneJob:
    """The job of ``run <run>``: the stage's parameters and the training set (its manifest's sha256 and the CPU
    profile in the sidecar)."""
    from common.params import own_section

    _, section = own_section("bivlc.mini")
    set_dir = Path(args.set or build_dir("mini", "bivlc") / "train")
    return finetune_job(args.run, TrainSet.load(set_dir), section,
                        provenance={"set_manifest_sha256": sha256_file(set_dir / "manifest.json"), **cpu_profile})


def _set_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--set", type=Path, default=None, help="default: build/mini/bivlc/train")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m papers.bivlc.train_mini", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    add_run_command(sub, list(RUNS), build,
                    out_path=lambda args: build_dir("mini", "bivlc") / "models" / f"{args.run}.safetensors",
                    log_dir=lambda: build_dir("mini", "bivlc") / "logs", configure=_set_option,
                    help="fine-tune the base model as one of the runs")
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
