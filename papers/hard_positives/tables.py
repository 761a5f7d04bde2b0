"""Tables 1-3 of Kamath et al. from scored models, the same in both profiles: the rows, the paper's comparisons with
paired-bootstrap intervals, and the files (``table1.csv``, ``table2.csv``, ``table3.csv``, ``groups.csv``,
``comparisons.json``, ``summary.json``, ``context.json``).

The mini profile (``papers.hard_positives.tables_mini``) scores the mini family's base model and its fine-tunes on
the rendered benchmark; the full profile (``papers.hard_positives.tables_full``) scores the zoo's Table 1 models and the
COCO fine-tunes on the released benchmark. A row's ``row`` names what the model is, the same in both profiles
(``base``, a run of ``papers.hard_positives.runs.RUNS``, or a zoo row such as ``negclip``): the audit's key
(``papers.hard_positives.audit.PUBLISHED_ROWS``).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from common.io import write_csv_atomic, write_json_atomic
from common.scoring.selection import SelectionResult, negative_position
from papers.hard_positives import evaluation
from papers.hard_positives.runs import RUNS

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
    """A model trained here: its zoo-style name, label, run (None: the base model, zoo weights) and checkpoint."""

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
    """One model on the benchmark: its row id, zoo name, label and outcomes (Aug.'s rule)."""

    row: str
    model: str
    label: str
    result: SelectionResult
    precision: str = "fp32"
    """The engine precision it was scored at (the authors' for a Table 1 row of ``authors_precision``)."""
    stands_for: str | None = None
    """For a reference scoring beside the authors' configuration (row ``<row>@<precision>`` beside the authors'
    precision, ``<row>@quickgelu`` beside the authors' GELU build): the row it is a reference of, whose published
    cells the audit compares it with too."""
    reference: str | None = None
    """What a reference scoring differs in from its row: ``"precision"`` or ``"activation"`` (None for a row)."""
    activation: str | None = None
    """For a model scored under both activations (``papers.hard_positives.tables_full.AUTHORS_BUILD``): the one this
    scoring ran, ``"GELU"`` (the authors' build, the row) or ``"QuickGELU"`` (as trained, the reference)."""


def cell(key: str, value) -> str:
    """Accuracies in points to 2 decimals, mean scores (cosine similarities, Table 2) to 4."""
    if isinstance(value, float):
        return f"{value:.4f}" if key.startswith(("mean_", "replace_mean_")) else f"{value:.2f}"
    return str(value)


def model_rows(scored: Sequence[Scored]) -> list[dict]:
    """One row per model: what it is, how it was trained (a run's weights and types, else N/A) and
    ``evaluation.table_row``'s numbers."""
    rows = []
    for s in scored:
        spec = RUNS.get(s.row)
        rows.append({"row": s.row, "model": s.model, "label": s.label, "run": s.row,
                     "hard_positive_weight": spec.hard_positive_weight if spec else "N/A",
                     "hard_negative_weight": spec.hard_negative_weight if spec else "N/A",
                     "types": "+".join(spec.types) if spec else "N/A",
                     **evaluation.table_row(evaluation.group_cells(s.result))})
    return rows


def _indicators(result: SelectionResult) -> dict[str, dict[str, np.ndarray]]:
    """Per group, 0/1 per item (in item order) for orig, aug and brittleness."""
    out: dict[str, dict[str, list]] = {}
    for o in result.outcomes:
        scores = np.asarray(o.scores)
        cells = out.setdefault(o.group, {"ids": [], "orig": [], "aug": [], "brittleness": []})
        cells["ids"].append(o.item_id)
        cells["orig"].append(evaluation.ORIG.decide(scores)[0])
        cells["aug"].append(o.correct)
        cells["brittleness"].append(negative_position(o.scores, (evaluation.ORIGINAL, evaluation.POSITIVE),
                                                      evaluation.NEGATIVE) in ("0", "1"))
    return {g: {k: (np.asarray(v) if k == "ids" else np.asarray(v, dtype=np.float64)) for k, v in c.items()}
            for g, c in out.items()}


def _item_values(a: SelectionResult, b: SelectionResult, column: str, metric: str,
                 b_metric: str | None = None) -> np.ndarray:
    """Per item of one of Table 1's columns (its groups in ``evaluation.COLUMNS`` order, items in result order), in
    points: ``metric`` of model a minus ``b_metric`` (default ``metric``) of model b, weighted by (items in the
    column) / (groups x items in its group), so that the plain mean is the column's difference (a column is the
    unweighted mean of its groups). The two results must hold the same items in each group."""
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
    """``metric`` of model a minus model b (``b_metric`` of b when given: a minus b can then be one model's Aug.
    minus its own Orig.) in points on one of Table 1's columns, with a 95% paired-bootstrap interval over items. A
    column is the unweighted mean of its groups, so each item's difference is weighted by (items in the column) /
    (groups x items in its group): the plain mean of the weighted differences is that column's difference, and
    resampling items keeps each pair of scores together."""
    from common.stats import bootstrap_mean_ci

    return bootstrap_mean_ci(_item_values(a, b, column, metric, b_metric), n_resamples=n_resamples, seed=seed)


def drop_difference(a: SelectionResult, b: SelectionResult, column: str, n_resamples: int = 2000, seed: int = 0):
    """Model a's drop (Aug. minus Orig.) minus model b's drop, in points on one of Table 1's columns, with a 95%
    paired-bootstrap interval over items, as ``paired_difference`` computes one: per item (a's Aug. minus b's Aug.)
    minus (a's Orig. minus b's Orig.), weighted by group, each item's four outcomes resampled together. Sec. 3.2:
    the hard-negative fine-tunes' drops are larger than the base CLIP's (a negative difference)."""
    from common.stats import bootstrap_mean_ci

    values = _item_values(a, b, column, "aug") - _item_values(a, b, column, "orig")
    return bootstrap_mean_ci(values, n_resamples=n_resamples, seed=seed)


def mean_drop(result: SelectionResult, n_resamples: int = 2000, seed: int = 0):
    """One model's drop (Aug. minus Orig.) averaged over Table 1's columns (REPLACE and SWAP, equal weights: the
    Abstract's 12.9 is the mean of Table 1's -14.9 and -10.9), in points, with a 95% percentile-bootstrap interval:
    in each of the ``n_resamples`` iterations every column's items are resampled independently (each weighted by
    group, as ``paired_difference`` weighs them) and the columns' mean drops averaged. The same bootstrap as
    ``common.stats.bootstrap_mean_ci`` (``scipy.stats.bootstrap``, percentile, ``numpy.random.default_rng(seed)``),
    with one sample per column (``paired=False``: drawn in column order from the one generator); a sample with
    every value equal has the degenerate interval."""
    import scipy.stats

    from common.stats import Interval

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
    """The paper's comparisons, flat: differences in points (hn vs the base and vs clip-ft; hp-hn vs hn; the base's
    Aug. minus its Orig. per column, the abstract's drop; hn's drop minus the base's, ``hn_minus_clip_drop_<column>``,
    Sec. 3.2; the base's drop averaged over REPLACE and SWAP, ``clip_drop_mean``, the Abstract's 12.9) with 95%
    bootstrap intervals over items (paired where two models are compared; ``mean_drop`` for the average), whether
    each of the paper's effects shows (an interval, not a point estimate,
    decides: "higher" means its lower end is above 0, "lower or flat" means its lower end is at most 0), and Table
    3's trend (Spearman's rho of the hard-negative weight against each metric over ratio-0 .. ratio-0.75 and
    hp-hn; None where the metric is the same for all five). Every interval: 2,000 resamples, seed 0, rounded to 2
    decimals like its point estimate. ``results``: each row id's outcomes."""
    import scipy.stats

    by_run = {r["run"]: r for r in rows}
    out: dict[str, float | bool | None] = {}
    for column in evaluation.COLUMNS:
        effect = {}
        for metric in METRICS:
            key = f"{column}_{metric}"
            out[f"hn_minus_clip_{key}"] = round(by_run["hn"][key] - by_run["base"][key], 2)
            ci = paired_difference(results["hn"], results["base"], column, metric)
            out[f"hn_minus_clip_{key}_ci_low"] = round(ci.low, 2)
            out[f"hn_minus_clip_{key}_ci_high"] = round(ci.high, 2)
            effect[metric] = ci
            out[f"hn_minus_clip_ft_{key}"] = round(by_run["hn"][key] - by_run["clip-ft"][key], 2)
            out[f"hp_hn_minus_hn_{key}"] = round(by_run["hp-hn"][key] - by_run["hn"][key], 2)
        drop = paired_difference(results["base"], results["base"], column, "aug", b_metric="orig")
        base = by_run["base"]
        out[f"clip_aug_minus_orig_{column}"] = round(base[f"{column}_aug"] - base[f"{column}_orig"], 2)
        out[f"clip_aug_minus_orig_{column}_ci_low"] = round(drop.low, 2)
        out[f"clip_aug_minus_orig_{column}_ci_high"] = round(drop.high, 2)
        hp_ci = paired_difference(results["hp-hn"], results["hn"], column, "brittleness")
        out[f"hp_hn_minus_hn_{column}_brittleness_ci_low"] = round(hp_ci.low, 2)
        out[f"hp_hn_minus_hn_{column}_brittleness_ci_high"] = round(hp_ci.high, 2)
        out[f"hn_orig_higher_{column}"] = bool(effect["orig"].low > 0)
        out[f"hn_aug_lower_or_flat_{column}"] = bool(effect["aug"].low <= 0)
        out[f"hn_brittleness_higher_{column}"] = bool(effect["brittleness"].low > 0)
        out[f"hn_shows_paper_effect_{column}"] = bool(
            out[f"hn_orig_higher_{column}"] and out[f"hn_aug_lower_or_flat_{column}"]
            and out[f"hn_brittleness_higher_{column}"])
        out[f"hp_hn_reduces_brittleness_{column}"] = bool(hp_ci.high < 0)
        weights = [RUNS[r].hard_negative_weight for r in RATIO_RUNS]
        for metric in METRICS:
            values = [by_run[r][f"{column}_{metric}"] for r in RATIO_RUNS]
            rho = scipy.stats.spearmanr(weights, values).statistic if len(set(values)) > 1 else None
            out[f"ratio_spearman_{column}_{metric}"] = None if rho is None else round(float(rho), 3)
    base = by_run["base"]
    for column in evaluation.COLUMNS:
        # Sec. 3.2: the hard-negative fine-tunes' drops (Aug. minus Orig.) are larger than the base CLIP's
        drop = drop_difference(results["hn"], results["base"], column)
        out[f"hn_minus_clip_drop_{column}"] = round(by_run["hn"][f"{column}_drop"] - base[f"{column}_drop"], 2)
        out[f"hn_minus_clip_drop_{column}_ci_low"] = round(drop.low, 2)
        out[f"hn_minus_clip_drop_{column}_ci_high"] = round(drop.high, 2)
    # the Abstract's CLIP drop: the mean of Table 1's REPLACE and SWAP drops
    mean = mean_drop(results["base"])
    out["clip_drop_mean"] = round(float(np.mean([base[f"{column}_drop"] for column in evaluation.COLUMNS])), 2)
    out["clip_drop_mean_ci_low"] = round(mean.low, 2)
    out["clip_drop_mean_ci_high"] = round(mean.high, 2)
    return out


def write_tables(out_dir: Path, rows: Sequence[Mapping], group_rows: Sequence[Mapping], summary_metrics: Mapping,
                 context: Mapping, table1_rows: Sequence[str]) -> dict[str, Path]:
    """The tables (Table 1: ``table1_rows`` in order; Table 2: every row; Table 3: ``TABLE3_ROWS``), groups,
    comparisons, summary (``SUMMARY_KEYS``) and context, in ``out_dir`` (the caller's output group)."""
    by_row = {r["row"]: r for r in rows}

    def table(path: Path, picked: Sequence[str], columns: Sequence[str]) -> Path:
        return write_csv_atomic(path, [{k: cell(k, by_row[r][k]) for k in columns} for r in picked], columns)

    return {
        "table1": table(out_dir / "table1.csv", table1_rows, TABLE1_FIELDS),
        "table2": table(out_dir / "table2.csv", [r["row"] for r in rows], TABLE2_FIELDS),
        "table3": table(out_dir / "table3.csv", TABLE3_ROWS, TABLE3_FIELDS),
        "groups": write_csv_atomic(out_dir / "groups.csv",
                                   [{k: cell(k, v) for k, v in r.items()} for r in group_rows], list(group_rows[0])),
        "comparisons": write_json_atomic(out_dir / "comparisons.json", dict(summary_metrics)),
        "summary": write_json_atomic(out_dir / "summary.json", {k: summary_metrics[k] for k in SUMMARY_KEYS}),
        "context": write_json_atomic(out_dir / "context.json", dict(context)),
    }
