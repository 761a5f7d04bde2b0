"""CoN-CLIP (Singh et al.), SugarCrepe (Tables 5, 13, 14) and the ablation table (Table 6) in the full profile.

``score`` (stage ``sugarcrepe-full``, ``python -m papers.conclip.sugarcrepe_full``): the rows of
``conclip.full.sugarcrepe_rows`` (row ids of ``conclip.full.models``: CLIP, the released CoN-CLIP, this workspace's
fine-tunes ``ft-<run>``) on SugarCrepe's released set (``build/full/sugarcrepe``, written by SugarCrepe's stage
``full-set``), read by SugarCrepe's own loader (``common.benchmarks.sugarcrepe.PreparedSet``) and decided by the rule its
full profile scores Table 6 with (``common.scoring.selection`` with ``STRICT``: the true caption must score strictly
above the false one, a tie is wrong, as SugarCrepe's ``main_eval.py``, which the CoN-CLIP authors ran). The paper's
"R@1" over one image and two captions is this accuracy. Writes, in ``results/conclip/full/`` as one output group:
``sugarcrepe.csv`` (the mini profile's columns, ``papers.conclip.tables.SUGARCREPE_FIELDS``: the seven categories
and Table 6's three folds, in points), ``sugarcrepe_context.json`` (the set, the rule, each row's fingerprint and ties
per category, rows left out and why, the authors' code against this) and ``sugarcrepe_predictions/`` (per model,
every example's two scores, decision and tie: every cell can be recounted from them).

``table6`` (stage ``table6-full``, ``python -m papers.conclip.sugarcrepe_full table6``): Table 6's rows, the five
fine-tunes ``ft-<run>`` of ``papers.conclip.runs.RUNS``, assembled from three tables of ``results/conclip/full/``:
``table3.csv`` (CC-Neg accuracy, ``papers.conclip.full``), ``sugarcrepe.csv`` (above) and ``classification.csv``
(the mean standard-prompt top-1, ``papers.conclip.zeroshot_full``). Writes ``table6.csv`` (the mini profile's
columns, ``papers.conclip.tables.TABLE6_FIELDS``), ``table6_summary.json`` (DVC metrics, at most twelve numbers) and
``table6_context.json`` (the inputs' sha256, rows left out).

A model that cannot be loaded, or a Table 6 row missing from an input table, stops the stage naming the model (and
its download entry's note) or the file; with ``conclip.full.skip_unavailable`` it is left out and named in the
context file.
"""
from __future__ import annotations

import argparse
import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from common.errors import WorkspaceError
from common.io import output_group, sha256_file, staged_to_final, write_csv_atomic, write_json_atomic
from common.scoring.selection import STRICT, SelectionResult
from common.tasks import ImageToTextItem
from papers.conclip.runs import RUNS
from papers.conclip.tables import (
    SUGARCREPE_CATEGORIES, SUGARCREPE_FIELDS, SUGARCREPE_FOLDS, TABLE6_FIELDS, model_cells, sugarcrepe_cells,
    table6_row)
from common.zoo import ModelFactory
from common.zoo.available import each_model
from common.zoo import create_model as zoo_create

SCORE_STAGE = "papers/conclip/dvc.yaml:sugarcrepe-full"
TABLE6_STAGE = "papers/conclip/dvc.yaml:table6-full"
DATA_FILES = ("papers/conclip/models.toml", "papers/aro/models.toml", "papers/conclip/sources.toml",
              "papers/aro/sources.toml")
"""Read at run time (``common.stage_deps``): the zoo entries of ``conclip.full.models``' names (CoN-CLIP and its
fine-tunes, ARO's NegCLIP should a row name it) and, for a model that cannot be loaded, the note of its download
entry (``common.zoo.why_unavailable``)."""
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
PREDICTIONS_DIR = "sugarcrepe_predictions"
"""Not ``predictions/``: that folder of the same results folder is ``tables-full``'s (CC-Neg)."""
PAPER_VS_CODE: dict[str, str] = {
    "rule": "code (src/eval/sugar_crepe_utils/main_eval.py, SugarCrepe's main_eval.py): correct iff "
            "s(I, caption) > s(I, negative_caption), a tie wrong; the same here (STRICT), ties counted in the context",
    "r_at_1": "the paper's 'R@1' over one image and two captions is this accuracy (the true caption ranked first)",
    "folds": "Table 6's Replace / Add / Swap are plain means of Table 14's categories (L1: Replace 79.36 = "
             "mean(91.71, 80.58, 65.79)); the same here (papers.conclip.tables.SUGARCREPE_FOLDS)",
    "precision": "code: clip.load(...) on a GPU keeps CLIP in fp16; a --ckpt model (CoN-CLIP, the fine-tunes) is cast "
                 "to fp32 (.float()) before its weights are loaded. Here every row runs at the engine's precision "
                 "(params.yaml engine.precision)",
    "backbones": "Tables 5 and 13 also list ViT-B/16 and ViT-L/14 (and LaCLIP); conclip.full.sugarcrepe_rows scores "
                 "the ViT-B/32 rows of conclip.full.models: CLIP, the released CoN-CLIP and this workspace's "
                 "fine-tunes (Table 14's ablations are ViT-B/32)",
}


