"""NegCLIP and CLIP-FT (ARO, Section 5 and Appendix C): fine-tune a CLIP with and without compositional hard negatives.

Both runs go through the shared trainer (``common.training.train``) from the base zoo model, on the same captions in
the same order (one batch source; CLIP-FT simply leaves out the hard parts):

- NegCLIP: each sample is a caption, one of its hard negative captions (swaps, ``papers.aro.negatives``), one of
  its image's nearest training images by the base model's image similarity, with that image's caption and one of
  its negatives; ``HardNegativeClipLoss`` over images [I; I_hard] and texts [T; T_hardimg; T_neg; T_neg_hardimg].
- CLIP-FT: images [I] and texts [T], ``ClipLoss``.

AdamW with the paper's recipe (50 warmup steps, weight decay 0.2, 5 epochs) at each learning rate of the sweep; the
learning rate with the best validation retrieval (mean of image->text and text->image R@1 on the COCO-val analog)
is kept, as the paper picks it. Each run is deterministic on the CPU (``common.reproducible``) and resumable: its
resume state and the finished runs of the sweep live under ``<cache root>/training/aro-<method>/`` (outside the
stage's outputs, which DVC deletes before a rerun), keyed by a digest of everything that defines the run.

Profiles:
- mini: ``build/mini/aro/finetune`` (``papers.aro.finetune_data``) and ``neighbours.npy`` (``neighbours`` below);
  one unit of an epoch is an image (one of its captions drawn per step, as the mini family pretrains).
- full: COCO train 2014 with the released ``train_neg_clip.tsv`` (its negatives and ``neg_image`` neighbour rows;
  one unit is a TSV row, as in the authors' loader) and validation on ``valid_neg_clip.tsv``; runs under
  ``torchrun`` on GPUs (``common.training.init_from_env``).

Stages (``papers/aro/dvc.yaml``)::

    mini-finetune-neighbours: python -m papers.aro.finetune neighbours --set build/mini/aro/finetune
                              --out build/mini/aro/neighbours
    finetune-mini@negclip / finetune-mini@clip-ft (finetune-full@... under torchrun): python -m papers.aro.finetune run negclip|clip-ft
"""
from __future__ import annotations

import argparse
import ast
import csv
import hashlib
import json
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Protocol, Sequence

import numpy as np
import torch

from common.errors import WorkspaceError
from common.training.files import FileImages
from common.io import sha256_file, write_json_atomic
from common.tasks import DatasetError
from common.training import (
    ClipLoss, DistributedContext, FromZoo, HardNegativeClipLoss, Init, TrainConfig, init_from_env, shutdown, train)
from papers.aro.finetune_data import FinetuneSplit

DATA_FILES = ("papers/aro/models.toml",)
"""Read at run time: where the zoo keeps aro/mini-negclip and aro/mini-clip-ft (the output paths)."""
STAGE = "papers/aro/dvc.yaml:finetune-{profile}@{method}"
NEIGHBOURS_STAGE = "papers/aro/dvc.yaml:mini-finetune-neighbours"
METHODS = {"negclip": HardNegativeClipLoss, "clip-ft": ClipLoss}
CHECKPOINT_EVERY = 50
"""Steps between resume states (mini: 15-20 s of NegCLIP on 2 cores)."""
ENCODE_BATCH = 256


class FinetuneError(WorkspaceError):
    """A fine-tuning input that cannot be used as given (the message names the file and the record)."""


# ------------------------------------------------------------------------------------------------------------------
# Images: in memory (mini) or decoded from files per batch (full: common.training.files.FileImages)
# ------------------------------------------------------------------------------------------------------------------
class ImageStore(Protocol):
    def __len__(self) -> int: ...
    def get(self, indices: np.ndarray) -> torch.Tensor:
        """uint8 pixels (n, 3, H, W) of the given images, in the model's input size."""
        ...


