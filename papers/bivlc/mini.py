"""BiVLC (Miranda et al.) in the mini profile: the bidirectional benchmark rendered from the world, its TROHN-Text and
TROHN-Img analogs, the three fine-tunes (CLIP_COCO, TROHN-Text, TROHN-Img) and the natural-vs-synthetic detectors.

BiVLC adds to each SugarCrepe example (image I0, caption C0, negative caption C1) a negative image I1 generated from
C1. Here I1 is C1's scene-graph edit rendered (``common.miniworld.edits``): true of C1 by construction, drawn in the
``negative_style`` (default "synthetic": flat colours, hard edges, no sensor noise), so the detectors of Table 5 have
a real cue, as SDXL's images give BiVLC's.

Top to bottom:

1. ``set``: ``instances_per_category`` instances per SugarCrepe category (own random stream; held-out colour-shape
   pairs may appear), ``images/pos_*.png`` (natural) and ``images/neg_*.png`` (the negative style), ``manifest.json``.
   BiVLC's step 4 removes instances whose negative image also shows the original caption ("specially problematic for
   the Add category, for which by definition, the generated image also follows the original caption"). In the world
   that is every add_obj and add_att instance, by truth: they are kept, marked ``ambiguous``, scored apart (Table 4's
   Add column) and left out of the main scores.
2. ``train-set``: ``train_images`` training scenes (no held-out pairs), ``captions_per_image`` true captions each,
   each caption with one negative (category drawn uniformly among those that apply) and its rendered negative image.
   The TROHN-Text analog is every (image, caption, negative caption); the TROHN-Img analog keeps the pairs that the
   selection pipeline (``papers.bivlc.selection``: plausibility and grammar quantile filters, form filter, dedup,
   adversarial refinement, with the world's analogs of Vera and the CoLA model) keeps, with their negative images;
   the COCO analog is the images with their captions. The last ``val_fraction`` of the scenes is the validation split.
3. ``run <name>``: the base fine-tuned by the shared trainer, all parameters, same steps, optimiser and seed for every
   run, the best validation in-batch accuracy of ``validations`` evaluations kept (the authors keep the best of 10
   epochs): CLIP_COCO (``ClipLoss``, ``batch_size`` pairs), TROHN-Text (``TrohnTextLoss``, half as many images, each
   with its caption and negative caption) and TROHN-Img (``TrohnImgLoss``, half as many pairs, each with its negative
   pair): every step sees ``batch_size`` texts, as the paper's 400.
4. ``detectors``: a linear head on a frozen tower (``DetectorLoss``), on the base (CLIPDet) and on the TROHN-Img run
   (CLIPTROHN-Img/Det), trained on the TROHN-Img analog's training split (label 1 = negative image / caption): 1
   epoch for images, 10 for texts, as the authors.

Stages (``papers/bivlc/dvc.yaml``): ``mini-test-set``, ``mini-train-set``, ``mini-finetune@<run>``,
``mini-detectors``; the tables are ``papers.bivlc.mini_tables``.
"""
from __future__ import annotations

import argparse
import functools
import json
import random
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np
import torch

from common.errors import WorkspaceError
from common.training.rendered import CaptionBatches, caption_tokens, pixels, refuse_same_tokens
from common.training.recipe import RunParams
from common.training.legacy import resume_path
from common.zoo.trained import tokenizer_for
from common.io import atomic_path, output_group, sha256_file, write_json_atomic
from common.miniworld import VERSION
from common.miniworld.build import stream
from common.miniworld.claims import Claim, sample_claim
from common.miniworld.edits import ADD_EDITS, negative_scene
from common.miniworld.negatives import EDIT_TYPES
from common.miniworld.render import NATURAL, STYLES, render
from common.miniworld.scene import Scene, contains_heldout, sample_scene
from common.training.rendered import LabelledBatches, PairedImageBatches
from common.tasks import DatasetError, GroupItem
from common.training import ClipLoss, FromCheckpoint, FromZoo, Init, TrainConfig, TrainResult, train
from papers.bivlc.losses import DetectorLoss, TrohnImgLoss, TrohnTextLoss

