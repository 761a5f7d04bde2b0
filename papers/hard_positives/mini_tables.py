"""Kamath et al. (hard positives), Tables 1-3 and Figure 3 in the mini profile: the base model and every fine-tune of
``papers.hard_positives.mini`` scored on the rendered benchmark.

The base ("CLIP ViT-B/32": ``mini/xs-32k``) and every run, scored once each as ``evaluation.py`` scores them (strict
comparisons, ties reported). Outputs in ``results/hard_positives/mini/``: ``table1.csv``, ``table2.csv``,
``table3.csv``, ``groups.csv`` (every cell and count per group), ``comparisons.json`` (the paper's comparisons with
paired-bootstrap 95% intervals and whether each shows), ``summary.json`` (DVC metrics: twelve of them), Figure 3's
examples (``figure3.csv``, ``figure3_counts.csv``; ``papers.hard_positives.figure3``) and ``context.json``.

A module of its own (stage ``table1-mini``: ``python -m papers.hard_positives.mini_tables``), so that the runs, whose
stages depend on ``mini.py``, are not retrained when the tables change.
"""
from __future__ import annotations

import argparse
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from common.finetune import served
from common.io import output_group, sha256_file, staged_to_final, write_csv_atomic, write_json_atomic
from common.scoring.selection import SelectionResult, negative_position
from common.tasks import ImageToTextItem
from papers.hard_positives import evaluation, figure3
from papers.hard_positives.mini import RUNS, _read_json, _section, default_dir, load_test_items

TABLE_STAGE = "papers/hard_positives/dvc.yaml:table1-mini"
SUMMARY_KEYS: tuple[str, ...] = (
    *(f"hn_minus_clip_{c}_{m}" for c in evaluation.COLUMNS for m in ("orig", "aug", "brittleness")),
    *(f"hn_minus_clip_{c}_brittleness_ci_low" for c in evaluation.COLUMNS),
    *(f"hp_hn_minus_hn_{c}_brittleness" for c in evaluation.COLUMNS),
    *(f"hp_hn_minus_hn_{c}_brittleness_ci_high" for c in evaluation.COLUMNS))
"""The DVC metrics (``summary.json``, flat numbers): the paper's comparisons in points, and the interval ends that
decide its two claims (HN raises Brittleness: the lower end above 0; HP+HN lowers it: the upper end below 0); every
other number, the yes/no verdicts among them, is in ``comparisons.json``."""


# ------------------------------------------------------------------------------------------------------------------
# 4. Scoring and the tables
# ------------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ModelEntry:
    """One row of the tables: the base model (``run`` None, zoo weights) or a fine-tune's checkpoint."""

    name: str
    label: str
    run: str | None = None
    checkpoint: Path | None = None


TABLE1_RUNS: tuple[str | None, ...] = (None, "clip-ft", "hn", "hp-hn", "hp-hn-swap", "hp-hn-replace")
TABLE3_RUNS: tuple[str | None, ...] = (None, "ratio-0", "ratio-0.25", "ratio-0.5", "ratio-0.75", "hn", "hp-hn")
"""The tables' rows in the paper's order (None: the base model, the "CLIP ViT-B/32" row)."""
TABLE1_FIELDS = ("row", "model", "label", *evaluation.TABLE_FIELDS[:8])
TABLE2_FIELDS = ("row", "model", "label", *evaluation.TABLE_FIELDS[8:])
TABLE3_FIELDS = ("row", "model", "label", "hard_negative_weight", *evaluation.TABLE_FIELDS[:8])
"""``row``: what the model is, in both profiles the audit's key (``papers.hard_positives.audit.PUBLISHED_ROWS``)."""


def entries_for(base: str, models_dir: Path) -> list[ModelEntry]:
    """The base model, then every run."""
    return [ModelEntry(base, f"CLIP ({base}, the mini family's ViT-B/32)"),
            *(ModelEntry(f"hard_positives/mini-{run}", spec.label, run, Path(models_dir) / f"{run}.safetensors")
              for run, spec in RUNS.items())]