@dataclass(frozen=True)
class ArrayImages:
    """Rendered images held in memory as (N, 3, H, W) uint8 (an NHWC array viewed channels-first)."""

    pixels: torch.Tensor

    @classmethod
    def from_nhwc(cls, images: np.ndarray) -> "ArrayImages":
        return cls(torch.from_numpy(np.ascontiguousarray(images)).permute(0, 3, 1, 2).contiguous())

    def __len__(self) -> int:
        return len(self.pixels)

    def get(self, indices: np.ndarray) -> torch.Tensor:
        return self.pixels[torch.from_numpy(np.asarray(indices, dtype=np.int64))]


# ------------------------------------------------------------------------------------------------------------------
# The fine-tuning table and its batch source
# ------------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PairTable:
    """Rows (a caption, its hard negatives, its image) grouped in units, the things an epoch permutes.

    Rows of unit u are ``unit_offsets[u]:unit_offsets[u+1]``; ``hard_units[u]`` are the units whose images are the
    nearest to u's (the hard negative images). Every row has at least one negative (captions without are dropped).
    """

    row_image: np.ndarray
    captions: tuple[str, ...]
    negatives: tuple[tuple[str, ...], ...]
    unit_offsets: np.ndarray
    hard_units: np.ndarray

    def __post_init__(self):
        n_rows, n_units = len(self.captions), len(self.unit_offsets) - 1
        if len(self.row_image) != n_rows or len(self.negatives) != n_rows:
            raise ValueError("PairTable: row_image, captions and negatives need one entry per row")
        if self.unit_offsets[0] != 0 or self.unit_offsets[-1] != n_rows or np.any(np.diff(self.unit_offsets) < 1):
            raise ValueError("PairTable: unit_offsets must cover the rows, every unit with at least one row")
        if self.hard_units.shape[0] != n_units or self.hard_units.ndim != 2:
            raise ValueError("PairTable: hard_units needs one row of neighbour units per unit")
        if n_units and (self.hard_units.min() < 0 or self.hard_units.max() >= n_units):
            raise ValueError("PairTable: hard_units holds a unit index out of range")
        if any(not n for n in self.negatives):
            raise ValueError("PairTable: every row needs at least one negative caption")

    @property
    def n_units(self) -> int:
        return len(self.unit_offsets) - 1

    def describe(self) -> dict:
        return {"units": self.n_units, "rows": len(self.captions),
                "images": int(len(np.unique(self.row_image))), "neighbours_per_unit": int(self.hard_units.shape[1]),
                "negatives": int(sum(map(len, self.negatives)))}


class TokenCache:
    """The model's tokenizer with an optional memo (the mini sweep tokenises the same captions every run)."""

    def __init__(self, tokenizer: Callable, memo: bool = True):
        self.tokenizer, self.memo = tokenizer, memo
        self._cache: dict[str, torch.Tensor] = {}

    def __call__(self, texts: Sequence[str]) -> torch.Tensor:
        if not self.memo:
            return self.tokenizer(list(texts))
        missing = sorted({t for t in texts if t not in self._cache})
        if missing:
            for text, tokens in zip(missing, self.tokenizer(missing)):
                self._cache[text] = tokens
        return torch.stack([self._cache[t] for t in texts])


@dataclass(frozen=True)
class Draws:
    """The random choices of one step's global batch (indices into the table)."""

    rows: np.ndarray
    negatives: np.ndarray
    hard_rows: np.ndarray
    hard_negatives: np.ndarray


