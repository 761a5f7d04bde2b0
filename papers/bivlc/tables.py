"""BiVLC (Miranda et al., NeurIPS 2024 D&B), Tables 2-4 (and Table 5's detectors), one module for both profiles
(``python -m papers.bivlc.tables --profile mini|full``; what differs by profile: the README's stage table, ``Inputs``
and ``FILES``).

Data (full): the snapshot of registry entry ``bivlc/BiVLC``, the ``test`` split's parquet files (``COLUMNS``, each
image a struct {bytes, path}); each image is written once to ``build/full/bivlc/images/<sha256>.<ext>`` (named by
its content, so the cache cannot go stale) and each instance is a ``GroupItem`` (C0/I0 the COCO caption and photo,
C1/I1 the negative caption and generated image) of category ``<type>-<subtype>``.

Scores (``common.evaluation.scoring.group``): the cosine of normalised embeddings, strict comparisons (a tie is wrong and
counted), as the released ``evaluate_BiVLC`` computes them
(``IMirandaM/BiVLC@84f0d175 src/CLIP_fine_tuning/CLIP_utils.py:161`` "Ipos_2T = s_C0_I0 > s_C1_I0"); the engine encodes
every distinct image and caption once. SugarCrepe is read by SugarCrepe's own loader (``common.benchmarks.caption_negatives``:
the set ``build/<profile>/sugarcrepe``, written by SugarCrepe's set stages) and decided strictly
(``common.evaluation.scoring.selection.STRICT``); its column is the micro average over all examples pooled, which is what
BiVLC's SugarCrepe column reports (CLIP 76.56 = 5,751 / 7,512, ``papers.bivlc.released``). The authors pooled the
7,512 rows of their own copy (``IMirandaM/BiVLC@84f0d175 source_data/SugarCrepe/test_SugarCrepe.csv``, the default
of ``IMirandaM/BiVLC@84f0d175 evaluation_SugarCrepe.py:25`` "default='./source_data/SugarCrepe/test_SugarCrepe.csv')",
read whole by ``IMirandaM/BiVLC@84f0d175 evaluation_SugarCrepe.py:59`` "df = pd.read_csv(args.data_path," and pooled
by ``IMirandaM/BiVLC@84f0d175 evaluation_SugarCrepe.py:69`` "checkpoint SUGARCREPE OVERALL: {(np.mean(correct)):.4}"),
whose swap_obj has 246 examples; SugarCrepe's release (``RAIVNLab/sugar-crepe@0047054b data/swap_obj.json``) has 245
(the COCO image 000000310622.jpg's "A West 32nd sign under a Korea Way road sign." is not in it), so the full column
is over 7,511 examples (``context.json``'s ``sugarcrepe_examples``).

Detectors (Sec. 5.3, ``papers.bivlc.detection``, ``papers.bivlc.detector_heads``): per ``DetectorSpec``, heads on
the frozen encoder's raw tower outputs. In the full profile the heads are the authors' released ones (rows
``clipdet``, ``trohn-img-det``: imirandam/CLIP_Detector and imirandam/CLIP_TROHN-Img_Detector, compared instance by
instance with their released outputs
``IMirandaM/BiVLC@84f0d175 src/Detectors/results/BiVLC_Classifier_CORRECT_CLIP_baseline.csv``
and ``IMirandaM/BiVLC@84f0d175 src/Detectors/results/BiVLC_Classifier_CORRECT_CLIP_TROHN-Img.csv``) or trained here
(``ft-clipdet``, ``ft-trohn-img-det``: ``DetectorLoss.head`` saved by ``papers.bivlc.detectors``); in the mini
profile, ``clipdet`` and ``trohn-img-det`` (``mini_detectors``).

Outputs in ``results/bivlc/<profile>/``, one output group: the README's "Outputs and notebooks"; their columns:
``FILES`` and the ``*_FIELDS`` below.

A model that cannot be loaded stops the stage with the zoo's message; with ``skip_unavailable`` (full) it is left out
and named in ``context.json``.
"""
from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from common.benchmarks.caption_negatives import PreparedSet
from common.errors import WorkspaceError
from common.evaluation.engine import Engine
from common.evaluation.evaluate import best_device, engine_config
from common.evaluation.scoring import group, selection
from common.evaluation.scoring.group import GroupResult
from common.evaluation.scoring.selection import STRICT, SelectionResult
from common.files.io import output_group, sha256_file, staged_to_final, write_csv_atomic, write_json_atomic
from common.files.tasks import DatasetError, GroupItem, ImageToTextItem
from common.paths import RESULTS, build_dir, build_root, data_root
from common.pipeline import reproducible
from common.pipeline.cli import print_written
from common.pipeline.inputs import full_inputs as read_full_inputs
from common.pipeline.params import own_section
from common.pipeline.profile_stage import pinned_cpu, profile_stage_parser
from common.registry.errors import FetchError, RegistryError
from common.registry.fetch import quiet_fetch
from common.training.records import training_context
from common.zoo import ModelFactory, create_model as zoo_create, get_spec
from common.zoo.available import each_model
from common.zoo.trained import served
from papers.bivlc import findings
from papers.bivlc.detection import FINER, METRICS, head_run, score_detectors
from papers.bivlc.detector_heads import compare_with_released, load_head, probabilities, tower_agreement, tower_outputs
from papers.bivlc.parquet_shards import cache_image, image_bytes, parquet_records, split_files
from papers.bivlc.released_csv import read_released_outputs
from papers.bivlc.runs import DETECTOR_ENCODERS, RUNS
from papers.bivlc.sets_mini import CATEGORIES as MINI_CATEGORIES, load_test_items

