"""SugarCrepe Tables 5 and 10 in the mini profile: NegCLIP re-trained with one type of rule-based hard negative.

The paper (Sec. 5.2, Table 5, App. A.3) fine-tunes CLIP ViT-B/32 on COCO with hard negative captions of one type
(REPLACE, SWAP or NEGATE, from CREPE's templates) added to the CLIP loss, against CLIP fine-tuned without negatives,
and scores all of them on ARO+CREPE and on SugarCrepe: the gains are large on the template benchmark (largest where
training and test type match) and much smaller on SugarCrepe, whose negatives lack the templates' artifacts.
App. D.3 (Table 10) trains NegCLIP on template negatives that adversarial refinement kept instead.

Mini analog, top to bottom:

1. ``set``: a fine-tuning set of its own (``STREAM``, a random stream no test set draws from; training scenes never
   hold the held-out colour-shape pairs): rendered scenes, ``captions_per_image`` distinct true captions each
   (``common.miniworld.claims.sample_claim``), and for every caption one rule-based negative of each kind
   (``common.miniworld.templates.template_negative``). Only captions that every kind applies to are kept, so that
   the runs train on the same captions; the manifest counts what was set aside. ``refined.json``: per kind, the
   (image, caption) rows whose negative survives Algorithm 1 against two cross-fitted blind scorers.
2. ``run <name>``: ``mini/xs-32k`` (the mini family's "ViT-B/32") fine-tuned by the shared trainer, one run per
   ``RUNS`` entry, with the same captions in the same order, the same seed, steps and optimiser: ``clip-ft`` with
   ``ClipLoss`` over images [I] and texts [T]; ``negclip-<kind>`` with ``TextNegativeClipLoss`` over images [I]
   and texts [T; T_neg] (the hard negative captions are extra image->text negatives, as in NegCLIP without its
   hard negative images); ``negclip-refined-<kind>`` the same on the refined rows only (Table 10). Deterministic
   on the CPU (``common.reproducible``), resumable (its resume state lives under ``<cache root>/training/``,
   outside the stage's outputs).
3. ``tables``: the base and the fine-tuned models on the mini ARO+CREPE set (``build/mini/sugarcrepe_templates``:
   the mini SugarCrepe positives with template negatives, kinds replace/swap/negate/shuffle) and on the mini
   SugarCrepe set, its seven categories pooled into REPLACE/SWAP/ADD by micro average as Table 5 groups them.
   SugarCrepe's strict rule throughout (the positive must score strictly above the negative; ties are wrong).

Outputs in ``results/sugarcrepe/mini/``: ``table5.csv`` (a row per model; accuracies and gains over CLIP-FT, in
points), ``table5_metrics.json`` (the comparison the paper draws), ``table5_context.json``, ``table5.png``,
``table10.csv`` and ``table10_metrics.json`` (template vs refined negatives).

Stages (``papers/sugarcrepe/dvc.yaml``): ``negclip-mini-set``, ``negclip-mini@<run>``, ``table5-mini``.
"""
from __future__ import annotations

import argparse
import json
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np
import torch

from common.errors import WorkspaceError
from common.training.rendered import CaptionBatches, caption_tokens, pixels, refuse_same_tokens
from common.training.recipe import RunParams
from common.training.legacy import resume_path
from common.zoo.trained import served, tokenizer_for
from common.io import atomic_path, output_group, sha256_file, staged_to_final, write_csv_atomic, write_json_atomic
from common.miniworld import VERSION
from common.miniworld.build import stream
from common.miniworld.claims import Claim, sample_claim
from common.miniworld.render import NATURAL, render
from common.miniworld.scene import Scene, sample_scene
from common.scoring.selection import STRICT, SelectionResult
from common.tasks import DatasetError, ImageToTextItem
from common.training import (
    ClipLoss, ExtraTextNegativesLoss, FromZoo, Init, TrainResult, train)

KINDS: tuple[str, ...] = ("replace", "swap", "negate")
"""The hard negative types the paper fine-tunes with (Table 5's "Hard Negative Used")."""
REFINED_KINDS: tuple[str, ...] = ("replace", "swap")
"""Kinds with a Table 10 run on adversarially refined negatives. Not NEGATE: both blind scorers solve every one of
its training pairs (its "not"/"There is no" never occurs in a true caption), so refinement keeps none of them
(``refined.json`` records it; a run on an empty set refuses to start)."""


@dataclass(frozen=True)
class RunSpec:
    hard_negative: str | None
    """The kind of negative caption it trains with; None: CLIP fine-tuned without negatives."""
    refined: bool = False
    """Only the (caption, negative) pairs adversarial refinement keeps (Table 10)."""