class SugarcrepeFullError(WorkspaceError):
    """Nothing to score, a row that is not a model of ``conclip.full.models``, or a set without all seven
    categories."""


class Table6InputError(WorkspaceError):
    """An input table of Table 6 is missing, lacks a row or column, or holds a value that is not a number."""


# ------------------------------------------------------------------------------------------------------------------
# SugarCrepe (Tables 5, 13, 14)
# ------------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ScoredRow:
    """One row's outcomes on SugarCrepe (decided by ``STRICT``)."""

    row: str
    model: str
    label: str
    result: SelectionResult


def rows_to_score(models: Mapping[str, str], rows: Sequence[str]) -> dict[str, str]:
    """``rows`` (ids of ``conclip.full.models``) -> their zoo models, in the given order."""
    if not rows:
        raise SugarcrepeFullError("conclip.full.sugarcrepe_rows is empty: no SugarCrepe row to score")
    unknown = [r for r in rows if r not in models]
    if unknown:
        raise SugarcrepeFullError(f"conclip.full.sugarcrepe_rows: {unknown} not in conclip.full.models "
                                  f"(its rows: {list(models)})")
    if len(set(rows)) != len(rows):
        raise SugarcrepeFullError(f"conclip.full.sugarcrepe_rows lists a row twice: {list(rows)}")
    return {r: models[r] for r in rows}


def load_items(manifest: Path) -> tuple[list[ImageToTextItem], dict]:
    """SugarCrepe's set through its own loader (every example or a ``DatasetError``), and what describes it; all
    seven categories are needed (Table 6's folds average them)."""
    from common.benchmarks.sugarcrepe import PreparedSet

    prepared = PreparedSet.load(Path(manifest))
    missing = [c for c in SUGARCREPE_CATEGORIES if c not in prepared.categories]
    if missing:
        raise SugarcrepeFullError(f"{prepared.path}: categories {missing} are not in this set; sugarcrepe.csv needs "
                                  f"all seven ({list(SUGARCREPE_CATEGORIES)})")
    return prepared.items(), prepared.describe()


def model_label(name: str) -> str:
    """The zoo entry's label; a model the zoo does not register (a stand-in in tests) is labelled by its name."""
    from common.zoo import get_spec

    try:
        return get_spec(name).label
    except KeyError:
        return name


def score_rows(models: Mapping[str, str], items: Sequence[ImageToTextItem], engine_config=None,
               device: str = "cpu", create: ModelFactory = zoo_create, skip_unavailable: bool = False
               ) -> tuple[list[ScoredRow], dict[str, str]]:
    """Every (row -> zoo model) on the items, in the given order, each decided by ``STRICT`` (cosine of the
    embeddings). A model that cannot be loaded raises ``ModelUnavailable`` with the reason, or with
    ``skip_unavailable`` is returned by row with the reason."""
    from common.engine import Engine
    from common.scoring import selection

    scored, skipped = [], {}
    for row, name, model in each_model(models, skipped, create=create, device=device,
                                       skip_unavailable=skip_unavailable, what="SugarCrepe row"):
        result = selection.evaluate(Engine(model, engine_config), items, STRICT)
        if [o.item_id for o in result.outcomes] != [it.item_id for it in items]:
            raise SugarcrepeFullError(f"SugarCrepe row {row!r}: the outcomes of {name!r} are not in the items' order")
        scored.append(ScoredRow(row, name, model_label(name), result))
        del model
    return scored, skipped


def sugarcrepe_row(s: ScoredRow) -> dict:
    """The row of ``sugarcrepe.csv``: the seven categories and Table 6's folds, in points (``papers.conclip.tables``,
    as the mini profile builds it)."""
    accuracy = {g: v.accuracy for g, v in s.result.by_group().items()}
    return {"row": s.row, "model": s.model, "label": s.label, **sugarcrepe_cells(accuracy)}