@dataclass(frozen=True)
class Scored:
    """One model on the benchmark: its outcomes (Aug.'s rule) and its fingerprint."""

    result: SelectionResult
    fingerprint: str


def score_models(entries: Sequence[ModelEntry], arch: str, items: Sequence[ImageToTextItem], engine_config=None,
                 device: str = "cpu") -> dict[str, Scored]:
    from common.engine import Engine

    out = {}
    for e in entries:
        engine = Engine(served(e, arch, device), engine_config)
        out[e.name] = Scored(evaluation.evaluate(engine, items), engine.model.fingerprint)
    return out


def _cell(key: str, value) -> str:
    """Accuracies in points to 2 decimals, mean scores (cosine similarities, Table 2) to 4."""
    if isinstance(value, float):
        return f"{value:.4f}" if key.startswith(("mean_", "replace_mean_")) else f"{value:.2f}"
    return str(value)


def model_rows(entries: Sequence[ModelEntry], scores: Mapping[str, Scored]) -> list[dict]:
    """One row per model: how it was trained and ``evaluation.table_row``'s numbers."""
    rows = []
    for e in entries:
        spec = RUNS.get(e.run) if e.run else None
        rows.append({"row": e.run or "base", "model": e.name, "label": e.label, "run": e.run or "base",
                     "hard_positive_weight": spec.hard_positive_weight if spec else "N/A",
                     "hard_negative_weight": spec.hard_negative_weight if spec else "N/A",
                     "types": "+".join(spec.types) if spec else "N/A",
                     **evaluation.table_row(evaluation.group_cells(scores[e.name].result))})
    return rows


# Per-item indicators of the three accuracies, for paired comparisons between two models on the same items.
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


def paired_difference(a: SelectionResult, b: SelectionResult, column: str, metric: str, n_resamples: int = 2000,
                      seed: int = 0):
    """``metric`` of model a minus model b in points on one of Table 1's columns, with a 95% paired-bootstrap
    interval over items. A column is the unweighted mean of its groups, so each item's difference is weighted by
    (items in the column) / (groups x items in its group): the plain mean of the weighted differences is that
    column's difference, and resampling items keeps each pair of scores together."""
    from common.stats import bootstrap_mean_ci

    ia, ib = _indicators(a), _indicators(b)
    groups = evaluation.COLUMNS[column]
    total = sum(len(ia[g]["ids"]) for g in groups)
    values = []
    for g in groups:
        if not np.array_equal(ia[g]["ids"], ib[g]["ids"]):
            raise ValueError(f"paired_difference: the two results hold different items in group {g!r}")
        weight = total / (len(groups) * len(ia[g]["ids"]))
        values.append(100.0 * weight * (ia[g][metric] - ib[g][metric]))
    return bootstrap_mean_ci(np.concatenate(values), n_resamples=n_resamples, seed=seed)


METRICS = ("orig", "aug", "brittleness")