class FinetuneBatches:
    """NegCLIP's (``hard=True``) or CLIP-FT's batches over one ``PairTable``: the batch of step s is a pure
    function of (seed, s).

    An epoch is a permutation of the units (``default_rng([seed, 0, epoch])``; the tail that does not fill a batch
    is dropped); per step, ``default_rng([seed, 1, step])`` draws for every sample a row of its unit, one of the
    row's negatives, a neighbour unit, a row of it and one of that row's negatives. Both modes draw the same
    numbers, so CLIP-FT trains on exactly NegCLIP's captions.
    """

    def __init__(self, table: PairTable, images: ImageStore, tokens: Callable[[Sequence[str]], torch.Tensor],
                 hard: bool):
        self.table, self.images, self.tokens, self.hard = table, images, tokens, hard
        self._perm: tuple[tuple[int, int], np.ndarray] | None = None

    def steps_per_epoch(self, size: int) -> int:
        steps = self.table.n_units // size
        if steps < 1:
            raise ValueError(f"batch of {size} is larger than the {self.table.n_units} training units")
        return steps

    def draws(self, seed: int, step: int, size: int) -> Draws:
        t = self.table
        epoch, j = divmod(step, self.steps_per_epoch(size))
        if self._perm is None or self._perm[0] != (seed, epoch):
            self._perm = ((seed, epoch), np.random.default_rng([seed, 0, epoch]).permutation(t.n_units))
        units = self._perm[1][j * size: (j + 1) * size]
        u = np.random.default_rng([seed, 1, step]).random((5, size))

        def pick(n: np.ndarray, x: np.ndarray) -> np.ndarray:
            return np.minimum((x * n).astype(np.int64), n - 1)

        counts = np.diff(t.unit_offsets)
        n_neg = np.fromiter((len(n) for n in t.negatives), dtype=np.int64, count=len(t.negatives))
        rows = t.unit_offsets[units] + pick(counts[units], u[0])
        hard_units = t.hard_units[units, pick(np.full(size, t.hard_units.shape[1]), u[1])]
        hard_rows = t.unit_offsets[hard_units] + pick(counts[hard_units], u[2])
        return Draws(rows, pick(n_neg[rows], u[3]), hard_rows, pick(n_neg[hard_rows], u[4]))

    def batch(self, seed: int, step: int, size: int, rows: slice = slice(None)) -> dict[str, torch.Tensor]:
        d = self.draws(seed, step, size)
        t = self.table
        r, hr = d.rows[rows], d.hard_rows[rows]
        captions = [t.captions[i] for i in r]
        if not self.hard:
            return {"images": self.images.get(t.row_image[r]).unsqueeze(1),
                    "texts": self.tokens(captions).unsqueeze(1)}
        negs = [t.negatives[i][k] for i, k in zip(r, d.negatives[rows])]
        hard_caps = [t.captions[i] for i in hr]
        hard_negs = [t.negatives[i][k] for i, k in zip(hr, d.hard_negatives[rows])]
        images = torch.stack([self.images.get(t.row_image[r]), self.images.get(t.row_image[hr])], dim=1)
        texts = torch.stack([self.tokens(x) for x in (captions, hard_caps, negs, hard_negs)], dim=1)
        return {"images": images, "texts": texts}

    def describe(self) -> dict:
        return {"name": "aro-negclip" if self.hard else "aro-clip-ft", **self.table.describe()}


# ------------------------------------------------------------------------------------------------------------------
# Building the table: mini (rendered set + neighbours.npy) and full (the released TSV)
# ------------------------------------------------------------------------------------------------------------------
def mini_table(split: FinetuneSplit, neighbours: np.ndarray) -> PairTable:
    """Units = training images with at least one caption that has a negative; rows = those captions."""
    if split.negatives is None:
        raise FinetuneError("the mini fine-tuning set has no negatives.json in its train split")
    if neighbours.shape[0] != len(split.captions):
        raise FinetuneError(f"neighbours.npy has {neighbours.shape[0]} rows for {len(split.captions)} training images")
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
        raise FinetuneError(f"neighbours.npy: image {bad}: a neighbour has no caption with a negative "
                            "(neighbours must be computed among eligible images; rerun the neighbours stage)")
    return PairTable(np.asarray(row_image, dtype=np.int64), tuple(captions), tuple(negatives),
                     np.asarray(offsets, dtype=np.int64), hard)


@dataclass(frozen=True)
class TsvRow:
    caption: str
    filepath: str
    negatives: tuple[str, ...]
    neighbours: tuple[int, ...]


