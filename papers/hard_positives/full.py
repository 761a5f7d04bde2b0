"""Kamath et al. (hard positives), Table 1 in the full profile: the released REPLACE and SWAP benchmarks on Visual
Genome images, every obtainable model of the table, scored as ``papers.hard_positives.evaluation`` scores them.

The data comes prepared by stage ``full-data`` (``python -m papers.hard_positives.data``: the released files fetched
or verified, SWAP's boxes cropped, every row checked; ``data.FullSet``). Stage ``table1-full``
(``python -m papers.hard_positives.full``) scores every model of ``hard_positives.full.models`` (Table 1's row, as the
audit names it -> zoo model) on all items, one scoring pass each, and writes ``results/hard_positives/full/``:
``table1.csv`` (Table 1's cells), ``table2.csv`` (the mean scores of c, c_n, c_p on REPLACE), ``groups.csv`` (every
cell and count per group, ``evaluation.group_rows``), ``summary.json`` (DVC metrics: Tables 1 and 2's numbers per
row), ``context.json`` (data, counts, fingerprints, ties, models left out) and ``predictions/`` (per-item scores).

A model that cannot be loaded stops the stage with the zoo's message and its download entry's note (why: not
released, or released in a format the zoo cannot load; ``papers/hard_positives/models.toml``); with
``skip_unavailable`` it is left out of the tables and named in ``context.json``. The paper's numbers are in
``results/published/hard_positives.csv``; the audit (``papers/hard_positives/audit.py``) compares Tables 1 and 2's
rows by the ``row`` column.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

from common.errors import WorkspaceError
from common.io import output_group, staged_to_final, write_csv_atomic, write_json_atomic
from common.scoring.selection import SelectionResult
from common.tasks import ImageToTextItem
from common.zoo import ModelUnavailable
from papers.hard_positives import data, evaluation

DATA_FILES = ("papers/hard_positives/models.toml", "papers/aro/models.toml")
"""Read at run time (``common.stage_deps``): the zoo entries of hard_positives.full.models' names (this paper's
fine-tunes, ARO's NegCLIP)."""
TABLE_STAGE = "papers/hard_positives/dvc.yaml:table1-full"
TABLE1_FIELDS = ("row", "model", "label", *evaluation.TABLE_FIELDS[:8])
TABLE2_FIELDS = ("row", "model", "label", *evaluation.TABLE_FIELDS[8:])
AUTHORS_ACTIVATION = ("the authors' model_zoo loads NegCLIP and the CREPE models as open_clip 'ViT-B-32' (GELU) "
                      "although they are fine-tunes of OpenAI's QuickGELU CLIP; the zoo loads them as "
                      "ViT-B-32-quickgelu, so their rows may differ from the paper's for that reason too")


class HardPositivesFullError(WorkspaceError):
    """Nothing to score: no model listed, or none that loads."""


# ------------------------------------------------------------------------------------------------------------------
# Scoring and the tables
# ------------------------------------------------------------------------------------------------------------------
ModelFactory = Callable[..., object]
"""``create_model(name, device=...)``: the zoo's, or a stand-in in tests."""


def _zoo_create(name: str, device: str = "cpu"):
    from common.zoo import create_model

    return create_model(name, device=device)


def why_unavailable(name: str, exc: ModelUnavailable) -> str:
    """The zoo's message, with the note of the model's download entry where it says why (not released, LoRA)."""
    from common.download import RegistryError, get_source
    from common.zoo import get_spec

    try:
        source = get_spec(name).source
        note = get_source(source).note if source else None
    except (KeyError, RegistryError):
        note = None
    return f"{exc}" + (f" ({note})" if note else "")


@dataclass(frozen=True)
class Scored:
    """One table row: the audit's row id, the zoo model, its label and its outcomes (Aug.'s rule)."""

    row: str
    model: str
    label: str
    result: SelectionResult


def score_models(models: Mapping[str, str], items: Sequence[ImageToTextItem], engine_config=None,
                 device: str = "cpu", create: ModelFactory = _zoo_create,
                 skip_unavailable: bool = False) -> tuple[list[Scored], dict[str, str]]:
    """Every (row -> zoo model) on the items, in the given order; models that cannot be loaded raise
    ``ModelUnavailable`` (with the reason), or with ``skip_unavailable`` are returned by row with the reason."""
    from common.engine import Engine
    from common.zoo import get_spec

    scored, skipped = [], {}
    for row, name in models.items():
        try:
            model = create(name, device=device)
        except ModelUnavailable as exc:
            if not skip_unavailable:
                raise ModelUnavailable(f"Table 1 row {row!r}: {why_unavailable(name, exc)}") from exc
            skipped[row] = why_unavailable(name, exc)
            continue
        result = evaluation.evaluate(Engine(model, engine_config), items)
        scored.append(Scored(row, name, get_spec(name).label, result))
    return scored, skipped