DATA_FILES = ("papers/bivlc/models.toml", "papers/bivlc/sources.toml")
"""Read at run time (``common.pipeline.stage_deps``): the zoo entries of ``bivlc.full.models``' names (BiVLC's released
fine-tunes and re-trainings; ARO's NegCLIP is in the shared ``common/zoo/models.toml``) and, for a model that cannot
be loaded, the note of its download entry."""
SOURCE = "bivlc/BiVLC"
SPLIT = "test"
COLUMNS = ("image", "caption", "negative_caption", "negative_image", "type", "subtype")
TYPES = ("replace", "swap", "add")
CATEGORIES = ("replace-obj", "replace-att", "replace-rel", "swap-obj", "swap-att", "add-obj", "add-att")
"""As ``papers.bivlc.released.CATEGORIES`` (a test checks they agree; not imported, so that this stage does not
depend on the audit's code)."""
MAIN = ("I2T", "T2I", "group")
TABLE2_FIELDS = ("row", "model", "label", *MAIN, *FINER, "sugarcrepe", "n", "ties")
TABLE4_KEYS = (*TYPES, *CATEGORIES)
TABLE4_FIELDS = ("row", "model", "label", *(f"{k}_{m}" for k in TABLE4_KEYS for m in (*MAIN, "n")))
"""One row per model, wide as the mini table and the audit read it: per type, then per category, I2T/T2I/group
(points) and n (a category the split lacks is left empty)."""
TABLE5_FIELDS = ("row", "encoder", "label", "heads", "text_detection", "image_detection", *MAIN, *FINER, "sugarcrepe",
                 "n", "text_ties", "image_ties", "released_max_abs_diff", "released_instances_differing")
"""``heads``: "released" (the authors' files) or "trained here"; ``released_*``: against the authors' per-instance
outputs of the same heads (largest |P difference| over both towers, instances whose decisions differ; empty when the
row names none or it could not be fetched)."""
PREDICTION_FIELDS = ("item_id", "type", "subtype", "sim_C0_I0", "sim_C0_I1", "sim_C1_I0", "sim_C1_I1",
                     "text_score_i0", "text_score_i1", "image_score_c0", "image_score_c1", "text_score",
                     "image_score", "group_score")
"""The released ``results/BiVLC_<model>.csv`` columns (their ``sim_*`` names), so ``released.py`` rescores them;
the scores are ``detection.METRICS``' decisions, in that order."""
MINI_TABLE2_FIELDS = ("row", "model", "label", "kind", "sugarcrepe", *MAIN, *FINER, "n")
MINI_TABLE4_FIELDS = ("row", "model", "label", *(f"{t}_{m}" for t in TYPES for m in MAIN))
MINI_TABLE5_FIELDS = ("row", "model", "label", "text_detection", "image_detection", *MAIN, "sugarcrepe")
"""The mini profile's columns: the full ones less what the mini world has no use for (ties, counts, the released
heads' agreement; its add instances are ambiguous, so Table 4 is per type only) and the row's kind."""
PLOT_FIELDS = ("bar", "model", "metric", "value")
SUMMARY_MAX = 12
SUMMARY_KEYS: tuple[str, ...] = (
    "clip_i2t", "clip_t2i", "clip_group", "clip_i2t_minus_t2i_ci_low", "trohn_img_t2i", "trohn_img_group",
    "trohn_img_gap_closed", "trohn_text_sugarcrepe", "clip_coco_group", "clipdet_image_detection",
    "clipdet_i2t", "clipdet_group")
"""The mini profile's DVC metrics (in points but for the share of CLIP's I2T - T2I gap closed); the full profile's
are ``summary``'s (every row's group first)."""
GAIN_ROWS = ("trohn-img", "ft-trohn-img")
"""The TROHN-Img rows ``comparisons.json`` pairs with CLIP (``<row>_minus_clip_t2i``, ``..._group``): the released
fine-tune and this workspace's re-training."""
PAPER_VS_CODE: dict[str, str] = {
    "rule": ("code (evaluate_BiVLC, "
             'IMirandaM/BiVLC@84f0d175 src/CLIP_fine_tuning/CLIP_utils.py:161 "Ipos_2T = s_C0_I0 > s_C1_I0"): '
             "s_C0_I0 > s_C1_I0 etc. on normalised embeddings, strict; the same here (common.evaluation.scoring.group), ties "
             "counted in table2.csv"),
    "precision": "code: open_clip models on a GPU in fp32 (no autocast); here the engine's precision "
                 "(params.yaml engine.precision)",
    "preprocess": "code: open_clip's evaluation transform of each model; the same here (the zoo's transform)",
    "sugarcrepe": ("code ("
                   'IMirandaM/BiVLC@84f0d175 src/CLIP_fine_tuning/CLIP_utils.py:133 "pos_score.item() > neg_score.item()"): '
                   "pos_score > neg_score per example, "
                   "the accuracy over the 7,512 rows of the authors' copy "
                   "(IMirandaM/BiVLC@84f0d175 source_data/SugarCrepe/test_SugarCrepe.csv, swap_obj 246) pooled "
                   '(IMirandaM/BiVLC@84f0d175 evaluation_SugarCrepe.py:69 "(np.mean(correct)):.4"); here the same '
                   "rule (SugarCrepe's loader, STRICT, micro average) over SugarCrepe's release, 7,511 examples (its "
                   "swap_obj.json has 245: 000000310622.jpg's 'A West 32nd sign under a Korea Way road sign.' is not "
                   "in it)"),
    "detectors": ('code (IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_evaluation_BiVLC.py:23-48 "x = self.classifier(x)"): '
                  "Linear(512, 1) on the tower's raw (unnormalised) output, fp32; the same here "
                  "(papers.bivlc.detector_heads), for the released heads and those trained here (DetectorLoss, "
                  "raw_features); the decision rule is the released detector evaluation's "
                  '(IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_evaluation_BiVLC.py:172 "np.round(i0) == 0"; '
                  "papers.bivlc.detection)"),
}


