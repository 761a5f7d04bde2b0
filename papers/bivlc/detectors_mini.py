"""BiVLC (Miranda et al.) in the mini profile: Table 5's natural-vs-synthetic detectors as jobs (stage
``mini-detectors``: ``python -m papers.bivlc.detectors_mini all``; one of them: ``run <encoder>-<tower>``).

A linear head on a frozen tower's raw output (``DetectorLoss``), on the base (CLIPDet) and on the TROHN-Img run
(CLIPTROHN-Img/Det), trained on the TROHN-Img analog's training split (label 1 = negative image / caption): 1 epoch for
images, 10 for texts, Adam at a constant 1e-3, as the authors (``papers.bivlc.detectors_full`` has their lines). The
mini keeps its own batch (``params.yaml bivlc.mini.detector.batch_size`` inputs per step) and the final head (no
validation split is scored). Heads in ``build/mini/bivlc/detectors/<encoder>-<tower>.loss.safetensors`` (the trainer's
file of the loss's weights), which ``papers.bivlc.tables`` reads; timing logs in
``build/mini/bivlc/logs/detectors/``.
"""
from __future__ import annotations

import argparse
import functools
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import torch

from common.io import sha256_file
from common.paths import build_dir
from common.training.distributed import DistributedContext
from common.training.job import FinetuneJob
from common.training.launch import add_run_command, launch
from common.training.model_init import FromCheckpoint, FromZoo, Init
from common.training.rendered import LabelledBatches, Tokenize, pixels
from common.training.trainer import TrainConfig
from papers.bivlc.finetune_sets_mini import TrainSet
from papers.bivlc.losses import DetectorLoss
from papers.bivlc.runs import DETECTOR_ENCODERS, DETECTOR_EPOCHS, DETECTOR_TOWERS, detector_recipe, embed_dim_of
from papers.bivlc.sets_mini import BivlcMiniError

MODULE = "papers.bivlc.detectors_mini"
DETECTORS: tuple[str, ...] = tuple(f"{encoder}-{tower}" for encoder in DETECTOR_ENCODERS for tower in DETECTOR_TOWERS)
"""The four heads, in training order (the TROHN-Img encoder's last: it needs the TROHN-Img run's weights)."""


def detector_batches(data: TrainSet, tower: str, tokenize: Tokenize) -> LabelledBatches:
    """The TROHN-Img analog's training split as natural (0) and synthetic (1) inputs: each scene's image once and
    each kept pair's negative image, or each kept pair's caption and negative caption."""
    pairs = [(i, j) for i, j in data.kept if i < data.n_train]
    if tower == "image":
        scenes = sorted({i for i, _ in pairs})
        natural = pixels(data.images[scenes])
        synthetic = pixels(data.negative_images[[i for i, _ in pairs], [j for _, j in pairs]])
        inputs = torch.cat([natural, synthetic])
        labels = torch.cat([torch.zeros(len(natural)), torch.ones(len(synthetic))])
    else:
        texts = [data.captions[i][j] for i, j in pairs] + [data.negatives[i][j] for i, j in pairs]
        inputs = tokenize(texts)
        labels = torch.cat([torch.zeros(len(pairs)), torch.ones(len(pairs))])
    return LabelledBatches(inputs, labels, "images" if tower == "image" else "texts", f"bivlc-mini-{tower}-detector")


def detector_init(encoder: str, base: str, models_dir: Path) -> Init:
    """The frozen encoder of a detector: the base (CLIPDet) or the TROHN-Img run's best weights."""
    if encoder == "clip":
        return FromZoo(base)
    from common.zoo import get_spec

    path = Path(models_dir) / f"{encoder}.best.safetensors"
    if not path.is_file():
        raise BivlcMiniError(f"{path}: no weights for the {encoder} detector's encoder; run mini-finetune@{encoder}")
    return FromCheckpoint(get_spec(base).arch, path)


