"""SugarCrepe Tables 5 and 10 in the full profile: NegCLIP re-trained on COCO with CREPE-style negatives of one kind.

The paper (Sec. 5.2, Table 5; App. D.3, Table 10) fine-tunes CLIP ViT-B/32 on COCO with REPLACE, SWAP or NEGATE
hard negative captions (CREPE's generator) against CLIP fine-tuned without them, trains RN50 from scratch the same
way (plus one run mixing the three kinds), and scores every model on ARO+CREPE (SugarCrepe's positives with the old
benchmarks' rule-based negatives) and on SugarCrepe. Table 10 trains from scratch on the negatives that adversarial
refinement (Algorithm 1 with Vera and the grammar model) keeps. The mini profile's module
(``papers.sugarcrepe.negclip_mini``) does the same on the rendered world; its scoring and table code is reused here.

Stages (``papers/sugarcrepe/dvc.yaml``), top to bottom:

1. ``aro-crepe-full-set`` (``aro-crepe-set``): the full SugarCrepe positives (the ``full-set`` stage's manifest:
   every distinct (image, caption) over its seven category files) with one negative per kind (replace, swap, negate,
   shuffle; ``common.crepe_style``, the vocabulary built from these positives), in the layout of the mini
   ARO+CREPE set (``papers.sugarcrepe.mini_templates``: ``data/<kind>.json`` + ``manifest.json``, read by
   ``load_template_set``). The manifest counts, per kind, the positives that got no negative.
2. ``negclip-full-set`` (``set``): NegCLIP's COCO train TSV (``data/negclip/train_neg_clip.tsv``, images in COCO
   train2014) with each caption's CREPE-style REPLACE, SWAP and NEGATE negatives (vocabulary from these captions).
   Rows whose image is a SugarCrepe test image (same COCO id; val2017 images come from train2014/val2014) are dropped,
   and so are rows some kind does not apply to, so that every run trains on the same captions; both are counted.
   ``rows.jsonl`` (one row per kept caption) and ``manifest.json``.
3. ``negclip-full-refine`` (``refine``): per kind, Algorithm 1 (``common.blind.refine``) on the training pairs with
   the paper's scorers (``common.blind.pretrained``: Vera and the CoLA grammar model, GPU), gap = score(caption) -
   score(negative) per scorer; ``refined.json`` keeps the surviving row indices per kind, as the mini set does.
4. ``negclip-full@<run>`` and ``negclip-full-refined@<run>`` (``run``, under ``torchrun``): one run per ``RUNS``
   entry (the refined ones in a group of their own, the only runs that wait for refinement) through the shared
   trainer, every run over the same rows in the same order (the batch of step s is a pure function of (seed, s));
   images decoded from the COCO files per batch (``common.training.files.FileImages``). ``ClipLoss`` over images [I]
   and texts [T] without negatives; ``TextNegativeClipLoss`` over [I] and [T; T_neg] with them. Fine-tuned runs
   start from ``openai/ViT-B-32``, scratch runs from a random ``RN50``.
5. ``table5-full`` (``tables``): every model on both sets, SugarCrepe's strict rule; Table 5 and Table 10 with the
   mini tables' columns plus ``arch``. Gains are over the matching baseline: fine-tuned rows (and the pretrained
   and released rows) over ``clip-ft``, scratch rows over ``scratch-clip``.

Outputs in ``results/sugarcrepe/full/``: ``table5.csv``, ``table5_metrics.json``, ``table5_context.json``,
``table5.png``, ``table10.csv``, ``table10_metrics.json``.
"""
from __future__ import annotations

import argparse
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np
import torch

from common.errors import WorkspaceError
from common.training.files import FileCaptionBatches
from common.training.recipe import Schedule
from common.training.legacy import launch_run
from common.training.legacy import resume_path
from common.zoo.trained import tokenizer_for as shared_tokenizer_for
from common.training.files import FileImages
from common.io import atomic_path, output_group, sha256_file, write_json_atomic
from common.jsonl import read_jsonl
from common.tasks import DatasetError
from common.training import ClipLoss, DistributedContext, FromScratch, FromZoo, Init, TrainConfig, train
from common.crepe_style import CREPE_KINDS, Vocabulary, crepe_negatives, parse_captions
from common.crepe_style import describe as describe_generator
from papers.sugarcrepe.negclip_mini import (
    COLUMNS, KINDS, SUGARCREPE_GROUPS, TABLE5_FIELDS, TABLE10_FIELDS, TEMPLATE_GROUPS, ModelEntry, ModelScores,
    TextNegativeClipLoss, mean2, score_models, summary, table_csv, table_rows, tables_context, write_output_group)