class BivlcTablesError(WorkspaceError):
    """Nothing to score, an unusable snapshot, scores that do not line up with the items, or a mini option given to
    the full profile (or the reverse)."""


# -- Data ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BivlcSet:
    """The test split as group items, with what identifies the files it came from."""

    items: tuple[GroupItem, ...]
    files: tuple[Path, ...]
    sha256: dict[str, str]
    image_dir: Path

    def counts(self) -> dict[str, int]:
        found = [it.group for it in self.items]
        return {c: found.count(c) for c in CATEGORIES if c in found}

    def capped(self, cap: int) -> "BivlcSet":
        """The first ``cap`` instances of each category, in file order (``params.yaml full_inputs.cap``; every row
        was read and checked)."""
        seen: dict[str, int] = {}
        kept = []
        for it in self.items:
            seen[it.group] = seen.get(it.group, 0) + 1
            if seen[it.group] <= cap:
                kept.append(it)
        return BivlcSet(tuple(kept), self.files, self.sha256, self.image_dir)


def _text(where: str, column: str, value) -> str:
    if not isinstance(value, str) or not value.strip():
        raise DatasetError(f"{where}: column {column!r} is {value!r:.40}, not a caption")
    return value


def load_bivlc(snapshot: Path, image_dir: Path, expected: int | None = None) -> BivlcSet:
    """Every instance of the snapshot's test split, in file order, as a ``GroupItem``; ``expected`` (None: any) is
    the number of instances the split must have (``params.yaml bivlc.full.n_instances``: 2,933 as released)."""
    snapshot = Path(snapshot)
    if not snapshot.is_dir():
        raise BivlcTablesError(f"{snapshot}: no BiVLC snapshot here; fetch it with `python -m common fetch {SOURCE}`")
    files = split_files(snapshot, SPLIT, BivlcTablesError)
    items: list[GroupItem] = []
    for path in files:
        for where, record in parquet_records(path, COLUMNS):
            images = (cache_image(image_bytes(where, "image", record["image"]), image_dir),
                      cache_image(image_bytes(where, "negative_image", record["negative_image"]), image_dir))
            captions = (_text(where, "caption", record["caption"]),
                        _text(where, "negative_caption", record["negative_caption"]))
            kind, sub = record["type"], record["subtype"]
            category = f"{str(kind).strip().lower()}-{str(sub).strip().lower()}"
            if category not in CATEGORIES:
                raise DatasetError(f"{where}: unknown category type={kind!r} subtype={sub!r} (known: "
                                   f"{', '.join(CATEGORIES)})")
            items.append(GroupItem(f"bivlc-{len(items):04d}", category, images, captions, origin=where))
    if not items:
        raise DatasetError(f"{Path(snapshot)}: the {SPLIT} split has no rows")
    if expected is not None and len(items) != expected:
        raise DatasetError(f"{Path(snapshot)}: {len(items)} instances in the {SPLIT} split, expected {expected} "
                           f"(params.yaml bivlc.full.n_instances)")
    return BivlcSet(tuple(items), tuple(files), {p.name: sha256_file(p) for p in files}, Path(image_dir))


# -- Scoring ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DetectorSpec:
    """One row of Table 5: a frozen encoder (zoo model), its two heads and ``released_outputs``, the registry key of
    the authors' per-instance outputs of these heads (empty: none), compared with what is recomputed here."""

    encoder: str
    image_head: Path
    text_head: Path
    label: str = ""
    released_outputs: str = ""

    @classmethod
    def from_params(cls, section: Mapping) -> "DetectorSpec":
        return cls(str(section["encoder"]), head_path(section["image_head"]), head_path(section["text_head"]),
                   str(section.get("label", "")), str(section.get("released_outputs", "")))


def head_path(where: str | Path) -> Path:
    """``data:<path>`` (a fetched file: the released heads) and ``build:<path>`` against the workspace roots; any
    other path as given (relative to the repository root, where the stage runs)."""
    scheme, sep, rel = str(where).partition(":")
    roots = {"data": data_root, "build": build_root}
    return roots[scheme]() / rel if sep and scheme in roots else Path(where)


def shown_path(path: Path) -> str:
    """A head file as ``context.json`` names it: ``data:<path>`` / ``build:<path>`` under those roots, else as given
    (the context must not name this machine's folders)."""
    for scheme, root in (("data", data_root()), ("build", build_root())):
        if Path(path).is_absolute() and Path(path).is_relative_to(root):
            return f"{scheme}:{Path(path).relative_to(root).as_posix()}"
    return str(path)


@dataclass(frozen=True)
class DetectorProbabilities:
    """P(synthetic) of each instance's (natural, synthetic) image and caption, and of SugarCrepe's (positive,
    negative) captions."""

    image: np.ndarray
    text: np.ndarray
    sugarcrepe_text: np.ndarray | None = None


@dataclass(frozen=True)
class ModelEntry:
    """A table row (``row``: the audit's key); ``checkpoint``: the weights trained here, if any."""

    row: str
    name: str
    label: str
    kind: str = ""
    checkpoint: Path | None = None