def summary(rows: Sequence[Mapping], scores: Mapping[str, Scored], base: str) -> dict:
    """The paper's comparisons, flat: differences in points (hn vs the base and vs clip-ft; hp-hn vs hn) with 95%
    paired-bootstrap intervals, whether each of the paper's effects shows (an interval, not a point estimate,
    decides: "higher" means its lower end is above 0, "lower or flat" means its lower end is at most 0), and Table
    3's trend (Spearman's rho of the hard-negative weight against each metric over ratio-0 .. ratio-0.75 and
    hp-hn; None where the metric is the same for all five)."""
    import scipy.stats

    by_run = {r["run"]: r for r in rows}
    name = {r["run"]: r["model"] for r in rows}
    out: dict[str, float | bool] = {}
    for column in evaluation.COLUMNS:
        effect = {}
        for metric in METRICS:
            key = f"{column}_{metric}"
            out[f"hn_minus_clip_{key}"] = round(by_run["hn"][key] - by_run["base"][key], 2)
            ci = paired_difference(scores[name["hn"]].result, scores[base].result, column, metric)
            out[f"hn_minus_clip_{key}_ci_low"] = round(ci.low, 2)
            out[f"hn_minus_clip_{key}_ci_high"] = round(ci.high, 2)
            effect[metric] = ci
            out[f"hn_minus_clip_ft_{key}"] = round(by_run["hn"][key] - by_run["clip-ft"][key], 2)
            out[f"hp_hn_minus_hn_{key}"] = round(by_run["hp-hn"][key] - by_run["hn"][key], 2)
        hp_ci = paired_difference(scores[name["hp-hn"]].result, scores[name["hn"]].result, column, "brittleness")
        out[f"hp_hn_minus_hn_{column}_brittleness_ci_low"] = round(hp_ci.low, 2)
        out[f"hp_hn_minus_hn_{column}_brittleness_ci_high"] = round(hp_ci.high, 2)
        out[f"hn_orig_higher_{column}"] = bool(effect["orig"].low > 0)
        out[f"hn_aug_lower_or_flat_{column}"] = bool(effect["aug"].low <= 0)
        out[f"hn_brittleness_higher_{column}"] = bool(effect["brittleness"].low > 0)
        out[f"hn_shows_paper_effect_{column}"] = bool(
            out[f"hn_orig_higher_{column}"] and out[f"hn_aug_lower_or_flat_{column}"]
            and out[f"hn_brittleness_higher_{column}"])
        out[f"hp_hn_reduces_brittleness_{column}"] = bool(hp_ci.high < 0)
        ratio_runs = ["ratio-0", "ratio-0.25", "ratio-0.5", "ratio-0.75", "hp-hn"]
        weights = [RUNS[r].hard_negative_weight for r in ratio_runs]
        for metric in METRICS:
            values = [by_run[r][f"{column}_{metric}"] for r in ratio_runs]
            rho = scipy.stats.spearmanr(weights, values).statistic if len(set(values)) > 1 else None
            out[f"ratio_spearman_{column}_{metric}"] = None if rho is None else round(float(rho), 3)
    return out


def write_tables(out_dir: Path, rows: Sequence[Mapping], group_rows: Sequence[Mapping], summary_metrics: Mapping,
                 context: Mapping) -> dict[str, Path]:
    by_run = {r["run"]: r for r in rows}

    def table(path: Path, runs: Sequence[str | None], columns: Sequence[str]) -> Path:
        picked = [by_run[r or "base"] for r in runs]
        return write_csv_atomic(path, [{k: _cell(k, r[k]) for k in columns} for r in picked], columns)

    group_fields = list(group_rows[0])
    return {
        "table1": table(out_dir / "table1.csv", TABLE1_RUNS, TABLE1_FIELDS),
        "table2": write_csv_atomic(out_dir / "table2.csv", [{k: _cell(k, r[k]) for k in TABLE2_FIELDS} for r in rows],
                                   TABLE2_FIELDS),
        "table3": table(out_dir / "table3.csv", TABLE3_RUNS, TABLE3_FIELDS),
        "groups": write_csv_atomic(out_dir / "groups.csv",
                                   [{k: _cell(k, v) for k, v in r.items()} for r in group_rows], group_fields),
        "comparisons": write_json_atomic(out_dir / "comparisons.json", dict(summary_metrics)),
        "summary": write_json_atomic(out_dir / "summary.json", {k: summary_metrics[k] for k in SUMMARY_KEYS}),
        "context": write_json_atomic(out_dir / "context.json", dict(context)),
    }


