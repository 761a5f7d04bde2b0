"""NegCLIP and CLIP-FT in the mini profile, as jobs: mini/xs-32k fine-tuned on the rendered COCO-train analog
(``build/mini/aro/finetune``, ``papers.aro.finetune_sets_mini``) with its images' nearest neighbours
(``build/mini/aro/neighbours``, ``papers.aro.neighbours_mini``), one job per lr of ``aro.mini.finetune.lrs``
picked on the rendered COCO-val analog's retrieval (``papers.aro.sweep``).

One unit of an epoch is an image (one of its captions drawn per step, as the mini family pretrains). Each run is
deterministic on the CPU (``common.reproducible``) and resumable. The weights go where the zoo keeps
aro/mini-negclip and aro/mini-clip-ft. Stages ``finetune-mini@negclip`` and ``finetune-mini@clip-ft`` of
``papers/aro/dvc.yaml``: ``python -m papers.aro.train_mini run negclip|clip-ft``.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from common.arrays import load_array
from common.io import sha256_file
from common.training import FromZoo
from common.training.distributed import DistributedContext
from papers.aro.batches import FinetuneBatches, PairTable, TokenCache
from papers.aro.finetune_rows_mini import AroFinetuneError, FinetuneSplit
from papers.aro.images import ArrayImages
from papers.aro.sweep import ZOO_NAMES, Sweep, add_sweep_command, sweep_jobs
from papers.aro.validation import RetrievalValidator

DATA_FILES = ("papers/aro/models.toml",)
"""Read at run time: where the zoo keeps aro/mini-clip-ft (its weights' path)."""


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
        for c, ns in kept:
            row_image.append(i)
            captions.append(c)
            negatives.append(ns)
        offsets.append(len(captions))
    units = np.flatnonzero(unit_of_image >= 0)
    hard = unit_of_image[neighbours[units]]
    if hard.size and hard.min() < 0:
        bad = int(units[np.argwhere(hard < 0)[0, 0]])
        raise AroFinetuneError(f"neighbours.npy: image {bad}: a neighbour has no caption with a negative "
                               "(neighbours must be computed among eligible images; rerun the neighbours stage)")
    return PairTable(np.asarray(row_image, dtype=np.int64), tuple(captions), tuple(negatives),
                     np.asarray(offsets, dtype=np.int64), hard)


def build(args: argparse.Namespace, world: DistributedContext, cpu_profile: Mapping[str, Any]) -> Sweep:
    """The sweep of ``args.run`` (``negclip`` or ``clip-ft``) on the mini fine-tuning set."""
    from common.params import own_section
    from common.paths import build_dir
    from common.zoo import get_spec
    from common.zoo.trained import tokenizer_for

    _, section = own_section("aro.mini.finetune")
    set_dir = Path(args.set or build_dir("mini", "aro") / "finetune")
    nbr_dir = Path(args.neighbours or build_dir("mini", "aro") / "neighbours")
    split = FinetuneSplit.load(set_dir, "train")
    table = mini_table(split, load_array(nbr_dir / "neighbours.npy"))
    tokens = TokenCache(tokenizer_for(get_spec(section["base"]).arch), memo=True)  # the sweep tokenises alike every run
    val = FinetuneSplit.load(set_dir, "val")
    validator = RetrievalValidator(ArrayImages.from_nhwc(val.images), val.captions, tokens)
    batches = FinetuneBatches(table, ArrayImages.from_nhwc(split.images), tokens, hard=args.run == "negclip")
    provenance = {"profile": "mini", "finetune_manifest_sha256": sha256_file(set_dir / "manifest.json"),
                  "neighbours_sha256": sha256_file(nbr_dir / "neighbours.npy"), **cpu_profile}
    return sweep_jobs(args.run, "mini", section, FromZoo(section["base"]), batches, validator, __name__, provenance,
                      steps=args.steps)


def weights_path(args: argparse.Namespace) -> Path:
    """Where the zoo expects the run's weights (``aro/mini-<method>``'s checkpoint)."""
    from common.zoo import get_spec

    path = get_spec(ZOO_NAMES[args.run]).checkpoint_path()
    assert path is not None
    return path


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--set", default=None, help="the fine-tuning set (default build/mini/aro/finetune)")
    p.add_argument("--neighbours", default=None, help="the neighbours folder (default build/mini/aro/neighbours)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m papers.aro.train_mini", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    add_sweep_command(sub, build, out_path=weights_path, profile="mini", configure=_configure)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
