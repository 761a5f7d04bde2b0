"""Kamath et al. (hard positives), Tables 1-3: one stage module for both profiles (``python -m
papers.hard_positives.tables --profile mini|full``; stages ``table1-mini`` and ``table1-full``), which differ only in
their ``Inputs``; what each scores and writes: the README's stage table and "Outputs and notebooks". A model that
cannot be loaded stops the stage, or with ``skip_unavailable`` is left out and named in ``context.json`` (never the
base: the comparisons are against it).

Precision: a model of ``hard_positives.full.authors_precision`` (OpenAI's CLIP, which the authors' evaluator loads
with ``clip.load`` on CUDA: ``amitakamath/hard_positives@33addaae run_eval.py:46`` "get_model(model_name=model_name,
device=" and ``amitakamath/hard_positives@33addaae model_zoo/__init__.py:16`` "clip.load(variant, device=device,
download_root=root_dir)": fp16 weights and scores, since ``openai/CLIP@d05afc43 clip/model.py:434``
"convert_weights(model)" builds it in fp16 and ``openai/CLIP@d05afc43 clip/clip.py:140-141`` "model.float()" casts
it back to fp32 only on the CPU) is scored at that precision, its row the one Table 1 and the audit use, and at
``engine.precision`` beside it (row ``<row>@fp32``, audited against the same published cells). The comparisons
(``summary.json``: the fine-tunes against the base) use the base at ``engine.precision``, the precision the
fine-tunes are scored at: fp16's extra ties (never correct) would otherwise favour the fine-tunes.

Activation: the authors' evaluator builds NegCLIP and the CREPE models as open_clip ``'ViT-B-32'``, i.e. GELU
(``amitakamath/hard_positives@33addaae model_zoo/__init__.py:81`` "open_clip.create_model_and_transforms('ViT-B-32',
pretrained=path, device=device)" for NegCLIP, ``amitakamath/hard_positives@33addaae model_zoo/__init__.py:101``
"open_clip.create_model_and_transforms('ViT-B-32', pretrained=path, device=device)" for the CREPE models), although
their weights were fine-tuned from OpenAI's QuickGELU CLIP. A listed model of ``AUTHORS_BUILD`` is therefore scored
both ways: its GELU build (a zoo variant) is Table 1's row, and the model as trained, QuickGELU, is reported beside it
(``<row>@quickgelu``, audited against the same published cells), so the audit shows which activation reproduces the
paper's numbers.
"""
from __future__ import annotations

import argparse
import dataclasses
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from common.errors import WorkspaceError
from common.evaluation.engine import Engine, EngineConfig
from common.evaluation.evaluate import best_device, engine_config
from common.evaluation.results import write_predictions
from common.evaluation.scoring.selection import SelectionResult, negative_position
from common.files.io import output_group, sha256_file, staged_to_final, write_csv_atomic, write_json_atomic
from common.files.jsonl import read_json
from common.files.tasks import ImageToTextItem
from common.paths import RESULTS, build_dir
from common.pipeline import reproducible
from common.pipeline.cli import print_written
from common.pipeline.params import own_section
from common.pipeline.profile_stage import pinned_cpu, profile_stage_parser
from common.training.records import training_context
from common.zoo import ModelFactory, create_model, get_spec
from common.zoo.available import each_model
from common.zoo.trained import served
from papers.hard_positives import evaluation, figure3
from papers.hard_positives.runs import RUNS
from papers.hard_positives.sets_full import FullSet
from papers.hard_positives.sets_mini import load_test_items