def read_negclip_tsv(path: Path) -> tuple[list[int], list[TsvRow]]:
    """The released NegCLIP TSV: (index column, rows); ``neg_caption``/``neg_image`` are Python list literals."""
    path = Path(path)
    indices, rows = [], []
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh, delimiter="\t")
        need = {"title", "filepath", "neg_caption", "neg_image"}
        if reader.fieldnames is None or not need <= set(reader.fieldnames):
            raise DatasetError(f"{path}: expected columns {sorted(need)}, found {reader.fieldnames}")
        index_column = reader.fieldnames[0]
        for n, rec in enumerate(reader):
            where = f"{path}: record {n}"
            try:
                negs = ast.literal_eval(rec["neg_caption"])
                nbrs = ast.literal_eval(rec["neg_image"])
                index = int(rec[index_column]) if index_column not in need else n
            except (ValueError, SyntaxError) as exc:
                raise DatasetError(f"{where}: unreadable neg_caption/neg_image/index ({exc})") from None
            if not isinstance(negs, list) or not all(isinstance(x, str) for x in negs):
                raise DatasetError(f"{where}: neg_caption is not a list of strings")
            if not isinstance(nbrs, list) or not nbrs or not all(isinstance(x, int) for x in nbrs):
                raise DatasetError(f"{where}: neg_image is not a non-empty list of row indices")
            if not negs:
                raise DatasetError(f"{where}: no negative caption (NegCLIP's file holds only captions with one)")
            indices.append(index)
            rows.append(TsvRow(rec["title"], rec["filepath"], tuple(negs), tuple(nbrs)))
    if not rows:
        raise DatasetError(f"{path}: no records")
    return indices, rows


def resolve_image(images_dir: Path, filepath: str) -> Path:
    """A TSV ``filepath`` (``coco/train2014/COCO_train2014_...jpg``) under ``images_dir``, by its file name."""
    return Path(images_dir) / Path(filepath).name


def tsv_table(path: Path, images_dir: Path, image_size: int) -> tuple[PairTable, FileImages]:
    """Units = TSV rows; ``neg_image`` gives each row's neighbour rows (by the index column)."""
    indices, rows = read_negclip_tsv(path)
    position = {index: n for n, index in enumerate(indices)}
    if len(position) != len(indices):
        raise DatasetError(f"{path}: the index column repeats a value")
    files: dict[str, int] = {}
    row_image, hard = [], []
    width = max(len(r.neighbours) for r in rows)
    for n, r in enumerate(rows):
        row_image.append(files.setdefault(r.filepath, len(files)))
        try:
            nbrs = [position[i] for i in r.neighbours]
        except KeyError as exc:
            raise DatasetError(f"{path}: record {n}: neg_image names row {exc.args[0]}, which the file lacks") from None
        hard.append((nbrs * width)[:width])  # pad a short list by repeating it: each stays equally likely-ish
    table = PairTable(np.asarray(row_image, dtype=np.int64), tuple(r.caption for r in rows),
                      tuple(r.negatives for r in rows), np.arange(len(rows) + 1, dtype=np.int64),
                      np.asarray(hard, dtype=np.int64))
    images = FileImages(tuple(resolve_image(images_dir, f) for f in files), image_size)
    return table, images


# ------------------------------------------------------------------------------------------------------------------
# Encoding, nearest neighbours, validation retrieval
# ------------------------------------------------------------------------------------------------------------------
def pixel_normalizer(model: torch.nn.Module) -> tuple[torch.Tensor, torch.Tensor]:
    """The model's own mean/std (open_clip's preprocess config), so encoding here matches its evaluation."""
    import open_clip

    cfg = open_clip.get_model_preprocess_cfg(model)
    return torch.tensor(cfg["mean"]).view(1, 3, 1, 1), torch.tensor(cfg["std"]).view(1, 3, 1, 1)


@torch.no_grad()
def encode_images(model: torch.nn.Module, images: ImageStore, batch: int = ENCODE_BATCH) -> torch.Tensor:
    """L2-normalised image embeddings (N, D) on the CPU, in batches."""
    device = next(model.parameters()).device
    mean, std = (x.to(device) for x in pixel_normalizer(model))
    out = []
    for start in range(0, len(images), batch):
        pixels = images.get(np.arange(start, min(start + batch, len(images)))).to(device)
        out.append(model.encode_image((pixels.float() / 255.0 - mean) / std, normalize=True).float().cpu())
    return torch.cat(out)


@torch.no_grad()
def encode_texts(model: torch.nn.Module, tokens: torch.Tensor, batch: int = ENCODE_BATCH) -> torch.Tensor:
    from common.zoo import encode_text_unpadded, padding_is_inert

    device = next(model.parameters()).device
    unpadded = padding_is_inert(model)
    out = []
    for chunk in tokens.split(batch):
        chunk = chunk.to(device)
        f = encode_text_unpadded(model, chunk) if unpadded else model.encode_text(chunk, normalize=True)
        out.append(f.float().cpu())
    return torch.cat(out)