RUNS: dict[str, RunSpec] = {
    "clip-ft": RunSpec(None),
    **{f"negclip-{k}": RunSpec(k) for k in KINDS},
    **{f"negclip-refined-{k}": RunSpec(k, refined=True) for k in REFINED_KINDS},
}
STREAM = "sugarcrepe-finetune-train"
SET_STAGE = "papers/sugarcrepe/dvc.yaml:negclip-mini-set"
RUN_STAGE = "papers/sugarcrepe/dvc.yaml:negclip-mini@{run}"
TABLE_STAGE = "papers/sugarcrepe/dvc.yaml:table5-mini"
"""Writes Table 10 too: one scoring pass over every model."""
CHECKPOINT_EVERY = 50

TEMPLATE_GROUPS: dict[str, tuple[str, ...]] = {k: (k,) for k in ("replace", "swap", "negate", "shuffle")}
"""ARO+CREPE's columns: one template kind each."""
SUGARCREPE_GROUPS: dict[str, tuple[str, ...]] = {
    "replace": ("replace_obj", "replace_att", "replace_rel"),
    "swap": ("swap_obj", "swap_att"),
    "add": ("add_obj", "add_att"),
}
"""SugarCrepe's columns in Table 5: its seven categories pooled (micro average) by type."""
COLUMNS: tuple[str, ...] = (*(f"aro_crepe_{g}" for g in TEMPLATE_GROUPS),
                            *(f"sugarcrepe_{g}" for g in SUGARCREPE_GROUPS))
MATCHING_SUGARCREPE = {"replace": "replace", "swap": "swap", "negate": "add"}
"""The SugarCrepe type each training kind is meant to help: NEGATE probes existence as ADD does (App. B.1)."""

NegativeFn = Callable[[Scene, Claim, str, random.Random], "str | None"]
"""``common.miniworld.templates.template_negative``: (scene, true claim, kind, rng) -> negative caption or None."""


@dataclass(frozen=True)
class RefineConfig:
    """``params.yaml sugarcrepe.blind``: the blind scorers' cross-fitting folds and Algorithm 1's grid and seed."""

    folds: int = 5
    bins: int = 50
    seed: int = 0


class NegclipMiniError(WorkspaceError):
    """An input of the mini NegCLIP runs that cannot be used as given (the message names the file)."""


# ------------------------------------------------------------------------------------------------------------------
# 1. The fine-tuning set
# ------------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SetConfig:
    train_images: int = 2000
    captions_per_image: int = 3
    image_size: int = 48
    seed: int = 0
    kinds: tuple[str, ...] = KINDS
    tries_per_image: int = 40
    """Claims drawn per scene before settling for fewer captions (a one-object scene has few true sentences)."""


@dataclass(frozen=True)
class FinetuneSet:
    """Images (N, H, W, 3) uint8; per image ``captions_per_image`` captions; per caption a negative of each kind."""

    images: np.ndarray
    captions: list[list[str]]
    negatives: list[list[dict[str, str]]]

    def __post_init__(self):
        if self.images.ndim != 4 or len(self.images) != len(self.captions) or len(self.captions) != len(self.negatives):
            raise ValueError("FinetuneSet: images (N, H, W, 3), captions and negatives need one entry per image")
        per_image = {len(c) for c in self.captions}
        if len(per_image) != 1 or any(len(c) != len(n) for c, n in zip(self.captions, self.negatives)):
            raise ValueError("FinetuneSet: every image needs the same number of captions, each with its negatives")

    @property
    def captions_per_image(self) -> int:
        return len(self.captions[0])

    def kinds(self) -> tuple[str, ...]:
        return tuple(self.negatives[0][0])

    def rows(self) -> list[tuple[int, int]]:
        """(image, caption) of every caption, image-major: the order ``refined.json`` indexes."""
        return [(i, j) for i in range(len(self.captions)) for j in range(self.captions_per_image)]

    def subset(self, rows: Sequence[Sequence[int]]) -> "FinetuneSet":
        """Only the given (image, caption) rows: the images that keep one, each caption list padded to the same
        length by repeating its kept captions in order (the layout needs as many per image)."""
        kept: dict[int, list[int]] = {}
        for i, j in rows:
            kept.setdefault(int(i), []).append(int(j))
        images = sorted(kept)
        if not images:
            raise NegclipMiniError("the subset of the fine-tuning set is empty")
        per_image = self.captions_per_image
        picks = {i: [kept[i][k % len(kept[i])] for k in range(per_image)] for i in images}
        return FinetuneSet(self.images[images], [[self.captions[i][j] for j in picks[i]] for i in images],
                           [[self.negatives[i][j] for j in picks[i]] for i in images])

    @classmethod
    def load(cls, root: Path) -> "FinetuneSet":
        root = Path(root)
        try:
            images = np.load(root / "images.npy", allow_pickle=False)
        except FileNotFoundError:
            raise NegclipMiniError(f"{root / 'images.npy'}: no fine-tuning set here; run the negclip-mini-set stage "
                                   "(`python -m papers.sugarcrepe.negclip_mini set`)") from None
        captions = _read_json(root / "captions.json")
        negatives = _read_json(root / "negatives.json")
        if not isinstance(captions, list) or len(captions) != len(images):
            raise DatasetError(f"{root / 'captions.json'}: expected {len(images)} caption lists (one per image)")
        if not isinstance(negatives, list) or len(negatives) != len(images):
            raise DatasetError(f"{root / 'negatives.json'}: expected {len(images)} records (one per image)")
        kinds = None
        for i, (caps, negs) in enumerate(zip(captions, negatives)):
            if len(caps) != len(negs):
                raise DatasetError(f"{root / 'negatives.json'}: record {i}: {len(negs)} negative sets for "
                                   f"{len(caps)} captions")
            for j, n in enumerate(negs):
                kinds = kinds or sorted(n)
                if sorted(n) != kinds or not all(isinstance(v, str) and v for v in n.values()):
                    raise DatasetError(f"{root / 'negatives.json'}: record {i}: caption {j}: needs one non-empty "
                                       f"negative of each kind {kinds}, has {n}")
        try:
            return cls(images, captions, negatives)
        except ValueError as exc:
            raise DatasetError(f"{root}: {exc}") from None