TABLE1_RUNS: tuple[str, ...] = ("clip-ft", "hn", "hp-hn", "hp-hn-swap", "hp-hn-replace")
"""Table 1's fine-tuned rows (c, d), after the base model and any released models (b)."""
TABLE3_ROWS: tuple[str, ...] = ("base", "ratio-0", "ratio-0.25", "ratio-0.5", "ratio-0.75", "hn", "hp-hn")
"""Table 3's rows in the paper's order."""
TABLE1_FIELDS = ("row", "model", "label", *evaluation.TABLE_FIELDS[:8])
TABLE2_FIELDS = ("row", "model", "label", *evaluation.TABLE_FIELDS[8:])
TABLE3_FIELDS = ("row", "model", "label", "hard_negative_weight", *evaluation.TABLE_FIELDS[:8])
METRICS = ("orig", "aug", "brittleness")
SUMMARY_KEYS: tuple[str, ...] = (
    *(f"hn_minus_clip_{c}_{m}" for c in evaluation.COLUMNS for m in METRICS),
    *(f"hn_minus_clip_{c}_brittleness_ci_low" for c in evaluation.COLUMNS),
    *(f"hp_hn_minus_hn_{c}_brittleness" for c in evaluation.COLUMNS),
    *(f"hp_hn_minus_hn_{c}_brittleness_ci_high" for c in evaluation.COLUMNS))
"""The DVC metrics (``summary.json``, flat numbers): the paper's comparisons in points, and the interval ends that
decide its two claims (HN raises Brittleness: the lower end above 0; HP+HN lowers it: the upper end below 0); every
other number, the yes/no verdicts among them, is in ``comparisons.json``."""


@dataclass(frozen=True)
class ModelEntry:
    """A model trained here: its zoo-style name, label, run and checkpoint."""

    name: str
    label: str
    run: str | None = None
    checkpoint: Path | None = None


def run_entries(prefix: str, models_dir: Path) -> list[ModelEntry]:
    """Every run of ``RUNS``, named ``<prefix>-<run>``, its weights ``<models_dir>/<run>.safetensors``."""
    return [ModelEntry(f"{prefix}-{run}", spec.label, run, Path(models_dir) / f"{run}.safetensors")
            for run, spec in RUNS.items()]


@dataclass(frozen=True)
class Scored:
    """One model on the benchmark: its row id, zoo name, label, outcomes (Aug.'s rule) and precision."""

    row: str
    model: str
    label: str
    result: SelectionResult
    precision: str = "fp32"
    stands_for: str | None = None
    """A reference scoring beside the authors' configuration (``<row>@fp32``, ``<row>@quickgelu``): its row, whose
    published cells the audit compares it with too; ``reference`` says what it differs in (precision, activation)."""
    reference: str | None = None
    activation: str | None = None
    """``"GELU"`` or ``"QuickGELU"`` for a model of ``AUTHORS_BUILD`` (scored under both), else None."""


def cell(key: str, value) -> str:
    """Accuracies in points to 2 decimals, mean scores (cosine similarities, Table 2) to 4."""
    if isinstance(value, float):
        return f"{value:.4f}" if key.startswith(("mean_", "replace_mean_")) else f"{value:.2f}"
    return str(value)


def model_rows(scored: Sequence[Scored]) -> list[dict]:
    """One row per model: what it is, a run's hard-negative weight (else N/A; Table 3's column) and
    ``evaluation.table_row``'s numbers."""
    return [{"row": s.row, "model": s.model, "label": s.label, "run": s.row,
             "hard_negative_weight": RUNS[s.row].hard_negative_weight if s.row in RUNS else "N/A",
             **evaluation.table_row(evaluation.group_cells(s.result))} for s in scored]


def _indicators(result: SelectionResult) -> dict[str, dict[str, np.ndarray]]:
    """Per group, 0/1 per item (in item order) for orig, aug and brittleness, and the drop (aug minus orig)."""
    out: dict[str, dict[str, list]] = {}
    for o in result.outcomes:
        scores = np.asarray(o.scores)
        cells = out.setdefault(o.group, {"ids": [], "orig": [], "aug": [], "brittleness": []})
        cells["ids"].append(o.item_id)
        cells["orig"].append(evaluation.ORIG.decide(scores)[0])
        cells["aug"].append(o.correct)
        cells["brittleness"].append(negative_position(o.scores, (evaluation.ORIGINAL, evaluation.POSITIVE),
                                                      evaluation.NEGATIVE) in ("0", "1"))
    arrays = {g: {k: (np.asarray(v) if k == "ids" else np.asarray(v, dtype=np.float64)) for k, v in c.items()}
              for g, c in out.items()}
    return {g: {**c, "drop": c["aug"] - c["orig"]} for g, c in arrays.items()}