TEST_STREAM = "test-bivlc"
TRAIN_STREAM = "bivlc-trohn-train"
TEST_STAGE = "papers/bivlc/dvc.yaml:mini-test-set"
TRAIN_SET_STAGE = "papers/bivlc/dvc.yaml:mini-train-set"
RUN_STAGE = "papers/bivlc/dvc.yaml:mini-finetune@{run}"
DETECTOR_STAGE = "papers/bivlc/dvc.yaml:mini-detectors"
CHECKPOINT_EVERY = 50
CATEGORIES: tuple[str, ...] = ("replace_obj", "replace_att", "replace_rel", "swap_obj", "swap_att", "add_obj",
                               "add_att")
"""SugarCrepe's seven categories (BiVLC's type and subtype), in the paper's column order."""
MAX_DRAWS = 200


class BivlcMiniError(WorkspaceError):
    """An input of the mini BiVLC runs that cannot be used as given (the message names the file)."""


def _read_json(path: Path):
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BivlcMiniError(f"{path}: missing (run the stage that builds it)") from None
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}: not valid JSON ({exc})") from None


def type_of(category: str) -> str:
    """BiVLC's type of a category: replace, swap or add."""
    return category.split("_")[0]


@dataclass(frozen=True)
class Instance:
    """One BiVLC-style instance: the scene, its caption, the negative caption and the scene that shows it."""

    category: str
    scene: Scene
    claim: Claim
    negative_claim: Claim
    negative_scene: Scene

    @property
    def caption(self) -> str:
        return self.claim.text()

    @property
    def negative(self) -> str:
        return self.negative_claim.text()


def draw_instance(rng: random.Random, category: str, *, scene: Scene | None = None,
                  allow_heldout: bool = True) -> Instance | None:
    """One instance of ``category`` (a new scene unless ``scene``), or None when this draw offers no such edit."""
    scene = scene or sample_scene(rng, allow_heldout=allow_heldout)
    claim = sample_claim(rng, scene)
    negative = EDIT_TYPES[category](scene, claim, rng)
    if negative is None:
        return None
    edited = negative_scene(scene, claim, negative, rng, allow_positive=category in ADD_EDITS)
    if edited is None:
        return None
    return Instance(category, scene, claim, negative, edited)


# ------------------------------------------------------------------------------------------------------------------
# 1. The benchmark
# ------------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TestSetConfig:
    instances_per_category: int = 200
    image_size: int = 48
    negative_style: str = "synthetic"
    seed: int = 0

    def __post_init__(self):
        if self.negative_style not in STYLES:
            raise BivlcMiniError(f"negative_style {self.negative_style!r}: not one of {sorted(STYLES)}")


def build_test_set(config: TestSetConfig, out_dir: Path) -> dict:
    """``images/{pos,neg}_*.png`` and ``manifest.json`` (the instances, with counts), written as one output group."""
    rng = stream(config.seed, TEST_STREAM)
    style = STYLES[config.negative_style]
    records, failed = [], Counter()
    with output_group(Path(out_dir)) as staging:
        for round_ in range(config.instances_per_category):
            for category in CATEGORIES:
                for _ in range(MAX_DRAWS):
                    found = draw_instance(rng, category)
                    if found is not None:
                        break
                    failed[category] += 1
                else:  # pragma: no cover - the world always offers every edit within a few draws
                    raise BivlcMiniError(f"{category}: no instance in {MAX_DRAWS} draws")
                index = len(records)
                names = (f"pos_{index:06d}.png", f"neg_{index:06d}.png")
                for name, scene, how in zip(names, (found.scene, found.negative_scene), (NATURAL, style)):
                    with atomic_path(staging / "images" / name) as tmp:
                        render(scene, config.image_size, how, seed=index).save(tmp, format="PNG")
                records.append({"id": f"{category}/{round_}", "category": category, "type": type_of(category),
                                "caption": found.caption, "negative_caption": found.negative,
                                "image": names[0], "negative_image": names[1],
                                "ambiguous": category in ADD_EDITS,
                                "heldout_combination": contains_heldout(found.scene)})
        manifest = {"kind": "bivlc-instances", "profile": "mini", "world_version": VERSION, "stream": TEST_STREAM,
                    "config": asdict(config),
                    "counts": dict(Counter(r["category"] for r in records)),
                    "ambiguous": sum(r["ambiguous"] for r in records),
                    "draws_without_instance": dict(sorted(failed.items())),
                    "ambiguous_rule": "add_obj / add_att: the negative scene also shows the caption (BiVLC's step 4 "
                                      "would remove them); scored apart",
                    "instances": records}
        write_json_atomic(staging / "manifest.json", manifest, indent=1)
    return {k: v for k, v in manifest.items() if k != "instances"}


