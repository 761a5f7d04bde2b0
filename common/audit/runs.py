"""Recomputations from this workspace's own runs: a results table mapped onto published cells (full profile:
compared; mini: marked covered). A damaged run table stops the audit (``RunTableError``) rather than drop cells.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Callable, Collection, Iterable, Mapping, Sequence

from common.audit.core import AuditError, Recomputed
from common.files.jsonl import read_json
from common.reporting.published import parse_number, read_csv_rows

MINI_NOTE = "the mini run scores tiny CLIPs on the rendered mini world"
Note = Callable[[Mapping[str, str]], str]
"""A recomputation's note as a function of its results row (how that row was scored)."""
REMEDY = "restore the file (git checkout / dvc checkout) or rerun the stage that writes it"


class RunTableError(AuditError):
    """A run's results table is damaged; the message names the file, the line and the column."""


class RunRow(dict):
    """One row of a run table (column -> text) and the line it ends on."""

    def __init__(self, values: Mapping[str, str] | None = None, line: int | None = None) -> None:
        super().__init__(values or {})
        self.line = line


def read_run_table(path: Path, columns: Iterable[str] = (), key: Sequence[str] | None = None) -> list[RunRow]:
    """Every row of a run's results table, read strictly: whole, ``columns`` present, no row twice by ``key``
    (default ``row`` if present)."""
    path = Path(path)
    try:
        header, records = read_csv_rows(path, RunTableError, required=(*columns, *(key or ())), whole=True)
    except RunTableError as exc:
        raise RunTableError(f"{exc}; {REMEDY}") from None
    key = tuple(key) if key is not None else (("row",) if "row" in header else ())
    seen: dict[tuple[str, ...], int] = {}
    for line, row in records:
        ident = tuple(row[c] for c in key)
        if key and ident in seen:
            raise RunTableError(f"{path}:{line}: row {'/'.join(ident)!r} ({'/'.join(key)}) again (first on line "
                                f"{seen[ident]}); {REMEDY}")
        seen[ident] = line
    return [RunRow(row, line) for line, row in records]


def run_value(row: Mapping[str, str], column: str, path: Path, optional: bool = False) -> float | None:
    """The number in ``row``'s ``column`` (``parse_number``); None when it is empty or absent and ``optional``."""
    text = row.get(column)
    if text in (None, "") and optional:
        return None
    line = getattr(row, "line", None)
    where = f"{path}:{line}" if line is not None else str(path)
    if text is None:
        raise RunTableError(f"{where}: no column {column!r} in this row; {REMEDY}")
    try:
        return parse_number(text)
    except ValueError as exc:
        raise RunTableError(f"{where}: column {column!r}: {exc}; {REMEDY}") from None


def require_rows(path: Path, found: Iterable[str], expected: Collection[str]) -> None:
    """Every published row in ``expected`` (what the paper's run writes) was found in ``path``."""
    missing = sorted(set(expected) - set(found))
    if missing:
        raise RunTableError(f"{path}: no row for {missing} (the run writes every one: the table was cut short or "
                            f"edited); {REMEDY}")


def table_recomputations(
    paper: str, table: str, results_csv: Path, profile: str, columns: Mapping[str, str],
    published_row: Callable[[str], str], covered_models: Sequence[str], source: str,
    note: Callable[[str], str] = lambda model: "",
) -> list[Recomputed]:
    """Published cells of ``table`` recomputed by a run's results table with one row per model (``columns``: results
    column -> published column); in the mini profile the cells of ``covered_models`` are marked covered."""
    if not results_csv.is_file():
        return []
    rows = read_run_table(results_csv, ["model", *columns], key=("model",))
    values = {(row["model"], ours): run_value(row, ours, results_csv) for row in rows for ours in columns}
    if profile == "mini":
        return [Recomputed(paper, table, published_row(name), column, math.nan, "percent", source, "mini", "default",
                           note=MINI_NOTE)
                for name in covered_models for column in columns.values()]
    return [Recomputed(paper, table, published_row(row["model"]), column, values[(row["model"], ours)],
                       "percent", source, "full", "default", note=note(row["model"]))
            for row in rows for ours, column in columns.items()]


def run_rows_recomputations(
    paper: str, table: str, results_csv: Path, profile: str, columns: Mapping[str, str],
    published_row: Callable[[Mapping[str, str]], "str | None"], source: str, note: "str | Note" = "",
    units: Mapping[str, str] | None = None, expected: Collection[str] = (), optional: Collection[str] = (),
    key: Sequence[str] | None = None, caveat: Callable[[Mapping[str, str]], str] | None = None,
) -> list[Recomputed]:
    """Published cells recomputed by a table whose rows are runs (``published_row``: a row -> its published row or
    None; ``expected``: the rows the run writes; ``optional``: columns that may be empty or absent)."""
    if not results_csv.is_file():
        return []
    rows = read_run_table(results_csv, [c for c in columns if c not in optional], key)
    return rows_recomputations(paper, table, rows, profile, columns, published_row, source, note, units,
                               expected=expected, optional=optional, path=results_csv, caveat=caveat)