def _item_values(a: SelectionResult, b: SelectionResult, column: str, metric: str,
                 b_metric: str | None = None) -> np.ndarray:
    """Per item of a Table 1 column, in points: ``metric`` of a minus ``b_metric`` (default ``metric``) of b,
    weighted so that the plain mean is the column's difference (a column is the unweighted mean of its groups)."""
    ia, ib = _indicators(a), _indicators(b)
    groups = evaluation.COLUMNS[column]
    total = sum(len(ia[g]["ids"]) for g in groups)
    values = []
    for g in groups:
        if not np.array_equal(ia[g]["ids"], ib[g]["ids"]):
            raise ValueError(f"paired_difference: the two results hold different items in group {g!r}")
        weight = total / (len(groups) * len(ia[g]["ids"]))
        values.append(100.0 * weight * (ia[g][metric] - ib[g][b_metric or metric]))
    return np.concatenate(values)


def paired_difference(a: SelectionResult, b: SelectionResult, column: str, metric: str, n_resamples: int = 2000,
                      seed: int = 0, b_metric: str | None = None):
    """``metric`` of model a minus ``b_metric`` (default ``metric``) of model b in points on a Table 1 column, with a
    95% paired-bootstrap interval over items (resampling an item keeps both models' outcomes together)."""
    # deferred: loads scipy only when called
    from common.evaluation.stats import bootstrap_mean_ci

    return bootstrap_mean_ci(_item_values(a, b, column, metric, b_metric), n_resamples=n_resamples, seed=seed)


def mean_drop(result: SelectionResult, n_resamples: int = 2000, seed: int = 0):
    """One model's drop (Aug. minus Orig.) averaged over REPLACE and SWAP with equal weights (the Abstract's 12.9 is
    the mean of Table 1's -14.9 and -10.9), in points, with ``bootstrap_mean_ci``'s percentile bootstrap over one
    independently resampled sample per column."""
    # deferred: loads scipy only when called
    import scipy.stats

    from common.evaluation.stats import Interval  # deferred: it loads scipy too

    samples = [_item_values(result, result, column, "aug", "orig") for column in evaluation.COLUMNS]
    estimate = float(np.mean([s.mean() for s in samples]))
    if all(np.all(s == s[0]) for s in samples):
        return Interval(estimate, estimate, estimate, 0.95, n_resamples, "percentile bootstrap (constant sample)")

    def statistic(*resampled, axis=-1):
        return np.mean([r.mean(axis=axis) for r in resampled], axis=0)

    ci = scipy.stats.bootstrap(tuple(samples), statistic, n_resamples=n_resamples, confidence_level=0.95,
                               method="percentile", vectorized=True, paired=False, axis=-1,
                               rng=np.random.default_rng(seed)).confidence_interval
    return Interval(estimate, float(ci.low), float(ci.high), 0.95, n_resamples, "percentile bootstrap")


RATIO_RUNS = ("ratio-0", "ratio-0.25", "ratio-0.5", "ratio-0.75", "hp-hn")


