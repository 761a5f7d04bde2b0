"""BiVLC (Miranda et al.): Table 5's natural-vs-synthetic detectors CLIPDet and CLIPTROHN-Img/Det as jobs, both
profiles (stage ``mini-detectors``: ``python -m papers.bivlc.detectors mini all``, one head: ``mini run
<encoder>-<tower>``; stages ``detectors-full-<encoder>@<tower>``: ``torchrun ... -m papers.bivlc.detectors full run
det-<encoder>-<tower> --device cuda``).

Both profiles train ``DetectorLoss``'s head on a frozen tower (what, on which encoders, for how many epochs: the
README's stage table) under the ``[detectors]`` recipe. The mini profile keeps its own batch (``params.yaml
bivlc.mini.detector.batch_size`` inputs, each scene's image once), scores no validation split and keeps the final
head (``build/mini/bivlc/detectors/<encoder>-<tower>.loss.safetensors``).

The full profile follows the authors' recipe (the image head's script, the text head's and their data module under
``src/Detectors/`` of IMirandaM/BiVLC@84f0d175) line by line:

* every weight of the CLIP model frozen (``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_img_classifier.py:81-82``
  "for param in model.parameters(): param.requires_grad = False"), a ``Linear(512, 1)`` head on the tower's raw
  output (``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_img_classifier.py:20-31`` "x = self.image_encoder(x)";
  ``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_text_classifier.py:22-33``
  "x = self.text_encoder.encode_text(x)"): ``DetectorLoss`` with ``raw_features`` (the trainer hands it
  ``encode_*(normalize=False)``);
* sigmoid + ``BCELoss`` (``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_img_classifier.py:97`` "criterion =
  BCELoss()", ``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_img_classifier.py:115-119`` "prob = sigmoid(logits)"),
  here BCE on the logits (equal up to BCELoss's clamp of log at -100);
* ``Adam(model.parameters(), lr=0.001)`` (``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_img_classifier.py:98``
  "optimizer = Adam(model.parameters(), lr=0.001)"; the ``--lr`` flag,
  ``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_img_classifier.py:47`` "'--lr', default=1e-6)", is never read,
  and the paper's Appendix E.3 gives that 1e-6), i.e. betas 0.9/0.999, eps 1e-8, no decay, at a constant rate (no
  scheduler): the ``[detectors]`` recipe of ``papers/bivlc/recipes.toml``; fp32 (no autocast);
* a ``DataLoader(batch_size=400, shuffle=True)`` over TROHN-Img rows
  (``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_img_classifier.py:94`` "batch_size=args.batch_size,
  shuffle=True)", the default ``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_img_classifier.py:46``
  "'--batch-size', type=int, default=400)"), whose collate stacks each row's natural input (label 0: the COCO image /
  caption) then its synthetic one (label 1: the generated image / negative caption): 800 inputs per step
  (``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_utils.py:40-54`` "image = image_0 + image_1";
  ``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_utils.py:59-71`` "caption = caption_0 + caption_1"); here
  ``batch_size`` rows, ``2 * batch_size`` inputs;
* 1 epoch for the image detector, 10 for the text detector (the ``--epoch`` defaults:
  ``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_img_classifier.py:36`` "'--epoch', type=int, default=1)";
  ``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_text_classifier.py:38`` "'--epoch', type=int, default=10)");
* after each epoch, validation over the validation split in order, in the same batches
  (``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_img_classifier.py:95`` "batch_size=args.batch_size,
  shuffle=False)"); the score is the mean of the per-batch accuracies (``np.mean(val_accuracy)``,
  ``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_img_classifier.py:143`` "val_acc = ((torch.round(prob) ==
  label).sum().float()/ float(label.size(0)))"), and an epoch is kept when it is strictly better than the best so
  far (``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_img_classifier.py:150`` "if
  (np.mean(val_accuracy)).item() > best:"), as the trainer's best-by-validation does.

What differs: the rows' order per epoch is this workspace's seeded permutation (the authors': torch's global RNG
under seed 42), and a last partial batch of an epoch (fewer than ``batch_size`` rows) is left out (the trainer's
steps are fixed-size). A detector's head is ``build/full/bivlc/models/<name>.best.loss.safetensors``, which
``papers.bivlc.tables`` reads.
"""
from __future__ import annotations