@dataclass(frozen=True)
class Scored:
    row: str
    model: str
    label: str
    bivlc: GroupResult
    sugarcrepe: SelectionResult | None
    fingerprint: str
    kind: str = ""
    checkpoint: Path | None = None
    ambiguous: GroupResult | None = None
    """The mini world's add instances (ambiguous by construction), scored only in Table 4's add columns."""


@dataclass(frozen=True)
class ScoredDetector:
    row: str
    spec: DetectorSpec
    probabilities: DetectorProbabilities
    fingerprint: str
    heads: dict = field(default_factory=dict)
    released: dict | None = None
    """The comparison with the authors' per-instance outputs (``_released_comparison``), when the row names them."""


def zoo_entries(models: Mapping[str, str]) -> list[ModelEntry]:
    """The full profile's rows (row -> zoo model): label and kind from the zoo entry, and the weights of a
    re-training here (a ``build:`` checkpoint). A model the zoo does not register (a stand-in) has neither."""
    out = []
    for row, name in models.items():
        try:
            spec = get_spec(name)
        except KeyError:
            out.append(ModelEntry(row, name, name))
            continue
        trained_here = spec.checkpoint_path() if (spec.checkpoint or "").startswith("build:") else None
        out.append(ModelEntry(row, name, spec.label, "pretrained" if spec.finetuned_from is None else "finetune",
                              trained_here))
    return out


def entries_for(base: str, family: Sequence[str], negclip: str, models_dir: Path) -> list[ModelEntry]:
    """The mini profile's rows: CLIP (the base), the rest of the family, ARO's mini NegCLIP, then the three fine-tunes
    (best weights)."""
    rows = [ModelEntry("clip", base, f"CLIP ({base}, the mini family's ViT-B/32)", "pretrained")]
    rows += [ModelEntry(name.replace("/", "-"), name, f"{name} (the mini family)", "pretrained")
             for name in family if name != base]
    rows.append(ModelEntry("negclip", negclip, f"NegCLIP ({negclip}: ARO's mini NegCLIP of {base})", "negclip"))
    rows += [ModelEntry(run, f"bivlc/mini-{run}", spec.label, "finetune",
                        Path(models_dir) / f"{run}.best.safetensors") for run, spec in RUNS.items()]
    return rows


def trained_here(entries: Sequence[ModelEntry], run_arch: str) -> ModelFactory:
    """The mini profile's model factory: a zoo model as the zoo builds it, a run's weights (``checkpoint``) as
    ``run_arch``, by the entries' zoo names (the detectors' encoders are rows too)."""
    by_name = {e.name: e for e in entries}

    def create(name: str, device: str = "cpu"):
        entry = by_name[name]
        arch = run_arch if entry.checkpoint else get_spec(name).arch
        return served(entry, arch, device, family="bivlc-mini")

    return create


def _check_order(row: str, ids: Sequence[str], items: Sequence) -> None:
    if list(ids) != [it.item_id for it in items]:
        raise BivlcTablesError(f"row {row!r}: the outcomes are not in the items' order")


def score_models(entries: Sequence[ModelEntry], items: Sequence[GroupItem],
                 sugarcrepe: Sequence[ImageToTextItem] | None = None, engine_config=None, device: str = "cpu",
                 create: ModelFactory = zoo_create, skip_unavailable: bool = False,
                 ambiguous: Sequence[GroupItem] = ()) -> tuple[list[Scored], dict[str, str]]:
    """Every row on BiVLC (and on the ambiguous instances and SugarCrepe, when given), one model loaded at a time."""
    scored, skipped = [], {}
    by_row = {e.row: e for e in entries}
    for row, name, model in each_model({e.row: e.name for e in entries}, skipped, create=create, device=device,
                                       skip_unavailable=skip_unavailable, what="BiVLC row"):
        engine = Engine(model, engine_config)
        result = group.evaluate(engine, items)
        _check_order(row, [o.item_id for o in result.outcomes], items)
        unclear = group.evaluate(engine, ambiguous) if ambiguous else None
        sc = None
        if sugarcrepe is not None:
            sc = selection.evaluate(engine, sugarcrepe, STRICT)
            _check_order(row, [o.item_id for o in sc.outcomes], sugarcrepe)
        entry = by_row[row]
        scored.append(Scored(row, name, entry.label, result, sc, model.fingerprint, entry.kind, entry.checkpoint,
                             unclear))
        del model, engine
    return scored, skipped


def _released_comparison(spec: DetectorSpec, probs: DetectorProbabilities, fetch: Callable[[str], Path]) -> dict | None:
    """The recomputed probabilities against the authors' released ones (``released_outputs``); a file that cannot be
    fetched is recorded, not fatal (the comparison is a check, the scores stand without it)."""
    if not spec.released_outputs:
        return None
    try:
        path = fetch(spec.released_outputs)
    except (FetchError, RegistryError) as exc:
        return {"file": spec.released_outputs, "comparable": False,
                "why": f"not fetched: {(str(exc).splitlines() or [''])[0][:200]}"}
    image, text = read_released_outputs(path)
    return {"file": spec.released_outputs, "sha256": sha256_file(path),
            **compare_with_released(probs.image, probs.text, image, text)}


