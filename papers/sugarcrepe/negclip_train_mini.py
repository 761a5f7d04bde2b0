"""The mini NegCLIP runs of Tables 5 and 10 (stages ``negclip-mini@<run>``): one ``FinetuneJob`` per run of
``runs.RUNS``.

``mini/xs-32k`` (the mini family's "ViT-B/32") fine-tuned by the shared trainer, every run with the same captions in
the same order, the same seed, steps and optimiser: ``clip-ft`` with ``ClipLoss`` over images [I] and texts [T];
``negclip-<kind>`` with ``TextNegativeClipLoss`` over images [I] and texts [T; T_neg] (the hard negative captions
are extra image->text negatives, as in NegCLIP without its hard negative images); ``negclip-refined-<kind>`` the
same on the refined rows only (Table 10). Deterministic on the CPU (``common.reproducible``, through
``common.training.launch``), resumable (``common.training.job``: the resume state lives under
``<cache root>/training/``, outside the stage's outputs).

``python -m papers.sugarcrepe.negclip_train_mini run <run>``: weights in ``build/mini/sugarcrepe_negclip/models/``,
wall-time log in ``build/mini/sugarcrepe_negclip/logs/``.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import torch

from common.training.job import FinetuneJob
from common.training.trainer import TrainConfig
from common.training.model_init import FromZoo, Init
from common.training.rendered import CaptionBatches, caption_tokens, pixels, refuse_same_tokens
from common.zoo.trained import tokenizer_for
from papers.sugarcrepe.losses import loss_for
from papers.sugarcrepe.negclip_rows_mini import FinetuneSet, NegclipMiniError, run_data
from papers.sugarcrepe.runs import RUNS, run_spec

MODULE = "papers.sugarcrepe.negclip_train_mini"
"""This module's name even when it runs as ``__main__``: its import closure keys the runs' resume states."""
OUT = "sugarcrepe_negclip"
"""``build/mini/<OUT>``: the set (``set/``), the weights (``models/``) and the wall-time logs (``logs/``)."""


def batches_for(data: FinetuneSet, kind: str | None, tokenize: Callable[[Sequence[str]], torch.Tensor],
                where: str = "the fine-tuning set") -> CaptionBatches:
    """The run's batch source; a negative whose tokens equal its caption's (cut at the context length) is refused,
    since the loss would push a text away from itself."""
    captions = caption_tokens(tokenize, data.captions)
    extras = []
    if kind is not None:
        if kind not in data.kinds():
            raise NegclipMiniError(f"{where}: no negatives of kind {kind!r} (it has {list(data.kinds())})")
        negatives = caption_tokens(tokenize, [[negs[kind] for negs in image] for image in data.negatives])
        refuse_same_tokens(captions, negatives, data.captions, f"{kind} negative", where)
        extras.append(negatives)
    name = "sugarcrepe-mini-clip-ft" if kind is None else f"sugarcrepe-mini-negclip-{kind}"
    return CaptionBatches(pixels(data.images), captions, extras, name, fields={"negatives": kind is not None})


def build_job(run: str, data: FinetuneSet, section: Mapping[str, Any], *, init: Init | None = None,
              tokenize: Callable[[Sequence[str]], torch.Tensor] | None = None,
              provenance: Mapping[str, Any] | None = None) -> FinetuneJob:
    """``run`` as a job: fine-tune ``init`` (default: the zoo's ``section["base"]``) on ``data`` (``run_data``) with
    ``section``'s settings (``params.yaml sugarcrepe.negclip_mini``); ``provenance`` follows the run's own keys in its
    sidecar."""
    spec = run_spec(RUNS, run)
    kind = spec.hard_negative
    config = TrainConfig.from_params(section)
    if len(data.images) < config.batch_size:
        raise NegclipMiniError(f"{run}: {len(data.images)} training images cannot fill a batch of {config.batch_size}")
    init = init or FromZoo(section["base"])
    if tokenize is None:
        tokenize = tokenizer_for(init.describe()["arch"])
    return FinetuneJob(
        f"sugarcrepe-mini-{run}", init, batches_for(data, kind, tokenize), loss_for(kind), config, MODULE,
        provenance={"run": run, "hard_negative": kind, "refined": spec.refined, **(provenance or {})})


def build(args: argparse.Namespace, world, cpu_profile: Mapping[str, Any]) -> FinetuneJob:
    """The job of ``run <run>``: the stage's parameters, the set (``--set``) and its manifest's hash."""
    from common.io import sha256_file
    from common.params import own_section
    from common.paths import build_dir

    _, section = own_section("sugarcrepe.negclip_mini")
    set_dir = Path(args.set or build_dir("mini", OUT) / "set")
    data = run_data(args.run, set_dir)
    return build_job(args.run, data, section,
                     provenance={"set_manifest_sha256": sha256_file(set_dir / "manifest.json"), **cpu_profile})


def main(argv: Sequence[str] | None = None) -> int:
    from common.paths import build_dir
    from common.training.launch import add_run_command

    parser = argparse.ArgumentParser(prog=f"python -m {MODULE}", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    def configure(p: argparse.ArgumentParser) -> None:
        p.add_argument("--set", default=None, help="default: build/mini/sugarcrepe_negclip/set")

    add_run_command(sub, sorted(RUNS), build,
                    out_path=lambda args: build_dir("mini", OUT) / "models" / f"{args.run}.safetensors",
                    log_dir=lambda: build_dir("mini", OUT) / "logs", configure=configure,
                    help="fine-tune the base model: CLIP-FT or NegCLIP with one kind of negative")
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