def _read_json(path: Path):
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise NegclipMiniError(f"{path}: missing (rebuild the fine-tuning set)") from None
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}: not valid JSON ({exc})") from None


def _template_negative() -> NegativeFn:
    from common.miniworld.templates import template_negative

    return template_negative


def _captions_for(rng: random.Random, scene: Scene, config: SetConfig, negative: NegativeFn,
                  rejected: dict[str, int]) -> tuple[list[str], list[dict[str, str]]]:
    """Up to ``captions_per_image`` distinct true captions that every kind gives a negative for (padded by repeating
    the first ones, as a scene with few such sentences allows), or nothing when no claim qualifies."""
    captions: list[str] = []
    negatives: list[dict[str, str]] = []
    for _ in range(config.tries_per_image):
        claim = sample_claim(rng, scene)
        text = claim.text()
        if text in captions:
            continue
        drawn = {kind: negative(scene, claim, kind, rng) for kind in config.kinds}
        missing = [k for k, v in drawn.items() if not v or v.lower() == text.lower()]  # CLIP's tokenizer lowercases
        for kind in missing:
            rejected[kind] += 1
        if missing:
            continue
        captions.append(text)
        negatives.append(drawn)  # type: ignore[arg-type]
        if len(captions) == config.captions_per_image:
            break
    k = len(captions)
    for i in range(config.captions_per_image - k if k else 0):
        captions.append(captions[i % k])
        negatives.append(negatives[i % k])
    return captions, negatives


def render_set(config: SetConfig, negative: NegativeFn | None = None) -> tuple[FinetuneSet, dict]:
    """The fine-tuning set and the counts of what was set aside (scenes without a qualifying caption, captions by
    the kind that did not apply, padded images)."""
    negative = negative or _template_negative()
    rng = stream(config.seed, STREAM)
    images = np.empty((config.train_images, config.image_size, config.image_size, 3), dtype=np.uint8)
    captions: list[list[str]] = []
    negatives: list[list[dict[str, str]]] = []
    rejected = {k: 0 for k in config.kinds}
    skipped_scenes = padded_images = 0
    while len(captions) < config.train_images:
        scene = sample_scene(rng, allow_heldout=False)
        caps, negs = _captions_for(rng, scene, config, negative, rejected)
        if not caps:
            skipped_scenes += 1
            continue
        padded_images += len(set(caps)) < len(caps)
        images[len(captions)] = np.asarray(render(scene, config.image_size, NATURAL, seed=rng.randrange(2**31)))
        captions.append(caps)
        negatives.append(negs)
    counts = {"images": config.train_images, "captions": config.train_images * config.captions_per_image,
              "distinct_captions": len({c for caps in captions for c in caps}),
              "scenes_without_a_qualifying_caption": skipped_scenes, "images_with_repeated_captions": padded_images,
              "claims_rejected_by_kind": rejected}
    return FinetuneSet(images, captions, negatives), counts