TEST_FIELDS = ("id", "category", "caption", "negative_caption", "image", "negative_image")


def load_test_items(root: Path) -> tuple[list[GroupItem], list[GroupItem]]:
    """(main items, ambiguous items) as ``GroupItem``s grouped by category; a bad record is a ``DatasetError``
    naming the file and the record."""
    root = Path(root)
    path = root / "manifest.json"
    manifest = _read_json(path)
    records = manifest.get("instances") if isinstance(manifest, dict) else None
    if not isinstance(records, list) or not records:
        raise DatasetError(f"{path}: no 'instances' list (rebuild the test set: the mini-test-set stage)")
    main, ambiguous, seen = [], [], set()
    for n, record in enumerate(records):
        where = f"{path}: record {n}"
        if not isinstance(record, dict) or any(not isinstance(record.get(f), str) or not record[f]
                                               for f in TEST_FIELDS):
            raise DatasetError(f"{where}: needs non-empty {list(TEST_FIELDS)}")
        if record["category"] not in CATEGORIES:
            raise DatasetError(f"{where}: category {record['category']!r} is not one of {list(CATEGORIES)}")
        if record["caption"] == record["negative_caption"] or record["image"] == record["negative_image"]:
            raise DatasetError(f"{where}: the negative caption or image repeats the positive")
        if record["id"] in seen:
            raise DatasetError(f"{where}: id {record['id']!r} repeats an earlier record")
        seen.add(record["id"])
        images = tuple(root / "images" / record[f] for f in ("image", "negative_image"))
        for image in images:
            if not image.is_file():
                raise DatasetError(f"{where}: image {image} is missing")
        item = GroupItem(record["id"], record["category"], images, (record["caption"], record["negative_caption"]),
                         where)
        (ambiguous if record.get("ambiguous") else main).append(item)
    return main, ambiguous


# ------------------------------------------------------------------------------------------------------------------
# 2. The training sets (COCO, TROHN-Text and TROHN-Img analogs)
# ------------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TrainSetConfig:
    train_images: int = 3000
    captions_per_image: int = 3
    image_size: int = 48
    negative_style: str = "synthetic"
    val_fraction: float = 0.2
    seed: int = 0

    def __post_init__(self):
        if self.negative_style not in STYLES:
            raise BivlcMiniError(f"negative_style {self.negative_style!r}: not one of {sorted(STYLES)}")
        if not 0.0 < self.val_fraction < 1.0:
            raise BivlcMiniError(f"val_fraction {self.val_fraction}: must lie strictly between 0 and 1")

    @property
    def n_train(self) -> int:
        """Scenes of the training split (the first ones; the rest validate)."""
        return int(round(self.train_images * (1.0 - self.val_fraction)))


@dataclass(frozen=True)
class TrainSet:
    """``images`` (N, H, W, 3) and ``negative_images`` (N, P, H, W, 3) uint8; per scene P captions, their negatives
    and categories; ``kept``: the (scene, caption) pairs of the TROHN-Img analog; ``n_train``: scenes before the
    validation split."""

    images: np.ndarray
    negative_images: np.ndarray
    captions: list[list[str]]
    negatives: list[list[str]]
    categories: list[list[str]]
    kept: list[tuple[int, int]]
    n_train: int

    @classmethod
    def load(cls, root: Path) -> "TrainSet":
        root = Path(root)
        try:
            images = np.load(root / "images.npy", allow_pickle=False)
            negative_images = np.load(root / "negative_images.npy", allow_pickle=False)
        except FileNotFoundError as exc:
            raise BivlcMiniError(f"{exc.filename}: no training set here; run the mini-train-set stage "
                                 "(`python -m papers.bivlc.mini train-set`)") from None
        path = root / "rows.json"
        rows = _read_json(path)
        if not isinstance(rows, dict) or any(k not in rows for k in ("captions", "negatives", "categories", "kept",
                                                                      "n_train")):
            raise DatasetError(f"{path}: needs captions, negatives, categories, kept and n_train")
        n, p = negative_images.shape[:2]
        for field in ("captions", "negatives", "categories"):
            if len(rows[field]) != n or any(len(r) != p for r in rows[field]):
                raise DatasetError(f"{path}: {field} must hold {p} entries for each of the {n} scenes")
        kept = [tuple(k) for k in rows["kept"]]
        bad = [k for k in kept if not (0 <= k[0] < n and 0 <= k[1] < p)]
        if bad:
            raise DatasetError(f"{path}: kept pair {list(bad[0])} is outside {n} scenes x {p} captions")
        return cls(images, negative_images, rows["captions"], rows["negatives"], rows["categories"], kept,
                   int(rows["n_train"]))


