"""Which published cells of different papers measure the same thing: ``results/published/cross_paper.toml`` (its
header documents each section), checked strictly and resolved into ``Member`` cells.
"""
from __future__ import annotations

import fnmatch
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Collection, Iterable, Literal, Mapping, Optional, Sequence

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, StringConstraints, ValidationError

from common.audit.consistency import AVERAGINGS, PER_CATEGORY, Printed
from common.errors import WorkspaceError, unknown_name
from common.files.utf8 import read_toml
from common.paths import PUBLISHED
from common.reporting.published import PublishedCell

IDENTITIES = PUBLISHED / "cross_paper.toml"
CERTAIN, UNCERTAIN = "certain", "uncertain"
SCALES = {"percent": 1, "fraction": 100}
"""Published units a measure may be printed in, and the factor to percent."""


class IdentityError(WorkspaceError, ValueError):
    """The identity table is malformed or names a cell that ``results/published`` does not hold."""


@dataclass(frozen=True)
class Label:
    """How one paper's table names a model or a measure."""

    paper: str
    table: str
    label: str
    certainty: str = CERTAIN
    evidence: str = ""
    averaging: str = PER_CATEGORY
    """For a measure's label: how the paper averages (``consistency.AVERAGINGS``)."""


@dataclass(frozen=True)
class Model:
    id: str
    name: str
    labels: tuple[Label, ...]


