"""Writing results: per-example predictions, per-group accuracy tables, DVC metrics and plots, atomically.

DVC metrics hold only the numbers a reader compares, one small file per model in a folder (``dvc metrics show``
prints a row per file); what describes the run (data set, counts, ties, fingerprints) goes to a
``<stem>_context.json`` sidecar that is not a metric.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from common.evaluation.outcomes import percent
from common.evaluation.scoring.selection import SelectionResult
from common.files.io import write_csv_atomic, write_json_atomic


@dataclass(frozen=True)
class ModelRow:
    """How a model is described in a results table (from the zoo), next to its scores."""

    name: str
    family: str
    label: str
    data_size: str
    params_m: str


def write_predictions(path: Path, result: SelectionResult) -> Path:
    """One row per item: its scores, the decision and whether it was a tie (auditable per example)."""
    k = max((len(o.scores) for o in result.outcomes), default=0)
    fields = ["item_id", "group", "correct", "tie"] + [f"score_{i}" for i in range(k)]
    rows = [{"item_id": o.item_id, "group": o.group, "correct": int(o.correct), "tie": int(o.tie),
             **{f"score_{i}": f"{s:.9g}" for i, s in enumerate(o.scores)}} for o in result.outcomes]
    return write_csv_atomic(path, rows, fields)


def metrics_filename(model: str) -> str:
    """A model's metrics file in a metrics folder ("mini/xs-2k" -> "mini__xs-2k.json")."""
    return model.replace("/", "__") + ".json"


def write_accuracy_table(
    out_dir: Path, stem: str, results: Sequence[tuple[ModelRow, SelectionResult]], groups: Sequence[str],
    context: dict,
) -> dict[str, Path]:
    """Write ``<stem>.csv`` (wide, paper-shaped), ``<stem>_metrics/<model>.json`` (DVC metrics: accuracy per
    group and the average, in percent as the papers print them), ``<stem>_context.json`` (everything else) and
    ``<stem>_plot.csv`` (long, for DVC plots)."""
    wide_rows, long_rows = [], []
    models_context: dict = {}
    metrics: dict[str, dict[str, float]] = {}
    for row, result in results:
        scores = result.by_group()
        missing = [g for g in groups if g not in scores]
        if missing:
            raise ValueError(f"model {row.name}: no items in group(s) {missing}")
        acc = {g: percent(scores[g].accuracy) for g in groups}
        average = round(sum(acc.values()) / len(acc), 2)
        wide_rows.append({
            "model": row.name, "family": row.family, "label": row.label, "data_size": row.data_size,
            "params_m": row.params_m, **{g: f"{acc[g]:.2f}" for g in groups}, "average": f"{average:.2f}",
            "n_items": len(result.outcomes), "ties": result.ties, "fingerprint": result.fingerprint,
        })
        for g in groups:
            long_rows.append({"model": row.name, "group": g, "accuracy": f"{acc[g]:.2f}",
                              "n": scores[g].n, "ties": scores[g].ties})
        metrics[row.name] = {**acc, "average": average}
        models_context[row.name] = {
            "fingerprint": result.fingerprint, "rule": result.rule,
            "ties": {g: scores[g].ties for g in groups}, "n": {g: scores[g].n for g in groups},
        }
    metrics_dir = out_dir / f"{stem}_metrics"
    fields = ["model", "family", "label", "data_size", "params_m", *groups, "average", "n_items", "ties", "fingerprint"]
    paths = {
        "table": write_csv_atomic(out_dir / f"{stem}.csv", wide_rows, fields),
        "plot": write_csv_atomic(out_dir / f"{stem}_plot.csv", long_rows, ["model", "group", "accuracy", "n", "ties"]),
        "context": write_json_atomic(out_dir / f"{stem}_context.json", {**context, "models": models_context}),
    }
    for name, values in metrics.items():
        write_json_atomic(metrics_dir / metrics_filename(name), values)
    stale = {p for p in metrics_dir.glob("*.json")} - {metrics_dir / metrics_filename(n) for n in metrics}
    for path in stale:  # a model dropped from the list must not leave its old numbers among the metrics
        path.unlink()
    paths["metrics"] = metrics_dir
    return paths
