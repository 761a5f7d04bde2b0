"""Which published cells of different papers measure the same thing: the identity table, as data.

``results/published/cross_paper.toml`` says which row label in which paper's table names one model, which
column names one benchmark, category and metric (with the paper's averaging), with the evidence for each
mapping and whether it is certain. This module loads it, checks it against ``results/published/<paper>.csv``
(every mapped label must exist) and resolves it into ``Member`` cells: one model's number for one measure as
one paper prints it. The file's own header documents each section.
"""
from __future__ import annotations

import fnmatch
import tomllib
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from common.audit.consistency import AVERAGINGS, PER_CATEGORY, Printed
from common.errors import WorkspaceError
from common.paths import PUBLISHED
from common.published import PublishedCell

IDENTITIES = PUBLISHED / "cross_paper.toml"
CERTAIN, UNCERTAIN = "certain", "uncertain"
AXES = ("row", "column")
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
class BreakdownSpec:
    measure: str
    paper: str
    table: str
    model_axis: str
    rows: tuple[str, ...]
    exclude_rows: tuple[str, ...]
    count_column: str
    evidence: str


@dataclass(frozen=True)
class ReleasedSpec:
    key: str
    model: str
    benchmark: str
    category_columns: tuple[str, ...]
    correct_column: str
    categories: Mapping[str, str]
    evidence: str


@dataclass(frozen=True)
class WitnessSpec:
    """A third party's per-model table (fetched through the registry by ``key``) that reports some of the same
    (model, measure) numbers: each is set beside every paper's number for it."""

    key: str
    name: str
    key_columns: tuple[str, ...]
    models: Mapping[str, str]
    """model id -> the row's key columns joined by "/" ("ViT-B-32/openai")."""
    columns: Mapping[str, str]
    """measure id -> column."""
    averaging: Mapping[str, str]
    uncertain: Mapping[str, str]
    """model id -> why its row may not be the papers' model."""
    evidence: str


@dataclass(frozen=True)
class CellRef:
    paper: str
    table: str
    row: str
    column: str

    def __str__(self) -> str:
        return f"{self.paper} {self.table} [{self.row}] [{self.column}]"


@dataclass(frozen=True)
class NotJoined:
    cells: tuple[CellRef, ...]
    reason: str


@dataclass(frozen=True)
class Identities:
    path: Path
    model_axis: Mapping[tuple[str, str], str]
    models: tuple[Model, ...]
    measures: tuple[Measure, ...]
    breakdowns: tuple[BreakdownSpec, ...]
    released: tuple[ReleasedSpec, ...]
    not_joined: tuple[NotJoined, ...]
    witnesses: tuple[WitnessSpec, ...] = ()

    def measure(self, measure_id: str) -> Measure:
        for m in self.measures:
            if m.id == measure_id:
                return m
        raise KeyError(measure_id)

    def model(self, model_id: str) -> Model:
        for m in self.models:
            if m.id == model_id:
                return m
        raise KeyError(model_id)

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


def _require(entry: Mapping[str, Any], keys: Sequence[str], where: str) -> None:
    missing = [k for k in keys if k not in entry or entry[k] in ("", None)]
    if missing:
        raise IdentityError(f"{where}: missing {', '.join(missing)}")


def _label(entry: Mapping[str, Any], where: str, measure: bool) -> Label:
    _require(entry, ("paper", "table", "label"), where)
    certainty = entry.get("certainty", CERTAIN)
    if certainty not in (CERTAIN, UNCERTAIN):
        raise IdentityError(f"{where}: certainty {certainty!r} is not {CERTAIN!r} or {UNCERTAIN!r}")
    averaging = entry.get("averaging", PER_CATEGORY)
    if averaging not in AVERAGINGS:
        raise IdentityError(f"{where}: averaging {averaging!r} not in {list(AVERAGINGS)}")
    if not measure and "averaging" in entry:
        raise IdentityError(f"{where}: a model label has no averaging")
    return Label(entry["paper"], entry["table"], entry["label"], certainty, entry.get("evidence", ""), averaging)