def nearest_images(features: torch.Tensor, k: int, eligible: np.ndarray | None = None, chunk: int = 1024) -> np.ndarray:
    """(N, k): for each image, the k most cosine-similar *other* eligible images (stable order on ties)."""
    n = len(features)
    eligible = np.ones(n, dtype=bool) if eligible is None else np.asarray(eligible, dtype=bool)
    if eligible.sum() - 1 < k:
        raise FinetuneError(f"{int(eligible.sum())} eligible images cannot give {k} neighbours each")
    feats = features.double().numpy()
    out = np.empty((n, k), dtype=np.int64)
    for start in range(0, n, chunk):
        sim = feats[start: start + chunk] @ feats.T
        sim[:, ~eligible] = -np.inf
        sim[np.arange(len(sim)), np.arange(start, start + len(sim))] = -np.inf  # never the image itself
        out[start: start + chunk] = np.argsort(-sim, axis=1, kind="stable")[:, :k]
    return out


def recall_at_1(image_features: torch.Tensor, text_features: torch.Tensor, text_image: np.ndarray) -> dict[str, float]:
    """Image->text and text->image R@1 with several captions per image (``text_image[j]``: caption j's image).

    Ties count wrong: a hit needs a correct item strictly above every incorrect one."""
    scores = (image_features @ text_features.T).double().numpy()
    owner = torch.as_tensor(text_image).numpy()
    positive = owner[None, :] == np.arange(len(image_features))[:, None]
    best_pos = np.where(positive, scores, -np.inf).max(axis=1)
    best_neg = np.where(positive, -np.inf, scores).max(axis=1)
    i2t = float(np.mean(best_pos > best_neg))
    t_pos = scores[owner, np.arange(len(owner))]
    t_neg = np.where(positive, -np.inf, scores).max(axis=0)
    t2i = float(np.mean(t_pos > t_neg))
    return {"i2t_recall_at_1": i2t, "t2i_recall_at_1": t2i, "mean_recall_at_1": (i2t + t2i) / 2}


@dataclass
class RetrievalValidator:
    """The COCO-val analog's retrieval (mean R@1 of both directions), encoded in memory: the sweep's criterion."""

    images: ImageStore
    captions: list[list[str]]
    tokens: Callable[[Sequence[str]], torch.Tensor]

    def __post_init__(self):
        self._text_image = np.repeat(np.arange(len(self.captions)), [len(c) for c in self.captions])
        self._tokens = self.tokens([c for caps in self.captions for c in caps])
        self.last: dict[str, float] = {}

    def __call__(self, model: torch.nn.Module) -> float:
        self.last = recall_at_1(encode_images(model, self.images), encode_texts(model, self._tokens), self._text_image)
        return self.last["mean_recall_at_1"]


def val_from_tsv(path: Path, images_dir: Path, image_size: int, tokens) -> RetrievalValidator:
    """Validation retrieval on NegCLIP's ``valid_neg_clip.tsv`` (COCO val captions grouped by image)."""
    _, rows = read_negclip_tsv(path)
    grouped: dict[str, list[str]] = {}
    for r in rows:
        grouped.setdefault(r.filepath, []).append(r.caption)
    files = list(grouped)
    pixels = FileImages(tuple(resolve_image(images_dir, f) for f in files), image_size).get(np.arange(len(files)))
    return RetrievalValidator(ArrayImages(pixels), [grouped[f] for f in files], tokens)


# ------------------------------------------------------------------------------------------------------------------
# The sweep
# ------------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FinetuneParams:
    """``params.yaml aro.<profile>.finetune`` (the keys a run reads)."""

    base: str
    lrs: tuple[float, ...]
    epochs: int = 5
    batch_size: int = 128
    warmup_steps: int = 50
    weight_decay: float = 0.2
    seed: int = 0
    precision: str = "fp32"
    accum: int = 1

    @classmethod
    def from_params(cls, section: dict) -> "FinetuneParams":
        keys = {k: section[k] for k in ("epochs", "batch_size", "warmup_steps", "weight_decay", "seed",
                                        "precision", "accum") if k in section}
        return cls(base=section["base"], lrs=tuple(float(x) for x in section["lrs"]), **keys)

    def trainer_config(self, lr: float, steps: int) -> TrainConfig:
        return TrainConfig(steps=steps, batch_size=self.batch_size, lr=lr, weight_decay=self.weight_decay,
                           warmup_steps=self.warmup_steps, seed=self.seed, precision=self.precision,
                           accum=self.accum)


