"""The papers' published numbers, as data.

``results/published/<paper>.csv`` holds one row per table cell (tidy form) and
``results/published/<paper>_claims.csv`` one row per numeric claim made in the text. This module
loads and validates both, and evaluates a claim's ``recompute`` expression against the paper's own
tables, so the audit can check every stated average, delta and ratio.

Cell file columns
    paper, table, row, column, value, unit, status, raw, note
    * ``table``: "Table 6", "Figure 3", ... as the paper names it.
    * ``row`` / ``column``: keys; composite keys join their parts with " | " (outer to inner).
    * ``value``: the number as printed (no % sign, no thousands separator); empty unless status is ok.
    * ``status``: ok | unreadable (garbled beyond recovery) | not_reported (the paper prints "-" or
      leaves the cell empty).
    * ``raw``: the cell text exactly as extracted when it differs from ``value`` (garbling, ±, %).

Claim file columns
    paper, claim_id, location, quote, value, unit, comparison, recompute, note
    * ``comparison``: how the claim's ``value`` relates to the quantity it is about (the quantity
      ``recompute`` derives), read from the quote's wording:

      - ``=`` (the default when the field is empty): the claim is that quantity, rounded to the
        claim's printed precision ("91.77" holds for 91.765 <= x < 91.775);
      - ``>``, ``>=``, ``<``, ``<=``: the claim is a bound on that quantity, read as
        "quantity OP value" ("more than 50,000" -> ``>``, "at least 1" -> ``>=``, "none larger than
        10%" -> ``<=``, "drop samples with greater than 9" -> ``<=``);
      - ``~``: the text qualifies the number as approximate ("about", "around", "approximately",
        "roughly", "nearly", "almost", "estimated", "~"); the audit accepts max(the printed rounding, 10% of
        ``value``) (``common.audit.core.tolerance_for``).

      A bound whose ``value`` is empty (a comparison with no number printed, e.g. "CLIP has the
      highest accuracy") cannot be audited until a threshold is written in ``value``.
    * ``recompute``: a Python expression over the paper's own tables, or empty when the claim cannot
      be derived from them. Available names: ``cell(table, row, column)``,
      ``cells(table, row_pattern, column_pattern)`` (fnmatch patterns, file order), ``mean``,
      ``median``, ``stdev``, ``pstdev``, ``min``, ``max``, ``abs``, ``round``, ``sum``, ``len``,
      ``sorted``.
"""
from __future__ import annotations

import csv
import fnmatch
import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from common.errors import WorkspaceError
from common.paths import PUBLISHED

CELL_FIELDS = ("paper", "table", "row", "column", "value", "unit", "status", "raw", "note")
CLAIM_FIELDS = ("paper", "claim_id", "location", "quote", "value", "unit", "comparison", "recompute", "note")
COMPARISONS = ("=", ">", ">=", "<", "<=", "~")
"""Allowed values of a claim's ``comparison`` (see the module docstring); empty reads as "="."""
UNITS = frozenset(
    {"percent", "fraction", "count", "points", "ratio", "score", "millions", "billions", "other"}
)
STATUSES = frozenset({"ok", "unreadable", "not_reported"})
KEY_SEPARATOR = " | "


class PublishedDataError(WorkspaceError, ValueError):
    """A published-numbers file is malformed; the message names the file and the line."""


@dataclass(frozen=True)
class PublishedCell:
    paper: str
    table: str
    row: str
    column: str
    value: float | None
    unit: str
    status: str
    raw: str
    note: str
    line: int
    text: str = ""
    """``value`` exactly as written in the file (keeps the printed precision: "50.00")."""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.table, self.row, self.column)


@dataclass(frozen=True)
class PublishedClaim:
    paper: str
    claim_id: str
    location: str
    quote: str
    value: float | None
    unit: str
    comparison: str
    """One of ``COMPARISONS``: how ``value`` relates to the recomputed quantity ("=" when empty in the file)."""
    recompute: str
    note: str
    line: int
    text: str = ""