def detector_job(encoder: str, tower: str, init: Init, data: TrainSet, section: Mapping[str, Any], *,
                 tokenize: Tokenize | None = None, provenance: Mapping | None = None) -> FinetuneJob:
    """A linear head on ``init``'s frozen ``tower`` (``DetectorLoss``), ``DETECTOR_EPOCHS[tower]`` epochs, no weight
    decay and no warmup, the authors' optimiser and schedule (the ``[detectors]`` recipe: Adam at a constant rate; the
    mini's own batch is recorded as its deviation), on the tower's raw output as theirs (``tables`` scores the
    heads on the raw outputs too: no switch, so training and scoring cannot disagree), and the final head is kept.
    Trained from scratch every time (no resume state), as before."""
    from common.zoo.trained import tokenizer_for

    arch = init.describe()["arch"]
    tokenize = tokenize or tokenizer_for(arch)
    batches = detector_batches(data, tower, tokenize)
    steps = DETECTOR_EPOCHS[tower] * batches.steps_per_epoch(int(section["batch_size"]))
    config = TrainConfig.from_params(section, steps=steps, recipe=detector_recipe())
    loss = functools.partial(DetectorLoss, embed_dim=embed_dim_of(arch), tower=tower,
                             raw_features=True)
    return FinetuneJob(f"bivlc-mini-det-{encoder}-{tower}", init, batches, loss, config, MODULE,
                       provenance={"tower": tower, "encoder": encoder, **(provenance or {})}, resume=False)


def _detector(name: str) -> tuple[str, str]:
    encoder, _, tower = name.rpartition("-")
    return encoder, tower


def _jobs_from(set_dir: Path | None) -> Callable[[str], FinetuneJob]:
    """The stage's parameters and training set, read once: ``name -> job`` for each of the four heads."""
    from common.params import own_section

    _, section = own_section("bivlc.mini")
    detector = section["detector"]
    set_dir = Path(set_dir or build_dir("mini", "bivlc") / "train")
    data = TrainSet.load(set_dir)
    set_sha256 = sha256_file(set_dir / "manifest.json")

    def build_one(name: str) -> FinetuneJob:
        encoder, tower = _detector(name)
        init = detector_init(encoder, section["base"], build_dir("mini", "bivlc") / "models")
        return detector_job(encoder, tower, init, data, detector, provenance={"set_manifest_sha256": set_sha256})

    return build_one


def build(args: argparse.Namespace, world: DistributedContext, cpu_profile: Mapping[str, Any]) -> FinetuneJob:
    """The job of ``run <encoder>-<tower>`` (the sidecar records no CPU profile, as before)."""
    return _jobs_from(args.set)(args.run)


def _cmd_all(args: argparse.Namespace) -> int:
    out_dir = Path(args.out or build_dir("mini", "bivlc") / "detectors")
    jobs = functools.cache(lambda: _jobs_from(args.set))  # loaded once, after the first launch has pinned the CPU
    for name in DETECTORS:
        launch(lambda world, cpu_profile, name=name: jobs()(name), out_dir / f"{name}.safetensors",
               _log_dir() / f"{name}.json", device="cpu")
    return 0


def _log_dir() -> Path:
    return build_dir("mini", "bivlc") / "logs" / "detectors"


def _set_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--set", type=Path, default=None, help="default: build/mini/bivlc/train")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m papers.bivlc.detectors_mini", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("all", help="train the four natural-vs-synthetic heads (CLIPDet, CLIPTROHN-Img/Det)")
    p.add_argument("--out", type=Path, default=None, help="default: build/mini/bivlc/detectors")
    _set_option(p)
    p.set_defaults(func=_cmd_all)
    add_run_command(sub, DETECTORS, build,
                    out_path=lambda args: build_dir("mini", "bivlc") / "detectors" / f"{args.run}.safetensors",
                    log_dir=_log_dir, configure=_set_option, help="train one head (<encoder>-<tower>)")
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
