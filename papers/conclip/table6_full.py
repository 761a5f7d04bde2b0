"""CoN-CLIP (Singh et al.), the ablation table (Table 6) in the full profile (stage ``table6-full``, ``python -m
papers.conclip.table6_full``).

Table 6's rows, the five fine-tunes ``ft-<run>`` of ``papers.conclip.runs.RUNS``, assembled from three tables of
``results/conclip/full/``: ``table3.csv`` (CC-Neg accuracy, ``papers.conclip.tables_full``), ``sugarcrepe.csv``
(``papers.conclip.sugarcrepe_full``) and ``classification.csv`` (the mean standard-prompt top-1,
``papers.conclip.zeroshot_full``). Writes ``table6.csv`` (the mini profile's columns,
``papers.conclip.tables.TABLE6_FIELDS``), ``table6_summary.json`` (DVC metrics, at most twelve numbers) and
``table6_context.json`` (the inputs' sha256, rows left out). A module of its own: it reads CSV files only, so that
an edit here does not rescore SugarCrepe on a GPU, nor an edit there rebuild this table.

A Table 6 row missing from an input table stops the stage naming the file; with ``conclip.full.skip_unavailable`` it
is left out and named in the context file.
"""
from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from common.errors import WorkspaceError
from common.io import output_group, sha256_file, staged_to_final, write_csv_atomic, write_json_atomic
from papers.conclip.runs import RUNS
from papers.conclip.tables import SUGARCREPE_FOLDS, TABLE6_FIELDS, model_cells, table6_row

TABLE6_STAGE = "papers/conclip/dvc.yaml:table6-full"
TABLE6_ROWS: dict[str, str] = {f"ft-{run}": run for run in RUNS}
"""Table 6's rows (row id in ``conclip.full.models`` -> run of ``RUNS``), in the paper's order."""
TABLE6_INPUTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "table3": ("table3.csv", ("ccneg",)),
    "sugarcrepe": ("sugarcrepe.csv", tuple(f"sugarcrepe_{fold}" for fold in SUGARCREPE_FOLDS)),
    "classification": ("classification.csv", ("classification_top1",)),
}
"""Table 6's input tables in ``results/conclip/full/`` (their stages: tables-full, sugarcrepe-full, zeroshot-full)
and the columns read from each beside row, model and label."""
SUMMARY_MAX = 12


class Table6InputError(WorkspaceError):
    """An input table of Table 6 is missing, lacks a row or column, or holds a value that is not a number."""


def read_table(path: Path, columns: Sequence[str]) -> dict[str, dict]:
    """An input table by row id: row, model, label and ``columns`` (numbers); an error names the file and row."""
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            header = reader.fieldnames or []
            missing = [c for c in ("row", "model", "label", *columns) if c not in header]
            if missing:
                raise Table6InputError(f"{path}: no column {missing} (its columns: {header})")
            records = list(reader)
    except FileNotFoundError:
        raise Table6InputError(f"{path}: not found; Table 6 is assembled from its stage's output (run that stage "
                               f"first)") from None
    out: dict[str, dict] = {}
    for record in records:
        row = record["row"]
        if row in out:
            raise Table6InputError(f"{path}: row {row!r} appears twice")
        try:
            values = {c: float(record[c]) for c in columns}
        except (TypeError, ValueError):
            raise Table6InputError(f"{path}: row {row!r}: {columns} must be numbers, found "
                                   f"{ {c: record[c] for c in columns} }") from None
        bad = [c for c, v in values.items() if not np.isfinite(v)]
        if bad:
            raise Table6InputError(f"{path}: row {row!r}: {bad} is not a finite number")
        out[row] = {"row": row, "model": record["model"], "label": record["label"], **values}
    return out


def assemble_table6(results_dir: Path, skip_unavailable: bool = False) -> tuple[list[dict], dict[str, str]]:
    """Table 6's rows (``TABLE6_ROWS``, in order) from the three input tables of ``results_dir``, each row's cells
    built as the mini profile builds them (``papers.conclip.tables.table6_row``). A row missing from an input table
    raises ``Table6InputError`` naming the file, or with ``skip_unavailable`` is left out (returned by row with the
    files that lack it); the same row must name the same model in every table."""
    tables = {key: (results_dir / name, read_table(results_dir / name, columns))
              for key, (name, columns) in TABLE6_INPUTS.items()}
    rows, skipped = [], {}
    for row, run in TABLE6_ROWS.items():
        lacking = [str(path) for path, table in tables.values() if row not in table]
        if lacking:
            if not skip_unavailable:
                raise Table6InputError(f"{lacking[0]}: no row {row!r} (Table 6's run {run!r}); its model was not "
                                       f"scored (conclip.full.models, conclip.full.sugarcrepe_rows)")
            skipped[row] = f"not in {', '.join(lacking)}"
            continue
        found = {key: table[row] for key, (_, table) in tables.items()}
        models = {str(tables[key][0]): r["model"] for key, r in found.items()}
        if len(set(models.values())) != 1:
            raise Table6InputError(f"row {row!r} names different models in the input tables: {models} (a table is "
                                   f"stale: re-run its stage)")
        first = found["table3"]
        rows.append(table6_row(model_cells(row, first["model"], first["label"], run), found["sugarcrepe"],
                               found["table3"]["ccneg"], found["classification"]["classification_top1"]))
    return rows, skipped