def _code_digest() -> str:
    """sha256 of the training code and torch's version: a state or run written by other code is never reused."""
    here = Path(__file__).resolve()
    training = here.parents[2] / "common" / "training"
    digest = hashlib.sha256(torch.__version__.encode())
    for path in [here, here.parent / "finetune_data.py", *sorted(training.glob("*.py"))]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def sweep_dir(method: str, key: dict) -> Path:
    from common.paths import cache_root

    digest = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:16]
    return cache_root() / "training" / f"aro-{method}" / digest


def lr_tag(lr: float) -> str:
    return f"lr{lr:.0e}".replace("e-0", "e-")


def run_sweep(method: str, params: FinetuneParams, init: Init, batches: FinetuneBatches,
              validator: RetrievalValidator, out_path: Path, *, world: DistributedContext | None = None,
              provenance: dict | None = None, steps: int | None = None, progress: bool = True,
              checkpoint_every: int = CHECKPOINT_EVERY) -> dict:
    """Train ``method`` at every lr of ``params.lrs``; keep the best by validation retrieval in ``out_path``.

    Returns the final sidecar record plus ``seconds_per_lr`` (wall time, left out of the sidecar: DVC hashes it).
    ``steps`` overrides ``epochs`` (tests). Finished runs and resume states stay under ``sweep_dir`` until the
    weights are written, so a killed sweep resumes where it stopped.
    """
    import time

    world = world or DistributedContext.local("cpu")
    loss = METHODS[method]
    per_epoch = batches.steps_per_epoch(params.batch_size)
    steps = steps or params.epochs * per_epoch
    provenance = {"method": method, "steps_per_epoch": per_epoch, "epochs": steps / per_epoch, **(provenance or {})}
    key = {"method": method, "params": asdict(params), "steps": steps, "provenance": provenance,
           "data": batches.describe(), "init": init.describe(), "world_size": world.world_size,
           "code": _code_digest()}
    folder = sweep_dir(method, key)
    sweep: list[dict] = []
    seconds: dict[str, float] = {}
    for lr in params.lrs:
        run_out = folder / f"{method}-{lr_tag(lr)}.safetensors"
        done = run_out.with_suffix(".json")
        if done.is_file():
            record = json.loads(done.read_text())
            if world.is_main:
                print(f"{method} lr={lr:g}: finished earlier, reusing {run_out}", flush=True)
        else:
            if world.is_main:
                print(f"{method} lr={lr:g}: {steps} steps of {params.batch_size} from {params.base}", flush=True)
            started = time.perf_counter()
            result = train(params.trainer_config(lr, steps), init, batches, loss, run_out, world=world,
                           validate=validator, provenance={**provenance, "validation_detail": None},
                           resume=True, progress=progress, checkpoint_every=checkpoint_every,
                           resume_path=folder / f"{run_out.stem}.resume.pt")
            record = result.record
            record["validation_detail"] = dict(validator.last) if world.is_main else None
            if world.is_main:
                write_json_atomic(done, record)
            seconds[lr_tag(lr)] = round(time.perf_counter() - started, 1)
        score = record["validation"]["best_score"]
        sweep.append({"lr": lr, "validation_mean_recall_at_1": score, "final_loss": record["final_loss"],
                      **{k: v for k, v in (record.get("validation_detail") or {}).items() if k != "mean_recall_at_1"}})
        if world.is_main:
            print(f"{method} lr={lr:g}: validation mean R@1 {score:.4f}, final loss {record['final_loss']:.4f}",
                  flush=True)
    best = max(range(len(sweep)), key=lambda i: (sweep[i]["validation_mean_recall_at_1"], -i))  # first of equals
    chosen = params.lrs[best]
    chosen_out = folder / f"{method}-{lr_tag(chosen)}.safetensors"
    record = json.loads(chosen_out.with_suffix(".json").read_text()) if world.is_main else {}
    record.pop("validation_detail", None)
    record.update({"chosen_lr": chosen, "lr_sweep": sweep,
                   "selection": "the lr with the highest validation mean R@1 (image->text, text->image); "
                                "the first in params order on a tie"})
    if world.is_main:
        out_path = Path(out_path)
        out_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = out_path.with_name(f".{out_path.name}.tmp")
        shutil.copyfile(chosen_out, tmp)
        tmp.replace(out_path)
        write_json_atomic(out_path.with_suffix(".json"), record)
        shutil.rmtree(folder, ignore_errors=True)
    return {**record, "seconds_per_lr": seconds}


