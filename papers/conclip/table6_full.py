"""CoN-CLIP (Singh et al.), the ablation table (Table 6) in the full profile (stage ``table6-full``, ``python -m
papers.conclip.table6_full``).

Table 6's rows, the five fine-tunes ``ft-<run>``, assembled from the three tables of ``TABLE6_INPUTS``: CSV files
only, so that an edit here does not rescore SugarCrepe on a GPU. ``comparisons.json`` (the README's "Outputs"): from
the scoring stages' per-example predictions, each checked against its table; SugarCrepe's is the mean over the seven
categories (the paper's "average improvement of 4.4%" is over all of them, not REPLACE alone). A comparison, or (with
``conclip.full.skip_unavailable``) a Table 6 row, that an input lacks is left out and named in the context.
"""
from __future__ import annotations

import csv
import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from common.card.core import N_RESAMPLES, SEED, paired_difference
from common.errors import WorkspaceError
from common.evaluation.outcomes import Outcome
from common.files.io import sha256_file, write_csv_atomic, write_json_atomic, write_output_group
from common.files.jsonl import read_json
from common.paths import RESULTS
from common.pipeline.cli import print_written, stage_parser
from common.pipeline.params import own_section
from papers.conclip.columns import (
    SUGARCREPE_CATEGORIES, SUGARCREPE_FOLDS, TABLE6_FIELDS, ccneg_difference, model_cells, sugarcrepe_measure,
    table6_row)
from papers.conclip.runs import RUNS

TABLE6_ROWS: dict[str, str] = {f"ft-{run}": run for run in RUNS}
"""Table 6's rows (row id in ``conclip.full.models`` -> run of ``RUNS``), in the paper's order."""
TABLE6_INPUTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "table3": ("table3.csv", ("ccneg",)),
    "sugarcrepe": ("sugarcrepe.csv", tuple(f"sugarcrepe_{fold}" for fold in SUGARCREPE_FOLDS)),
    "classification": ("classification.csv", ("classification_top1",)),
}
"""Table 6's input tables (stages tables-full, sugarcrepe-full, zeroshot-full) and the columns read from each."""
SUMMARY_MAX = 12
COMPARISONS_FILE = "comparisons.json"
COMPARED_ROWS = ("conclip", "clip")
"""The rows of ``comparisons.json``: the released CoN-CLIP ViT-B/32 minus OpenAI's CLIP ViT-B/32."""
COMPARISON_INPUTS: dict[str, tuple[str, str]] = {
    "ccneg": ("table3.csv", "predictions"),
    "sugarcrepe": ("sugarcrepe.csv", "sugarcrepe_predictions"),
}
"""What is compared -> (its table, its folder of per-example predictions, one CSV per model)."""
ZEROSHOT_COMPARISONS = "zeroshot_comparisons.json"
"""Zero-shot classification's comparison (``papers.conclip.zeroshot_full``), copied into ``comparisons.json``."""
CLASSIFICATION_KEYS = tuple(f"conclip_minus_clip_classification{end}" for end in ("", "_ci_low", "_ci_high"))


class Table6InputError(WorkspaceError):
    """An input table of Table 6 is missing, lacks a row or column, or holds a value that is not a number."""


def _read_csv(path: Path, required: Sequence[str], remedy: str) -> list[dict]:
    """The records of a CSV file that has the ``required`` columns; a missing file says ``remedy``."""
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            header = reader.fieldnames or []
            missing = [c for c in required if c not in header]
            if missing:
                raise Table6InputError(f"{path}: no column {missing} (its columns: {header})")
            return list(reader)
    except FileNotFoundError:
        raise Table6InputError(f"{path}: not found; {remedy}") from None


def read_table(path: Path, columns: Sequence[str]) -> dict[str, dict]:
    """An input table by row id: row, model, label and ``columns`` (numbers); an error names the file and row."""
    records = _read_csv(path, ("row", "model", "label", *columns),
                        "Table 6 is assembled from its stage's output (run that stage first)")
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
    """Table 6's rows (``TABLE6_ROWS``, in order) built as the mini profile builds them; a row an input table lacks
    raises, or with ``skip_unavailable`` is returned by row with the files that lack it."""
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