import argparse
import functools
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import torch

from common.files.io import sha256_file
from common.files.tasks import DatasetError
from common.paths import build_dir, data_root
from common.pipeline.cli import stage_parser
from common.pipeline.params import own_section
from common.training.data import EpochShuffled
from common.training.distributed import DistributedContext
from common.training.files import FileImages
from common.training.job import FinetuneJob
from common.training.launch import add_run_command, launch
from common.training.model_init import FromCheckpoint, FromZoo, Init, normalizer
from common.training.rendered import LabelledBatches, Tokenize, pixels
from common.training.trainer import LossFactory, TrainConfig
from common.zoo import encode_text, get_spec, padding_is_inert
from common.zoo.trained import tokenizer_for
from papers.bivlc.detection import is_synthetic
from papers.bivlc.finetune_sets_mini import TrainSet
from papers.bivlc.losses import DetectorLoss
from papers.bivlc.runs import DETECTOR_ENCODERS, DETECTOR_EPOCHS, DETECTOR_TOWERS, embed_dim_of, recipe
from papers.bivlc.sets_full import COCO_IMAGES, BivlcFinetuneFullError, TrainRow, image_files, load_rows, split_rows
from papers.bivlc.sets_mini import BivlcMiniError

MODULE = "papers.bivlc.detectors"
DATA_FILES = ("papers/bivlc/models.toml",)
"""Read at run time (``common.pipeline.stage_deps``): the zoo entries of the full detectors' encoders (the TROHN-Img rerun
``bivlc/full-trohn-img`` or the released ``bivlc/clip-trohn-img``)."""


def detector_name(encoder: str, tower: str) -> str:
    return f"det-{encoder}-{tower}"


DETECTORS: tuple[str, ...] = tuple(detector_name(e, t) for e in DETECTOR_ENCODERS for t in DETECTOR_TOWERS)
"""The four heads, in training order (the TROHN-Img encoder's last: it needs the TROHN-Img run's weights); the runs
of the ``detectors-full-<encoder>@<tower>`` stages. The mini profile names its heads (and their files) without the
``det-`` prefix."""
MINI_DETECTORS: tuple[str, ...] = tuple(name.removeprefix("det-") for name in DETECTORS)


def detector_job(profile: str, encoder: str, tower: str, init: Init, batches: LabelledBatches | FileLabelledBatches,
                 loss: LossFactory, config: TrainConfig, provenance: Mapping,
                 validate: Callable[[torch.nn.Module], float] | None = None) -> FinetuneJob:
    """Both profiles' job: a head on ``init``'s frozen ``tower``, trained from scratch every time (no resume state)."""
    return FinetuneJob(f"bivlc-{profile}-{detector_name(encoder, tower)}", init, batches, loss, config, MODULE,
                       validate=validate, provenance={"tower": tower, **provenance}, resume=False)


# --- the mini profile: the rendered TROHN-Img analog, in memory


def mini_batches(data: TrainSet, tower: str, tokenize: Tokenize) -> LabelledBatches:
    """The TROHN-Img analog's training split as natural (0) and synthetic (1) inputs: each scene's image once and
    each kept pair's negative image, or each kept pair's caption and negative caption."""
    pairs = [(i, j) for i, j in data.kept if i < data.n_train]
    if tower == "image":
        natural = pixels(data.images[sorted({i for i, _ in pairs})])
        synthetic = pixels(data.negative_images[[i for i, _ in pairs], [j for _, j in pairs]])
        inputs = torch.cat([natural, synthetic])
    else:
        natural, synthetic = [data.captions[i][j] for i, j in pairs], [data.negatives[i][j] for i, j in pairs]
        inputs = tokenize(natural + synthetic)
    labels = torch.cat([torch.zeros(len(natural)), torch.ones(len(synthetic))])
    return LabelledBatches(inputs, labels, "images" if tower == "image" else "texts", f"bivlc-mini-{tower}-detector")