def rows_recomputations(
    paper: str, table: str, rows: Sequence[Mapping[str, str]], profile: str, columns: Mapping[str, str],
    published_row: Callable[[Mapping[str, str]], "str | None"], source: str, note: "str | Note" = "",
    units: Mapping[str, str] | None = None, *, expected: Collection[str] = (), optional: Collection[str] = (),
    path: Path | None = None, caveat: Callable[[Mapping[str, str]], str] | None = None,
) -> list[Recomputed]:
    """``run_rows_recomputations`` over rows already read (a paper that reshapes a long results file first)."""
    where = Path(path) if path is not None else Path(source)
    recs, found = [], []
    for row in rows:
        label = published_row(row)
        if label is None:
            continue
        found.append(label)
        row_caveat = caveat(row) if caveat is not None else ""
        row_note = note(row) if callable(note) else note
        for ours, column in columns.items():
            unit = (units or {}).get(ours, "percent")
            value = run_value(row, ours, where, optional=ours in optional)
            if profile == "mini":
                recs.append(Recomputed(paper, table, label, column, math.nan, unit, source, "mini", "default",
                                       note="; ".join(n for n in (MINI_NOTE, row_note) if n), caveat=row_caveat))
            elif value is not None:
                recs.append(Recomputed(paper, table, label, column, value, unit, source, "full", "default",
                                       note=row_note, caveat=row_caveat))
    require_rows(where, found, expected)
    return recs


# ----------------------------------------------------------------------------------------------------------------
# The recipe a trained model ran with
# ----------------------------------------------------------------------------------------------------------------
class RecipeRecordError(AuditError):
    """A training record (a checkpoint's sidecar JSON) that does not name its recipe as the trainer writes it."""


def recipe_note(record: Mapping, where: str = "the training record") -> str:
    """A trained model's recipe as an audit note: name, digest, the run's numbers that are not the authors' and the
    settings where the paper and the authors' code differ (``recipe negclip (3f2a...): batch_size 1024 (authors
    256); the paper differs from the code: ...``)."""
    recipe = record.get("recipe")
    if recipe is None:
        return "recipe not recorded (trained before recipes existed: retrain to name it)"
    if not isinstance(recipe, Mapping) or not all(isinstance(recipe.get(k), str) for k in ("name", "digest")) \
            or not isinstance(recipe.get("deviations", {}), Mapping):
        raise RecipeRecordError(f"{where}: 'recipe' is not the trainer's {{name, digest, deviations}}; retrain or "
                                f"restore the checkpoint's sidecar")
    deviations = dict(recipe.get("deviations", {}))
    authors_epochs, epochs = (recipe.get("settings") or {}).get("epochs"), record.get("epochs")
    if isinstance(authors_epochs, (int, float)) and isinstance(epochs, (int, float)) and epochs != authors_epochs:
        deviations["epochs"] = {"authors": authors_epochs, "run": epochs}  # the job's record keeps the epochs run
    text = f"recipe {recipe['name']} ({recipe['digest']})"
    differs = recipe.get("paper_differs") or {}
    if not isinstance(differs, Mapping) or not all(isinstance(d, Mapping) for d in differs.values()):
        raise RecipeRecordError(f"{where}: 'recipe.paper_differs' is not the trainer's {{setting: {{code, paper, "
                                f"paper_source}}}}; retrain or restore the checkpoint's sidecar")
    conflicts = "" if not differs else "; the paper differs from the code: " + ", ".join(
        f"{key} {d.get('paper')} in the paper ({d.get('paper_source')}), {d.get('code')} in the code"
        for key, d in sorted(differs.items()))
    if not deviations:
        # a recipe without numbers (the mini one) has nothing to agree with: say only its name; one with numbers
        # states the recipe's, which are not always the authors' (hard positives' [finetune] is NegCLIP's)
        stated = any(k in (recipe.get("settings") or {}) for k in ("lr", "weight_decay", "batch_size", "epochs"))
        return text + (": the recipe's numbers" if stated else ": this workspace's settings (params.yaml)") + conflicts
    return text + ": " + ", ".join(f"{key} {d.get('run')} (authors {d.get('authors')})"
                                   for key, d in sorted(deviations.items())) + conflicts


def context_recipe_notes(context: Path, remedy: str, key: str = "training") -> dict[str, str]:
    """Run -> ``recipe_note`` of every run in a results context's ``key`` entry (a copy of each sidecar, so the
    audit's DVC deps stay results files); empty when the file is not there."""
    context = Path(context)
    if not context.is_file():
        return {}
    training = read_json(context, dict, remedy).get(key) or {}
    if not isinstance(training, Mapping):
        raise RecipeRecordError(f"{context}: {key!r} is not a mapping of runs to their training records; {remedy}")
    notes = {}
    for run, record in training.items():
        if not isinstance(record, Mapping):
            raise RecipeRecordError(f"{context}: {key}.{run}: not a training record; {remedy}")
        notes[run] = recipe_note(record, f"{context}: {key}.{run}")
    return notes


def recipe_of_row(notes: Mapping[str, str], *columns: str) -> Note:
    """A results row -> the note of the run named by the first of its ``columns`` in ``notes``, else ""."""
    return lambda row: next((notes[row[c]] for c in columns if row.get(c) in notes), "")


def joined_notes(*notes: Note) -> Note:
    """Several row notes as one (each non-empty one, in order, separated by "; ")."""
    return lambda row: "; ".join(n for n in (note(row) for note in notes) if n)