def score_detectors_rows(detectors: Mapping[str, DetectorSpec], items: Sequence[GroupItem],
                         sugarcrepe: Sequence[ImageToTextItem] | None = None, device: str = "cpu",
                         create: ModelFactory = zoo_create, skip_unavailable: bool = False,
                         fetch: Callable[[str], Path] = quiet_fetch
                         ) -> tuple[list[ScoredDetector], dict[str, str]]:
    """Every detector row's heads on its encoder's raw tower outputs, checked against the released towers and
    outputs where there are some; a missing head file is an error."""
    out, skipped = [], {}
    encoders = {row: spec.encoder for row, spec in detectors.items()}
    for row, _name, model in each_model(encoders, skipped, create=create, device=device,
                                        skip_unavailable=skip_unavailable, what="BiVLC detector row"):
        spec = detectors[row]
        heads = {"image": load_head(spec.image_head, "image"), "text": load_head(spec.text_head, "text")}
        # both heads on the towers' raw outputs (``detector_heads.tower_outputs``: what the authors' probes read)
        img, txt = tower_outputs(model, [i for it in items for i in it.images],
                                 [c for it in items for c in it.captions])
        sc = None
        if sugarcrepe is not None:
            _, feats = tower_outputs(model, (), [c for it in sugarcrepe for c in it.captions[:2]])
            sc = probabilities(heads["text"], feats).reshape(len(sugarcrepe), 2)
        probs = DetectorProbabilities(probabilities(heads["image"], img).reshape(len(items), 2),
                                      probabilities(heads["text"], txt).reshape(len(items), 2), sc)
        described = {k: {"file": shown_path(p), "sha256": sha256_file(p), "kind": "released" if heads[k].tower_state
                         else "trained here", "tower_agreement": tower_agreement(heads[k], model.model)}
                     for k, p in (("image", spec.image_head), ("text", spec.text_head))}
        out.append(ScoredDetector(row, spec, probs, model.fingerprint, described,
                                  _released_comparison(spec, probs, fetch)))
        del model
    return out, skipped


# -- Tables -------------------------------------------------------------------------------------------------------
def _pct(x: float) -> float:
    return round(100.0 * float(x), 2)


def table2_row(s: Scored) -> dict:
    acc = s.bivlc.accuracy()
    if s.sugarcrepe is not None and not s.sugarcrepe.outcomes:
        raise BivlcTablesError("SugarCrepe: no examples scored")
    return {"row": s.row, "model": s.model, "label": s.label, "kind": s.kind,
            **{m: _pct(acc[m]) for m in (*MAIN, *FINER)},
            # the accuracy over all examples pooled (micro average): BiVLC's SugarCrepe column
            "sugarcrepe": "" if s.sugarcrepe is None else _pct(np.mean([o.correct for o in s.sugarcrepe.outcomes])),
            "n": len(s.bivlc.outcomes), "ties": sum(s.bivlc.tie_counts().values())}


def table4_row(s: Scored, keys: Sequence[str] = TABLE4_KEYS) -> dict:
    """Per type or category of ``keys``: I2T/T2I/group in points and n (empty where no instance has that key), over
    every instance scored, the ambiguous ones included (the mini world's add)."""
    outcomes = [*s.bivlc.outcomes, *(s.ambiguous.outcomes if s.ambiguous is not None else ())]
    row = {"row": s.row, "model": s.model, "label": s.label}
    for key in keys:
        # a category's type: ``replace-obj`` (full) and ``replace_obj`` (mini) are both ``replace``
        chosen = [o for o in outcomes if key in (o.group, re.split(r"[-_]", o.group)[0])]
        acc = s.bivlc.accuracy(chosen) if chosen else {}
        row.update({f"{key}_{m}": _pct(acc[m]) if chosen else "" for m in MAIN})
        row[f"{key}_n"] = len(chosen) if chosen else ""
    return row


def table5_row(d: ScoredDetector) -> dict:
    p = d.probabilities
    outcome = score_detectors(p.image, p.text)
    acc = outcome.accuracy()
    # SugarCrepe: the positive caption must look strictly more natural than the negative one (the released SugarCrepe
    # detector evaluation reads text predictions only, its images being all natural:
    # IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_evaluation_SugarCrepe.py:119-120 "for c0, c1 in
    # zip(positives['text_pred'], negatives['text_pred']): if (c0 < c1):")
    sc = "" if p.sugarcrepe_text is None else _pct(np.mean(p.sugarcrepe_text[:, 0] < p.sugarcrepe_text[:, 1]))
    kinds = sorted({h["kind"] for h in d.heads.values()}) if d.heads else ["trained here"]
    compared = d.released if d.released and d.released.get("comparable") else None
    return {"row": d.row, "encoder": d.spec.encoder, "model": d.spec.encoder, "label": d.spec.label or d.row, "heads": " + ".join(kinds),
            "text_detection": _pct(outcome.text_detection), "image_detection": _pct(outcome.image_detection),
            **{m: _pct(acc[m]) for m in (*MAIN, *FINER)}, "sugarcrepe": sc, "n": len(p.image),
            "text_ties": outcome.text_ties, "image_ties": outcome.image_ties,
            "released_max_abs_diff": "" if compared is None else
            max(compared["image_max_abs_diff"], compared["text_max_abs_diff"]),
            "released_instances_differing": "" if compared is None else compared["instances_with_a_decision_differing"]}


def summary(rows2: Sequence[Mapping], rows5: Sequence[Mapping] = ()) -> dict[str, float]:
    """DVC metrics, at most ``SUMMARY_MAX``: each model row's group, each detector row's group, then the model rows'
    T2I (the paper's finding: T2I lags I2T) while room is left."""
    out: dict[str, float] = {}
    candidates = [(f"{r['row']}_group", r["group"]) for r in (*rows2, *rows5)]
    candidates += [(f"{r['row']}_t2i", r["T2I"]) for r in rows2]
    for key, value in candidates:
        key = key.replace("-", "_")
        if len(out) < SUMMARY_MAX and key not in out:
            out[key] = float(value)
    return out


