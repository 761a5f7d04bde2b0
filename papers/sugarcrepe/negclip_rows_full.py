"""The full NegCLIP training set as refinement and the runs read it: ``TrainRow`` (a line of ``rows.jsonl``, the
``negclip-full-set`` stage's output), the rows each run of ``runs.FULL_RUNS`` trains on (``run_rows``: every row, or
those refinement kept) and its negatives (``run_negatives``). Its own module so that the runs read the set without
importing the code that builds it (the CREPE-style generator) or refines it (the blind scorers).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from common.errors import WorkspaceError
from common.jsonl import read_json, read_rows
from common.tasks import DatasetError
from papers.sugarcrepe.runs import ALL, FULL_RUNS, KINDS, run_spec


class NegclipFullError(WorkspaceError):
    """An input of the full NegCLIP runs that cannot be used as given (the message names the file)."""


@dataclass(frozen=True)
class TrainRow:
    """One caption of NegCLIP's train TSV with its CREPE-style negative of each kind."""

    image: str
    """The COCO file name (resolved under the images folder)."""
    caption: str
    negatives: Mapping[str, str]


def _check_row(row: TrainRow) -> None:
    """Every kind's negative, each a non-empty string: the runs share these rows."""
    if (not isinstance(row.negatives, dict) or sorted(row.negatives) != sorted(KINDS)
            or not all(isinstance(v, str) and v for v in row.negatives.values())):
        raise DatasetError(f"needs one non-empty negative of each kind {list(KINDS)}")


def load_rows(set_dir: Path) -> list[TrainRow]:
    """``rows.jsonl`` of a training set: at least one row, each with every kind's negative."""
    return read_rows(Path(set_dir) / "rows.jsonl", TrainRow, "a training row",
                     remedy="no training set here; run the negclip-full-set stage "
                            "(`python -m papers.sugarcrepe.negclip_sets_full`)", check=_check_row)


def run_rows(run: str, set_dir: Path, refined_path: Path | None = None) -> list[TrainRow]:
    """What ``run`` trains on: every row, or (a refined run) the rows ``refined.json`` keeps for its kind."""
    spec = run_spec(FULL_RUNS, run)
    rows = load_rows(set_dir)
    if not spec.refined:
        return rows
    if refined_path is None:
        raise NegclipFullError(f"{run} trains on refined rows: give the refinement (refined.json)")
    refined = read_json(refined_path, dict, "run the negclip-full-refine stage")
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
    kind = run_spec(FULL_RUNS, run).hard_negative
    if kind is None:
        return None
    if kind == ALL:
        picks = np.random.default_rng([seed, 2]).integers(0, len(KINDS), len(rows))
        return [r.negatives[KINDS[int(p)]] for r, p in zip(rows, picks)]
    return [r.negatives[kind] for r in rows]