def render_train_set(config: TrainSetConfig) -> TrainSet:
    """Scenes, captions, negatives and negative images (``kept`` empty: ``build_train_set`` selects)."""
    rng = stream(config.seed, TRAIN_STREAM)
    style = STYLES[config.negative_style]
    n, p, s = config.train_images, config.captions_per_image, config.image_size
    images = np.empty((n, s, s, 3), dtype=np.uint8)
    negative_images = np.empty((n, p, s, s, 3), dtype=np.uint8)
    captions, negatives, categories = [], [], []
    for i in range(n):
        scene = sample_scene(rng, allow_heldout=False)
        seed = rng.randrange(2**31)
        images[i] = np.asarray(render(scene, s, NATURAL, seed=seed))
        row_c, row_n, row_k = [], [], []
        for j in range(p):
            for _ in range(MAX_DRAWS):
                found = draw_instance(rng, rng.choice(CATEGORIES), scene=scene)
                if found is not None:
                    break
            else:  # pragma: no cover
                raise BivlcMiniError(f"training scene {i}: no negative in {MAX_DRAWS} draws")
            negative_images[i, j] = np.asarray(render(found.negative_scene, s, style, seed=seed + 1 + j))
            row_c.append(found.caption)
            row_n.append(found.negative)
            row_k.append(found.category)
        captions.append(row_c)
        negatives.append(row_n)
        categories.append(row_k)
    return TrainSet(images, negative_images, captions, negatives, categories, [], config.n_train)


def select_trohn_img(data: TrainSet, grammar_texts: Sequence[str], seed: int, selection: Mapping) -> tuple[list, dict]:
    """The TROHN-Img analog: the pairs ``papers.bivlc.selection`` keeps, with the world's scorers (the grammar
    analog's n-gram model fitted on ``grammar_texts``); returns (kept (scene, caption) pairs, per-step counts)."""
    from papers.bivlc import selection as sel

    pairs = [sel.CaptionPair(f"{i}/{j}", data.categories[i][j], data.captions[i][j], data.negatives[i][j])
             for i in range(len(data.captions)) for j in range(len(data.captions[i]))]
    result = sel.select_negatives(pairs, sel.WorldPriorPlausibility(), sel.NgramGrammar.fit(grammar_texts),
                                  quantile=selection["quantile"], min_chars=selection["min_chars"],
                                  bins=selection["bins"], seed=seed)
    kept = sorted(tuple(int(x) for x in pid.split("/")) for pid in result.kept_ids)
    return kept, result.describe()