def comparisons(scored: Sequence[Scored], rows2: Sequence[Mapping], rows5: Sequence[Mapping] = (),
                compared: Sequence[str] | None = None) -> dict:
    """``comparisons.json`` (``papers.bivlc.findings.compare``): the scores of each row of ``compared`` (default:
    every row but CLIP); Finding 1's "every pretrained model" ranges over the rows of kind ``pretrained``."""
    runs = [s.row for s in scored if s.row != findings.BASE] if compared is None else compared
    return findings.compare({r["row"]: r for r in rows2}, {s.row: s.bivlc for s in scored},
                            {r["row"]: r for r in rows5}, runs=runs,
                            pretrained=[s.row for s in scored if s.kind == "pretrained"], gains=GAIN_ROWS)


# -- What each profile writes -------------------------------------------------------------------------------------
MINI_RULES = {
    "bivlc": "strict '>' in every comparison (Eqs. 1-3; the authors' evaluate_BiVLC): a tie is wrong",
    "ambiguous": "add_obj / add_att instances: the negative scene also shows the caption; scored only in table4's "
                 "add columns",
    "sugarcrepe": "strict (SugarCrepe's rule), micro average over all examples (BiVLC's column)",
    "detectors": "P(synthetic) = sigmoid(head(the tower's raw output)); judged synthetic above 0.5 (0.5 is natural, "
                 "as np.round); SugarCrepe: the positive's P(synthetic) strictly below the negative's (the released "
                 "code reads text predictions only); retrieval by papers.bivlc.detection (no image-caption "
                 "similarity)"}


def mini_record(scored: Sequence[Scored], detectors: Sequence[ScoredDetector], skipped: Mapping[str, str]) -> dict:
    """The mini context's record of what was scored: ties and each model's fingerprint and weights."""
    return {"ties": {s.row: s.bivlc.tie_counts() for s in scored},
            "models": {s.row: {"model": s.model, "label": s.label, "kind": s.kind, "fingerprint": s.fingerprint,
                               "checkpoint_sha256": sha256_file(s.checkpoint) if s.checkpoint else None}
                       for s in scored}}


def full_record(scored: Sequence[Scored], detectors: Sequence[ScoredDetector], skipped: Mapping[str, str]) -> dict:
    """The full context's record: each model's fingerprint and ties, each detector's heads and their agreement with
    the released outputs, the rows left out and where the authors' code and this differ."""
    return {
        "models": {s.row: {"model": s.model, "label": s.label, "fingerprint": s.fingerprint,
                           "ties": s.bivlc.tie_counts(), "n": len(s.bivlc.outcomes),
                           "sugarcrepe_ties": None if s.sugarcrepe is None else s.sugarcrepe.ties} for s in scored},
        "detectors": {d.row: {"encoder": d.spec.encoder, "fingerprint": d.fingerprint, "heads": d.heads,
                              "features": "the towers' raw outputs (encode_*(normalize=False)), fp32",
                              "threshold": "p > 0.5 is synthetic (np.round: 0.5 is natural)",
                              "released_outputs": d.released} for d in detectors},
        "skipped": dict(skipped),
        "paper_vs_code": PAPER_VS_CODE,
    }


@dataclass(frozen=True)
class ProfileFiles:
    """What a profile's files hold: the tables' columns, Table 4's keys (the mini world has types only), the plot
    (mini), the per-instance predictions (full), the DVC metrics and the context's record of what was scored."""

    table2_fields: tuple[str, ...]
    table4_keys: tuple[str, ...]
    table4_fields: tuple[str, ...]
    table5_fields: tuple[str, ...]
    plot: bool
    predictions: bool
    summary: Callable[[Mapping, Sequence[Mapping], Sequence[Mapping]], dict]
    record: Callable[[Sequence[Scored], Sequence[ScoredDetector], Mapping[str, str]], dict]


FILES = {
    "mini": ProfileFiles(MINI_TABLE2_FIELDS, TYPES, MINI_TABLE4_FIELDS, MINI_TABLE5_FIELDS, plot=True,
                         predictions=False, summary=lambda metrics, rows2, rows5: {k: metrics[k] for k in SUMMARY_KEYS},
                         record=mini_record),
    "full": ProfileFiles(TABLE2_FIELDS, TABLE4_KEYS, TABLE4_FIELDS, TABLE5_FIELDS, plot=False, predictions=True,
                         summary=lambda metrics, rows2, rows5: summary(rows2, rows5), record=full_record),
}