# ------------------------------------------------------------------------------------------------------------------
# Entry points
# ------------------------------------------------------------------------------------------------------------------
def _tokens_for(arch: str, memo: bool) -> TokenCache:
    import open_clip

    from common.zoo import register_local_configs

    register_local_configs()
    return TokenCache(open_clip.get_tokenizer(arch), memo=memo)


def compute_neighbours(set_dir: Path, base: str, k: int, out_dir: Path) -> dict:
    """``neighbours.npy`` (N, k): each training image's k nearest eligible training images by the base model."""
    from common.zoo import create_model

    split = FinetuneSplit.load(set_dir, "train")
    if split.negatives is None:
        raise FinetuneError(f"{Path(set_dir) / 'train'}: no negatives.json")
    eligible = np.array([any(bool(n) for n in negs) for negs in split.negatives])
    served = create_model(base)
    features = encode_images(served.model, ArrayImages.from_nhwc(split.images))
    neighbours = nearest_images(features, k, eligible)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    from common.io import atomic_path

    with atomic_path(out_dir / "neighbours.npy") as tmp:
        with open(tmp, "wb") as fh:
            np.save(fh, neighbours)
    sims = (features[:, None, :] * features[torch.from_numpy(neighbours)]).sum(-1)
    info = {"base": base, "k": k, "images": len(neighbours), "eligible_images": int(eligible.sum()),
            "train_images_sha256": sha256_file(Path(set_dir) / "train" / "images.npy"),
            "neighbours_sha256": sha256_file(out_dir / "neighbours.npy"),
            "mean_cosine_by_rank": [round(float(x), 4) for x in sims.mean(0)]}
    write_json_atomic(out_dir / "neighbours.json", info)
    return info


def _cmd_neighbours(args) -> int:
    from common import reproducible
    from common.params import stage_params

    reproducible.reexec_pinned()
    reproducible.fix_threads()
    section = stage_params(NEIGHBOURS_STAGE)["aro"]["mini"]["finetune"]
    info = compute_neighbours(args.set, section["base"], section["nearest_images"], args.out)
    print(json.dumps(info, indent=2))
    return 0