def build_train_set(config: TrainSetConfig, out_dir: Path, grammar_texts: Sequence[str], selection: Mapping,
                    tokenize: Callable[[Sequence[str]], torch.Tensor] | None = None) -> dict:
    """Write ``images.npy``, ``negative_images.npy``, ``rows.json`` and ``manifest.json`` into ``out_dir``."""
    data = render_train_set(config)
    if tokenize is not None:  # a negative the tokenizer cannot tell from its caption would push a text from itself
        refuse_same_tokens(caption_tokens(tokenize, data.captions), caption_tokens(tokenize, data.negatives),
                           data.captions, "negative caption", "the mini TROHN training set")
    kept, selection_counts = select_trohn_img(data, grammar_texts, config.seed, selection)
    if not kept:
        raise BivlcMiniError("the selection kept no pair: nothing to train TROHN-Img on")
    rows = {"captions": data.captions, "negatives": data.negatives, "categories": data.categories,
            "kept": [list(k) for k in kept], "n_train": data.n_train}
    with output_group(Path(out_dir)) as staging:
        for name, array in (("images.npy", data.images), ("negative_images.npy", data.negative_images)):
            with atomic_path(staging / name) as tmp:
                with open(tmp, "wb") as fh:
                    np.save(fh, array)
        write_json_atomic(staging / "rows.json", rows, indent=None)
        counts = {"scenes": len(data.captions), "train_scenes": data.n_train,
                  "trohn_text_pairs": sum(len(c) for c in data.captions),
                  "trohn_img_pairs": len(kept),
                  "trohn_img_train_pairs": sum(i < data.n_train for i, _ in kept),
                  "by_category": dict(Counter(c for row in data.categories for c in row)),
                  "kept_by_category": dict(Counter(data.categories[i][j] for i, j in kept))}
        manifest = {"kind": "bivlc-trohn", "profile": "mini", "world_version": VERSION, "stream": TRAIN_STREAM,
                    "config": asdict(config), "selection": {"params": dict(selection), "steps": selection_counts},
                    "counts": counts,
                    "sha256": {f: sha256_file(staging / f) for f in ("images.npy", "negative_images.npy",
                                                                      "rows.json")}}
        write_json_atomic(staging / "manifest.json", manifest)
    return manifest


# ------------------------------------------------------------------------------------------------------------------
# 3. Runs
# ------------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RunSpec:
    label: str
    loss: type
    data: str
    """'coco' (images, captions), 'trohn-text' (+ negative captions) or 'trohn-img' (kept pairs + negative pairs)."""
    samples_per_text: int
    """Texts per sample: the batch holds ``batch_size // samples_per_text`` samples, so every step has
    ``batch_size`` texts."""


RUNS: dict[str, RunSpec] = {
    "clip-coco": RunSpec("CLIP_COCO (in-batch negatives only)", ClipLoss, "coco", 1),
    "trohn-text": RunSpec("CLIP_TROHN-Text (negative captions)", TrohnTextLoss, "trohn-text", 2),
    "trohn-img": RunSpec("CLIP_TROHN-Img (negative captions and images)", TrohnImgLoss, "trohn-img", 2),
}


def _split_tensors(data: TrainSet, kind: str, tokenize, scenes: slice) -> dict[str, torch.Tensor]:
    """images (M, k_img, 3, H, W) and texts (M, k_txt, P or 1, L) of one split, per data kind."""
    index = np.arange(len(data.captions))[scenes]
    if kind in ("coco", "trohn-text"):
        captions = caption_tokens(tokenize, [data.captions[i] for i in index])
        images = pixels(data.images[index])
        extras = [caption_tokens(tokenize, [data.negatives[i] for i in index])] if kind == "trohn-text" else []
        return {"images": images, "captions": captions, "extras": extras, "extra_images": []}
    pairs = [(i, j) for i, j in data.kept if index[0] <= i <= index[-1]]
    if not pairs:
        raise BivlcMiniError(f"no TROHN-Img pair among scenes {index[0]}..{index[-1]}")
    rows, cols = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    return {"images": pixels(data.images[rows]),
            "captions": caption_tokens(tokenize, [[data.captions[i][j]] for i, j in pairs]),
            "extras": [caption_tokens(tokenize, [[data.negatives[i][j]] for i, j in pairs])],
            "extra_images": [pixels(data.negative_images[rows, cols])]}


def batches_for(data: TrainSet, run: str, tokenize, scenes: slice = slice(None)) -> CaptionBatches:
    """The run's batch source over ``scenes`` (default all: the caller slices the training split)."""
    spec = RUNS[run]
    parts = _split_tensors(data, spec.data, tokenize, scenes)
    fields = {"data": spec.data, "texts": ["caption", "negative"][:1 + len(parts["extras"])],
              "images": ["image", "negative image"][:1 + len(parts["extra_images"])]}
    if parts["extra_images"]:
        return PairedImageBatches(parts["images"], parts["captions"], parts["extra_images"], parts["extras"],
                                  f"bivlc-mini-{spec.data}", fields)
    return CaptionBatches(parts["images"], parts["captions"], parts["extras"], f"bivlc-mini-{spec.data}", fields)