def write_outputs(out_dir: Path, profile: str, scored: Sequence[Scored], detectors: Sequence[ScoredDetector],
                  context: Mapping, compared: Sequence[str] | None = None) -> dict[str, Path]:
    """table2.csv, table4.csv, table5.csv, comparisons.json, summary.json, context.json and the profile's own files
    (``FILES``: table2_plot.csv, predictions/) as one output group."""
    files = FILES[profile]
    rows2 = [table2_row(s) for s in scored]
    rows5 = [table5_row(d) for d in detectors]
    metrics = comparisons(scored, rows2, rows5, compared)
    out_dir = Path(out_dir)
    with output_group(out_dir) as staging:
        paths = {
            "table2": write_csv_atomic(staging / "table2.csv", rows2, files.table2_fields),
            "table4": write_csv_atomic(staging / "table4.csv", [table4_row(s, files.table4_keys) for s in scored],
                                       files.table4_fields),
            "table5": write_csv_atomic(staging / "table5.csv", rows5, files.table5_fields),
            "comparisons": write_json_atomic(staging / "comparisons.json", metrics),
            "summary": write_json_atomic(staging / "summary.json", files.summary(metrics, rows2, rows5)),
            "context": write_json_atomic(staging / "context.json", dict(context)),
        }
        if files.plot:
            plot = [{"bar": f"{r['row']} {m}", "model": r["row"], "metric": m, "value": r[m]}
                    for r in rows2 for m in ("sugarcrepe", *MAIN)]
            paths["table2_plot"] = write_csv_atomic(staging / "table2_plot.csv", plot, PLOT_FIELDS)
        if files.predictions:
            predictions = staging / "predictions"
            for s in scored:
                rows = [dict(zip(PREDICTION_FIELDS, (o.item_id, *o.group.split("-"),
                                                     *(repr(v) for pair in o.similarities for v in pair),
                                                     *(o.decisions[m] for m in METRICS)), strict=True))
                        for o in s.bivlc.outcomes]
                write_csv_atomic(predictions / f"{s.model.replace('/', '__')}.csv", rows, PREDICTION_FIELDS)
            paths["predictions"] = predictions
    return {k: staged_to_final(p, staging, out_dir) for k, p in paths.items()}


# -- Inputs: what each profile scores -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Inputs:
    """One stage's inputs; ``compared``: the rows whose scores ``comparisons.json`` lists (None: all but CLIP)."""

    profile: str
    entries: tuple[ModelEntry, ...]
    items: tuple[GroupItem, ...]
    sugarcrepe: tuple[ImageToTextItem, ...] | None
    detectors: Mapping[str, DetectorSpec]
    context: Mapping
    create: ModelFactory = zoo_create
    skip_unavailable: bool = False
    ambiguous: tuple[GroupItem, ...] = ()
    compared: tuple[str, ...] | None = None


DETECTOR_ROWS = {"clip": ("clipdet", "CLIPDet (heads on the base's frozen towers)"),
                 "trohn-img": ("trohn-img-det", "CLIPTROHN-Img/Det (heads on the TROHN-Img run's frozen towers)")}
"""The mini profile's detector rows by encoder row: Table 5's row id and label."""


def mini_detectors(entries: Sequence[ModelEntry], detectors_dir: Path) -> dict[str, DetectorSpec]:
    """The mini profile's detector rows: the heads ``mini-detectors`` trained on the towers of each row of
    ``DETECTOR_ENCODERS`` (``<encoder>-<tower>.loss.safetensors``), in the rows' order."""
    return {DETECTOR_ROWS[e.row][0]: DetectorSpec(e.name, Path(detectors_dir) / f"{e.row}-image.loss.safetensors",
                                                  Path(detectors_dir) / f"{e.row}-text.loss.safetensors",
                                                  DETECTOR_ROWS[e.row][1])
            for e in entries if e.row in DETECTOR_ENCODERS}


def mini_inputs(entries: Sequence[ModelEntry], run_arch: str, test_dir: Path, sugarcrepe: Sequence[ImageToTextItem],
                detectors: Mapping[str, DetectorSpec], context: Mapping | None = None) -> Inputs:
    """The mini profile: the rendered benchmark (its unambiguous and ambiguous instances), the mini family, NegCLIP
    and the runs (``run_arch`` their architecture), SugarCrepe's mini set and the heads trained here."""
    items, ambiguous = load_test_items(Path(test_dir))
    known = {**dict(context or {}), "rules": MINI_RULES,
             "n": {"bivlc": len(items), "ambiguous": len(ambiguous), "sugarcrepe": len(sugarcrepe),
                   "by_category": {c: sum(it.group == c for it in (*items, *ambiguous)) for c in MINI_CATEGORIES}}}
    return Inputs("mini", tuple(entries), tuple(items), tuple(sugarcrepe), dict(detectors), known,
                  create=trained_here(entries, run_arch), ambiguous=tuple(ambiguous), compared=tuple(RUNS))


def full_inputs(models: Mapping[str, str], data: BivlcSet, sugarcrepe: Sequence[ImageToTextItem] | None = None,
                detectors: Mapping[str, DetectorSpec] | None = None, context: Mapping | None = None,
                create: ModelFactory = zoo_create, skip_unavailable: bool = False) -> Inputs:
    """The full profile: the released split, the zoo models of ``bivlc.full.models`` (row -> zoo model), SugarCrepe's
    release (None: the column is left empty) and the detector rows of ``bivlc.full.detector_rows``."""
    if not models:
        raise BivlcTablesError("bivlc.full.models is empty: no BiVLC row to score")
    known = {
        **dict(context or {}), "profile": "full",
        "rule": "strict: s(C0,I0) > s(C1,I0) etc. on normalised embeddings, a tie is wrong (common.evaluation.scoring.group)",
        "data": {"source": SOURCE, "split": SPLIT, "files": {p.name: data.sha256[p.name] for p in data.files},
                 "instances": len(data.items), "categories": data.counts(), "image_cache": str(data.image_dir)},
        "sugarcrepe_examples": None if sugarcrepe is None else len(sugarcrepe),
    }
    return Inputs("full", tuple(zoo_entries(models)), tuple(data.items),
                  None if sugarcrepe is None else tuple(sugarcrepe), dict(detectors or {}), known, create=create,
                  skip_unavailable=skip_unavailable)