def summary(rows: Sequence[Mapping], results: Mapping[str, SelectionResult]) -> dict:
    """The paper's comparisons, flat, in points with 95% bootstrap intervals (2,000 resamples, seed 0); whether each
    effect shows is decided by an interval, not a point estimate ("higher": its lower end above 0, "lower or flat":
    at most 0); Table 3's trend is Spearman's rho of the HN weight against each metric (None where all five agree)."""
    # deferred: loads scipy only when called
    import scipy.stats

    from common.evaluation.stats import interval_fields  # deferred: it loads scipy too

    by_run = {r["run"]: r for r in rows}
    base = by_run["base"]
    out: dict[str, float | bool | None] = {}

    for column in evaluation.COLUMNS:
        effect = {}
        for metric in METRICS:
            key = f"{column}_{metric}"
            effect[metric] = paired_difference(results["hn"], results["base"], column, metric)
            out.update(interval_fields(f"hn_minus_clip_{key}", effect[metric], by_run["hn"][key] - base[key]))
            out[f"hn_minus_clip_ft_{key}"] = round(by_run["hn"][key] - by_run["clip-ft"][key], 2)
            out[f"hp_hn_minus_hn_{key}"] = round(by_run["hp-hn"][key] - by_run["hn"][key], 2)
        out.update(interval_fields(f"clip_aug_minus_orig_{column}",
                                   paired_difference(results["base"], results["base"], column, "aug", b_metric="orig"),
                                   base[f"{column}_aug"] - base[f"{column}_orig"]))
        hp_ci = paired_difference(results["hp-hn"], results["hn"], column, "brittleness")
        out.update(interval_fields(f"hp_hn_minus_hn_{column}_brittleness", hp_ci, point=False))
        shows = {"hn_orig_higher": bool(effect["orig"].low > 0), "hn_aug_lower_or_flat": bool(effect["aug"].low <= 0),
                 "hn_brittleness_higher": bool(effect["brittleness"].low > 0)}
        out |= {f"{k}_{column}": v for k, v in shows.items()}
        out[f"hn_shows_paper_effect_{column}"] = all(shows.values())
        out[f"hp_hn_reduces_brittleness_{column}"] = bool(hp_ci.high < 0)
        weights = [RUNS[r].hard_negative_weight for r in RATIO_RUNS]
        for metric in METRICS:
            values = [by_run[r][f"{column}_{metric}"] for r in RATIO_RUNS]
            rho = scipy.stats.spearmanr(weights, values).statistic if len(set(values)) > 1 else None
            out[f"ratio_spearman_{column}_{metric}"] = None if rho is None else round(float(rho), 3)
    for column in evaluation.COLUMNS:
        # Sec. 3.2: the hard-negative fine-tunes' drops (Aug. minus Orig.) are larger than the base CLIP's
        out.update(interval_fields(f"hn_minus_clip_drop_{column}",
                                   paired_difference(results["hn"], results["base"], column, "drop"),
                                   by_run["hn"][f"{column}_drop"] - base[f"{column}_drop"]))
    # the Abstract's CLIP drop: the mean of Table 1's REPLACE and SWAP drops
    out.update(interval_fields("clip_drop_mean", mean_drop(results["base"]),
                               float(np.mean([base[f"{column}_drop"] for column in evaluation.COLUMNS]))))
    return out


DATA_FILES = ("papers/hard_positives/models.toml",)
"""Read at run time (``common.pipeline.stage_deps``): this paper's zoo entries (ARO's NegCLIP is in the shared one)."""
AUTHORS_BUILD: dict[str, str] = {
    "aro/negclip": "aro/negclip-gelu",
    "hard_positives/crepe-swap": "hard_positives/crepe-swap-gelu",
    "hard_positives/crepe-replace": "hard_positives/crepe-replace-gelu",
}
"""A listed zoo model (as trained: QuickGELU) -> the variant that builds its weights as the authors' evaluator does,
open_clip 'ViT-B-32' (GELU; module docstring)."""
AUTHORS_ACTIVATION = ("the authors' evaluator builds NegCLIP and the CREPE models as open_clip 'ViT-B-32' (GELU) "
                      "although they are fine-tunes of OpenAI's QuickGELU CLIP: each is scored both ways, its row "
                      "(Table 1's, the authors' configuration) with GELU and <row>@quickgelu, as trained, beside it "
                      "(each row's why cites the authors' lines)")
ACTIVATION_WHY = {
    "GELU": ("GELU, the authors' configuration: their evaluator builds NegCLIP "
             '''(amitakamath/hard_positives@33addaae model_zoo/__init__.py:81 "create_model_and_transforms('ViT-B-32'")'''
             " and the CREPE models "
             '''(amitakamath/hard_positives@33addaae model_zoo/__init__.py:101 "create_model_and_transforms('ViT-B-32'")'''
             " as open_clip 'ViT-B-32', whose config is GELU"),
    "QuickGELU": "QuickGELU, as the weights were trained (a fine-tune of OpenAI's CLIP), beside the authors' "
                 "configuration (GELU)"}