def refine_negatives(data: FinetuneSet, config: RefineConfig) -> dict[str, dict]:
    """Per kind, the (image, caption) rows whose negative survives adversarial refinement (SugarCrepe Algorithm 1,
    ``common.blind.refine``), the paper's proxy in App. D.3 for training negatives free of blind-detectable artifacts.

    The two blind scorers stand in for the paper's Vera and grammar model as in the mini blind analysis: an n-gram
    language model fitted on positive captions and a pairwise text classifier, both cross-fitted with folds grouped
    by caption text, so no caption is scored by a model fitted on it (a caption shared by two images included).
    """
    from common.blind.classifier import PairwiseTextClassifier
    from common.blind.crossfit import TextPair, crossfit
    from common.blind.ngram import NgramFluency
    from common.blind.refine import refine, refine_report

    def fluency(fit: Sequence[TextPair]):
        return NgramFluency(seed=config.seed).fit([p.positive for p in fit])

    def classifier(fit: Sequence[TextPair]):
        return PairwiseTextClassifier().fit([p.positive for p in fit], [p.negative for p in fit])

    rows = data.rows()
    out = {}
    for kind in data.kinds():
        pairs = [TextPair("negclip-mini-finetune", kind, data.captions[i][j], data.captions[i][j],
                          data.negatives[i][j][kind], f"{i}/{j}") for i, j in rows]
        scored = [crossfit(pairs, fit, config.folds, config.seed) for fit in (fluency, classifier)]
        kept = refine(scored[0].gap, scored[1].gap, config.bins, config.seed)
        report = refine_report(scored[0].gap, scored[1].gap, kept)
        out[kind] = {
            "n_in": report.n_in, "n_kept": report.n_kept,
            "blind_accuracy_before": {s.scorer: round(float(s.correct.mean()), 4) for s in scored},
            "blind_accuracy_after": {s.scorer: round(float(s.correct[kept].mean()), 4) if kept.size else None
                                     for s in scored},
            "kept": [list(rows[k]) for k in kept],
        }
    return out


def build_set(config: SetConfig, out_dir: Path, negative: NegativeFn | None = None,
              refine_config: RefineConfig | None = RefineConfig()) -> dict:
    """Write ``images.npy``, ``captions.json``, ``negatives.json``, ``refined.json`` (unless ``refine_config`` is
    None) and ``manifest.json`` into ``out_dir``."""
    data, counts = render_set(config, negative)
    out_dir = Path(out_dir)
    with atomic_path(out_dir / "images.npy") as tmp:
        with open(tmp, "wb") as fh:
            np.save(fh, data.images)
    write_json_atomic(out_dir / "captions.json", data.captions, indent=None)
    write_json_atomic(out_dir / "negatives.json", data.negatives, indent=None)
    files = ["images.npy", "captions.json", "negatives.json"]
    refined_counts = None
    if refine_config is not None:
        refined = refine_negatives(data, refine_config)
        write_json_atomic(out_dir / "refined.json", {"config": asdict(refine_config), "kinds": refined}, indent=None)
        files.append("refined.json")
        refined_counts = {k: {"n_kept": v["n_kept"], "blind_accuracy_before": v["blind_accuracy_before"],
                              "blind_accuracy_after": v["blind_accuracy_after"]} for k, v in refined.items()}
    manifest = {
        "kind": "sugarcrepe-negclip-finetune", "profile": "mini", "world_version": VERSION, "stream": STREAM,
        "config": {**asdict(config), "kinds": list(config.kinds)}, "counts": counts,
        "refined": refined_counts, "sha256": {f: sha256_file(out_dir / f) for f in files},
    }
    write_json_atomic(out_dir / "manifest.json", manifest)
    return manifest


# ------------------------------------------------------------------------------------------------------------------
# 2. Batches, loss and one run
# ------------------------------------------------------------------------------------------------------------------
class TextNegativeClipLoss(ExtraTextNegativesLoss):
    """B images against 2B texts [T; T_neg]: NegCLIP's caption negatives without its hard negative images.

    loss = 1/2 [CE(B x 2B image->text, arange B) + CE(texts[:B] -> images, B x B, arange B)]: each negative caption
    is one more wrong answer for every image (its own image's most of all) and is never a query itself.
    """

    image_segments = 1
    text_segments = 2


def run_data(run: str, set_dir: Path) -> FinetuneSet:
    """What ``run`` trains on: the whole set, or (a refined run) the rows ``refined.json`` keeps for its kind."""
    spec = _spec(run)
    data = FinetuneSet.load(set_dir)
    if not spec.refined:
        return data
    refined = _read_json(Path(set_dir) / "refined.json")
    try:
        rows = refined["kinds"][spec.hard_negative]["kept"]
    except (KeyError, TypeError):
        raise DatasetError(f"{Path(set_dir) / 'refined.json'}: no refinement of kind {spec.hard_negative!r}") from None
    if not rows:
        raise NegclipMiniError(f"{Path(set_dir) / 'refined.json'}: refinement kept no {spec.hard_negative} negative "
                               f"of {refined['kinds'][spec.hard_negative]['n_in']}; {run} has nothing to train on")
    return data.subset(rows)


def _spec(run: str) -> RunSpec:
    if run not in RUNS:
        from common.errors import unknown_name

        raise unknown_name("run", run, RUNS)
    return RUNS[run]


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