def mini_job(encoder: str, tower: str, init: Init, data: TrainSet, section: Mapping[str, Any], *,
             tokenize: Tokenize | None = None, provenance: Mapping | None = None) -> FinetuneJob:
    """``DETECTOR_EPOCHS[tower]`` epochs of ``params.yaml bivlc.mini.detector``'s batch, no validation (the final
    head is kept), on the tower's raw output with no switch, so that training and ``tables``' scoring agree."""
    arch = init.describe()["arch"]
    tokenize = tokenize or tokenizer_for(arch)
    batches = mini_batches(data, tower, tokenize)
    steps = DETECTOR_EPOCHS[tower] * batches.steps_per_epoch(int(section["batch_size"]))
    config = TrainConfig.from_params(section, steps=steps, recipe=recipe("detectors"))
    loss = functools.partial(DetectorLoss, embed_dim=embed_dim_of(arch), tower=tower, raw_features=True)
    return detector_job("mini", encoder, tower, init, batches, loss, config,
                        {"encoder": encoder, **(provenance or {})})


def _mini_jobs(set_dir: Path | None) -> Callable[[str], FinetuneJob]:
    """The stage's parameters and training set, read once: ``name -> job`` for each of the four mini heads."""
    _, section = own_section("bivlc.mini")
    set_dir = Path(set_dir or build_dir("mini", "bivlc") / "train")
    data = TrainSet.load(set_dir)
    set_sha256 = sha256_file(set_dir / "manifest.json")

    def build_one(name: str) -> FinetuneJob:
        encoder, _, tower = name.rpartition("-")
        # the frozen encoder: the base (CLIPDet) or the TROHN-Img run's best weights
        init: Init = FromZoo(section["base"])
        if encoder != "clip":
            path = build_dir("mini", "bivlc") / "models" / f"{encoder}.best.safetensors"
            if not path.is_file():
                raise BivlcMiniError(f"{path}: no weights for the {encoder} detector's encoder; run "
                                     f"mini-finetune@{encoder}")
            init = FromCheckpoint(get_spec(section["base"]).arch, path)
        return mini_job(encoder, tower, init, data, section["detector"], provenance={"set_manifest_sha256": set_sha256})

    return build_one


# --- the full profile: TROHN-Img's rows and image files


def parse_detector(name: str, encoders: Mapping[str, str]) -> tuple[str, str]:
    """``det-<encoder>-<tower>`` -> (encoder row, tower)."""
    known = {detector_name(e, t): (e, t) for e in encoders for t in DETECTOR_TOWERS}
    if name in known:
        return known[name]
    raise BivlcFinetuneFullError(f"unknown detector run {name!r}; known: {', '.join(known)}")


class FileLabelledBatches(EpochShuffled):
    """Detector data: each TROHN-Img row gives a natural input (label 0: the COCO image or the caption) and a
    synthetic one (label 1: the generated image or the negative caption). A step of ``size`` inputs draws
    ``rows_per_step(size)`` rows of the epoch's permutation and holds both inputs of each, naturals first, as the
    authors' collate does; ``key`` is "images" or "texts"."""

    def __init__(self, key: str, natural: Sequence, synthetic: Sequence, name: str, *,
                 images: FileImages | None = None, tokenize: Tokenize | None = None):
        self.key, self.natural, self.synthetic, self.name = key, natural, synthetic, name
        self.images, self.tokenize, self.n_rows = images, tokenize, len(natural)

    def rows_per_step(self, size: int) -> int:
        """Half of ``size`` inputs: each row holds two."""
        if size % 2:
            raise ValueError(f"detector batch {size} is odd: it holds the natural and synthetic input of each row")
        if size // 2 > self.n_rows:
            raise ValueError(f"batch of {size} inputs needs {size // 2} rows; there are {self.n_rows}")
        return size // 2

    def _inputs(self, idx: np.ndarray) -> torch.Tensor:
        if self.key == "images":
            return torch.cat([self.images.get(np.asarray(self.natural)[idx]),
                              self.images.get(np.asarray(self.synthetic)[idx])])
        return torch.cat([self.tokenize([self.natural[i] for i in idx]),
                          self.tokenize([self.synthetic[i] for i in idx])])

    def labels_for(self, m: int) -> torch.Tensor:
        return torch.cat([torch.zeros(m), torch.ones(m)])

    def batch(self, seed: int, step: int, size: int, rows: slice = slice(None)) -> dict[str, torch.Tensor]:
        idx = self.draws(seed, step, size)
        inputs, labels = self._inputs(idx), self.labels_for(len(idx))
        return {self.key: inputs[rows].unsqueeze(1), "labels": labels[rows]}

    def describe(self) -> dict:
        return {"name": self.name, "key": self.key, "rows": self.n_rows}


