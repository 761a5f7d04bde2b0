"""CoN-CLIP (Singh et al.) in the mini profile: mini/xs-32k fine-tuned with CoN-CLIP's loss and its ablations.

``run <name>`` (stages ``mini-finetune@<run>``): the base model fine-tuned by the shared trainer with
``papers.conclip.losses.ConClipLoss``, image tower frozen, on the set of ``papers.conclip.finetune_rows_mini`` (images
[I, I'] and texts [c, c'] per sample); the same examples, order, seed, steps and optimiser for every run of
``papers.conclip.runs.RUNS``: L_conclip, L1, L2, L1 + L2 (CC-Neg), and L1 on the CREPE-Negate negatives. Each run is
a ``FinetuneJob`` (``build_job``), launched by ``common.training.launch`` (CPU pinning, the timing log in
``build/mini/conclip/logs/<run>.json``) and resumable after a kill (``common.training.job.run_job``).
"""
from __future__ import annotations

import argparse
import functools
from pathlib import Path
from typing import Callable, Mapping, Sequence

import torch

from common.io import sha256_file
from common.paths import build_dir
from common.training import FromZoo, Init
from common.training.distributed import DistributedContext
from common.training.job import FinetuneJob
from common.training.launch import add_run_command
from common.training.trainer import TrainConfig
from common.training.rendered import PairedImageBatches, caption_tokens, pixels, refuse_same_tokens
from common.zoo.trained import tokenizer_for
from papers.conclip.finetune_rows_mini import ConclipMiniError, FinetuneSet
from papers.conclip.losses import ConClipLoss
from papers.conclip.runs import NEGATIVE_FIELDS, RUNS, run_spec


class NegationBatches(PairedImageBatches):
    """One caption per image, the negated caption as the extra text, the distractor image as the second image
    segment: images [I, I'], texts [c, c'] per sample."""

    def __init__(self, images: torch.Tensor, distractors: torch.Tensor, captions: torch.Tensor,
                 negated: torch.Tensor, name: str, fields: Mapping | None = None):
        if distractors.shape != images.shape:
            raise ValueError("NegationBatches: one distractor image per image")
        super().__init__(images, captions, [distractors], [negated], name, fields)
        self.distractors = distractors


def batches_for(data: FinetuneSet, negatives: str, tokenize: Callable[[Sequence[str]], torch.Tensor],
                name: str, where: str = "the fine-tuning set") -> NegationBatches:
    """Texts per sample [caption, negated caption] (CC-Neg's, or CREPE-Negate's with ``negatives='crepe'``); a
    negation that tokenizes like its caption is refused."""
    field = NEGATIVE_FIELDS[negatives]
    captions = caption_tokens(tokenize, [[c] for c in data.texts("caption")])
    negated = caption_tokens(tokenize, [[c] for c in data.texts(field)])
    refuse_same_tokens(captions, negated, [[c] for c in data.texts("caption")], f"negation ({field})", where)
    return NegationBatches(pixels(data.images), pixels(data.distractors), captions, negated, name,
                           fields={"texts": ["caption", field], "images": ["image", "distractor"]})


def build_job(run: str, data: FinetuneSet, section: Mapping, *, init: Init | None = None,
              tokenize: Callable[[Sequence[str]], torch.Tensor] | None = None,
              provenance: Mapping | None = None) -> FinetuneJob:
    """The run ``run``: ``init`` (default: the zoo's ``section["base"]``) fine-tuned on ``data`` with ``section``'s
    settings (``params.yaml conclip.mini``), the image tower as it was (``ConClipLoss.frozen``); ``provenance``
    follows the run's own facts in the sidecar."""
    spec = run_spec(run)
    config = TrainConfig.from_params(section)
    if len(data.images) < config.batch_size:
        raise ConclipMiniError(f"{run}: {len(data.images)} training images cannot fill a batch of "
                               f"{config.batch_size}")
    init = init or FromZoo(section["base"])
    if tokenize is None:
        tokenize = tokenizer_for(init.describe()["arch"])
    batches = batches_for(data, spec.negatives, tokenize, f"conclip-mini-{spec.negatives}")
    provenance = {"run": run, "terms": list(spec.terms), "negatives": spec.negatives, **(provenance or {})}
    return FinetuneJob(f"conclip-mini-{run}", init, batches, functools.partial(ConClipLoss, terms=spec.terms),
                       config, __name__, provenance=provenance)


# ------------------------------------------------------------------------------------------------------------------
# Entry point
# ------------------------------------------------------------------------------------------------------------------
def _set_dir(args: argparse.Namespace) -> Path:
    return Path(args.set or build_dir("mini", "conclip") / "finetune")


def _build(args: argparse.Namespace, world: DistributedContext, cpu_profile: Mapping) -> FinetuneJob:
    """``run``'s job: this stage's parameters, the set of ``--set``, the set's manifest hash and the CPU profile in
    the sidecar."""
    from common.params import own_section

    _, section = own_section("conclip.mini")
    set_dir = _set_dir(args)
    return build_job(args.run, FinetuneSet.load(set_dir), section, provenance={
        "set_manifest_sha256": sha256_file(set_dir / "manifest.json"), **cpu_profile})


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--set", default=None, help="default: build/mini/conclip/finetune")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m papers.conclip.train_mini", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    add_run_command(sub, list(RUNS), _build, configure=_configure,
                    out_path=lambda args: build_dir("mini", "conclip") / "models" / f"{args.run}.safetensors",
                    log_dir=lambda: build_dir("mini", "conclip") / "logs",
                    help="fine-tune the base model's text tower as one of the runs")
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