def train_run(run: str, data: FinetuneSet, params: RunParams, out_path: Path, *, init: Init | None = None,
              tokenize: Callable[[Sequence[str]], torch.Tensor] | None = None, provenance: Mapping | None = None,
              checkpoint_every: int = CHECKPOINT_EVERY, progress: bool = False) -> TrainResult:
    """Fine-tune ``init`` (default: the zoo's ``params.base``) as ``run`` on ``data`` (``run_data``) and write
    ``out_path`` with its sidecar."""
    spec = _spec(run)
    kind = spec.hard_negative
    if len(data.images) < params.batch_size:
        raise NegclipMiniError(f"{run}: {len(data.images)} training images cannot fill a batch of {params.batch_size}")
    init = init or FromZoo(params.base)
    if tokenize is None:
        tokenize = tokenizer_for(init.describe()["arch"])
    batches = batches_for(data, kind, tokenize)
    loss = ClipLoss if kind is None else TextNegativeClipLoss
    provenance = {"run": run, "hard_negative": kind, "refined": spec.refined, **(provenance or {})}
    key = {"run": run, "params": asdict(params), "init": init.describe(), "data": batches.describe(),
           "provenance": provenance}
    return train(params.trainer_config(), init, batches, loss, out_path, provenance=provenance, resume=True,
                 progress=progress, checkpoint_every=checkpoint_every, resume_path=resume_path(f"sugarcrepe-{run}", key, [Path(__file__)]))


# ------------------------------------------------------------------------------------------------------------------
# 3. Scoring and the table
# ------------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ModelEntry:
    """One row of Tables 5 and 10: a model and how it was trained."""

    name: str
    training: str
    """'pretrained', 'clip-ft' or 'negclip'."""
    hard_negative: str = "N/A"
    """The kind it trained with, or 'N/A'."""
    negatives: str = "N/A"
    """'template' (every rule-based negative), 'refined' (those adversarial refinement keeps) or 'N/A'."""
    checkpoint: Path | None = None
    """None: the zoo model ``name``."""

    @property
    def label(self) -> str:
        """How the figure's legend names the row (Table 5's "Model" and "Hard Negative Used" in one)."""
        if self.training == "pretrained":
            return f"{self.name} (pretrained)"
        if self.training == "clip-ft":
            return "CLIP fine-tuned"
        refined = " (refined)" if self.negatives == "refined" else ""
        return f"NegCLIP fine-tuned, {self.hard_negative.upper()}{refined}"


def entries_for(base: str, models_dir: Path) -> list[ModelEntry]:
    """Every row in the paper's order: pretrained, CLIP-FT, NegCLIP with each kind, then the refined runs."""
    rows = [ModelEntry(base, "pretrained")]
    for run, spec in RUNS.items():
        kind = spec.hard_negative
        rows.append(ModelEntry(f"sugarcrepe/mini-{run}", "clip-ft" if kind is None else "negclip", kind or "N/A",
                               "N/A" if kind is None else ("refined" if spec.refined else "template"),
                               Path(models_dir) / f"{run}.safetensors"))
    return rows


@dataclass(frozen=True)
class ModelScores:
    templates: SelectionResult
    sugarcrepe: SelectionResult
    fingerprint: str


def score_models(entries: Sequence[ModelEntry], arch: str, template_items: Sequence[ImageToTextItem],
                 sugarcrepe_items: Sequence[ImageToTextItem], engine_config=None, device: str = "cpu",
                 family: str = "mini") -> dict[str, ModelScores]:
    """Every model on both sets, SugarCrepe's strict rule (a tie is wrong). An entry with an ``arch`` of its own
    (the full profile's rows mix architectures) is built as that; the others as ``arch``."""
    from common.engine import Engine
    from common.scoring import selection

    out = {}
    for e in entries:
        engine = Engine(served(e, getattr(e, "arch", "") or arch, device, family), engine_config)
        out[e.name] = ModelScores(selection.evaluate(engine, template_items, STRICT),
                                  selection.evaluate(engine, sugarcrepe_items, STRICT), engine.model.fingerprint)
    return out


def grouped_accuracy(result: SelectionResult, groups: Mapping[str, Sequence[str]], where: str) -> dict[str, float]:
    """Accuracy (%) of each group of categories, pooled over their examples (micro average)."""
    by = result.by_group()
    out = {}
    for name, members in groups.items():
        missing = [m for m in members if m not in by]
        if missing:
            raise DatasetError(f"{where}: no examples of {missing} (needed for column {name!r})")
        n = sum(by[m].n for m in members)
        out[name] = 100.0 * sum(by[m].correct for m in members) / n
    return out


def table_rows(entries: Sequence[ModelEntry], scores: Mapping[str, ModelScores], reference: str) -> list[dict]:
    """One row per model: the 7 accuracies, then each one's gain over ``reference`` (the CLIP-FT run), in points."""
    accuracy = {}
    for e in entries:
        acc = {f"aro_crepe_{g}": v for g, v in grouped_accuracy(scores[e.name].templates, TEMPLATE_GROUPS,
                                                                "the mini ARO+CREPE set").items()}
        acc.update({f"sugarcrepe_{g}": v for g, v in grouped_accuracy(scores[e.name].sugarcrepe, SUGARCREPE_GROUPS,
                                                                      "the mini SugarCrepe set").items()})
        accuracy[e.name] = acc
    if reference not in accuracy:
        raise ValueError(f"reference model {reference!r} is not among the rows")
    rows = []
    for e in entries:
        acc = accuracy[e.name]
        rows.append({"model": e.name, "label": e.label, "training": e.training, "hard_negative": e.hard_negative,
                     "negatives": e.negatives, **{c: round(acc[c], 2) for c in COLUMNS},
                     **{f"gain_{c}": round(acc[c] - accuracy[reference][c], 2) for c in COLUMNS},
                     "ties": scores[e.name].templates.ties + scores[e.name].sugarcrepe.ties})
    return rows