"""The audit's note of each activation (``context.json``'s ``why``)."""
AUTHORS_PRECISION_WHY = {
    "fp16": ("the authors' evaluator loads OpenAI's CLIP with clip.load on CUDA: fp16 weights and scores "
             '(amitakamath/hard_positives@33addaae run_eval.py:46 "get_model(model_name=model_name, device=", '
             'amitakamath/hard_positives@33addaae model_zoo/__init__.py:16 "clip.load(variant, device=device")')}
RATIO_NOTE = ("Table 3's ratio is the hard-negative loss weight with the hard-positive weight fixed at 1 (the paper's "
              "Sec. 4.3), not a share of rows")


class HardPositivesTablesError(WorkspaceError):
    """Nothing to score (no model listed, or none that loads), or a row every comparison needs is missing."""


@dataclass(frozen=True)
class Way:
    """One scoring of a listed model: the zoo name loaded, and ``Scored``'s ``stands_for`` and ``activation``."""

    name: str
    stands_for: str | None = None
    activation: str | None = None


def score_models(models: Mapping[str, str], items: Sequence[ImageToTextItem], engine_config=None,
                 device: str = "cpu", create: ModelFactory = create_model, skip_unavailable: bool = False,
                 authors_precision: Mapping[str, str] | None = None, labels: Mapping[str, str] | None = None
                 ) -> tuple[list[Scored], dict[str, str]]:
    """Every (row -> zoo model) on the items, in order, with the rows skipped (``skip_unavailable``) and why; a model
    of ``AUTHORS_BUILD`` as its GELU build under its own row and as itself (QuickGELU) under ``<row>@quickgelu`` right
    after; a model of ``authors_precision`` at that precision and, right after, at the engine's (``<row>@<p>``)."""
    config = engine_config or EngineConfig()
    plan: dict[str, Way] = {}
    for row, name in models.items():
        if name in AUTHORS_BUILD:
            plan[row] = Way(AUTHORS_BUILD[name], activation="GELU")
            plan[f"{row}@quickgelu"] = Way(name, stands_for=row, activation="QuickGELU")
        else:
            plan[row] = Way(name)
    scored, skipped = [], {}
    for row, name, model in each_model({row: way.name for row, way in plan.items()}, skipped, create=create,
                                       device=device, skip_unavailable=skip_unavailable, what="Table 1 row"):
        way = plan[row]
        precision = (authors_precision or {}).get(name, config.precision)
        result = evaluation.evaluate(Engine(model, dataclasses.replace(config, precision=precision)), items)
        label = (labels or {}).get(row) or get_spec(name).label + (f" [{way.activation}]" if way.stands_for else "")
        scored.append(Scored(row, name, label, result, precision, stands_for=way.stands_for,
                             reference="activation" if way.stands_for else None, activation=way.activation))
        if precision != config.precision:
            reference = evaluation.evaluate(Engine(model, config), items)
            scored.append(Scored(f"{row}@{config.precision}", name, f"{label} [{config.precision}]",
                                 reference, config.precision, stands_for=row, reference="precision",
                                 activation=way.activation))
    return scored, skipped


def score_runs(runs: Sequence[ModelEntry], arch: str, items: Sequence[ImageToTextItem], engine_config=None,
               device: str = "cpu", family: str = "hard_positives") -> list[Scored]:
    """Every run's checkpoint (an ``arch`` model, its spec filed under ``family``) on the items."""
    config = engine_config or EngineConfig()
    return [Scored(e.run or e.name, e.name, e.label,
                   evaluation.evaluate(Engine(served(e, arch, device, family=family), config), items),
                   config.precision)
            for e in runs]


def at_one_precision(scored: Sequence[Scored]) -> list[Scored]:
    """Every row at the engine's precision (a row at the authors' replaced by its ``<row>@<p>`` reference, renamed),
    so that a fine-tune is compared with the base as both were scored; ``<row>@quickgelu`` left out."""
    references = {s.stands_for: s for s in scored if s.reference == "precision"}
    return [dataclasses.replace(references[s.row], row=s.row, stands_for=None, reference=None)
            if s.row in references else s for s in scored if not s.stands_for]