def table6_mean(row: Mapping) -> float:
    """A row's mean over Table 6's five columns: the paper's "highest average performance across all settings"."""
    return float(np.mean([row[f] for f in TABLE6_FIELDS[TABLE6_FIELDS.index("sugarcrepe_replace"):]]))


def table6_summary(rows: Sequence[Mapping]) -> dict[str, float]:
    """DVC metrics, at most twelve numbers: per row its mean over the five columns and over the three SugarCrepe
    folds; where L_conclip's row is present, its rank by the five-column mean (1: highest, the paper's finding)
    and its lead over CREPE-Negate L1 (the paper: 'strongly outperforming')."""
    out: dict[str, float] = {}
    for r in rows:
        key = r["row"].replace("-", "_")
        out[f"{key}_mean"] = round(table6_mean(r), 2)
        out[f"{key}_sugarcrepe"] = round(float(np.mean([r[f"sugarcrepe_{f}"] for f in SUGARCREPE_FOLDS])), 2)
    by_row = {r["row"]: r for r in rows}
    if "ft-conclip" in by_row:
        means = sorted((table6_mean(r) for r in rows), reverse=True)
        out["ft_conclip_mean_rank"] = float(means.index(table6_mean(by_row["ft-conclip"])) + 1)
        if "ft-crepe-negate-l1" in by_row:
            out["ft_conclip_minus_ft_crepe_negate_l1_mean"] = round(
                table6_mean(by_row["ft-conclip"]) - table6_mean(by_row["ft-crepe-negate-l1"]), 2)
    return dict(list(out.items())[:SUMMARY_MAX])


def write_table6(results_dir: Path, skip_unavailable: bool = False, context: Mapping | None = None
                 ) -> dict[str, Path]:
    """``table6.csv``, ``table6_summary.json`` and ``table6_context.json`` in ``results_dir`` as one output group
    (nothing is written when an input is bad, or when no row could be assembled)."""
    results_dir = Path(results_dir)
    rows, skipped = assemble_table6(results_dir, skip_unavailable)
    if not rows:
        raise Table6InputError(f"{results_dir}: none of Table 6's rows {list(TABLE6_ROWS)} is in all of "
                               f"{[name for name, _ in TABLE6_INPUTS.values()]}: {skipped}")
    full_context = {
        **dict(context or {}), "profile": "full",
        "inputs": {name: {"path": str(results_dir / name), "sha256": sha256_file(results_dir / name),
                          "columns": list(columns)} for name, columns in TABLE6_INPUTS.values()},
        "runs": {row: {"run": run, "terms": list(RUNS[run].terms), "negatives": RUNS[run].negatives,
                       "label": RUNS[run].label} for row, run in TABLE6_ROWS.items()},
        "skipped": skipped,
        "columns": "SugarCrepe folds: plain means of their categories (sugarcrepe.csv); ccneg: CC-Neg accuracy, the "
                   "authors' argmax rule (table3.csv); classification_top1: mean standard-prompt top-1 over "
                   "conclip.full.zeroshot_datasets (classification.csv); all in points",
    }
    with output_group(results_dir) as staging:
        paths = {
            "table6": write_csv_atomic(staging / "table6.csv", rows, TABLE6_FIELDS),
            "summary": write_json_atomic(staging / "table6_summary.json", table6_summary(rows)),
            "context": write_json_atomic(staging / "table6_context.json", full_context),
        }
    return {k: staged_to_final(p, staging, results_dir) for k, p in paths.items()}


# ------------------------------------------------------------------------------------------------------------------
# Entry point
# ------------------------------------------------------------------------------------------------------------------
def run_table6(args: argparse.Namespace) -> int:
    from common.params import stage_section
    from common.paths import RESULTS

    _, section = stage_section(TABLE6_STAGE, "conclip.full")
    paths = write_table6(Path(args.out or RESULTS / "conclip" / "full"), bool(section["skip_unavailable"]))
    for name, path in paths.items():
        print(f"{name}: {path}")
    print(paths["table6"].read_text(encoding="utf-8"))
    print(json.dumps(json.loads(paths["summary"].read_text(encoding="utf-8")), indent=2))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m papers.conclip.table6_full", description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None,
                        help="the results folder, read and written (default: results/conclip/full)")
    return run_table6(parser.parse_args(argv))


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