def _cell(key: str, value) -> str:
    """Accuracies in points to 2 decimals, mean scores (cosine similarities, Table 2) to 4."""
    if isinstance(value, float):
        return f"{value:.4f}" if key.startswith(("mean_", "replace_mean_")) else f"{value:.2f}"
    return str(value)


def table_rows(scored: Sequence[Scored]) -> list[dict]:
    """One row per model: row id, zoo name, label and ``evaluation.table_row``'s numbers."""
    return [{"row": s.row, "model": s.model, "label": s.label,
             **evaluation.table_row(evaluation.group_cells(s.result))} for s in scored]


def write_tables(out_dir: Path, scored: Sequence[Scored], context: Mapping) -> dict[str, Path]:
    """Tables 1 and 2, groups, summary (metrics), context and per-item predictions, as one output group."""
    from common.results import write_predictions

    rows = table_rows(scored)
    groups = [{"row": s.row, **g} for s in scored
              for g in evaluation.group_rows(s.model, evaluation.group_cells(s.result))]
    out_dir = Path(out_dir)
    with output_group(out_dir) as staging:
        paths = {
            "table1": write_csv_atomic(staging / "table1.csv", [{k: _cell(k, r.get(k, "")) for k in TABLE1_FIELDS}
                                                                for r in rows], TABLE1_FIELDS),
            "table2": write_csv_atomic(staging / "table2.csv", [{k: _cell(k, r.get(k, "")) for k in TABLE2_FIELDS}
                                                                for r in rows], TABLE2_FIELDS),
            "groups": write_csv_atomic(staging / "groups.csv", [{k: _cell(k, v) for k, v in g.items()} for g in groups],
                                       list(groups[0])),
            "summary": write_json_atomic(staging / "summary.json", {
                r["row"]: {k: round(r[k], 4 if k.startswith("replace_mean_") else 2)
                           for k in evaluation.TABLE_FIELDS if k in r} for r in rows}),
            "context": write_json_atomic(staging / "context.json", dict(context)),
        }
        for s in scored:
            write_predictions(staging / "predictions" / f"{s.model.replace('/', '__')}.csv", s.result)
        paths["predictions"] = staging / "predictions"
    return {k: staged_to_final(p, staging, out_dir) for k, p in paths.items()}


def evaluate_tables(models: Mapping[str, str], full: data.FullSet, out_dir: Path, engine_config=None,
                    device: str = "cpu", create: ModelFactory = _zoo_create, skip_unavailable: bool = False,
                    context: Mapping | None = None) -> dict[str, Path]:
    """Score every model on the prepared set and write the tables (nothing is written when a model fails)."""
    if not models:
        raise HardPositivesFullError("hard_positives.full.models is empty: no Table 1 row to score")
    items = full.items()
    scored, skipped = score_models(models, items, engine_config, device, create, skip_unavailable)
    if not scored:
        raise HardPositivesFullError(f"no model of hard_positives.full.models could be loaded: {skipped}")
    cells = {s.row: evaluation.group_cells(s.result) for s in scored}
    full_context = {
        **dict(context or {}), "profile": "full",
        "rule": "strict comparisons (evaluation.py); ties are neither correct nor brittle; REPLACE = mean of "
                "attributes and relations",
        "data": {"manifest": str(full.path), "sha256": full.info["sha256"], "counts": full.counts(items),
                 "crops": full.info.get("crops")},
        "equal_captions": "rows with two equal captions are scored as released, as the authors' code scores them "
                          "(counted per group under data.counts)",
        "models": {s.row: {"model": s.model, "label": s.label, "fingerprint": s.result.fingerprint,
                           "n": {g: c.n for g, c in cells[s.row].items()},
                           "ties": {g: c.ties for g, c in cells[s.row].items()}} for s in scored},
        "skipped": skipped,
        "activation": AUTHORS_ACTIVATION,
    }
    return write_tables(out_dir, scored, full_context)


# ------------------------------------------------------------------------------------------------------------------
# Entry points
# ------------------------------------------------------------------------------------------------------------------
def tables(args: argparse.Namespace) -> int:
    from common.evaluate import best_device, engine_config
    from common.params import stage_params
    from common.paths import RESULTS

    params = stage_params(TABLE_STAGE)
    section = params["hard_positives"]["full"]
    full = data.FullSet.load(Path(args.data or data.default_dir()))
    device = args.device or best_device()
    paths = evaluate_tables(dict(section["models"]), full, Path(args.out or RESULTS / "hard_positives" / "full"),
                            engine_config(params), device, create=_zoo_create,
                            skip_unavailable=bool(section["skip_unavailable"]),
                            context={"device": device, "engine": params.get("engine", {})})
    for name, path in paths.items():
        print(f"{name}: {path}")
    print(paths["table1"].read_text())
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m papers.hard_positives.full", description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None, help="the prepared set (default: build/full/hard_positives)")
    parser.add_argument("--out", default=None, help="default: results/hard_positives/full")
    parser.add_argument("--device", default=None, help="default: cuda when available, else cpu")
    return tables(parser.parse_args(argv))


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