def mean2(values) -> float:
    """Mean to 2 decimals (the tables' precision)."""
    return round(float(np.mean(list(values))), 2)


def summary(rows: Sequence[Mapping]) -> dict[str, float]:
    """Table 5's comparison in eight numbers (points over CLIP-FT; means over the three NegCLIP runs on template
    negatives)."""
    by_kind = {r["hard_negative"]: r for r in rows if r["training"] == "negclip" and r["negatives"] == "template"}
    if set(by_kind) != set(KINDS):
        raise ValueError(f"summary needs one NegCLIP row per kind {KINDS}, has {sorted(by_kind)}")
    template_all = [by_kind[k][f"gain_aro_crepe_{g}"] for k in KINDS for g in TEMPLATE_GROUPS]
    sugar_all = [by_kind[k][f"gain_sugarcrepe_{g}"] for k in KINDS for g in SUGARCREPE_GROUPS]
    clip_ft = next(r for r in rows if r["training"] == "clip-ft")
    return {
        "gain_template_matching": mean2(by_kind[k][f"gain_aro_crepe_{k}"] for k in KINDS),
        "gain_template_all": mean2(template_all),
        "gain_sugarcrepe_matching": mean2(by_kind[k][f"gain_sugarcrepe_{MATCHING_SUGARCREPE[k]}"] for k in KINDS),
        "gain_sugarcrepe_all": mean2(sugar_all),
        "max_gain_template": round(float(np.max(template_all)), 2),
        "max_gain_sugarcrepe": round(float(np.max(sugar_all)), 2),
        "clip_ft_template_mean": mean2(clip_ft[f"aro_crepe_{g}"] for g in TEMPLATE_GROUPS),
        "clip_ft_sugarcrepe_mean": mean2(clip_ft[f"sugarcrepe_{g}"] for g in SUGARCREPE_GROUPS),
    }


def table10_summary(rows: Sequence[Mapping]) -> dict[str, float]:
    """Table 10's comparison over the kinds trained both ways (``REFINED_KINDS``): mean gain over CLIP-FT on
    SugarCrepe (its three columns) and on the matching template column, template vs refined negatives."""
    pick = {(r["hard_negative"], r["negatives"]): r for r in rows if r["training"] == "negclip"}
    missing = [(k, n) for k in REFINED_KINDS for n in ("template", "refined") if (k, n) not in pick]
    if missing:
        raise ValueError(f"Table 10 needs a NegCLIP row for each of {missing}")
    out = {}
    for negatives in ("template", "refined"):
        out[f"gain_sugarcrepe_{negatives}"] = mean2(pick[k, negatives][f"gain_sugarcrepe_{g}"]
                                                    for k in REFINED_KINDS for g in SUGARCREPE_GROUPS)
        out[f"gain_template_matching_{negatives}"] = mean2(pick[k, negatives][f"gain_aro_crepe_{k}"]
                                                           for k in REFINED_KINDS)
    return out


def draw(table_csv: Path, out_png: Path) -> Path:
    from common.figures import grouped_bars

    return grouped_bars(table_csv, COLUMNS, out_png,
                        "SugarCrepe Table 5 (mini): ARO+CREPE-style templates vs SugarCrepe", label_column="label")


def _cell(value) -> str:
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def table_csv(path: Path, rows: Sequence[Mapping], fields: Sequence[str]) -> Path:
    """A results table, floats to 2 decimals."""
    return write_csv_atomic(path, [{k: _cell(v) for k, v in r.items()} for r in rows], fields)


TABLE5_FIELDS = ("model", "label", "training", "hard_negative", *COLUMNS, *(f"gain_{c}" for c in COLUMNS), "ties")
TABLE10_FIELDS = ("model", "label", "hard_negative", "negatives", "negatives_kept",
                  *(f"sugarcrepe_{g}" for g in SUGARCREPE_GROUPS), *(f"gain_sugarcrepe_{g}" for g in SUGARCREPE_GROUPS),
                  *(f"aro_crepe_{k}" for k in KINDS), "ties")