def _cmd_run(args) -> int:
    from common import reproducible
    from common.params import stage_params
    from common.paths import build_root, data_root
    from common.zoo import get_spec

    if args.device == "cpu":
        reproducible.reexec_pinned()  # before any tensor work
    from common.params import load_params

    params = stage_params(STAGE.format(profile=load_params()["profile"], method=args.method))
    profile = params["profile"]
    section = params["aro"][profile]["finetune"]
    fp = FinetuneParams.from_params(section)
    spec = get_spec(fp.base)
    world = init_from_env(args.device)
    if args.device == "cpu":
        reproducible.fix_threads()
    try:
        if profile == "mini":
            set_dir = Path(args.set or build_root() / "mini" / "aro" / "finetune")
            nbr_dir = Path(args.neighbours or build_root() / "mini" / "aro" / "neighbours")
            split = FinetuneSplit.load(set_dir, "train")
            table = mini_table(split, np.load(nbr_dir / "neighbours.npy", allow_pickle=False))
            images: ImageStore = ArrayImages.from_nhwc(split.images)
            tokens = _tokens_for(spec.arch, memo=True)
            val = FinetuneSplit.load(set_dir, "val")
            validator = RetrievalValidator(ArrayImages.from_nhwc(val.images), val.captions, tokens)
            data_hashes = {"finetune_manifest_sha256": sha256_file(set_dir / "manifest.json"),
                           "neighbours_sha256": sha256_file(nbr_dir / "neighbours.npy")}
        else:
            size = int(section.get("image_size", 224))
            train_tsv = Path(args.train_tsv or data_root() / "negclip" / "train_neg_clip.tsv")
            val_tsv = Path(args.val_tsv or data_root() / "negclip" / "valid_neg_clip.tsv")
            table, images = tsv_table(train_tsv, Path(args.train_images or data_root() / "coco" / "train2014" /
                                                      "train2014"), size)
            tokens = _tokens_for(spec.arch, memo=False)
            validator = val_from_tsv(val_tsv, Path(args.val_images or data_root() / "coco" / "val2014" / "val2014"),
                                     size, tokens)
            data_hashes = {"train_tsv_sha256": sha256_file(train_tsv), "val_tsv_sha256": sha256_file(val_tsv)}
        batches = FinetuneBatches(table, images, tokens, hard=args.method == "negclip")
        out = Path(args.out) if args.out else _zoo_out(args.method, profile)
        provenance = {"profile": profile, **data_hashes,
                      **(reproducible.describe() if args.device == "cpu" else {})}
        record = run_sweep(args.method, fp, FromZoo(fp.base), batches, validator, out, world=world,
                           provenance=provenance, steps=args.steps)
    finally:
        shutdown(world)
    if world.is_main:
        log = out.parent.parent / "logs" / f"finetune-{args.method}.json"
        write_json_atomic(log, {"chosen_lr": record["chosen_lr"], "lr_sweep": record["lr_sweep"],
                                "seconds_per_lr": record["seconds_per_lr"], "machine": reproducible.machine()})
        print(json.dumps({k: record[k] for k in ("chosen_lr", "lr_sweep", "seconds_per_lr")}, indent=2))
        print(f"weights: {out}; log (wall times, not a DVC output): {log}")
    return 0


ZOO_NAMES = {"negclip": "aro/mini-negclip", "clip-ft": "aro/mini-clip-ft"}


def _zoo_out(method: str, profile: str) -> Path:
    """Where the zoo expects the run's weights (``papers/aro/models.toml``); full profile: beside the mini ones."""
    from common.paths import build_root
    from common.zoo import get_spec

    if profile == "mini":
        path = get_spec(ZOO_NAMES[method]).checkpoint_path()
        assert path is not None
        return path
    return build_root() / "full" / "aro" / "models" / f"{method}.safetensors"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m papers.aro.finetune", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("neighbours", help="nearest training images by the base model (mini profile)")
    p.add_argument("--set", type=Path, required=True, help="the fine-tuning set (papers.aro.finetune_data --out)")
    p.add_argument("--out", type=Path, required=True)
    p.set_defaults(func=_cmd_neighbours)
    p = sub.add_parser("run", help="fine-tune the base model: NegCLIP or CLIP-FT, with the lr sweep")
    p.add_argument("method", choices=sorted(METHODS))
    p.add_argument("--device", default="cpu", help="cpu (mini default) or cuda (one GPU per torchrun rank)")
    p.add_argument("--out", default=None, help="default: the zoo's checkpoint path of aro/mini-<method> (mini)")
    p.add_argument("--set", default=None, help="mini: the fine-tuning set (default build/mini/aro/finetune)")
    p.add_argument("--neighbours", default=None, help="mini: the neighbours folder (default build/mini/aro/neighbours)")
    p.add_argument("--train-tsv", default=None, help="full: default <data>/negclip/train_neg_clip.tsv")
    p.add_argument("--val-tsv", default=None, help="full: default <data>/negclip/valid_neg_clip.tsv")
    p.add_argument("--train-images", default=None, help="full: default <data>/coco/train2014/train2014")
    p.add_argument("--val-images", default=None, help="full: default <data>/coco/val2014/val2014")
    p.add_argument("--steps", type=int, default=None, help="steps per lr instead of the params' epochs (smoke runs)")
    p.set_defaults(func=_cmd_run)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