def load_identities(path: Path = IDENTITIES) -> Identities:
    """Parse and check the identity table's own consistency (not yet against the published cells)."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise IdentityError(f"{path}: not valid TOML: {exc}") from None
    axis: dict[tuple[str, str], str] = {}
    for i, t in enumerate(data.get("table", [])):
        where = f"{path}: [[table]] #{i + 1}"
        _require(t, ("paper", "table", "model_axis"), where)
        if t["model_axis"] not in AXES:
            raise IdentityError(f"{where}: model_axis {t['model_axis']!r} not in {list(AXES)}")
        axis[(t["paper"], t["table"])] = t["model_axis"]
    models, measures = [], []
    for i, m in enumerate(data.get("model", [])):
        where = f"{path}: [[model]] #{i + 1} ({m.get('id', '?')})"
        _require(m, ("id", "name", "labels"), where)
        models.append(Model(m["id"], m["name"], tuple(_label(x, f"{where} label {j + 1}", False)
                                                      for j, x in enumerate(m["labels"]))))
    for i, m in enumerate(data.get("measure", [])):
        where = f"{path}: [[measure]] #{i + 1} ({m.get('id', '?')})"
        _require(m, ("id", "benchmark", "category", "labels"), where)
        others = {int(o["n"]): str(o.get("evidence", "")) for o in m.get("other_sizes", [])}
        measures.append(Measure(m["id"], m["benchmark"], m["category"],
                                tuple(_label(x, f"{where} label {j + 1}", True) for j, x in enumerate(m["labels"])),
                                m.get("n"), tuple(m.get("parts", ())), others))
    breakdowns = []
    for i, b in enumerate(data.get("breakdown", [])):
        where = f"{path}: [[breakdown]] #{i + 1}"
        _require(b, ("measure", "paper", "table", "model_axis", "rows", "count_column"), where)
        breakdowns.append(BreakdownSpec(b["measure"], b["paper"], b["table"], b["model_axis"], tuple(b["rows"]),
                                        tuple(b.get("exclude_rows", ())), b["count_column"], b.get("evidence", "")))
    released = []
    for i, r in enumerate(data.get("released", [])):
        where = f"{path}: [[released]] #{i + 1}"
        _require(r, ("key", "model", "benchmark", "category_columns", "correct_column", "categories"), where)
        released.append(ReleasedSpec(r["key"], r["model"], r["benchmark"], tuple(r["category_columns"]),
                                     r["correct_column"], dict(r["categories"]), r.get("evidence", "")))
    not_joined = []
    for i, nj in enumerate(data.get("not_joined", [])):
        where = f"{path}: [[not_joined]] #{i + 1}"
        _require(nj, ("cells", "reason"), where)
        refs = []
        for j, c in enumerate(nj["cells"]):
            _require(c, ("paper", "table", "row", "column"), f"{where} cell {j + 1}")
            refs.append(CellRef(c["paper"], c["table"], c["row"], c["column"]))
        not_joined.append(NotJoined(tuple(refs), nj["reason"]))
    witnesses = []
    for i, w in enumerate(data.get("witness", [])):
        where = f"{path}: [[witness]] #{i + 1}"
        _require(w, ("key", "name", "key_columns", "models", "columns"), where)
        averaging = dict(w.get("averaging", {}))
        bad = {m: a for m, a in averaging.items() if a not in AVERAGINGS}
        if bad:
            raise IdentityError(f"{where}: averaging {bad} not in {list(AVERAGINGS)}")
        witnesses.append(WitnessSpec(w["key"], w["name"], tuple(w["key_columns"]), dict(w["models"]),
                                     dict(w["columns"]), averaging, dict(w.get("uncertain", {})),
                                     w.get("evidence", "")))
    found = Identities(Path(path), axis, tuple(models), tuple(measures), tuple(breakdowns), tuple(released),
                       tuple(not_joined), tuple(witnesses))
    _check_references(found)
    return found


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


def cell_key(model_axis: str, table: str, model_label: str, measure_label: str) -> tuple[str, str, str]:
    return (table, model_label, measure_label) if model_axis == "row" else (table, measure_label, model_label)


def resolve(ids: Identities, cells: Mapping[str, Iterable[PublishedCell]]) -> list[Member]:
    """Every (model, measure) cell the identity table maps, checked against the published cells.

    Raises ``IdentityError`` listing every mapped label that no published cell carries (a typo or a transcription
    change), every ``not_joined`` cell that does not exist, and every mapped cell that is not a number.
    """
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
                    key = cell_key(ids.model_axis[(ml.paper, ml.table)], ml.table, ml.label, sl.label)
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
        raise IdentityError(f"{ids.path}: {len(problems)} mapping(s) do not match results/published:\n  "
                            + "\n  ".join(problems))
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
        if not any(fnmatch.fnmatchcase(row, p) for p in spec.rows):
            continue
        if any(fnmatch.fnmatchcase(row, p) for p in spec.exclude_rows):
            continue
        value, count = by_column.get(model_label), by_column.get(spec.count_column)
        if value is None or count is None or value.value is None or count.value is None:
            continue
        parts.append((value, count))
    return parts


__all__ = ["CERTAIN", "IDENTITIES", "UNCERTAIN", "BreakdownSpec", "CellRef", "Identities", "IdentityError", "Label",
           "Measure", "Member", "Model", "NotJoined", "ReleasedSpec", "WitnessSpec", "breakdown_cells", "cell_key",
           "load_identities", "resolve"]