def evaluate_tables(inputs: Inputs, out_dir: Path, engine_config=None, device: str = "cpu",
                    fetch: Callable[[str], Path] = quiet_fetch) -> dict[str, Path]:
    """Score every model (and detector) and write the tables; nothing is written when a model fails or none could
    be scored."""
    scored, skipped = score_models(inputs.entries, inputs.items, inputs.sugarcrepe, engine_config, device,
                                   inputs.create, inputs.skip_unavailable, inputs.ambiguous)
    if not scored:
        raise BivlcTablesError(f"no model of bivlc.{inputs.profile}'s rows could be loaded: {skipped}")
    dets, skipped_dets = score_detectors_rows(inputs.detectors, inputs.items, inputs.sugarcrepe, device,
                                              inputs.create, inputs.skip_unavailable, fetch)
    skipped = {**skipped, **{f"detector:{r}": why for r, why in skipped_dets.items()}}
    context = {**inputs.context, **FILES[inputs.profile].record(scored, dets, skipped)}
    return write_outputs(out_dir, inputs.profile, scored, dets, context, inputs.compared)


# -- Entry point --------------------------------------------------------------------------------------------------
def load_sugarcrepe(manifest: Path) -> tuple[list[ImageToTextItem], dict]:
    """SugarCrepe's set through its own loader (every example, or a ``DatasetError``)."""
    prepared = PreparedSet.load(Path(manifest))
    return prepared.items(), prepared.describe()


def default_image_dir() -> Path:
    return build_dir("full", "bivlc") / "images"


def training_records(entries: Sequence[ModelEntry], detectors: Mapping[str, DetectorSpec]) -> dict[str, dict]:
    """The context's ``training``: the sidecar record and recipe of each row's weights and detector head trained
    here (``detection.head_run``), for the audit's notes."""
    weights = {e.row: e.checkpoint for e in entries if e.checkpoint is not None}
    weights.update({head_run(row, tower): head for row, spec in detectors.items()
                    for tower, head in (("image", spec.image_head), ("text", spec.text_head))})
    return training_context(weights)


def _mini_stage(args: argparse.Namespace, params: Mapping, section: Mapping) -> tuple[Inputs, str]:
    """Stage ``tables-mini``'s inputs, on the pinned CPU profile (``common.pipeline.reproducible``)."""
    for option in ("images", "no_sugarcrepe", "any_size"):
        if getattr(args, option):
            raise BivlcTablesError(f"--{option.replace('_', '-')}: a full-profile option")
    device = pinned_cpu(args.device, BivlcTablesError)
    root = build_dir("mini", "bivlc")
    entries = entries_for(section["base"], section["family"], section["negclip"], Path(args.models or root / "models"))
    detectors = mini_detectors(entries, Path(args.detectors or root / "detectors"))
    sugarcrepe, _ = load_sugarcrepe(Path(args.sugarcrepe or build_dir("mini", "sugarcrepe") / "manifest.json"))
    context = {"profile": "mini", "params": section, **reproducible.describe(),
               "training": training_records(entries, detectors)}
    return mini_inputs(entries, get_spec(section["base"]).arch, Path(args.data or root / "test"), sugarcrepe,
                       detectors, context), device


def _full_stage(args: argparse.Namespace, params: Mapping, section: Mapping) -> tuple[Inputs, str]:
    """Stage ``tables-full``'s inputs, on the GPU where there is one."""
    for option in ("models", "detectors"):
        if getattr(args, option):
            raise BivlcTablesError(f"--{option}: a mini-profile option (the full profile's are params.yaml's)")
    cap = read_full_inputs(params).cap
    device = args.device or best_device()
    data = load_bivlc(Path(args.data or data_root() / "bivlc" / "BiVLC"),
                      Path(args.images or default_image_dir()),
                      None if args.any_size else section["n_instances"])
    if cap is not None:
        data = data.capped(cap)
    sugarcrepe, described = None, None
    if not args.no_sugarcrepe:
        sugarcrepe, described = load_sugarcrepe(
            Path(args.sugarcrepe or build_dir("full", "sugarcrepe") / "manifest.json"))
    models = dict(section["models"])
    detectors = {row: DetectorSpec.from_params(spec) for row, spec in (section.get("detector_rows") or {}).items()}
    context = {"device": device, "engine": params.get("engine", {}), "sugarcrepe_set": described,
               "training": training_records(zoo_entries(models), detectors)}
    return full_inputs(models, data, sugarcrepe, detectors, context, create=zoo_create,
                       skip_unavailable=bool(section["skip_unavailable"])), device


def main(argv: Sequence[str] | None = None) -> int:
    parser = profile_stage_parser(
        "bivlc", __doc__.splitlines()[0],
        data=f"the benchmark (default: build/mini/bivlc/test; full: the {SOURCE} snapshot, <data root>/bivlc/BiVLC)",
        models="mini: the runs' weights (default: build/mini/bivlc/models)")
    parser.add_argument("--sugarcrepe", default=None,
                        help="SugarCrepe's set manifest (default: build/<profile>/sugarcrepe/manifest.json)")
    parser.add_argument("--detectors", default=None, help="mini: the heads (default: build/mini/bivlc/detectors)")
    parser.add_argument("--images", default=None, help="full: the image cache (default: build/full/bivlc/images)")
    parser.add_argument("--no-sugarcrepe", action="store_true", help="full: leave the sugarcrepe column empty")
    parser.add_argument("--any-size", action="store_true", help="full: accept a split of other than "
                        "params.yaml bivlc.full.n_instances rows")
    args = parser.parse_args(argv)
    params, section = own_section(f"bivlc.{args.profile}", args.stage)
    inputs, device = {"mini": _mini_stage, "full": _full_stage}[args.profile](args, params, section)
    paths = evaluate_tables(inputs, Path(args.out or RESULTS / "bivlc" / args.profile), engine_config(params), device)
    return print_written(paths, "table2", "summary")


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