DATA_FILES = ("papers/aro/models.toml",)
"""Read at run time: where the zoo keeps ARO's released NegCLIP (``aro/negclip``, Table 5's "Released in [49]")."""
ARO_CREPE_STAGE = "papers/sugarcrepe/dvc.yaml:aro-crepe-full-set"
SET_STAGE = "papers/sugarcrepe/dvc.yaml:negclip-full-set"
REFINE_STAGE = "papers/sugarcrepe/dvc.yaml:negclip-full-refine"
RUN_STAGE = "papers/sugarcrepe/dvc.yaml:negclip-full@{run}"
REFINED_RUN_STAGE = "papers/sugarcrepe/dvc.yaml:negclip-full-refined@{run}"
"""The refined runs are a stage group of their own: only they depend on the refinement (Vera, GPU)."""
TABLE_STAGE = "papers/sugarcrepe/dvc.yaml:table5-full"
SET_KIND = "sugarcrepe-negclip-full-set"
TEMPLATES_KIND = "sugarcrepe-templates"
"""``papers.sugarcrepe.mini_templates.KIND``: the ARO+CREPE layout ``load_template_set`` reads."""
RELEASED_NEGCLIP = "aro/negclip"
CHECKPOINT_EVERY = 500
ALL = "all"
"""The scratch run with one kind per caption (Table 5's "Rep + Sw + Neg")."""
SCORERS = ("vera", "grammar")


@dataclass(frozen=True)
class FullRunSpec:
    hard_negative: str | None
    """A kind of ``KINDS``, ``ALL`` (one kind drawn per caption) or None (CLIP without negatives)."""
    scratch: bool = False
    """Trained from a random initialisation of ``scratch_arch`` instead of fine-tuned from ``base``."""
    refined: bool = False
    """Only the (caption, negative) rows adversarial refinement keeps (Table 10)."""


RUNS: dict[str, FullRunSpec] = {
    "clip-ft": FullRunSpec(None),
    **{f"negclip-{k}": FullRunSpec(k) for k in KINDS},
    "scratch-clip": FullRunSpec(None, scratch=True),
    **{f"scratch-negclip-{k}": FullRunSpec(k, scratch=True) for k in (*KINDS, ALL)},
    **{f"scratch-negclip-refined-{k}": FullRunSpec(k, scratch=True, refined=True) for k in KINDS},
}


class NegclipFullError(WorkspaceError):
    """An input of the full NegCLIP runs that cannot be used as given (the message names the file)."""