class InBatchAccuracy:
    """The authors' model selection: in-batch accuracy on the validation split. Validation samples in fixed chunks
    of the run's batch; each image's top-1 among the chunk's texts (its segments laid out as in training: captions,
    then negative captions; images, then negative images) must be its own text. Ties count wrong."""

    def __init__(self, batches: CaptionBatches, samples: int, mean: torch.Tensor, std: torch.Tensor):
        self.batches, self.samples, self.mean, self.std = batches, samples, mean, std

    def __call__(self, model) -> float:
        from common.zoo import encode_text_unpadded, padding_is_inert

        b = self.batches
        n = len(b.images)
        correct = total = 0
        for start in range(0, n - self.samples + 1, self.samples):
            rows = slice(start, start + self.samples)
            images = [b.images[rows], *(e[rows] for e in getattr(b, "extra_images", ()))]
            texts = [b.captions[rows, 0], *(e[rows, 0] for e in b.extras)]
            pixels_ = (torch.cat(images).float() / 255.0 - self.mean) / self.std
            img = model.encode_image(pixels_, normalize=True)
            tok = torch.cat(texts)
            txt = encode_text_unpadded(model, tok) if padding_is_inert(model) else model.encode_text(tok, normalize=True)
            sim = img @ txt.T
            own = sim[torch.arange(len(img)), torch.arange(len(img))]
            others = sim.clone()
            others[torch.arange(len(img)), torch.arange(len(img))] = -torch.inf
            correct += int((own > others.max(dim=1).values).sum())
            total += len(img)
        if total == 0:
            raise BivlcMiniError(f"validation split of {n} samples cannot fill one chunk of {self.samples}")
        return correct / total


def _code() -> list[Path]:
    here = Path(__file__)
    return [here, here.with_name("losses.py"), Path(__file__).parents[2] / "common" / "segment_batches.py"]