def _parse_number(text: str, where: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise PublishedDataError(f"{where}: value {text!r} is not a number") from None
    if not math.isfinite(value):
        raise PublishedDataError(f"{where}: value {text!r} is not finite")
    return value


def _read_rows(path: Path, fields: tuple[str, ...]) -> Iterable[tuple[int, dict[str, str]]]:
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        if tuple(reader.fieldnames or ()) != fields:
            raise PublishedDataError(f"{path}: header {reader.fieldnames} != expected {list(fields)}")
        for row in reader:
            if None in row or any(v is None for v in row.values()):
                raise PublishedDataError(f"{path}:{reader.line_num}: wrong number of fields")
            yield reader.line_num, row


def load_cells(paper: str, root: Path = PUBLISHED) -> list[PublishedCell]:
    path = root / f"{paper}.csv"
    cells: list[PublishedCell] = []
    seen: dict[tuple[str, str, str], int] = {}
    for line, row in _read_rows(path, CELL_FIELDS):
        where = f"{path}:{line}"
        if row["paper"] != paper:
            raise PublishedDataError(f"{where}: paper {row['paper']!r} != {paper!r}")
        if row["status"] not in STATUSES:
            raise PublishedDataError(f"{where}: status {row['status']!r} not in {sorted(STATUSES)}")
        if row["unit"] not in UNITS:
            raise PublishedDataError(f"{where}: unit {row['unit']!r} not in {sorted(UNITS)}")
        if not row["table"] or not row["row"] or not row["column"]:
            raise PublishedDataError(f"{where}: table, row and column must be non-empty")
        if row["status"] == "ok":
            value = _parse_number(row["value"], where)
        else:
            if row["value"]:
                raise PublishedDataError(f"{where}: status {row['status']} must leave value empty")
            value = None
        cell = PublishedCell(
            paper=paper, table=row["table"], row=row["row"], column=row["column"], value=value,
            unit=row["unit"], status=row["status"], raw=row["raw"], note=row["note"], line=line,
            text=row["value"],
        )
        if cell.key in seen:
            raise PublishedDataError(f"{where}: duplicate cell {cell.key} (first at line {seen[cell.key]})")
        seen[cell.key] = line
        cells.append(cell)
    return cells


def load_claims(paper: str, root: Path = PUBLISHED) -> list[PublishedClaim]:
    path = root / f"{paper}_claims.csv"
    claims: list[PublishedClaim] = []
    seen: set[str] = set()
    for line, row in _read_rows(path, CLAIM_FIELDS):
        where = f"{path}:{line}"
        if row["paper"] != paper:
            raise PublishedDataError(f"{where}: paper {row['paper']!r} != {paper!r}")
        if row["unit"] not in UNITS:
            raise PublishedDataError(f"{where}: unit {row['unit']!r} not in {sorted(UNITS)}")
        comparison = row["comparison"].strip() or "="
        if comparison not in COMPARISONS:
            raise PublishedDataError(
                f"{where}: comparison {row['comparison']!r} not in {list(COMPARISONS)} (claim {row['claim_id']!r})"
            )
        if row["claim_id"] in seen:
            raise PublishedDataError(f"{where}: duplicate claim_id {row['claim_id']!r}")
        seen.add(row["claim_id"])
        value = _parse_number(row["value"], where) if row["value"] else None
        claims.append(PublishedClaim(
            paper=paper, claim_id=row["claim_id"], location=row["location"], quote=row["quote"],
            value=value, unit=row["unit"], comparison=comparison, recompute=row["recompute"],
            note=row["note"], line=line, text=row["value"],
        ))
    return claims


class CellIndex:
    """Look-ups over one paper's cells, by exact key or by fnmatch patterns."""

    def __init__(self, cells: Iterable[PublishedCell]):
        self.all_cells = list(cells)
        self.by_key = {c.key: c for c in self.all_cells}

    def cell(self, table: str, row: str, column: str) -> float:
        found = self.by_key.get((table, row, column))
        if found is None:
            raise KeyError(f"no published cell ({table!r}, {row!r}, {column!r})")
        if found.value is None:
            raise KeyError(f"published cell ({table!r}, {row!r}, {column!r}) is {found.status}")
        return found.value

    def cells(self, table: str, row_pattern: str = "*", column_pattern: str = "*") -> list[float]:
        values = [
            c.value for c in self.all_cells
            if c.table == table and c.value is not None
            and fnmatch.fnmatchcase(c.row, row_pattern) and fnmatch.fnmatchcase(c.column, column_pattern)
        ]
        if not values:
            raise KeyError(f"no published cells match ({table!r}, {row_pattern!r}, {column_pattern!r})")
        return values


_SAFE_FUNCTIONS = {
    "mean": statistics.fmean, "median": statistics.median, "stdev": statistics.stdev,
    "pstdev": statistics.pstdev, "min": min, "max": max, "abs": abs, "round": round, "sum": sum,
    "len": len, "sorted": sorted,
}


def evaluate_expression(expression: str, index: CellIndex) -> float:
    """Evaluate a claim's ``recompute`` expression over the paper's cells (no builtins exposed)."""
    namespace = dict(_SAFE_FUNCTIONS, cell=index.cell, cells=index.cells)
    code = compile(expression, "<recompute>", "eval")
    for name in code.co_names:
        if name not in namespace:
            raise NameError(f"recompute expression uses unknown name {name!r}: {expression}")
    return float(eval(code, {"__builtins__": {}}, namespace))  # noqa: S307 - names checked above