def _read_json(path: Path, remedy: str):
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise NegclipFullError(f"{path}: missing; {remedy}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DatasetError(f"{path}: not valid JSON ({exc})") from None


# ------------------------------------------------------------------------------------------------------------------
# 1. The ARO+CREPE test set
# ------------------------------------------------------------------------------------------------------------------
def sugarcrepe_positives(manifest: Path) -> tuple[list[tuple[str, str]], Path]:
    """Every distinct (image file name, positive caption) of a SugarCrepe set, in category then example order, and
    its image folder."""
    from common.benchmarks.sugarcrepe import PreparedSet, read_category

    prepared = PreparedSet.load(Path(manifest))
    positives: dict[tuple[str, str], None] = {}
    for path in prepared.files().values():
        for record in read_category(path).values():
            positives.setdefault((record["filename"], record["caption"]), None)
    return list(positives), prepared.image_root


def build_aro_crepe_set(sugarcrepe_manifest: Path, out_dir: Path, seed: int = 0,
                        vocabulary_min_count: int = 1) -> dict:
    """``data/<kind>.json`` ({id: {filename, caption, negative_caption}}) and ``manifest.json`` in ``out_dir``."""
    positives, image_root = sugarcrepe_positives(sugarcrepe_manifest)
    captions = [c for _, c in positives]
    parsed = parse_captions(captions)
    vocabulary = Vocabulary.from_parsed(parsed.values(), vocabulary_min_count)
    negatives = crepe_negatives(captions, CREPE_KINDS, seed, vocabulary, parsed=parsed)
    data: dict[str, dict[str, dict]] = {}
    for kind in CREPE_KINDS:
        data[kind] = {}
        for (filename, caption), negative in zip(positives, negatives[kind]):
            if negative is not None:
                data[kind][str(len(data[kind]))] = {"filename": filename, "caption": caption,
                                                    "negative_caption": negative}
    empty = [k for k, v in data.items() if not v]
    if empty:
        raise DatasetError(f"{sugarcrepe_manifest}: no positive gets a {empty} negative")
    out_dir = Path(out_dir)
    manifest = {
        "data_dir": "data",
        "image_root": Path(os.path.relpath(os.path.abspath(image_root), os.path.abspath(out_dir))).as_posix(),
        "categories": list(CREPE_KINDS), "kind": TEMPLATES_KIND, "profile": "full", "seed": seed,
        "positives": "every distinct (image, caption) of the full SugarCrepe set (build/full/sugarcrepe)",
        "counts": {k: len(v) for k, v in data.items()}, "n_positives": len(positives),
        "no_negative": {k: sum(n is None for n in negatives[k]) for k in CREPE_KINDS},
        "generator": describe_generator(vocabulary),
        "sugarcrepe_manifest_sha256": sha256_file(sugarcrepe_manifest),
    }
    with output_group(out_dir) as staging:
        for kind, examples in data.items():
            write_json_atomic(staging / "data" / f"{kind}.json", examples, indent=1)
        write_json_atomic(staging / "manifest.json", manifest)
    return manifest


# ------------------------------------------------------------------------------------------------------------------
# 2. The training set
# ------------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TrainRow:
    """One caption of NegCLIP's train TSV with its CREPE-style negative of each kind."""

    image: str
    """The COCO file name (resolved under the images folder)."""
    caption: str
    negatives: Mapping[str, str]


def test_image_groups(sugarcrepe_manifest: Path) -> set[str]:
    """COCO ids (``coco:<id>``) of every SugarCrepe test image."""
    from common.blind.crossfit import coco_group

    positives, _ = sugarcrepe_positives(sugarcrepe_manifest)
    try:
        return {coco_group(name) for name, _ in positives}
    except ValueError as exc:
        raise DatasetError(f"{sugarcrepe_manifest}: {exc}") from None


def build_train_set(tsv: Path, images_dir: Path, sugarcrepe_manifest: Path, out_dir: Path, seed: int = 0,
                    vocabulary_min_count: int = 1) -> dict:
    """``rows.jsonl`` and ``manifest.json`` in ``out_dir``: the TSV's captions on non-test images with a negative of
    every kind; errors name the TSV row whose image is missing."""
    from common.blind.crossfit import coco_group
    from common.released_text import read_negclip_tsv

    tsv, images_dir = Path(tsv), Path(images_dir)
    rows = read_negclip_tsv(tsv)
    test_groups = test_image_groups(sugarcrepe_manifest)
    kept, dropped_images = [], set()
    for number, row in enumerate(rows, start=1):
        name = Path(row.filepath).name
        if not (images_dir / name).is_file():
            raise DatasetError(f"{tsv}: row {number} (index {row.index}): image {row.filepath!r} not found under "
                               f"{images_dir}")
        try:
            group = coco_group(name)
        except ValueError as exc:
            raise DatasetError(f"{tsv}: row {number} (index {row.index}): {exc}") from None
        if group in test_groups:
            dropped_images.add(name)
            continue
        kept.append((name, row.title))
    captions = [c for _, c in kept]
    parsed = parse_captions(captions)
    vocabulary = Vocabulary.from_parsed(parsed.values(), vocabulary_min_count)
    negatives = crepe_negatives(captions, KINDS, seed, vocabulary, parsed=parsed)
    lines, without = [], {k: 0 for k in KINDS}
    for i, (name, caption) in enumerate(kept):
        per_kind = {k: negatives[k][i] for k in KINDS}
        for k, v in per_kind.items():
            without[k] += v is None
        if all(v is not None for v in per_kind.values()):
            lines.append(json.dumps({"image": name, "caption": caption, "negatives": per_kind}, ensure_ascii=False))
    if not lines:
        raise DatasetError(f"{tsv}: no caption outside the SugarCrepe test images gets a negative of every kind")
    out_dir = Path(out_dir)
    manifest = {
        "kind": SET_KIND, "profile": "full", "seed": seed, "kinds": list(KINDS),
        "counts": {"tsv_rows": len(rows), "rows_on_test_images": len(rows) - len(kept),
                   "test_images_dropped": len(dropped_images), "rows_without_negative": without,
                   "rows": len(lines), "images": len({json.loads(x)["image"] for x in lines})},
        "generator": describe_generator(vocabulary), "train_tsv_sha256": sha256_file(tsv),
        "sugarcrepe_manifest_sha256": sha256_file(sugarcrepe_manifest),
    }
    with output_group(out_dir) as staging:
        with atomic_path(staging / "rows.jsonl") as tmp:
            Path(tmp).write_text("\n".join(lines) + "\n", encoding="utf-8")
        write_json_atomic(staging / "manifest.json", manifest)
    return manifest


def load_rows(set_dir: Path) -> list[TrainRow]:
    path = Path(set_dir) / "rows.jsonl"
    if not path.is_file():
        raise NegclipFullError(f"{path}: no training set here; run the negclip-full-set stage "
                               "(`python -m papers.sugarcrepe.negclip_full set`)")

    def parse(record: dict) -> TrainRow:
        row = TrainRow(record["image"], record["caption"], record["negatives"])
        if sorted(row.negatives) != sorted(KINDS) or not all(isinstance(v, str) and v for v in row.negatives.values()):
            raise DatasetError(f"needs one non-empty negative of each kind {list(KINDS)}")
        return row

    return list(read_jsonl(path, parse, "a training row"))


# ------------------------------------------------------------------------------------------------------------------
# 3. Adversarial refinement with the paper's scorers
# ------------------------------------------------------------------------------------------------------------------
def refine_rows(rows: Sequence[TrainRow], scorers: Mapping[str, object], bins: int = 50, seed: int = 0) -> dict:
    """Per kind, the row indices Algorithm 1 keeps given each scorer's gaps (score(caption) - score(negative)).

    ``scorers``: two ``common.blind.pretrained.TextScorer`` (Vera, grammar), in that order. Every distinct text is
    scored once per scorer."""
    from common.blind.refine import refine, refine_report

    if len(scorers) != 2:
        raise ValueError(f"Algorithm 1 takes two scorers, got {list(scorers)}")
    texts = list(dict.fromkeys([r.caption for r in rows] + [r.negatives[k] for r in rows for k in KINDS]))
    position = {t: i for i, t in enumerate(texts)}
    scores = {name: np.asarray(s.scores(texts), dtype=np.float64)  # type: ignore[attr-defined]
              for name, s in scorers.items()}
    caption_at = np.array([position[r.caption] for r in rows], dtype=np.int64)
    out = {}
    for kind in KINDS:
        negative_at = np.array([position[r.negatives[kind]] for r in rows], dtype=np.int64)
        gaps = {name: s[caption_at] - s[negative_at] for name, s in scores.items()}
        first, second = gaps.values()
        kept = refine(first, second, bins, seed)
        report = refine_report(first, second, kept)
        out[kind] = {
            "n_in": report.n_in, "n_kept": report.n_kept,
            "blind_accuracy_before": {n: round(float((g > 0).mean()), 4) for n, g in gaps.items()},
            "blind_accuracy_after": {n: round(float((g[kept] > 0).mean()), 4) if kept.size else None
                                     for n, g in gaps.items()},
            "kept": [int(k) for k in kept],
        }
    return out


def build_refined(set_dir: Path, out_path: Path, scorers: Mapping[str, object], bins: int = 50, seed: int = 0) -> dict:
    rows = load_rows(set_dir)
    kinds = refine_rows(rows, scorers, bins, seed)
    record = {"config": {"bins": bins, "seed": seed, "scorers": list(scorers)},
              "fingerprints": {n: getattr(s, "fingerprint", None) for n, s in scorers.items()},
              "set_manifest_sha256": sha256_file(Path(set_dir) / "manifest.json"), "kinds": kinds}
    write_json_atomic(out_path, record, indent=None)
    return record


# ------------------------------------------------------------------------------------------------------------------
# 4. Batches and one run
# ------------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FullRunParams:
    """``params.yaml sugarcrepe.negclip_full``: what every run shares."""

    base: str
    scratch_arch: str
    image_size: int
    finetune: Schedule
    scratch: Schedule
    seed: int = 0
    precision: str = "fp32"

    @classmethod
    def from_params(cls, section: Mapping) -> "FullRunParams":
        return cls(section["base"], section["scratch_arch"], int(section["image_size"]),
                   Schedule.from_params(section["finetune"]), Schedule.from_params(section["scratch"]),
                   int(section["seed"]), section.get("precision", "fp32"))

    def schedule(self, run: str) -> Schedule:
        return self.scratch if _spec(run).scratch else self.finetune


def _spec(run: str) -> FullRunSpec:
    if run not in RUNS:
        from common.errors import unknown_name

        raise unknown_name("run", run, RUNS)
    return RUNS[run]


def run_rows(run: str, set_dir: Path, refined_path: Path | None = None) -> list[TrainRow]:
    """What ``run`` trains on: every row, or (a refined run) the rows ``refined.json`` keeps for its kind."""
    spec = _spec(run)
    rows = load_rows(set_dir)
    if not spec.refined:
        return rows
    if refined_path is None:
        raise NegclipFullError(f"{run} trains on refined rows: give the refinement (refined.json)")
    refined = _read_json(refined_path, "run the negclip-full-refine stage")
    try:
        kept = refined["kinds"][spec.hard_negative]["kept"]
    except (KeyError, TypeError):
        raise DatasetError(f"{refined_path}: no refinement of kind {spec.hard_negative!r}") from None
    if not kept:
        raise NegclipFullError(f"{refined_path}: refinement kept no {spec.hard_negative} negative; {run} has nothing "
                               "to train on")
    if max(kept) >= len(rows):
        raise DatasetError(f"{refined_path}: row {max(kept)} is beyond the {len(rows)} rows of {set_dir}: rerun the "
                           "negclip-full-refine stage on this set")
    return [rows[i] for i in kept]


def run_negatives(run: str, rows: Sequence[TrainRow], seed: int) -> list[str] | None:
    """Each row's negative for ``run``: of its kind, none, or (``ALL``) a kind drawn per row with
    ``default_rng([seed, 2])`` (the same draw for every run and rerun)."""
    kind = _spec(run).hard_negative
    if kind is None:
        return None
    if kind == ALL:
        picks = np.random.default_rng([seed, 2]).integers(0, len(KINDS), len(rows))
        return [r.negatives[KINDS[int(p)]] for r, p in zip(rows, picks)]
    return [r.negatives[kind] for r in rows]


def default_init(run: str, params: FullRunParams) -> Init:
    return FromScratch(params.scratch_arch) if _spec(run).scratch else FromZoo(params.base)


def tokenizer_for(arch: str) -> Callable[[Sequence[str]], torch.Tensor]:
    """The zoo tokenizer of ``arch``, over any sequence of texts (the batches pass lists of rows)."""
    tokenizer = shared_tokenizer_for(arch)
    return lambda texts: tokenizer(list(texts))


def train_full_run(run: str, rows: Sequence[TrainRow], params: FullRunParams, images_dir: Path, out_path: Path, *,
                   init: Init | None = None, world: DistributedContext | None = None, steps: int | None = None,
                   provenance: Mapping | None = None, checkpoint_every: int = CHECKPOINT_EVERY,
                   progress: bool = False):
    """Train ``run`` on ``rows`` (``run_rows``) and write ``out_path`` with its sidecar; ``steps`` overrides the
    schedule's epochs (smoke runs, tests)."""
    spec = _spec(run)
    init = init or default_init(run, params)
    schedule = params.schedule(run)
    files = list(dict.fromkeys(r.image for r in rows))
    where = {name: i for i, name in enumerate(files)}
    images = FileImages(tuple(Path(images_dir) / name for name in files), params.image_size)
    negatives = run_negatives(run, rows, params.seed)
    batches = FileCaptionBatches(images, np.array([where[r.image] for r in rows], dtype=np.int64),
                                 [r.caption for r in rows], [] if negatives is None else [negatives],
                                 tokenizer_for(init.describe()["arch"]), name=f"sugarcrepe-full-{run}",
                                 fields={"negatives": negatives is not None})
    per_epoch = batches.steps_per_epoch(schedule.batch_size)
    total = steps or schedule.epochs * per_epoch
    config = TrainConfig(steps=total, batch_size=schedule.batch_size, lr=schedule.lr,
                         warmup_steps=schedule.warmup_steps, weight_decay=schedule.weight_decay, seed=params.seed,
                         precision=params.precision)
    loss = ClipLoss if spec.hard_negative is None else TextNegativeClipLoss
    provenance = {"run": run, "hard_negative": spec.hard_negative, "scratch": spec.scratch, "refined": spec.refined,
                  "steps_per_epoch": per_epoch, "epochs": total / per_epoch, **(provenance or {})}
    key = {"run": run, "params": asdict(params), "init": init.describe(), "data": batches.describe(),
           "provenance": provenance, "world_size": (world.world_size if world else 1)}
    common = Path(__file__).parents[2] / "common"
    code = [Path(__file__), common / "image_files.py", common / "file_batches.py"]
    return train(config, init, batches, loss, out_path, world=world, provenance=provenance, resume=True,
                 progress=progress, checkpoint_every=checkpoint_every,
                 resume_path=resume_path(f"sugarcrepe-full-{run}", key, code))


# ------------------------------------------------------------------------------------------------------------------
# 5. Scoring and the tables
# ------------------------------------------------------------------------------------------------------------------
FULL_TABLE5_FIELDS = (TABLE5_FIELDS[0], "arch", *TABLE5_FIELDS[1:])
FULL_TABLE10_FIELDS = (TABLE10_FIELDS[0], "arch", *TABLE10_FIELDS[1:])
FAMILY = "sugarcrepe-full"
"""The zoo family the runs' specs are filed under."""
BASELINE = {"finetuned": "clip-ft", "scratch": "scratch-clip"}
"""Each family's baseline (its row's ``training``): gains are measured against it."""


@dataclass(frozen=True)
class FullModelEntry(ModelEntry):
    """A row of the full Tables 5/10: ``ModelEntry`` plus its architecture and family.

    ``training``: 'pretrained', 'clip-ft', 'negclip' (fine-tuned or released), 'scratch-clip' or 'scratch-negclip';
    ``hard_negative``: a kind, 'all', 'released' or 'N/A'; ``negatives``: 'template', 'refined', 'released', 'N/A'.
    """

    arch: str = ""
    family: str = "finetuned"
    """'finetuned' (gains over CLIP-FT) or 'scratch' (gains over CLIP from scratch)."""

    @property
    def label(self) -> str:
        if self.training == "pretrained":
            return f"{self.name} (pretrained)"
        if self.negatives == "released":
            return "NegCLIP, released in [49]"
        if self.training in ("clip-ft", "scratch-clip"):
            return "CLIP fine-tuned" if self.training == "clip-ft" else f"CLIP from scratch ({self.arch})"
        how = "fine-tuned" if self.family == "finetuned" else f"from scratch ({self.arch})"
        kind = "REP + SW + NEG" if self.hard_negative == ALL else self.hard_negative.upper()
        refined = " (refined)" if self.negatives == "refined" else ""
        return f"NegCLIP {how}, {kind}{refined}"


def full_entries(base: str, base_arch: str, scratch_arch: str, models_dir: Path,
                 released: str | None = RELEASED_NEGCLIP, released_arch: str = "") -> list[FullModelEntry]:
    """Every row in the paper's order: pretrained, CLIP-FT, NegCLIP per kind, the released NegCLIP, then the
    scratch runs (Table 5's bottom, then Table 10's refined runs)."""
    rows = [FullModelEntry(base, "pretrained", arch=base_arch)]
    for run, spec in RUNS.items():
        kind = spec.hard_negative
        if spec.scratch:
            training = "scratch-clip" if kind is None else "scratch-negclip"
        else:
            training = "clip-ft" if kind is None else "negclip"
        rows.append(FullModelEntry(
            f"sugarcrepe/full-{run}", training, kind or "N/A",
            "N/A" if kind is None else ("refined" if spec.refined else "template"),
            Path(models_dir) / f"{run}.safetensors", arch=scratch_arch if spec.scratch else base_arch,
            family="scratch" if spec.scratch else "finetuned"))
        if run == f"negclip-{KINDS[-1]}" and released:
            rows.append(FullModelEntry(released, "negclip", "released", "released", arch=released_arch or base_arch))
    return rows


def full_table_rows(entries: Sequence[FullModelEntry], scores: Mapping[str, ModelScores]) -> list[dict]:
    """``negclip_mini.table_rows`` per family, each against its baseline, with the ``arch`` column added."""
    rows = []
    for family, baseline in BASELINE.items():
        members = [e for e in entries if e.family == family]
        if not members:
            continue
        reference = next((e.name for e in members if e.training == baseline), None)
        if reference is None:
            raise ValueError(f"the {family} rows need their baseline ({baseline!r}) row")
        arch = {e.name: e.arch for e in members}
        rows += [{**r, "arch": arch[r["model"]]} for r in table_rows(members, scores, reference)]
    return rows


def _as_mini(rows: Sequence[Mapping]) -> list[dict]:
    """Scratch rows renamed to the mini roles (``summary`` reads 'clip-ft' and 'negclip' rows), kinds only."""
    role = {"scratch-clip": "clip-ft", "scratch-negclip": "negclip"}
    return [{**r, "training": role[r["training"]]} for r in rows
            if r["training"] in role and r["hard_negative"] in ("N/A", *KINDS)]


def full_summary(rows: Sequence[Mapping]) -> dict[str, float]:
    """Table 5's comparison: the mini's eight numbers for the fine-tuned runs, the same prefixed ``scratch_`` for
    the runs from scratch, and the mean gains of the released NegCLIP and of the mixed-kind scratch run."""
    finetuned = [r for r in rows if r["training"] in ("clip-ft", "negclip") and r["negatives"] in ("N/A", "template")]
    scratch = [r for r in rows if r["training"].startswith("scratch-") and r["negatives"] != "refined"]
    out = dict(summary(finetuned))
    out.update({f"scratch_{k}": v for k, v in summary(_as_mini(scratch)).items()})
    extra = {"released": [r for r in rows if r["negatives"] == "released"],
             "scratch_all": [r for r in scratch if r["hard_negative"] == ALL]}
    for name, picked in extra.items():
        if picked:
            out[f"{name}_gain_template_all"] = mean2(picked[0][f"gain_aro_crepe_{g}"] for g in TEMPLATE_GROUPS)
            out[f"{name}_gain_sugarcrepe_all"] = mean2(picked[0][f"gain_sugarcrepe_{g}"] for g in SUGARCREPE_GROUPS)
    return out


def full_table10_summary(rows: Sequence[Mapping]) -> dict[str, float]:
    """Table 10's comparison over the three kinds, from scratch: mean gain over CLIP from scratch on SugarCrepe
    and on the matching ARO+CREPE column, template vs refined negatives (the mini's four keys)."""
    pick = {(r["hard_negative"], r["negatives"]): r for r in rows if r["training"] == "scratch-negclip"}
    missing = [(k, n) for k in KINDS for n in ("template", "refined") if (k, n) not in pick]
    if missing:
        raise ValueError(f"Table 10 needs a scratch NegCLIP row for each of {missing}")
    out = {}
    for negatives in ("template", "refined"):
        out[f"gain_sugarcrepe_{negatives}"] = mean2(pick[k, negatives][f"gain_sugarcrepe_{g}"]
                                                    for k in KINDS for g in SUGARCREPE_GROUPS)
        out[f"gain_template_matching_{negatives}"] = mean2(pick[k, negatives][f"gain_aro_crepe_{k}"] for k in KINDS)
    return out


def write_full_tables(out_dir: Path, rows: Sequence[Mapping], context: Mapping,
                      refined: Mapping[str, Mapping] | None = None) -> dict[str, Path]:
    """Table 5 (every row but the refined runs), its metrics, context and figure; Table 10 (CLIP and NegCLIP from
    scratch on template vs refined negatives) when the refined runs are among the rows."""
    from common.figures import grouped_bars

    table5 = [r for r in rows if r["negatives"] != "refined"]
    paths = {"table5": table_csv(out_dir / "table5.csv", table5, FULL_TABLE5_FIELDS),
             "metrics5": write_json_atomic(out_dir / "table5_metrics.json", full_summary(table5)),
             "context": write_json_atomic(out_dir / "table5_context.json", dict(context))}
    paths["figure5"] = grouped_bars(paths["table5"], COLUMNS, out_dir / "table5.png",
                                    "SugarCrepe Table 5 (full): ARO+CREPE-style negatives vs SugarCrepe")
    if any(r["negatives"] == "refined" for r in rows):
        refined = refined or {}

        def kept(r: Mapping) -> str:
            if r["negatives"] == "N/A":
                return ""
            if r["negatives"] != "refined":
                return "all"
            counts = refined.get(r["hard_negative"], {})
            return f"{counts.get('n_kept', '?')}/{counts.get('n_in', '?')}"

        table10 = [{**r, "negatives_kept": kept(r)} for r in rows
                   if r["training"] == "scratch-clip"
                   or (r["training"] == "scratch-negclip" and r["hard_negative"] in KINDS)]
        paths["table10"] = table_csv(out_dir / "table10.csv", table10, FULL_TABLE10_FIELDS)
        paths["metrics10"] = write_json_atomic(out_dir / "table10_metrics.json", full_table10_summary(rows))
    return paths


def evaluate_full_tables(entries: Sequence[FullModelEntry], sugarcrepe_manifest: Path, aro_crepe_dir: Path,
                         out_dir: Path, engine_config=None, device: str = "cpu", context: Mapping | None = None,
                         refined: Mapping[str, Mapping] | None = None) -> dict[str, Path]:
    """Score every model on ARO+CREPE (``aro_crepe_dir``) and SugarCrepe (``sugarcrepe_manifest``), write the tables,
    metrics, context and figure as one output group."""
    from common.benchmarks.sugarcrepe import PreparedSet
    from papers.sugarcrepe.mini_templates import load_template_set

    scores = score_models(entries, "", load_template_set(Path(aro_crepe_dir)).items(),
                          PreparedSet.load(Path(sugarcrepe_manifest)).items(), engine_config, device, FAMILY)
    rows = full_table_rows(entries, scores)
    full_context = tables_context(context, {"baselines": BASELINE}, entries, scores, refined,
                                  lambda e: {"arch": e.arch, "family": e.family})
    return write_output_group(out_dir, lambda staging: write_full_tables(staging, rows, full_context, refined))


# ------------------------------------------------------------------------------------------------------------------
# Entry points
# ------------------------------------------------------------------------------------------------------------------
def default_dir() -> Path:
    from common.paths import build_root

    return build_root() / "full" / "sugarcrepe_negclip"


def _default_paths() -> dict[str, Path]:
    from common.paths import build_root, data_root

    return {"sugarcrepe": build_root() / "full" / "sugarcrepe" / "manifest.json",
            "aro_crepe": build_root() / "full" / "sugarcrepe_aro_crepe",
            "tsv": data_root() / "negclip" / "train_neg_clip.tsv",
            "images": data_root() / "coco" / "train2014" / "train2014"}


def _cmd_aro_crepe_set(args) -> int:
    from common.params import stage_params

    section = stage_params(args.stage)["sugarcrepe"]["negclip_full"]
    paths = _default_paths()
    manifest = build_aro_crepe_set(Path(args.sugarcrepe or paths["sugarcrepe"]), Path(args.out or paths["aro_crepe"]),
                                   section["seed"], section["vocabulary_min_count"])
    print(json.dumps({k: manifest[k] for k in ("counts", "n_positives", "no_negative")}, indent=2))
    return 0


def _cmd_set(args) -> int:
    from common.params import stage_params

    section = stage_params(args.stage)["sugarcrepe"]["negclip_full"]
    paths = _default_paths()
    manifest = build_train_set(Path(args.tsv or paths["tsv"]), Path(args.images or paths["images"]),
                               Path(args.sugarcrepe or paths["sugarcrepe"]), Path(args.out or default_dir() / "set"),
                               section["seed"], section["vocabulary_min_count"])
    print(json.dumps(manifest["counts"], indent=2))
    return 0


def _cmd_refine(args) -> int:
    from common.blind.pretrained import load_text_scorer
    from common.evaluate import best_device
    from common.params import stage_params

    refine = stage_params(args.stage)["sugarcrepe"]["negclip_full"]["refine"]
    device = args.device or best_device()
    scorers = {name: load_text_scorer(name, device=device) for name in SCORERS}
    out = Path(args.out or default_dir() / "refined.json")
    record = build_refined(Path(args.set or default_dir() / "set"), out, scorers, refine["bins"], refine["seed"])
    print(json.dumps({k: {f: v[f] for f in v if f != "kept"} for k, v in record["kinds"].items()}, indent=2))
    return 0


def _cmd_run(args) -> int:
    from common.params import stage_params

    stage = (REFINED_RUN_STAGE if _spec(args.run).refined else RUN_STAGE).format(run=args.run)
    params = FullRunParams.from_params(stage_params(stage)["sugarcrepe"]["negclip_full"])
    set_dir = Path(args.set or default_dir() / "set")
    rows = run_rows(args.run, set_dir, Path(args.refined or default_dir() / "refined.json"))
    out = Path(args.out or default_dir() / "models" / f"{args.run}.safetensors")
    provenance = {"profile": "full", "set_manifest_sha256": sha256_file(set_dir / "manifest.json")}
    launch_run(args.run, args.device, out, default_dir() / "logs", lambda world, machine: train_full_run(
        args.run, rows, params, Path(args.images or _default_paths()["images"]), out, world=world, steps=args.steps,
        progress=True, provenance={**provenance, **machine}))
    return 0


def _cmd_tables(args) -> int:
    from common import reproducible
    from common.evaluate import best_device, engine_config
    from common.params import stage_params
    from common.paths import RESULTS
    from common.zoo import get_spec

    params = stage_params(TABLE_STAGE)
    section = params["sugarcrepe"]["negclip_full"]
    paths = _default_paths()
    models_dir = Path(args.models or default_dir() / "models")
    refined_path = Path(args.refined or default_dir() / "refined.json")
    entries = full_entries(section["base"], get_spec(section["base"]).arch, section["scratch_arch"], models_dir,
                           RELEASED_NEGCLIP, get_spec(RELEASED_NEGCLIP).arch)
    refined = {k: {f: v[f] for f in v if f != "kept"}
               for k, v in _read_json(refined_path, "run the negclip-full-refine stage")["kinds"].items()}
    sidecars = {e.name: json.loads(e.checkpoint.with_suffix(".json").read_text()) for e in entries
                if e.checkpoint is not None and e.checkpoint.with_suffix(".json").is_file()}
    context = {"profile": "full", "base": section["base"], "scratch_arch": section["scratch_arch"],
               "released": RELEASED_NEGCLIP, **reproducible.describe(),
               "training": {name: {k: s.get(k) for k in ("trainer", "loss", "data", "final_loss", "lr", "steps")}
                            for name, s in sidecars.items()}}
    out = evaluate_full_tables(entries, Path(args.sugarcrepe or paths["sugarcrepe"]),
                               Path(args.aro_crepe or paths["aro_crepe"]), Path(args.out or RESULTS / "sugarcrepe" /
                                                                                "full"),
                               engine_config(params), args.device or best_device(), context, refined)
    for name, path in out.items():
        print(f"{name}: {path}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m papers.sugarcrepe.negclip_full",
                                     description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("aro-crepe-set", help="ARO+CREPE: SugarCrepe's positives with CREPE-style negatives")
    p.add_argument("--sugarcrepe", default=None, help="default: build/full/sugarcrepe/manifest.json")
    p.add_argument("--out", default=None, help="default: build/full/sugarcrepe_aro_crepe")
    p.add_argument("--stage", default=ARO_CREPE_STAGE, help="the DVC stage whose parameters to read")
    p.set_defaults(func=_cmd_aro_crepe_set)
    p = sub.add_parser("set", help="the training set: NegCLIP's train TSV with CREPE-style negatives")
    p.add_argument("--tsv", default=None, help="default: <data>/negclip/train_neg_clip.tsv")
    p.add_argument("--images", default=None, help="default: <data>/coco/train2014/train2014")
    p.add_argument("--sugarcrepe", default=None, help="the test set whose images are dropped from training")
    p.add_argument("--out", default=None, help="default: build/full/sugarcrepe_negclip/set")
    p.add_argument("--stage", default=SET_STAGE, help="the DVC stage whose parameters to read")
    p.set_defaults(func=_cmd_set)
    p = sub.add_parser("refine", help="Algorithm 1 on the training pairs with Vera and the grammar model")
    p.add_argument("--set", default=None, help="default: build/full/sugarcrepe_negclip/set")
    p.add_argument("--out", default=None, help="default: build/full/sugarcrepe_negclip/refined.json")
    p.add_argument("--device", default=None, help="default: cuda when available")
    p.add_argument("--stage", default=REFINE_STAGE, help="the DVC stage whose parameters to read")
    p.set_defaults(func=_cmd_refine)
    p = sub.add_parser("run", help="train one run (fine-tuned or from scratch, with or without negatives)")
    p.add_argument("run", choices=list(RUNS))
    p.add_argument("--device", default="cpu", help="cpu, or cuda (one GPU per torchrun rank)")
    p.add_argument("--set", default=None, help="default: build/full/sugarcrepe_negclip/set")
    p.add_argument("--refined", default=None, help="default: build/full/sugarcrepe_negclip/refined.json")
    p.add_argument("--images", default=None, help="default: <data>/coco/train2014/train2014")
    p.add_argument("--out", default=None, help="default: build/full/sugarcrepe_negclip/models/<run>.safetensors")
    p.add_argument("--steps", type=int, default=None, help="steps instead of the schedule's epochs (smoke runs)")
    p.set_defaults(func=_cmd_run)
    p = sub.add_parser("tables", help="score every model; write Tables 5 and 10")
    p.add_argument("--models", default=None, help="default: build/full/sugarcrepe_negclip/models")
    p.add_argument("--refined", default=None, help="default: build/full/sugarcrepe_negclip/refined.json")
    p.add_argument("--sugarcrepe", default=None, help="default: build/full/sugarcrepe/manifest.json")
    p.add_argument("--aro-crepe", default=None, help="default: build/full/sugarcrepe_aro_crepe")
    p.add_argument("--out", default=None, help="default: results/sugarcrepe/full")
    p.add_argument("--device", default=None, help="default: cuda when available")
    p.set_defaults(func=_cmd_tables)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