def why(s: Scored) -> str:
    """How a row was scored (``context.json``, the audit's notes): its precision's reason, and its activation's."""
    parts = ["reference beside the authors' precision" if s.reference == "precision"
             else AUTHORS_PRECISION_WHY.get(s.precision, "the engine's precision")]
    if s.activation is not None:
        parts.insert(0, ACTIVATION_WHY[s.activation])
        parts = [p for p in parts if p != "the engine's precision"]
    return "; ".join(parts)


RUN_FAMILY = "hard_positives/{profile}"
"""The runs' zoo family and name prefix: ``hard_positives/<profile>-<run>``."""


@dataclass(frozen=True)
class Inputs:
    """What one profile scores and on what (``mini_inputs``, ``full_inputs``): all that differs between them."""

    profile: str
    models: Mapping[str, str]
    """Table 1's rows before the runs: row -> zoo model; ``base`` among them (every comparison is against it)."""
    runs: Sequence[ModelEntry]
    run_arch: str
    items: Sequence[ImageToTextItem]
    context: Mapping[str, Any]
    """What ``context.json`` records of the inputs (the sets' manifests, the training records, the rule)."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """Row -> the table's label, where it is not the zoo's."""
    authors_precision: Mapping[str, str] = field(default_factory=dict)
    """Zoo model -> the precision the authors' evaluator scores it at."""
    skip_unavailable: bool = False


def mini_inputs(base: str, runs: Sequence[ModelEntry], test_dir: Path, context: Mapping | None = None) -> Inputs:
    """The mini family's ``base`` (it stands for CLIP ViT-B/32) and ``runs`` on the benchmark in ``test_dir``."""
    items = load_test_items(Path(test_dir))
    return Inputs("mini", {"base": base}, tuple(runs), get_spec(base).arch, tuple(items), {
        **dict(context or {}), "rule": "strict comparisons (evaluation.py); ties are neither correct nor brittle",
        "n": dict(sorted(Counter(it.group for it in items).items()))},
        labels={"base": f"CLIP ({base}, the mini family's ViT-B/32)"})


def full_inputs(models: Mapping[str, str], runs: Sequence[ModelEntry], run_arch: str, full: FullSet,
                context: Mapping | None = None, skip_unavailable: bool = False,
                authors_precision: Mapping[str, str] | None = None) -> Inputs:
    """Table 1's zoo ``models`` (row -> zoo model) and ``runs`` on the benchmark stage ``full-data`` prepared."""
    if not models:
        raise HardPositivesTablesError("hard_positives.full.models is empty: no Table 1 row to score")
    items = full.items()
    return Inputs("full", dict(models), tuple(runs), run_arch, tuple(items), {
        **dict(context or {}), "profile": "full",
        "rule": "strict comparisons (evaluation.py); ties are neither correct nor brittle; REPLACE = mean of "
                "attributes and relations",
        "data": {"manifest": str(full.path), "sha256": full.info["sha256"], "counts": full.counts(items),
                 "crops": full.info.get("crops"), "cap": full.cap},
        "equal_captions": "rows with two equal captions are scored as released, as the authors' code scores them "
                          "(counted per group under data.counts)",
        "ratio": RATIO_NOTE, "activation": AUTHORS_ACTIVATION},
        skip_unavailable=skip_unavailable, authors_precision=dict(authors_precision or {}))


def models_by_name(scored: Sequence[Scored], runs: Sequence[ModelEntry]) -> dict:
    """The mini profile's ``context.json`` record of its models, keyed by zoo name (one scoring per model there)."""
    checkpoints = {e.run: e.checkpoint for e in runs}
    return {"models": {s.model: {
        "run": s.row if s.row in checkpoints else None, "label": s.label, "fingerprint": s.result.fingerprint,
        "checkpoint_sha256": sha256_file(checkpoints[s.row]) if checkpoints.get(s.row) else None,
        "ties": s.result.ties,
        **({"hard_positive_weight": RUNS[s.row].hard_positive_weight,
            "hard_negative_weight": RUNS[s.row].hard_negative_weight,
            "types": list(RUNS[s.row].types)} if s.row in checkpoints else {})} for s in scored}}