@dataclass(frozen=True)
class Measure:
    id: str
    benchmark: str
    category: str
    labels: tuple[Label, ...]
    n: int | None = None
    parts: tuple[str, ...] = ()
    other_sizes: Mapping[int, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Identities:
    path: Path
    model_axis: Mapping[tuple[str, str], str]
    models: tuple[Model, ...]
    measures: tuple[Measure, ...]
    breakdowns: tuple[BreakdownSpec, ...]
    released: tuple[ReleasedSpec, ...]
    not_joined: tuple[_NotJoinedEntry, ...]
    witnesses: tuple[WitnessSpec, ...] = ()

    def measure(self, measure_id: str) -> Measure:
        return {m.id: m for m in self.measures}[measure_id]

    def model(self, model_id: str) -> Model:
        return {m.id: m for m in self.models}[model_id]

    @property
    def papers(self) -> list[str]:
        return sorted({paper for paper, _ in self.model_axis})


@dataclass(frozen=True)
class Member:
    """One paper's number for one model and one measure: a published cell, resolved."""

    model: str
    measure: str
    paper: str
    cell: PublishedCell
    printed: Printed
    averaging: str
    certainty: str
    evidence: str
    why_uncertain: str = ""
    """The evidence of the uncertain label(s), when ``certainty`` is uncertain."""

    @property
    def location(self) -> str:
        return f"{self.cell.table} [{self.cell.row}] [{self.cell.column}]"


# ---- the file's schema: every section, key and type (pydantic), checked before anything is built from it -----------
Text = Annotated[str, StringConstraints(min_length=1)]
Averaging = Literal["per-category", "micro", "macro", "unstated"]
assert set(Averaging.__args__) == set(AVERAGINGS)  # type: ignore[attr-defined]


class _Schema(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class _LabelEntry(_Schema):
    paper: Text
    table: Text
    label: Text
    certainty: Literal["certain", "uncertain"] = CERTAIN
    evidence: str = ""
    averaging: Optional[Averaging] = None


class _TableEntry(_Schema):
    paper: Text
    table: Text
    model_axis: Literal["row", "column"]


class _ModelEntry(_Schema):
    id: Text
    name: Text
    labels: Annotated[list[_LabelEntry], Field(min_length=1)]


class _OtherSize(_Schema):
    n: PositiveInt
    evidence: str = ""


class _MeasureEntry(_Schema):
    id: Text
    benchmark: Text
    category: Text
    labels: Annotated[list[_LabelEntry], Field(min_length=1)]
    n: Optional[PositiveInt] = None
    parts: list[Text] = []
    other_sizes: list[_OtherSize] = []


class _BreakdownEntry(_Schema):
    measure: Text
    paper: Text
    table: Text
    model_axis: Literal["row", "column"]
    rows: list[Text]
    exclude_rows: list[Text] = []
    count_column: Text
    evidence: str = ""


class _ReleasedEntry(_Schema):
    key: Text
    model: Text
    benchmark: Text
    category_columns: list[Text]
    correct_column: Text
    categories: dict[str, Text]
    evidence: str = ""


class _CellEntry(_Schema):
    paper: Text
    table: Text
    row: Text
    column: Text

    def __str__(self) -> str:
        return f"{self.paper} {self.table} [{self.row}] [{self.column}]"


class _NotJoinedEntry(_Schema):
    cells: list[_CellEntry]
    reason: Text


class _WitnessEntry(_Schema):
    """A third party's per-model table (registry ``key``) reporting some of the same (model, measure) numbers."""

    key: Text
    name: Text
    key_columns: list[Text]
    models: dict[str, Text]
    """model id -> the row's key columns joined by "/" ("ViT-B-32/openai")."""
    columns: dict[str, Text]
    """measure id -> column."""
    averaging: dict[str, Averaging] = {}
    uncertain: dict[str, Text] = {}
    """model id -> why its row may not be the papers' model."""
    evidence: str = ""


BreakdownSpec, ReleasedSpec, WitnessSpec = _BreakdownEntry, _ReleasedEntry, _WitnessEntry
"""The file's entries as the comparison reads them."""


class _IdentityFile(_Schema):
    table: list[_TableEntry] = []
    model: list[_ModelEntry] = []
    measure: list[_MeasureEntry] = []
    breakdown: list[_BreakdownEntry] = []
    released: list[_ReleasedEntry] = []
    not_joined: list[_NotJoinedEntry] = []
    witness: list[_WitnessEntry] = []


def transcribed_papers(root: Path = PUBLISHED) -> list[str]:
    """The papers with a transcription in ``root`` (``<paper>.csv``): the names a ``paper`` key may take."""
    return sorted(p.stem for p in Path(root).glob("*.csv") if not p.stem.endswith("_claims"))


class _Where:
    """Names an entry of the file as ``<path>:<line>: [[section]] #i (id)``: the line of its ``[[section]]`` header."""

    def __init__(self, path: Path, text: str, data: Mapping[str, Any]) -> None:
        self.path, self.data = path, data
        self.lines: dict[str, list[int]] = defaultdict(list)
        for number, line in enumerate(text.splitlines(), start=1):
            match = re.match(r"\s*\[\[\s*([A-Za-z_]+)\s*\]\]", line)
            if match:
                self.lines[match.group(1)].append(number)

    def __call__(self, section: str, index: int | None = None) -> str:
        if index is None:
            return f"{self.path}"
        lines = self.lines.get(section, [])
        line = f":{lines[index]}" if index < len(lines) else ""
        entry = self.data.get(section, [])
        ident = entry[index].get("id") if index < len(entry) and isinstance(entry[index], dict) else None
        return f"{self.path}{line}: [[{section}]] #{index + 1}" + (f" ({ident})" if isinstance(ident, str) else "")


def _schema_error(exc: ValidationError, where: _Where) -> IdentityError:
    """The first violation as one line: the entry (file, line, section, number), the key, the value, what is wrong."""
    err = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")[0]  # a misspelt key before its absence
    loc = list(err["loc"])
    in_entry = len(loc) > 1 and isinstance(loc[1], int)
    head = where(str(loc[0]), loc[1]) if in_entry else str(where.path)
    names: list[str] = []
    for key in (loc[2:] if in_entry else loc):
        if isinstance(key, int) and names:
            names[-1] = f"{names[-1].removesuffix('s')} {key + 1}"  # labels, 0 -> "label 1"
        else:
            names.append(str(key))
    key = names[-1] if names else str(loc[0])
    head = " ".join([head, *names[:-1]])
    if err["type"] == "extra_forbidden":
        what = f"unknown key {key!r} (a typo?)"
    elif err["type"] == "missing":
        what = f"missing {key}"
    else:
        what = f"{key} {err.get('input')!r}: {err['msg']}"
    return IdentityError(f"{head}: {what}; fix {where.path.name}")


def _label(entry: _LabelEntry, where: str, measure: bool) -> Label:
    if not measure and entry.averaging is not None:
        raise IdentityError(f"{where}: a model label has no averaging")
    return Label(entry.paper, entry.table, entry.label, entry.certainty, entry.evidence,
                 entry.averaging or PER_CATEGORY)


def load_identities(path: Path = IDENTITIES, papers: Collection[str] | None = None) -> Identities:
    """The identity table, checked: UTF-8, TOML, the schema above, every ``paper`` in ``papers`` (default: those
    transcribed) and its own consistency; each violation one line naming the entry's line and key."""
    path = Path(path)
    text, data = read_toml(path, IdentityError)
    where = _Where(path, text, data)
    try:
        spec = _IdentityFile.model_validate(data)
    except ValidationError as exc:
        raise _schema_error(exc, where) from None
    known = sorted(papers) if papers is not None else transcribed_papers()
    _check_papers(spec, where, known)
    axis: dict[tuple[str, str], str] = {}
    for i, t in enumerate(spec.table):
        if (t.paper, t.table) in axis:
            raise IdentityError(f"{where('table', i)}: {t.paper} {t.table} has a [[table]] layout already; keep one")
        axis[(t.paper, t.table)] = t.model_axis
    models = [Model(m.id, m.name, tuple(_label(x, f"{where('model', i)} label {j + 1}", False)
                                        for j, x in enumerate(m.labels)))
              for i, m in enumerate(spec.model)]
    measures = [Measure(m.id, m.benchmark, m.category,
                        tuple(_label(x, f"{where('measure', i)} label {j + 1}", True) for j, x in enumerate(m.labels)),
                        m.n, tuple(m.parts), {o.n: o.evidence for o in m.other_sizes})
                for i, m in enumerate(spec.measure)]
    found = Identities(path, axis, tuple(models), tuple(measures), tuple(spec.breakdown), tuple(spec.released),
                       tuple(spec.not_joined), tuple(spec.witness))
    _check_references(found)
    return found


def _check_papers(spec: _IdentityFile, where: _Where, known: Sequence[str]) -> None:
    """Every ``paper`` names a transcribed paper, checked at the entry that writes it (a typo blamed on its line)."""
    def check(paper: str, at: str) -> None:
        if paper not in known:
            hint = str(unknown_name("paper", paper, known)).split(" ", 3)[-1]
            raise IdentityError(f"{at}: paper {paper!r} has no transcription (results/published/{paper}.csv): "
                                f"{hint}")

    for i, t in enumerate(spec.table):
        check(t.paper, where("table", i))
    for section, entries in (("model", spec.model), ("measure", spec.measure)):
        for i, m in enumerate(entries):
            for j, lab in enumerate(m.labels):
                check(lab.paper, f"{where(section, i)} label {j + 1}")
    for i, b in enumerate(spec.breakdown):
        check(b.paper, where("breakdown", i))
    for i, nj in enumerate(spec.not_joined):
        for j, c in enumerate(nj.cells):
            check(c.paper, f"{where('not_joined', i)} cell {j + 1}")


def _check_references(ids: Identities) -> None:
    where = str(ids.path)
    for kind, items in (("model", ids.models), ("measure", ids.measures)):
        seen = [x.id for x in items]
        dupes = sorted({x for x in seen if seen.count(x) > 1})
        if dupes:
            raise IdentityError(f"{where}: duplicate {kind} id(s) {dupes}")
    measure_ids = {m.id for m in ids.measures}
    model_ids = {m.id for m in ids.models}
    for item in (*ids.models, *ids.measures):
        for lab in item.labels:
            if (lab.paper, lab.table) not in ids.model_axis:
                raise IdentityError(f"{where}: {item.id}: {lab.paper} {lab.table} has no [[table]] layout")
    for m in ids.measures:
        unknown = [p for p in m.parts if p not in measure_ids]
        if unknown:
            raise IdentityError(f"{where}: measure {m.id}: unknown parts {unknown}")
        if m.parts and any(ids.measure(p).n is None for p in m.parts):
            raise IdentityError(f"{where}: measure {m.id}: every part needs its n (example count)")
    for b in ids.breakdowns:
        if b.measure not in measure_ids:
            raise IdentityError(f"{where}: breakdown of unknown measure {b.measure!r}")
    for w in ids.witnesses:
        unknown = sorted((set(w.models) | set(w.uncertain)) - model_ids) + sorted(
            (set(w.columns) | set(w.averaging)) - measure_ids)
        if unknown:
            raise IdentityError(f"{where}: witness {w.key}: unknown model or measure ids {unknown}")
    for r in ids.released:
        if r.model not in model_ids:
            raise IdentityError(f"{where}: released {r.key}: unknown model {r.model!r}")
        unknown = sorted(set(r.categories.values()) - measure_ids)
        if unknown:
            raise IdentityError(f"{where}: released {r.key}: unknown measures {unknown}")


def resolve(ids: Identities, cells: Mapping[str, Iterable[PublishedCell]]) -> list[Member]:
    """Every (model, measure) cell the identity table maps; ``IdentityError`` listing every label, ``not_joined`` cell
    or mapped number that ``cells`` lack."""
    by_paper = {paper: {c.key: c for c in paper_cells} for paper, paper_cells in cells.items()}
    problems: list[str] = []
    for item in (*ids.models, *ids.measures):
        for lab in item.labels:
            keys = by_paper.get(lab.paper)
            if keys is None:
                problems.append(f"{item.id}: no published cells for paper {lab.paper!r}")
                continue
            axis = ids.model_axis[(lab.paper, lab.table)]
            is_model = isinstance(item, Model)
            position = 1 if (axis == "row") == is_model else 2
            if not any(k[0] == lab.table and k[position] == lab.label for k in keys):
                problems.append(f"{item.id}: {lab.paper} {lab.table} has no {'row' if position == 1 else 'column'} "
                                f"{lab.label!r}")
    for nj in ids.not_joined:
        for ref in nj.cells:
            if (ref.table, ref.row, ref.column) not in by_paper.get(ref.paper, {}):
                problems.append(f"not_joined: no published cell {ref}")
    members: list[Member] = []
    for model in ids.models:
        for measure in ids.measures:
            for ml in model.labels:
                for sl in measure.labels:
                    if (ml.paper, ml.table) != (sl.paper, sl.table):
                        continue
                    key = ((ml.table, ml.label, sl.label) if ids.model_axis[(ml.paper, ml.table)] == "row"
                           else (ml.table, sl.label, ml.label))
                    cell = by_paper.get(ml.paper, {}).get(key)
                    if cell is None:
                        continue
                    if cell.status != "ok" or cell.value is None:
                        problems.append(f"{model.id} x {measure.id}: {ml.paper} {key} is {cell.status}, not a number")
                        continue
                    if cell.unit not in SCALES:
                        problems.append(f"{model.id} x {measure.id}: {ml.paper} {key} has unit {cell.unit!r} "
                                        f"(expected {sorted(SCALES)})")
                        continue
                    uncertain = UNCERTAIN in (ml.certainty, sl.certainty)
                    evidence = " / ".join(x for x in (ml.evidence, sl.evidence) if x)
                    why = " / ".join(x.evidence for x in (ml, sl) if x.certainty == UNCERTAIN)
                    members.append(Member(model.id, measure.id, ml.paper, cell, Printed(cell.text, SCALES[cell.unit]),
                                          sl.averaging, UNCERTAIN if uncertain else CERTAIN, evidence, why))
    if problems:
        raise IdentityError(f"{ids.path}: {len(problems)} mapping(s) do not match results/published: "
                            + "; ".join(problems[:10]) + (f"; ... ({len(problems) - 10} more)" if len(problems) > 10
                                                          else "") + "; fix the labels or the transcriptions")
    return members


def breakdown_cells(spec: BreakdownSpec, model_label: str, cells: Iterable[PublishedCell]
                    ) -> list[tuple[PublishedCell, PublishedCell]]:
    """(value cell, count cell) of every part row of ``spec`` for the model labelled ``model_label``."""
    if spec.model_axis != "column":
        raise IdentityError(f"breakdown {spec.paper} {spec.table}: only a model-per-column layout is supported")
    rows: dict[str, dict[str, PublishedCell]] = defaultdict(dict)
    for c in cells:
        if c.table == spec.table:
            rows[c.row][c.column] = c
    parts = []
    for row, by_column in rows.items():
        if not any(fnmatch.fnmatchcase(row, p) for p in spec.rows) or any(
                fnmatch.fnmatchcase(row, p) for p in spec.exclude_rows):
            continue
        value, count = by_column.get(model_label), by_column.get(spec.count_column)
        if value is None or count is None or value.value is None or count.value is None:
            continue
        parts.append((value, count))
    return parts