def evaluate_sugarcrepe(models: Mapping[str, str], manifest: Path, out_dir: Path, engine_config=None,
                        device: str = "cpu", create: ModelFactory = zoo_create, skip_unavailable: bool = False,
                        context: Mapping | None = None) -> dict[str, Path]:
    """Score every row on SugarCrepe and write ``sugarcrepe.csv``, its context and predictions as one output group
    (nothing is written when the set is bad, a model fails, or none could be scored)."""
    from common.results import write_predictions

    if not models:
        raise SugarcrepeFullError("no SugarCrepe row to score")
    items, described = load_items(manifest)
    scored, skipped = score_rows(models, items, engine_config, device, create, skip_unavailable)
    if not scored:
        raise SugarcrepeFullError(f"no row of conclip.full.sugarcrepe_rows could be loaded: {skipped}")
    n = {c: sum(it.group == c for it in items) for c in SUGARCREPE_CATEGORIES}
    full_context = {
        **dict(context or {}), "profile": "full",
        "rule": "strict (SugarCrepe's main_eval.py): the true caption must score strictly above the false one; a tie "
                "is wrong (counted per category under models.<row>.ties)",
        "folds": {fold: list(cats) for fold, cats in SUGARCREPE_FOLDS.items()},
        "data": described, "n": n,
        "models": {s.row: {"model": s.model, "label": s.label, "fingerprint": s.result.fingerprint,
                           "rule": s.result.rule, "n": len(s.result.outcomes),
                           "ties": {g: v.ties for g, v in s.result.by_group().items()}} for s in scored},
        "skipped": skipped,
        "paper_vs_code": dict(PAPER_VS_CODE),
    }
    out_dir = Path(out_dir)
    with output_group(out_dir) as staging:
        paths = {
            "sugarcrepe": write_csv_atomic(staging / "sugarcrepe.csv", [sugarcrepe_row(s) for s in scored],
                                           SUGARCREPE_FIELDS),
            "context": write_json_atomic(staging / "sugarcrepe_context.json", full_context),
        }
        predictions = staging / PREDICTIONS_DIR
        for s in scored:
            write_predictions(predictions / f"{s.model.replace('/', '__')}.csv", s.result)
        paths["predictions"] = predictions
    return {k: staged_to_final(p, staging, out_dir) for k, p in paths.items()}


# ------------------------------------------------------------------------------------------------------------------
# Table 6
# ------------------------------------------------------------------------------------------------------------------
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
def _stage_params(stage: str) -> dict:
    from common.params import stage_params

    return stage_params(stage)


def run_score(args: argparse.Namespace) -> int:
    from common.evaluate import best_device, engine_config
    from common.paths import RESULTS, build_root

    params = _stage_params(SCORE_STAGE)
    section = params["conclip"]["full"]
    device = args.device or best_device()
    manifest = Path(args.sugarcrepe or build_root() / "full" / "sugarcrepe" / "manifest.json")
    models = rows_to_score(dict(section["models"]), list(section["sugarcrepe_rows"]))
    context = {"device": device, "engine": params.get("engine", {}), "rows_from": "conclip.full.sugarcrepe_rows"}
    paths = evaluate_sugarcrepe(models, manifest, Path(args.out or RESULTS / "conclip" / "full"),
                                engine_config(params), device, create=zoo_create,
                                skip_unavailable=bool(section["skip_unavailable"]), context=context)
    for name, path in paths.items():
        print(f"{name}: {path}")
    print(paths["sugarcrepe"].read_text(encoding="utf-8"))
    return 0


def run_table6(args: argparse.Namespace) -> int:
    from common.paths import RESULTS

    section = _stage_params(TABLE6_STAGE)["conclip"]["full"]
    paths = write_table6(Path(args.out or RESULTS / "conclip" / "full"), bool(section["skip_unavailable"]))
    for name, path in paths.items():
        print(f"{name}: {path}")
    print(paths["table6"].read_text(encoding="utf-8"))
    print(json.dumps(json.loads(paths["summary"].read_text(encoding="utf-8")), indent=2))
    return 0


COMMANDS = {"score": run_score, "table6": run_table6}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m papers.conclip.sugarcrepe_full",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("command", nargs="?", default="score", choices=list(COMMANDS),
                        help="score: SugarCrepe per row (stage sugarcrepe-full, the default); table6: Table 6 from "
                             "the full profile's tables (stage table6-full)")
    parser.add_argument("--out", default=None,
                        help="the results folder, read (table6) and written (default: results/conclip/full)")
    parser.add_argument("--sugarcrepe", default=None,
                        help="score: SugarCrepe's prepared set (default: build/full/sugarcrepe/manifest.json)")
    parser.add_argument("--device", default=None, help="score: default cuda when available, else cpu")
    args = parser.parse_args(argv)
    return COMMANDS[args.command](args)


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