def full_batches(tower: str, rows: Sequence[TrainRow], image_size: int, coco_images: Path, set_dir: Path,
                 tokenize: Tokenize | None) -> FileLabelledBatches:
    """TROHN-Img rows (one split) as natural (0) and synthetic (1) inputs of ``tower``."""
    if tower == "image":
        files, image, negative = image_files(rows, coco_images, set_dir)
        images = FileImages(files, image_size)
        if (negative < 0).any():
            raise DatasetError(f"{set_dir}: the image detector needs TROHN-Img rows (a row has no generated image)")
        return FileLabelledBatches("images", image, negative, "bivlc-full-image-detector", images=images)
    return FileLabelledBatches("texts", [r.caption for r in rows], [r.negative for r in rows],
                               "bivlc-full-text-detector", tokenize=tokenize)


class _HeldLoss:
    """The detector's loss factory, keeping the instance the trainer optimises so that validation reads its head."""

    def __init__(self, embed_dim: int, tower: str):
        self.embed_dim, self.tower, self.loss = embed_dim, tower, None

    def __call__(self, world=None) -> DetectorLoss:
        self.loss = DetectorLoss(self.embed_dim, self.tower, world=world)
        return self.loss

    def __repr__(self) -> str:  # the job's description of its loss (``describe_loss``)
        return f"DetectorLoss(embed_dim={self.embed_dim}, tower={self.tower!r}, raw_features=True)"


class DetectorAccuracy:
    """The authors' validation score: the validation split in order, ``rows`` rows (``2 * rows`` inputs) per batch,
    each batch's accuracy (``round(sigmoid) == label``, i.e. p > 0.5 is synthetic) and their mean
    (``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_img_classifier.py:130-150`` "val_accuracy.append(val_acc.item())");
    the head is the one the trainer is optimising (``held.loss``), on the
    tower's output as the loss reads it (raw unless the loss says otherwise)."""

    def __init__(self, batches: FileLabelledBatches, held: _HeldLoss, rows: int, mean: torch.Tensor,
                 std: torch.Tensor):
        self.batches, self.held, self.rows, self.mean, self.std = batches, held, rows, mean, std

    def __call__(self, model) -> float:
        b, loss = self.batches, self.held.loss
        normalize = not loss.raw_features
        device = next(model.parameters()).device
        accuracies = []
        for start in range(0, len(b.natural), max(1, self.rows)):
            idx = np.arange(start, min(len(b.natural), start + max(1, self.rows)))
            x = b._inputs(idx)
            if b.key == "images":
                pixels = ((x.to(device).float() / 255.0) - self.mean.to(device)) / self.std.to(device)
                feats = model.encode_image(pixels, normalize=normalize)
            else:
                feats = encode_text(model, x.to(device), padding_is_inert(model), normalize=normalize)
            p = torch.sigmoid(loss.head(feats.float()).squeeze(-1)).double().cpu().numpy()
            labels = b.labels_for(len(idx)).numpy().astype(bool)
            accuracies.append(float((is_synthetic(p) == labels).mean()))
        return float(np.mean(accuracies))


def full_job(encoder: str, tower: str, rows: Sequence[TrainRow], section: Mapping[str, Any], init: Init,
             coco_images: Path, set_dir: Path, *, steps: int | None = None,
             provenance: Mapping | None = None) -> FinetuneJob:
    """``DETECTOR_EPOCHS[tower]`` epochs on TROHN-Img's train split (``params.yaml bivlc.full.detectors``), validated
    after every epoch by the authors' score (``steps`` overrides the epochs and validates once, at the end)."""
    detectors = recipe("detectors")
    if detectors.augmentation != "center_crop":  # FileLabelledBatches decodes every input with the centre crop
        raise BivlcFinetuneFullError(f"{detectors.file}: [{detectors.name}].augmentation: the detectors' batches take "
                                     f"the centre crop only, not {detectors.augmentation!r}; set it to center_crop")
    arch = init.describe()["arch"]
    tokenize = tokenizer_for(arch) if tower == "text" else None
    size, rows_per_step = int(section["image_size"]), int(section["batch_size"])
    train = full_batches(tower, split_rows(rows, "train"), size, coco_images, set_dir, tokenize)
    val = full_batches(tower, split_rows(rows, "validation"), size, coco_images, set_dir, tokenize)
    inputs = 2 * rows_per_step
    per_epoch = train.steps_per_epoch(inputs)
    total = steps or DETECTOR_EPOCHS[tower] * per_epoch
    loss = _HeldLoss(embed_dim_of(arch), tower)
    mean, std = normalizer(init.build().transform)
    config = TrainConfig.from_params(section, steps=total, batch_size=inputs, validate_every=0 if steps else per_epoch,
                                     recipe=detectors)
    return detector_job("full", encoder, tower, init, train, loss, config,
                        {"steps_per_epoch": per_epoch, "epochs": total / per_epoch, **(provenance or {})},
                        validate=DetectorAccuracy(val, loss, rows_per_step, mean, std))