def write_tables(out_dir: Path, rows: Sequence[Mapping], context: Mapping,
                 refined: Mapping[str, Mapping] | None = None) -> dict[str, Path]:
    """Table 5 (every row on template negatives: csv, metrics, figure), the context, and, when the refined runs are
    among the rows, Table 10 (CLIP-FT and NegCLIP on template vs refined negatives; ``refined``: ``refined.json``'s
    counts per kind)."""
    table5 = [r for r in rows if r["negatives"] != "refined"]
    paths = {"table5": table_csv(out_dir / "table5.csv", table5, TABLE5_FIELDS),
             "metrics5": write_json_atomic(out_dir / "table5_metrics.json", summary(table5)),
             "context": write_json_atomic(out_dir / "table5_context.json", dict(context))}
    paths["figure5"] = draw(paths["table5"], out_dir / "table5.png")
    if any(r["negatives"] == "refined" for r in rows):
        refined = refined or {}
        table10 = [{**r, "negatives_kept": "" if r["negatives"] == "N/A" else
                    (f"{refined[r['hard_negative']]['n_kept']}/{refined[r['hard_negative']]['n_in']}"
                     if r["negatives"] == "refined" else "all")}
                   for r in rows if r["training"] == "clip-ft" or r["negatives"] in ("template", "refined")]
        paths["table10"] = table_csv(out_dir / "table10.csv", table10, TABLE10_FIELDS)
        paths["metrics10"] = write_json_atomic(out_dir / "table10_metrics.json", table10_summary(rows))
    return paths


def evaluate_tables(entries: Sequence[ModelEntry], arch: str, sugarcrepe_manifest: Path, templates_dir: Path,
                    out_dir: Path, engine_config=None, device: str = "cpu", context: Mapping | None = None,
                    refined: Mapping[str, Mapping] | None = None) -> dict[str, Path]:
    """Score every model on both sets (``sugarcrepe_manifest``: a ``PreparedSet``; ``templates_dir``:
    ``papers.sugarcrepe.mini_templates``' output) and write the tables, metrics, context and figure as one
    output group."""
    from common.benchmarks.sugarcrepe import PreparedSet
    from papers.sugarcrepe.mini_templates import load_template_set

    scores = score_models(entries, arch, load_template_set(Path(templates_dir)).items(),
                          PreparedSet.load(Path(sugarcrepe_manifest)).items(), engine_config, device)
    reference = next(e.name for e in entries if e.training == "clip-ft")
    rows = table_rows(entries, scores, reference)
    full_context = tables_context(context, {"reference": reference}, entries, scores, refined)
    return write_output_group(out_dir, lambda staging: write_tables(staging, rows, full_context, refined))


def tables_context(context: Mapping | None, head: Mapping, entries: Sequence[ModelEntry],
                   scores: Mapping[str, ModelScores], refined: Mapping[str, Mapping] | None,
                   model_fields: Callable[[ModelEntry], dict] = lambda e: {}) -> dict:
    """``table5_context.json``: the caller's context, the rule, ``head`` (what the gains are measured against), the
    columns' categories, the examples per category, the refinement counts, and per model how it was trained
    (``model_fields``: extra fields first), its fingerprint and its ties."""
    first = scores[entries[0].name]
    return {
        **dict(context or {}), "rule": STRICT.name, **head,
        "columns": {**{f"aro_crepe_{g}": list(m) for g, m in TEMPLATE_GROUPS.items()},
                    **{f"sugarcrepe_{g}": list(m) for g, m in SUGARCREPE_GROUPS.items()}},
        "n": {"aro_crepe": {g: s.n for g, s in first.templates.by_group().items()},
              "sugarcrepe": {g: s.n for g, s in first.sugarcrepe.by_group().items()}},
        "refined": {k: {f: v[f] for f in ("n_in", "n_kept", "blind_accuracy_before", "blind_accuracy_after") if f in v}
                    for k, v in (refined or {}).items()},
        "models": {e.name: {**model_fields(e), "training": e.training, "hard_negative": e.hard_negative,
                            "negatives": e.negatives, "fingerprint": scores[e.name].fingerprint,
                            "ties_aro_crepe": scores[e.name].templates.ties,
                            "ties_sugarcrepe": scores[e.name].sugarcrepe.ties} for e in entries},
    }


def write_output_group(out_dir: Path, write: Callable[[Path], Mapping[str, Path]]) -> dict[str, Path]:
    """``write(staging)`` as one output group of ``out_dir``; the written paths, as they are after the move."""
    out_dir = Path(out_dir)
    with output_group(out_dir) as staging:
        paths = write(staging)
    return {k: staged_to_final(p, staging, out_dir) for k, p in paths.items()}


# ------------------------------------------------------------------------------------------------------------------
# Entry points
# ------------------------------------------------------------------------------------------------------------------
def default_dir() -> Path:
    from common.paths import build_root

    return build_root() / "mini" / "sugarcrepe_negclip"


def set_config(params: Mapping) -> SetConfig:
    section = params["sugarcrepe"]["negclip_mini"]
    return SetConfig(train_images=section["train_images"], captions_per_image=section["captions_per_image"],
                     image_size=params["mini"]["world"]["image_size"], seed=section["seed"])