def train_run(run: str, data: TrainSet, params: RunParams, validations: int, out_path: Path, *,
              init: Init | None = None, tokenize=None, provenance: Mapping | None = None,
              checkpoint_every: int = CHECKPOINT_EVERY, progress: bool = False) -> TrainResult:
    """Fine-tune ``init`` (default: the zoo's ``params.base``) as ``run``; the weights with the best validation
    in-batch accuracy are written beside ``out_path`` (``<stem>.best.safetensors``)."""
    from common.training.model_init import normalizer

    spec = RUNS[run]
    init = init or FromZoo(params.base)
    if tokenize is None:
        tokenize = tokenizer_for(init.describe()["arch"])
    samples = params.batch_size // spec.samples_per_text
    train_batches = batches_for(data, run, tokenize, slice(0, data.n_train))
    val_batches = batches_for(data, run, tokenize, slice(data.n_train, None))
    if len(train_batches.images) < samples:
        raise BivlcMiniError(f"{run}: {len(train_batches.images)} training samples cannot fill a batch of {samples}")
    mean, std = normalizer(init.build().transform)
    validate = InBatchAccuracy(val_batches, samples, mean, std)
    config = TrainConfig(steps=params.steps, batch_size=samples, lr=float(params.lr), warmup_steps=params.warmup_steps,
                         weight_decay=params.weight_decay, seed=params.seed,
                         validate_every=max(1, params.steps // validations))
    provenance = {"run": run, "samples_per_step": samples, **(provenance or {})}
    key = {"run": run, "params": asdict(params), "validations": validations, "init": init.describe(),
           "data": train_batches.describe(), "provenance": provenance}
    return train(config, init, train_batches, spec.loss, out_path, validate=validate, provenance=provenance,
                 resume=True, progress=progress, checkpoint_every=checkpoint_every,
                 resume_path=resume_path(f"bivlc-{run}", key, _code()))


# ------------------------------------------------------------------------------------------------------------------
# 4. Detectors
# ------------------------------------------------------------------------------------------------------------------
DETECTOR_ENCODERS: tuple[str, ...] = ("clip", "trohn-img")
"""CLIPDet (the base's towers) and CLIPTROHN-Img/Det (the TROHN-Img run's)."""
TOWERS: tuple[str, ...] = ("image", "text")
DETECTOR_EPOCHS = {"image": 1, "text": 10}
"""The authors' epochs: 1 for the image detector, 10 for the text detector."""


@dataclass(frozen=True)
class DetectorParams:
    batch_size: int = 128
    lr: float = 1e-3
    seed: int = 0


def detector_batches(data: TrainSet, tower: str, tokenize) -> LabelledBatches:
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


def embed_dim_of(arch: str) -> int:
    """The joint embedding's width: the detector head's input."""
    import open_clip

    from common.zoo import register_local_configs

    register_local_configs()
    config = open_clip.get_model_config(arch)
    if config is None:
        raise BivlcMiniError(f"{arch}: no open_clip model config")
    return int(config["embed_dim"])


def train_detector(init: Init, tower: str, data: TrainSet, params: DetectorParams, out_path: Path, *,
                   tokenize=None, provenance: Mapping | None = None, progress: bool = False) -> TrainResult:
    """A linear head on ``init``'s frozen ``tower`` (``DetectorLoss``), ``DETECTOR_EPOCHS[tower]`` epochs, no weight
    decay (AdamW with weight decay 0 is the authors' Adam) and no warmup; the shared trainer's cosine decay stays (the
    authors keep the lr constant), and the final head is kept (the trainer's best-by-validation covers the model's
    weights, not a loss's head)."""
    arch = init.describe()["arch"]
    tokenize = tokenize or tokenizer_for(arch)
    batches = detector_batches(data, tower, tokenize)
    steps = DETECTOR_EPOCHS[tower] * batches.steps_per_epoch(params.batch_size)
    config = TrainConfig(steps=steps, batch_size=params.batch_size, lr=float(params.lr), warmup_steps=0,
                         weight_decay=0.0, seed=params.seed)
    loss = functools.partial(DetectorLoss, embed_dim=embed_dim_of(arch), tower=tower)
    return train(config, init, batches, loss, out_path, provenance={"tower": tower, **(provenance or {})},
                 resume=False, progress=progress)


# ------------------------------------------------------------------------------------------------------------------
# Entry points
# ------------------------------------------------------------------------------------------------------------------
def default_dir() -> Path:
    from common.paths import build_root

    return build_root() / "mini" / "bivlc"


def _section(stage: str) -> tuple[dict, dict]:
    from common.params import stage_params

    params = stage_params(stage)
    return params, params["bivlc"]["mini"]


def _cmd_set(args) -> int:
    params, section = _section(TEST_STAGE)
    config = TestSetConfig(section["test_instances_per_category"], params["mini"]["world"]["image_size"],
                           section["negative_style"], section["seed"])
    print(json.dumps(build_test_set(config, Path(args.out or default_dir() / "test")), indent=2))
    return 0


def world_captions(world_dir: Path, n_images: int) -> list[str]:
    """The first ``n_images`` images' captions of the world's training set: the grammar analog's corpus."""
    captions = _read_json(Path(world_dir) / "captions.json")
    return [c for row in captions[:n_images] for c in row]


def _cmd_train_set(args) -> int:
    params, section = _section(TRAIN_SET_STAGE)
    config = TrainSetConfig(section["train_images"], section["captions_per_image"],
                            params["mini"]["world"]["image_size"], section["negative_style"], section["val_fraction"],
                            section["seed"])
    from common.paths import build_root
    from common.zoo import get_spec

    corpus = world_captions(Path(args.world or build_root() / "mini" / "world" / "train"),
                            section["selection"]["grammar_corpus_images"])
    manifest = build_train_set(config, Path(args.out or default_dir() / "train"), corpus, section["selection"],
                               tokenizer_for(get_spec(section["base"]).arch))
    print(json.dumps({"counts": manifest["counts"], "selection": manifest["selection"]["steps"]}, indent=2))
    return 0


def _cmd_run(args) -> int:
    from common import reproducible

    reproducible.reexec_pinned()  # before any tensor work: bit-identical weights on any x86-64 CPU
    reproducible.fix_threads()
    _, section = _section(RUN_STAGE.format(run=args.run))
    params = RunParams.from_params(section)
    set_dir = Path(args.set or default_dir() / "train")
    out = Path(args.out or default_dir() / "models" / f"{args.run}.safetensors")
    started = time.perf_counter()
    result = train_run(args.run, TrainSet.load(set_dir), params, section["validations"], out, progress=True,
                       provenance={"set_manifest_sha256": sha256_file(set_dir / "manifest.json"),
                                   **reproducible.describe()})
    seconds = round(time.perf_counter() - started, 1)
    log = default_dir() / "logs" / f"{args.run}.json"
    write_json_atomic(log, {"run": args.run, "seconds": seconds, "train_seconds": result.train_seconds,
                            "best_step": result.best_step, "best_validation": result.best_score,
                            "validation": [list(v) for v in result.validation], "final_loss": result.final_loss,
                            "machine": reproducible.machine()})
    print(f"{args.run}: final loss {result.final_loss:.4f}; best validation in-batch accuracy {result.best_score:.4f} "
          f"at step {result.best_step}; {seconds} s; weights: {result.best_weights}; log: {log}")
    return 0


def detector_init(encoder: str, base: str, models_dir: Path) -> Init:
    """The frozen encoder of a detector: the base (CLIPDet) or the TROHN-Img run's best weights."""
    if encoder == "clip":
        return FromZoo(base)
    from common.zoo import get_spec

    path = Path(models_dir) / f"{encoder}.best.safetensors"
    if not path.is_file():
        raise BivlcMiniError(f"{path}: no weights for the {encoder} detector's encoder; run mini-finetune@{encoder}")
    return FromCheckpoint(get_spec(base).arch, path)


def _cmd_detectors(args) -> int:
    from common import reproducible

    reproducible.reexec_pinned()
    reproducible.fix_threads()
    _, section = _section(DETECTOR_STAGE)
    params = DetectorParams(**section["detector"])
    set_dir = Path(args.set or default_dir() / "train")
    data = TrainSet.load(set_dir)
    out_dir = Path(args.out or default_dir() / "detectors")
    log = {}
    for encoder in DETECTOR_ENCODERS:
        init = detector_init(encoder, section["base"], default_dir() / "models")
        for tower in TOWERS:
            started = time.perf_counter()
            result = train_detector(init, tower, data, params, out_dir / f"{encoder}-{tower}.safetensors",
                                    provenance={"encoder": encoder,
                                                "set_manifest_sha256": sha256_file(set_dir / "manifest.json")})
            log[f"{encoder}-{tower}"] = {"steps": len(result.losses), "final_loss": result.final_loss,
                                         "seconds": round(time.perf_counter() - started, 1)}
            print(f"detector {encoder}/{tower}: {len(result.losses)} steps, final loss {result.final_loss:.4f}")
    write_json_atomic(default_dir() / "logs" / "detectors.json", log)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m papers.bivlc.mini", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("set", help="render the bidirectional benchmark (two images, two captions per instance)")
    p.add_argument("--out", default=None, help="default: build/mini/bivlc/test")
    p.set_defaults(func=_cmd_set)
    p = sub.add_parser("train-set", help="render the COCO / TROHN-Text / TROHN-Img analogs and run the selection")
    p.add_argument("--out", default=None, help="default: build/mini/bivlc/train")
    p.add_argument("--world", default=None, help="the world's training set (default: build/mini/world/train)")
    p.set_defaults(func=_cmd_train_set)
    p = sub.add_parser("run", help="fine-tune the base model as one of the runs")
    p.add_argument("run", choices=list(RUNS))
    p.add_argument("--set", default=None, help="default: build/mini/bivlc/train")
    p.add_argument("--out", default=None, help="default: build/mini/bivlc/models/<run>.safetensors")
    p.set_defaults(func=_cmd_run)
    p = sub.add_parser("detectors", help="train the natural-vs-synthetic heads (CLIPDet, CLIPTROHN-Img/Det)")
    p.add_argument("--set", default=None, help="default: build/mini/bivlc/train")
    p.add_argument("--out", default=None, help="default: build/mini/bivlc/detectors")
    p.set_defaults(func=_cmd_detectors)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