# --- comparisons.json: CoN-CLIP minus CLIP with paired intervals, from the per-example predictions ---
@dataclass(frozen=True)
class Outcomes:
    """A predictions file read back: what ``common.card.core.selection_measures`` reads of a result."""

    path: Path
    outcomes: tuple[Outcome, ...]


def read_predictions(path: Path) -> Outcomes:
    """A predictions CSV (``common.evaluation.results.write_predictions``); a bad one names the file (and line)."""
    path = Path(path)
    records = _read_csv(path, ("item_id", "group", "correct", "tie"),
                        "the per-example predictions are written with their table by its stage (run it again)")
    outcomes = []
    for line, record in enumerate(records, start=2):
        for flag in ("correct", "tie"):
            if record[flag] not in ("0", "1"):
                raise Table6InputError(f"{path}:{line}: {flag} is {record[flag]!r}, not 0 or 1")
        cells = [v for k, v in record.items() if str(k).startswith("score_") and v]  # "": fewer candidates
        try:
            scores = tuple(map(float, cells))
        except ValueError:
            raise Table6InputError(f"{path}:{line}: the scores {cells} are not all numbers") from None
        outcomes.append(Outcome(record["item_id"], record["group"] or "", scores, record["correct"] == "1",
                                record["tie"] == "1"))
    if not outcomes:
        raise Table6InputError(f"{path}: no examples")
    return Outcomes(path, tuple(outcomes))


def _pair(results_dir: Path, what: str) -> dict[str, Outcomes] | str:
    """The predictions of ``COMPARED_ROWS`` for ``what``, checked against the table, or why they cannot be compared."""
    table_name, folder = COMPARISON_INPUTS[what]
    by_group = what == "sugarcrepe"
    columns = SUGARCREPE_CATEGORIES if by_group else ("ccneg",)
    table = read_table(results_dir / table_name, columns)
    lacking = [row for row in COMPARED_ROWS if row not in table]
    if lacking:
        return f"{table_name} has no row {lacking}"
    outcomes = {row: read_predictions(results_dir / folder / f"{table[row]['model'].replace('/', '__')}.csv")
                for row in COMPARED_ROWS}
    ids = {row: [o.item_id for o in out.outcomes] for row, out in outcomes.items()}
    if ids["conclip"] != ids["clip"]:
        raise Table6InputError(f"{outcomes['conclip'].path} and {outcomes['clip'].path} hold different examples (or "
                               f"in another order): a paired comparison needs the same ones; re-run the stage")
    for row, column in itertools.product(COMPARED_ROWS, columns):  # the accuracy (per group or over all): the table's
        picked = [o.correct for o in outcomes[row].outcomes if not by_group or o.group == column]
        recount = 100.0 * float(np.mean(picked)) if picked else float("nan")
        if not abs(recount - table[row][column]) <= 0.006:
            raise Table6InputError(f"{outcomes[row].path}: {column if by_group else 'all'}: {recount:.4f} correct, but "
                                   f"its table says {table[row][column]} (a stale file: re-run the stage that writes "
                                   "both)")
    return outcomes