def evaluate_tables(entries: Sequence[ModelEntry], arch: str, test_dir: Path, out_dir: Path, engine_config=None,
                    device: str = "cpu", context: Mapping | None = None) -> dict[str, Path]:
    """Score every model on the benchmark and write the tables, summary and context as one output group."""
    items = load_test_items(Path(test_dir))
    scores = score_models(entries, arch, items, engine_config, device)
    rows = model_rows(entries, scores)
    groups = [row for e in entries
              for row in evaluation.group_rows(e.name, evaluation.group_cells(scores[e.name].result))]
    metrics = summary(rows, scores, entries[0].name)
    full_context = {
        **dict(context or {}), "rule": "strict comparisons (evaluation.py); ties are neither correct nor brittle",
        "n": dict(sorted(Counter(it.group for it in items).items())),
        "models": {e.name: {"run": e.run, "label": e.label, "fingerprint": scores[e.name].fingerprint,
                            "checkpoint_sha256": sha256_file(e.checkpoint) if e.checkpoint else None,
                            "ties": scores[e.name].result.ties,
                            **({"hard_positive_weight": RUNS[e.run].hard_positive_weight,
                                "hard_negative_weight": RUNS[e.run].hard_negative_weight,
                                "types": list(RUNS[e.run].types)} if e.run else {})} for e in entries},
    }
    by_row = {(e.run or "base"): e.name for e in entries}
    examples, counts = figure3.select({m: scores[by_row[row]].result for m, row in figure3.MODELS.items()}, items)
    out_dir = Path(out_dir)
    with output_group(out_dir) as staging:
        paths = write_tables(staging, rows, groups, metrics, full_context)
        paths["figure3"] = write_csv_atomic(staging / "figure3.csv", examples, figure3.FIELDS)
        paths["figure3_counts"] = write_csv_atomic(staging / "figure3_counts.csv", counts, figure3.COUNT_FIELDS)
    return {k: staged_to_final(p, staging, out_dir) for k, p in paths.items()}


def _cmd_tables(args) -> int:
    from common import reproducible
    from common.evaluate import engine_config
    from common.paths import RESULTS
    from common.zoo import get_spec

    reproducible.reexec_pinned()
    reproducible.fix_threads()
    params, section = _section(TABLE_STAGE)
    models_dir = Path(args.models or default_dir() / "models")
    test_dir = Path(args.test or default_dir() / "test")
    set_dir = Path(args.set or default_dir() / "finetune")
    entries = entries_for(section["base"], models_dir)
    sidecars = {e.name: _read_json(e.checkpoint.with_suffix(".json")) for e in entries if e.checkpoint is not None}
    context = {
        "profile": "mini", "base": section["base"], **reproducible.describe(),
        "test_set": {k: v for k, v in _read_json(test_dir / "manifest.json").items() if k != "examples"},
        "finetune_set": _read_json(set_dir / "manifest.json"),
        "training": {name: {k: s.get(k) for k in ("trainer", "loss", "data", "final_loss")}
                     for name, s in sidecars.items()},
        "ratio": "Table 3's ratio is the hard-negative loss weight with the hard-positive weight fixed at 1 (the "
                 "paper's Sec. 4.3), not a share of rows",
        "note": "mini profile: mini/xs-32k fine-tuned on rendered scenes; not comparable to the paper's numbers",
    }
    paths = evaluate_tables(entries, get_spec(section["base"]).arch, test_dir, RESULTS / "hard_positives" / "mini",
                            engine_config(params), context=context)
    for name, path in paths.items():
        print(f"{name}: {path}")
    print(paths["table1"].read_text(), paths["table3"].read_text(), sep="\n")
    print(json.dumps(json.loads(paths["summary"].read_text()), indent=2))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m papers.hard_positives.mini_tables",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=None, help="default: build/mini/hard_positives/models")
    parser.add_argument("--test", default=None, help="default: build/mini/hard_positives/test")
    parser.add_argument("--set", default=None, help="default: build/mini/hard_positives/finetune (its manifest)")
    return _cmd_tables(parser.parse_args(argv))


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