def models_by_row(scored: Sequence[Scored], runs: Sequence[ModelEntry], skipped: Mapping[str, str]) -> dict:
    """The full profile's ``context.json`` record of its models, keyed by row (a model may be scored two ways)."""
    cells = {s.row: evaluation.group_cells(s.result) for s in scored}
    return {
        "models": {s.row: {"model": s.model, "label": s.label, "fingerprint": s.result.fingerprint,
                           "precision": s.precision, "stands_for": s.stands_for, "reference": s.reference,
                           "activation": s.activation, "why": why(s),
                           "n": {g: c.n for g, c in cells[s.row].items()},
                           "ties": {g: c.ties for g, c in cells[s.row].items()}} for s in scored},
        "checkpoints": {e.run: {"path": str(e.checkpoint), "sha256": sha256_file(e.checkpoint)} for e in runs
                        if e.checkpoint is not None},
        "skipped": dict(skipped),
    }


def evaluate_tables(inputs: Inputs, out_dir: Path, engine_config=None, device: str = "cpu",
                    create: ModelFactory = create_model) -> dict[str, Path]:
    """Score every model of ``inputs`` and write the tables (nothing is written when a model fails)."""
    scored, skipped = score_models(inputs.models, inputs.items, engine_config, device, create,
                                   inputs.skip_unavailable, inputs.authors_precision, inputs.labels)
    if "base" in skipped:
        raise HardPositivesTablesError(f"the base model cannot be left out (every comparison is against it): "
                                       f"{skipped['base']}")
    zoo_rows = [s.row for s in scored]
    scored += score_runs(inputs.runs, inputs.run_arch, inputs.items, engine_config, device,
                         family=RUN_FAMILY.format(profile=inputs.profile))
    mini = inputs.profile == "mini"
    record = models_by_name(scored, inputs.runs) if mini else models_by_row(scored, inputs.runs, skipped)
    context = {**inputs.context, **record}
    return write_outputs(out_dir, inputs.profile, scored, zoo_rows, context, inputs.items)


def write_outputs(out_dir: Path, profile: str, scored: Sequence[Scored], zoo_rows: Sequence[str], context: Mapping,
                  items: Sequence[ImageToTextItem] = ()) -> dict[str, Path]:
    """Every output as one group: Tables 1-3, groups, comparisons, summary and context and, per profile, Figure 3
    (mini) or ``predictions/`` (full: the oracle compares them with the authors' code's)."""
    mini = profile == "mini"
    compared = at_one_precision(scored)
    results = {s.row: s.result for s in compared}
    missing = [r for r in ("base", *RUNS) if r not in results]
    if missing:
        raise HardPositivesTablesError(f"the comparisons need the base model and every run; missing {missing}")
    # the full profile scores a model more than one way, so its groups.csv leads with the row (the mini one has none)
    groups = [({} if mini else {"row": s.row}) | g for s in scored
              for g in evaluation.group_rows(s.model, evaluation.group_cells(s.result))]
    rows, metrics = model_rows(scored), summary(model_rows(compared), results)
    by_row = {r["row"]: r for r in rows}

    def table(name: str, picked: Sequence[str], columns: Sequence[str]) -> Path:
        return write_csv_atomic(staging / name, [{k: cell(k, by_row[r][k]) for k in columns} for r in picked], columns)

    with output_group(out_dir) as staging:
        paths = {
            "table1": table("table1.csv", (*zoo_rows, *TABLE1_RUNS), TABLE1_FIELDS),
            "table2": table("table2.csv", [r["row"] for r in rows], TABLE2_FIELDS),
            "table3": table("table3.csv", TABLE3_ROWS, TABLE3_FIELDS),
            "groups": write_csv_atomic(staging / "groups.csv", [{k: cell(k, v) for k, v in r.items()} for r in groups],
                                       list(groups[0])),
            "comparisons": write_json_atomic(staging / "comparisons.json", dict(metrics)),
            "summary": write_json_atomic(staging / "summary.json", {k: metrics[k] for k in SUMMARY_KEYS}),
            "context": write_json_atomic(staging / "context.json", dict(context)),
        }
        if mini:
            examples, counts = figure3.select({m: results[row] for m, row in figure3.MODELS.items()}, items)
            paths["figure3"] = write_csv_atomic(staging / "figure3.csv", examples, figure3.FIELDS)
            paths["figure3_counts"] = write_csv_atomic(staging / "figure3_counts.csv", counts, figure3.COUNT_FIELDS)
        else:
            for s in scored:  # named by the zoo name, and the precision for a reference beside the authors' (twice)
                stem = s.model.replace('/', '__') + (f"@{s.precision}" if s.reference == "precision" else "")
                write_predictions(staging / "predictions" / f"{stem}.csv", s.result)
            paths["predictions"] = staging / "predictions"
    return {k: staged_to_final(p, staging, out_dir) for k, p in paths.items()}