def comparisons(results_dir: Path) -> tuple[dict[str, float], dict[str, str]]:
    """CoN-CLIP minus CLIP (points) with paired 95% intervals, and the comparisons left out (what -> why)."""
    out: dict[str, float] = {}
    left_out: dict[str, str] = {}
    for what in ("sugarcrepe", "ccneg"):
        outcomes = _pair(results_dir, what)
        if isinstance(outcomes, str):
            left_out[what] = outcomes
            continue
        if what == "sugarcrepe":  # both at common.card.core's N_RESAMPLES and SEED, which the context names
            d = paired_difference(*(sugarcrepe_measure(outcomes[row]) for row in COMPARED_ROWS))
            estimate = d.value
        else:
            d = ccneg_difference(*(outcomes[row].outcomes for row in COMPARED_ROWS))
            estimate = d.estimate
        key = f"conclip_minus_clip_{what}"
        out.update({key: round(estimate, 2), f"{key}_ci_low": round(d.low, 2), f"{key}_ci_high": round(d.high, 2)})
    path = results_dir / ZEROSHOT_COMPARISONS
    try:
        zeroshot = read_json(path, dict, "zeroshot-full writes it with classification.csv (run that stage again)")
    except WorkspaceError as exc:  # missing, not JSON or not a JSON object
        raise Table6InputError(str(exc)) from None
    if set(zeroshot) - set(CLASSIFICATION_KEYS) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v) for v in zeroshot.values()):
        raise Table6InputError(f"{path}: expected {{}} or numbers under {list(CLASSIFICATION_KEYS)}, found "
                               f"{zeroshot!r:.200}; run zeroshot-full again")
    if set(zeroshot) == set(CLASSIFICATION_KEYS):
        out.update({k: float(zeroshot[k]) for k in CLASSIFICATION_KEYS})
    elif zeroshot:
        raise Table6InputError(f"{path}: only {sorted(zeroshot)} of {list(CLASSIFICATION_KEYS)}; run zeroshot-full "
                               f"again")
    else:
        left_out["classification"] = (f"{ZEROSHOT_COMPARISONS} holds none (zeroshot_context.json: "
                                      f"comparisons.left_out)")
    return out, left_out


def write_table6(results_dir: Path, skip_unavailable: bool = False, context: Mapping | None = None
                 ) -> dict[str, Path]:
    """Table 6's files in ``results_dir`` as one output group (all or nothing)."""
    results_dir = Path(results_dir)
    rows, skipped = assemble_table6(results_dir, skip_unavailable)
    if not rows:
        raise Table6InputError(f"{results_dir}: none of Table 6's rows {list(TABLE6_ROWS)} is in all of "
                               f"{[name for name, _ in TABLE6_INPUTS.values()]}: {skipped}")
    compared, left_out = comparisons(results_dir)
    full_context = {
        **dict(context or {}), "profile": "full",
        "inputs": {name: {"path": str(results_dir / name), "sha256": sha256_file(results_dir / name),
                          "columns": list(columns)} for name, columns in TABLE6_INPUTS.values()},
        "comparisons": {"file": COMPARISONS_FILE, "rows": list(COMPARED_ROWS),
                        "how": f"row conclip minus row clip in points; 95% percentile bootstrap, {N_RESAMPLES} "
                               f"resamples, seed {SEED}, paired over examples: SugarCrepe resampled within each "
                               "category (the estimate is the mean over the seven categories), CC-Neg over items "
                               "(the authors' argmax rule); classification copied from zeroshot_comparisons.json "
                               "(resampled within each dataset)",
                        "left_out": left_out},
        "runs": {row: {"run": run, "terms": list(RUNS[run].terms), "negatives": RUNS[run].negatives,
                       "label": RUNS[run].label} for row, run in TABLE6_ROWS.items()},
        "skipped": skipped,
        "columns": "SugarCrepe folds: plain means of their categories (sugarcrepe.csv); ccneg: CC-Neg accuracy, the "
                   "authors' argmax rule (table3.csv); classification_top1: mean standard-prompt top-1 over "
                   "conclip.full.zeroshot_datasets (classification.csv); all in points",
    }
    return write_output_group(results_dir, lambda staging: {
        "table6": write_csv_atomic(staging / "table6.csv", rows, TABLE6_FIELDS),
        "summary": write_json_atomic(staging / "table6_summary.json", table6_summary(rows)),
        "context": write_json_atomic(staging / "table6_context.json", full_context),
        "comparisons": write_json_atomic(staging / COMPARISONS_FILE, compared),
    })


def main(argv: Sequence[str] | None = None) -> int:
    args = stage_parser(__spec__.name, __doc__,
                        out="the results folder, read and written (default: results/conclip/full)").parse_args(argv)
    _, section = own_section("conclip.full")
    paths = write_table6(Path(args.out or RESULTS / "conclip" / "full"), bool(section["skip_unavailable"]))
    return print_written(paths, "table6", "summary")


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
