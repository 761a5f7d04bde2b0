"""Kamath et al. (hard positives), the mini profile's fine-tunes: mini/xs-32k trained as each run of
``papers.hard_positives.runs.RUNS`` on the rendered fine-tuning set, one ``FinetuneJob`` per run.

Stage ``mini-finetune@<run>`` (``python -m papers.hard_positives.train_mini run <run>``): the shared trainer with
``HardPositiveLoss`` (SVLC-style, Sec. 4.1; ``papers/hard_positives/losses.py``), the same captions, order, seed,
steps and optimiser for every run (the same runs as the full profile's): ``clip-ft`` (no HP, no HN: the paper's
"COCO alone" control), ``hn`` (HN only), ``hp-hn``, ``hp-hn-swap`` and ``hp-hn-replace`` (only that type's rows;
Table 1(d)), ``ratio-<w>`` (HP weight 1, HN weight w; Table 3, the paper's Sec. 4.3 reading of "ratio"). The set is
read through its format (``papers.hard_positives.finetune_rows_mini``), not through the module that renders it, and
the tables (``papers.hard_positives.tables``) are a module of their own, so neither reruns the runs.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import torch

from common.io import sha256_file
from common.paths import build_dir
from common.training import FromZoo, Init
from common.training.distributed import DistributedContext
from common.training.job import FinetuneJob
from common.training.launch import add_run_command
from common.training.trainer import TrainConfig
from common.training.rendered import CaptionBatches, caption_tokens, pixels, refuse_same_tokens
from common.zoo.trained import tokenizer_for
from papers.hard_positives.finetune_rows_mini import FinetuneSet, HardPositivesMiniError
from papers.hard_positives.runs import RUNS, TYPES, loss_for, run_spec

MODULE = "papers.hard_positives.train_mini"
"""The jobs' module: its import closure keys their resume states."""


def run_data(run: str, data: FinetuneSet) -> FinetuneSet:
    """What ``run`` trains on: every row, or only its types' rows."""
    spec = run_spec(run)
    return data if set(spec.types) == set(TYPES) else data.of_types(spec.types)


def batches_for(data: FinetuneSet, tokenize: Callable[[Sequence[str]], torch.Tensor], name: str,
                where: str = "the fine-tuning set") -> CaptionBatches:
    """Texts per sample [caption, hard positive, hard negative] (the loss's layout); a hard positive or negative
    that tokenizes like its caption is refused."""
    captions = caption_tokens(tokenize, data.texts("caption"))
    extras = {k: caption_tokens(tokenize, data.texts(k)) for k in ("positive", "negative")}
    for k, tokens in extras.items():
        refuse_same_tokens(captions, tokens, data.texts("caption"), f"hard {k}", where)
    return CaptionBatches(pixels(data.images), captions, [extras["positive"], extras["negative"]], name,
                          fields={"texts": ["caption", "hard_positive", "hard_negative"]})


def job_for(run: str, data: FinetuneSet, section: Mapping[str, Any], *, init: Init | None = None,
            tokenize: Callable[[Sequence[str]], torch.Tensor] | None = None,
            provenance: Mapping[str, Any] | None = None) -> FinetuneJob:
    """``run`` as a job: ``init`` (default: the zoo's ``section["base"]``) fine-tuned on ``data`` (the whole set; the
    run keeps its types' rows) with ``section``'s settings (``params.yaml hard_positives.mini``); ``provenance`` is
    added to the run's own facts in the sidecar."""
    spec = run_spec(run)
    data = run_data(run, data)
    config = TrainConfig.from_params(section)
    if len(data.images) < config.batch_size:
        raise HardPositivesMiniError(f"{run}: {len(data.images)} training images cannot fill a batch of "
                                     f"{config.batch_size}")
    init = init or FromZoo(section["base"])
    if tokenize is None:
        tokenize = tokenizer_for(init.describe()["arch"])
    batches = batches_for(data, tokenize, f"hard-positives-mini-{'-'.join(spec.types)}")
    facts = {"run": run, "hard_positive_weight": spec.hard_positive_weight,
             "hard_negative_weight": spec.hard_negative_weight, "types": list(spec.types), **(provenance or {})}
    return FinetuneJob(f"hard-positives-mini-{run}", init, batches, loss_for(spec), config, MODULE,
                       provenance=facts)


def build(args: argparse.Namespace, world: DistributedContext, cpu_profile: Mapping[str, Any]) -> FinetuneJob:
    """The job of ``run <name>``: the stage's parameters, the fine-tuning set and the CPU profile for the sidecar."""
    from common.params import own_section

    _, section = own_section("hard_positives.mini")
    set_dir = Path(args.set or build_dir("mini", "hard_positives") / "finetune")
    return job_for(args.run, FinetuneSet.load(set_dir), section, provenance={
        "set_manifest_sha256": sha256_file(set_dir / "manifest.json"), **cpu_profile})


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {MODULE}", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    add_run_command(sub, RUNS, build, help="fine-tune the base model as one of the runs",
                    out_path=lambda args: build_dir("mini", "hard_positives") / "models" / f"{args.run}.safetensors",
                    log_dir=lambda: build_dir("mini", "hard_positives") / "logs",
                    configure=lambda p: p.add_argument("--set", type=Path, default=None,
                                                       help="default: build/mini/hard_positives/finetune"))
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