def refine_config(params: Mapping) -> RefineConfig:
    blind = params["sugarcrepe"]["blind"]
    return RefineConfig(folds=blind["folds"], bins=blind["refine_bins"], seed=blind["seed"])


def _cmd_set(args) -> int:
    from common import reproducible
    from common.params import stage_params

    reproducible.reexec_pinned()  # the blind scorers' gaps decide refinement: the same floats on every machine
    reproducible.fix_threads()
    params = stage_params(SET_STAGE)
    out = Path(args.out or default_dir() / "set")
    manifest = build_set(set_config(params), out, refine_config=refine_config(params))
    print(json.dumps({"counts": manifest["counts"], "refined": manifest["refined"]}, indent=2))
    return 0


def _cmd_run(args) -> int:
    from common import reproducible
    from common.params import stage_params

    reproducible.reexec_pinned()  # before any tensor work: bit-identical weights on any x86-64 CPU
    reproducible.fix_threads()
    params = RunParams.from_params(stage_params(RUN_STAGE.format(run=args.run))["sugarcrepe"]["negclip_mini"])
    set_dir = Path(args.set or default_dir() / "set")
    out = Path(args.out or default_dir() / "models" / f"{args.run}.safetensors")
    data = run_data(args.run, set_dir)
    started = time.perf_counter()
    result = train_run(args.run, data, params, out, progress=True, provenance={
        "set_manifest_sha256": sha256_file(set_dir / "manifest.json"), **reproducible.describe()})
    seconds = round(time.perf_counter() - started, 1)
    log = default_dir() / "logs" / f"{args.run}.json"
    write_json_atomic(log, {"run": args.run, "seconds": seconds, "train_seconds": result.train_seconds,
                            "resumed_from": result.resumed_from, "final_loss": result.final_loss,
                            "machine": reproducible.machine()})
    print(f"{args.run}: final loss {result.final_loss:.4f} after {params.steps} steps, {seconds} s; weights: {out}; "
          f"log (wall time, not a DVC output): {log}")
    return 0


def _cmd_tables(args) -> int:
    from common import reproducible
    from common.evaluate import engine_config
    from common.params import stage_params
    from common.paths import RESULTS, build_root
    from common.zoo import get_spec

    reproducible.reexec_pinned()
    reproducible.fix_threads()
    params = stage_params(TABLE_STAGE)
    section = params["sugarcrepe"]["negclip_mini"]
    models_dir = Path(args.models or default_dir() / "models")
    set_dir = Path(args.set or default_dir() / "set")
    entries = entries_for(section["base"], models_dir)
    refined = {k: {f: v[f] for f in v if f != "kept"} for k, v in _read_json(set_dir / "refined.json")["kinds"].items()}
    sidecars = {e.name: json.loads(e.checkpoint.with_suffix(".json").read_text()) for e in entries
                if e.checkpoint is not None and e.checkpoint.with_suffix(".json").is_file()}
    context = {"profile": "mini", "base": section["base"], **reproducible.describe(),
               "training": {name: {k: s.get(k) for k in ("trainer", "loss", "data", "final_loss")}
                            for name, s in sidecars.items()},
               "note": "mini profile: mini/xs-32k fine-tuned on rendered scenes; not comparable to the paper's numbers"}
    paths = evaluate_tables(
        entries, get_spec(section["base"]).arch, build_root() / "mini" / "sugarcrepe" / "manifest.json",
        build_root() / "mini" / "sugarcrepe_templates", RESULTS / "sugarcrepe" / "mini",
        engine_config(params), context=context, refined=refined)
    for name, path in paths.items():
        print(f"{name}: {path}")
    for name in ("metrics5", "metrics10"):
        print(json.dumps(json.loads(paths[name].read_text()), indent=2))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m papers.sugarcrepe.negclip_mini",
                                     description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("set", help="render the fine-tuning set with template negatives of each kind")
    p.add_argument("--out", default=None, help="default: build/mini/sugarcrepe_negclip/set")
    p.set_defaults(func=_cmd_set)
    p = sub.add_parser("run", help="fine-tune the base model: CLIP-FT or NegCLIP with one kind of negative")
    p.add_argument("run", choices=sorted(RUNS))
    p.add_argument("--set", default=None, help="default: build/mini/sugarcrepe_negclip/set")
    p.add_argument("--out", default=None, help="default: build/mini/sugarcrepe_negclip/models/<run>.safetensors")
    p.set_defaults(func=_cmd_run)
    p = sub.add_parser("tables", help="score the base and the fine-tuned models; write Tables 5 and 10")
    p.add_argument("--models", default=None, help="default: build/mini/sugarcrepe_negclip/models")
    p.add_argument("--set", default=None, help="default: build/mini/sugarcrepe_negclip/set (its refined.json)")
    p.set_defaults(func=_cmd_tables)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