def _mini_stage(args: argparse.Namespace, params: Mapping, section: Mapping) -> tuple[Inputs, str]:
    """Stage ``table1-mini``'s inputs, on the pinned CPU profile (``common.pipeline.reproducible``)."""
    device = pinned_cpu(args.device, HardPositivesTablesError)
    root = build_dir("mini", "hard_positives")
    test_dir = Path(args.data or root / "test")
    set_dir = Path(args.set or root / "finetune")
    runs = run_entries(RUN_FAMILY.format(profile="mini"), Path(args.models or root / "models"))
    context = {
        "profile": "mini", "base": section["base"], **reproducible.describe(),
        "test_set": {k: v for k, v in read_json(test_dir / "manifest.json", remedy="run the mini-test-set stage")
                     .items() if k != "examples"},
        "finetune_set": read_json(set_dir / "manifest.json", remedy="run the mini-finetune-set stage"),
        "training": training_context({e.name: e.checkpoint for e in runs},
                                     remedies={e.name: f"run the mini-finetune@{e.run} stage" for e in runs}),
        "ratio": RATIO_NOTE,
        "note": "mini profile: mini/xs-32k fine-tuned on rendered scenes; not comparable to the paper's numbers",
    }
    return mini_inputs(section["base"], runs, test_dir, context), device


def _full_stage(args: argparse.Namespace, params: Mapping, section: Mapping) -> tuple[Inputs, str]:
    """Stage ``table1-full``'s inputs, on the GPU where there is one."""
    full = FullSet.load(Path(args.data or build_dir("full", "hard_positives")))
    device = args.device or best_device()
    runs = run_entries(RUN_FAMILY.format(profile="full"),
                       Path(args.models or build_dir("full", "hard_positives_ft") / "models"))
    base = section["finetune"]["base"]
    context = {"device": device, "engine": params.get("engine", {}), "finetune_base": base,
               "training": training_context({e.run: e.checkpoint for e in runs})}
    return full_inputs(dict(section["models"]), runs, get_spec(base).arch, full, context,
                       skip_unavailable=bool(section["skip_unavailable"]),
                       authors_precision=dict(section["authors_precision"])), device


def main(argv: Sequence[str] | None = None) -> int:
    parser = profile_stage_parser(
        "hard_positives", __doc__.splitlines()[0],
        data="the benchmark (default: build/mini/hard_positives/test, build/full/hard_positives)",
        models="the runs' weights (default: build/mini/hard_positives/models, build/full/hard_positives_ft/models)")
    parser.add_argument("--set", default=None, help="mini: the fine-tuning set, whose manifest the context records "
                                                    "(default: build/mini/hard_positives/finetune)")
    args = parser.parse_args(argv)
    params, section = own_section(f"hard_positives.{args.profile}", args.stage)
    inputs, device = {"mini": _mini_stage, "full": _full_stage}[args.profile](args, params, section)
    paths = evaluate_tables(inputs, Path(args.out or RESULTS / "hard_positives" / args.profile),
                            engine_config(params), device, create=create_model)
    return print_written(paths, "table1", "table3", "summary")


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