# --- the stages


def build(args: argparse.Namespace, world: DistributedContext, cpu_profile: Mapping[str, Any]) -> FinetuneJob:
    """The job of ``<profile> run <name>``: the stage's parameters and the profile's TROHN-Img set (a mini head's
    sidecar records no CPU profile, as before; a full one's the encoder's zoo model and, on the CPU, the profile)."""
    if args.profile == "mini":
        return _mini_jobs(args.set)(args.run)

    _, section = own_section("bivlc.full.detectors")
    encoders = dict(section["encoders"])
    encoder, tower = parse_detector(args.run, encoders)
    set_dir = Path(args.set or build_dir("full", "bivlc") / "sets" / "trohn-img")
    return full_job(encoder, tower, load_rows(set_dir), section, FromZoo(encoders[encoder]),
                    Path(args.data or data_root()) / COCO_IMAGES, set_dir, steps=args.steps,
                    provenance={"profile": "full", "encoder": encoders[encoder],
                                "set_manifest_sha256": sha256_file(set_dir / "manifest.json"), **cpu_profile})


def _mini_log_dir() -> Path:
    return build_dir("mini", "bivlc") / "logs" / "detectors"


def _cmd_all(args: argparse.Namespace) -> int:
    """The mini stage: the four heads in one process, the set read once (after the first launch pinned the CPU)."""
    out_dir = Path(args.out or build_dir("mini", "bivlc") / "detectors")
    jobs = functools.cache(lambda: _mini_jobs(args.set))
    for name in MINI_DETECTORS:
        launch(lambda world, cpu_profile, name=name: jobs()(name), out_dir / f"{name}.safetensors",
               _mini_log_dir() / f"{name}.json", device="cpu")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = stage_parser(__spec__.name, __doc__)
    profiles = parser.add_subparsers(dest="profile", required=True)
    mini = profiles.add_parser("mini", help="the mini profile").add_subparsers(dest="command", required=True)
    full = profiles.add_parser("full", help="the full profile").add_subparsers(dest="command", required=True)

    def mini_set(p: argparse.ArgumentParser) -> None:
        p.add_argument("--set", type=Path, default=None, help="default: build/mini/bivlc/train")

    def full_data(p: argparse.ArgumentParser) -> None:
        p.add_argument("--set", type=Path, default=None, help="default: build/full/bivlc/sets/trohn-img")
        p.add_argument("--data", type=Path, default=None, help=f"the data root holding {COCO_IMAGES.as_posix()}")

    p = mini.add_parser("all", help="train the four natural-vs-synthetic heads (CLIPDet, CLIPTROHN-Img/Det)")
    p.add_argument("--out", type=Path, default=None, help="default: build/mini/bivlc/detectors")
    mini_set(p)
    p.set_defaults(func=_cmd_all)
    add_run_command(mini, MINI_DETECTORS, build, configure=mini_set, log_dir=_mini_log_dir,
                    out_path=lambda args: build_dir("mini", "bivlc") / "detectors" / f"{args.run}.safetensors",
                    help="train one head (<encoder>-<tower>)")
    add_run_command(full, DETECTORS, build, configure=full_data, log_dir=lambda: build_dir("full", "bivlc") / "logs",
                    out_path=lambda args: build_dir("full", "bivlc") / "models" / f"{args.run}.safetensors",
                    help="one detector (det-<encoder>-<image|text>), under torchrun or as one process")
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
