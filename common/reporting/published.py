"""The papers' published numbers (``results/published/<paper>.csv`` and ``<paper>_claims.csv``) loaded strictly, and
a claim's ``recompute`` expression evaluated by a closed grammar, so the audit checks every stated average, delta and
ratio (columns, comparisons, grammar: docs/audit.md, "The transcriptions' columns").
"""
from __future__ import annotations

import ast
import csv
import fnmatch
import io
import math
import operator
import re
import statistics
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from common.errors import WorkspaceError
from common.files.utf8 import read_utf8
from common.paths import PUBLISHED

CELL_FIELDS = ("paper", "table", "row", "column", "value", "unit", "status", "raw", "note")
CLAIM_FIELDS = ("paper", "claim_id", "location", "quote", "value", "unit", "comparison", "recompute", "note")
COMPARISONS = ("=", ">", ">=", "<", "<=", "~")
"""Allowed values of a claim's ``comparison``; empty reads as "="."""
UNITS = frozenset(
    {"percent", "fraction", "count", "points", "ratio", "score", "millions", "billions", "other"}
)
STATUSES = frozenset({"ok", "unreadable", "not_reported"})


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


# ---- reading a data file the workspace did not write: strict text, strict numbers ---------------------------------
NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
"""A number as a table prints it; ``float()`` also takes "1_652", "nan", "inf", " 7 " and "١٢"."""
MERGE_MARKERS = ("<<<<<<<", "=======", ">>>>>>>", "|||||||")
"""Lines git leaves in a file whose merge conflicted."""


def parse_number(text: str) -> float:
    """``text`` as a finite float when it is a plain decimal number (``NUMBER``); ``ValueError`` saying why not."""
    if text == "":
        raise ValueError("empty where a number is expected")
    if text.strip().lstrip("+-").lower() in ("nan", "inf", "infinity"):
        raise ValueError(f"{text!r} is not finite")
    if not NUMBER.fullmatch(text):
        raise ValueError(f"{text!r} is not a number as a table prints it (digits, one '.', an optional sign and "
                         "exponent; no '_', ',', '%', spaces, nan or inf)")
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text!r} is not finite")
    return value


def csv_records(text: str, path: str | Path, error: type[WorkspaceError] = WorkspaceError
                ) -> Iterator[tuple[int, list[str]]]:
    """(line where it ends, fields) of every non-blank record; a merge-conflict marker or bad CSV is an ``error``."""
    reader = csv.reader(io.StringIO(text, newline=""))
    while True:
        try:
            record = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise error(f"{path}:{reader.line_num}: not valid CSV ({exc})") from None
        if not record:
            continue
        if record[0].startswith(MERGE_MARKERS):
            raise error(f"{path}:{reader.line_num}: a merge-conflict marker ({record[0][:7]}): resolve the conflict "
                        "(keep one side, delete the markers) and rerun")
        yield reader.line_num, record


def read_csv_rows(path: str | Path, error: type[WorkspaceError] = WorkspaceError, *, bom: str = "refuse",
                  required: Iterable[str] = (), identical_rows: bool = True, whole: bool = False
                  ) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """(header, [(line, row)]) of a CSV file, read strictly (no NUL byte, ``required`` columns, none twice, whole
    records; ``identical_rows=False``: no row twice; ``whole``: a file the workspace wrote, so its last line ends, no
    header repeated, a row); each violation an ``error`` naming file and line."""
    text = read_utf8(path, error, bom=bom, csv_file=True)
    if whole and text and not text.endswith("\n"):
        raise error(f"{path}:{text.count(chr(10)) + 1}: the last line does not end: the file was cut short")
    records = csv_records(text, path, error)
    first = next(records, None)
    if first is None:
        raise error(f"{path}:1: empty file (no header)")
    header = [h.strip() for h in first[1]]
    if any("\x00" in h for h in header):
        raise error(f"{path}:1: a NUL byte in the header; remove it")
    twice = sorted({h for h in header if header.count(h) > 1})
    if twice:
        raise error(f"{path}:1: column(s) {twice} twice in the header")
    missing = [c for c in dict.fromkeys(required) if c not in header]
    if missing:
        raise error(f"{path}:1: missing column(s) {missing} (header {header})")
    rows: list[tuple[int, dict[str, str]]] = []
    seen: dict[tuple[str, ...], int] = {}
    for line, record in records:
        if bom == "strip" and all(not f.strip() for f in record):
            continue  # a spreadsheet's blank line
        if len(record) != len(header):
            raise error(f"{path}:{line}: expected {len(header)} fields (header {header}), got {len(record)}")
        if whole and record == header:
            raise error(f"{path}:{line}: repeats the header (two tables run together?)")
        bad = next((c for c, v in zip(header, record) if "\x00" in v), None)
        if bad is not None:
            raise error(f"{path}:{line}: column {bad!r}: a NUL byte; remove it")
        if not identical_rows:
            if tuple(record) in seen:
                raise error(f"{path}:{line}: the same row as line {seen[tuple(record)]} (a row twice); remove one")
            seen[tuple(record)] = line
        rows.append((line, dict(zip(header, record))))
    if whole and not rows:
        raise error(f"{path}:2: no rows under the header")
    return header, rows


def _parse_number(text: str, where: str, column: str = "value") -> float:
    try:
        return parse_number(text)
    except ValueError as exc:
        raise PublishedDataError(f"{where}: column {column!r}: {exc}") from None


def _read_rows(path: Path, fields: tuple[str, ...], paper: str) -> list[tuple[int, dict[str, str]]]:
    """The rows of a transcription whose header is ``fields``, each of ``paper`` in one of ``UNITS``."""
    header, rows = read_csv_rows(path, PublishedDataError, required=fields)
    if header != list(fields):
        raise PublishedDataError(f"{path}:1: header {header} != expected {list(fields)} (unexpected column(s) "
                                 f"{[h for h in header if h not in fields]}, or columns in another order)")
    for line, row in rows:
        if row["paper"] != paper:
            raise PublishedDataError(f"{path}:{line}: column 'paper': {row['paper']!r} != {paper!r} (the file's name)")
        if row["unit"] not in UNITS:
            raise PublishedDataError(f"{path}:{line}: column 'unit': {row['unit']!r} not in {sorted(UNITS)}")
    return rows


def load_cells(paper: str, root: Path = PUBLISHED) -> list[PublishedCell]:
    path = root / f"{paper}.csv"
    cells: list[PublishedCell] = []
    seen: dict[tuple[str, str, str], int] = {}
    for line, row in _read_rows(path, CELL_FIELDS, paper):
        where = f"{path}:{line}"
        if row["status"] not in STATUSES:
            raise PublishedDataError(f"{where}: column 'status': {row['status']!r} not in {sorted(STATUSES)}")
        empty = [k for k in ("table", "row", "column") if not row[k]]
        if empty:
            raise PublishedDataError(f"{where}: column(s) {empty} empty: table, row and column must be non-empty")
        if row["status"] != "ok" and row["value"]:
            raise PublishedDataError(f"{where}: column 'value': status {row['status']} must leave value empty")
        value = _parse_number(row["value"], where) if row["status"] == "ok" else None
        cell = PublishedCell(
            paper=paper, table=row["table"], row=row["row"], column=row["column"], value=value,
            unit=row["unit"], status=row["status"], raw=row["raw"], note=row["note"], line=line,
            text=row["value"],
        )
        if cell.key in seen:
            raise PublishedDataError(f"{where}: duplicate cell {cell.key} (first at line {seen[cell.key]}); keep one")
        seen[cell.key] = line
        cells.append(cell)
    return cells


def load_claims(paper: str, root: Path = PUBLISHED) -> list[PublishedClaim]:
    """The claims of ``paper``, every ``recompute`` expression parsed before anything is evaluated."""
    path = root / f"{paper}_claims.csv"
    claims: list[PublishedClaim] = []
    seen: dict[str, int] = {}
    for line, row in _read_rows(path, CLAIM_FIELDS, paper):
        where = f"{path}:{line}"
        if not row["claim_id"]:
            raise PublishedDataError(f"{where}: column 'claim_id' is empty; give the claim an id")
        comparison = row["comparison"].strip() or "="
        if comparison not in COMPARISONS:
            raise PublishedDataError(f"{where}: column 'comparison': {row['comparison']!r} not in "
                                     f"{list(COMPARISONS)} (claim {row['claim_id']!r})")
        if row["claim_id"] in seen:
            raise PublishedDataError(f"{where}: column 'claim_id': duplicate {row['claim_id']!r} (first at line "
                                     f"{seen[row['claim_id']]}); keep one")
        seen[row["claim_id"]] = line
        value = _parse_number(row["value"], where) if row["value"] else None
        if row["recompute"]:
            try:
                parse_expression(row["recompute"])
            except ExpressionError as exc:
                raise PublishedDataError(f"{where}: column 'recompute' (claim {row['claim_id']!r}): "
                                         f"{exc.reason}") from None
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


# ---- recompute expressions: a closed grammar, interpreted here (never Python's eval) --------------------------------
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "mean": statistics.fmean, "median": statistics.median, "stdev": statistics.stdev,
    "pstdev": statistics.pstdev, "min": min, "max": max, "abs": abs, "round": round, "sum": sum,
    "len": len, "sorted": sorted,
}
"""The named functions an expression may call (besides ``cell`` and ``cells``), as Python defines them."""
_OF_ONE_LIST = frozenset({"mean", "median", "stdev", "pstdev", "sum", "len", "sorted"})
CELL_FUNCTIONS = {"cell": (3, 3), "cells": (1, 3)}
"""The look-ups, with their (fewest, most) arguments: literal strings only."""
MAX_EXPRESSION_CHARS = 20_000
MAX_EXPRESSION_DEPTH = 100
MAX_LIST_LENGTH = 100_000
MAX_ROUND_DIGITS = 15
_BINARY = {ast.Add: ("+", operator.add), ast.Sub: ("-", operator.sub), ast.Mult: ("*", operator.mul),
           ast.Div: ("/", operator.truediv)}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos}
_COMPARE = {ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Lt: operator.lt, ast.LtE: operator.le,
            ast.Eq: operator.eq, ast.NotEq: operator.ne}
_WHAT = {ast.Lambda: "a lambda", ast.ListComp: "a comprehension", ast.SetComp: "a comprehension",
         ast.DictComp: "a comprehension", ast.GeneratorExp: "a generator expression", ast.Attribute: "an attribute",
         ast.JoinedStr: "an f-string", ast.FormattedValue: "an f-string", ast.NamedExpr: "':=' (walrus)",
         ast.IfExp: "'if ... else'", ast.BoolOp: "'and'/'or'", ast.Dict: "a dict", ast.Set: "a set",
         ast.Tuple: "a tuple", ast.Starred: "'*' unpacking", ast.Slice: "a slice", ast.Await: "'await'",
         ast.Yield: "'yield'", ast.YieldFrom: "'yield'"}
_OPERATORS = {ast.Pow: "**", ast.FloorDiv: "//", ast.Mod: "%", ast.MatMult: "@", ast.LShift: "<<", ast.RShift: ">>",
              ast.BitOr: "|", ast.BitXor: "^", ast.BitAnd: "&", ast.Not: "not", ast.Invert: "~", ast.Is: "is",
              ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in"}
GRAMMAR = ("numbers, + - * /, unary minus, parentheses, comparisons, [lists], an integer index, "
           "cell(\"table\", \"row\", \"column\"), cells(\"table\"[, \"row pattern\"[, \"column pattern\"]]) and "
           + ", ".join(FUNCTIONS))


class ExpressionError(PublishedDataError):
    """A ``recompute`` expression outside the grammar or failing; ``reason``: the message without the expression."""

    def __init__(self, reason: str, expression: str = "") -> None:
        shown = expression if len(expression) <= 80 else expression[:79] + "…"
        super().__init__(f"recompute expression {shown!r}: {reason}" if expression else reason)
        self.reason = reason


def _refuse(node: ast.AST, what: str) -> ExpressionError:
    at = f" (character {node.col_offset + 1})" if hasattr(node, "col_offset") else ""
    return ExpressionError(f"{what}{at} is not allowed: an expression holds only {GRAMMAR}")


def parse_expression(text: str) -> ast.expr:
    """The syntax tree of ``text`` when every node is in ``GRAMMAR``, else ``ExpressionError``. Nothing is evaluated:
    a transcription is data and must never run code."""
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ExpressionError(f"{len(text)} characters, more than {MAX_EXPRESSION_CHARS}")
    if "\x00" in text:
        raise ExpressionError("a NUL byte")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", SyntaxWarning)  # "1if", "1e3x": refused, not printed as a warning
            tree = ast.parse(text, mode="eval")
    except SyntaxWarning as exc:
        raise ExpressionError(f"not an expression ({exc})") from None
    except SyntaxError as exc:
        raise ExpressionError(f"not an expression ({exc.msg}, character {exc.offset})") from None
    except (RecursionError, MemoryError, ValueError) as exc:
        raise ExpressionError(f"cannot be parsed ({type(exc).__name__}: nested too deeply?)") from None
    _check(tree.body, 0)
    return tree.body


def _check(node: ast.AST, depth: int) -> None:
    if depth > MAX_EXPRESSION_DEPTH:
        raise ExpressionError(f"nested more than {MAX_EXPRESSION_DEPTH} levels deep")
    children: list[ast.AST] = []
    if isinstance(node, ast.Constant):
        if isinstance(node.value, str):
            raise _refuse(node, "a string outside cell()/cells()")
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise _refuse(node, f"the constant {node.value!r}")
        try:
            finite = math.isfinite(float(node.value))
        except OverflowError:
            finite = False
        if not finite:
            raise _refuse(node, f"a number that is not finite ({text_of(node)})")
    elif isinstance(node, ast.BinOp):
        if type(node.op) not in _BINARY:
            raise _refuse(node, f"the operator {_OPERATORS.get(type(node.op), type(node.op).__name__)!r}")
        children = [node.left, node.right]
    elif isinstance(node, ast.UnaryOp):
        if type(node.op) not in _UNARY:
            raise _refuse(node, f"the operator {_OPERATORS.get(type(node.op), type(node.op).__name__)!r}")
        children = [node.operand]
    elif isinstance(node, ast.Compare):
        bad = next((op for op in node.ops if type(op) not in _COMPARE), None)
        if bad is not None:
            raise _refuse(node, f"the comparison {_OPERATORS.get(type(bad), type(bad).__name__)!r}")
        children = [node.left, *node.comparators]
    elif isinstance(node, ast.List):
        children = list(node.elts)
    elif isinstance(node, ast.Subscript):
        index = node.slice
        if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub):
            index = index.operand
        if not (isinstance(index, ast.Constant) and type(index.value) is int):
            raise _refuse(node, "an index that is not a whole number")
        children = [node.value]
    elif isinstance(node, ast.Call):
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name is None:
            raise _refuse(node.func, f"calling {_WHAT.get(type(node.func), 'an expression')}")
        if name not in FUNCTIONS and name not in CELL_FUNCTIONS:
            raise _refuse(node.func, f"the name {name!r}")
        if node.keywords:
            raise _refuse(node, f"a keyword argument to {name}()")
        if name in CELL_FUNCTIONS:
            low, high = CELL_FUNCTIONS[name]
            if not low <= len(node.args) <= high:
                raise _refuse(node, f"{name}() with {len(node.args)} argument(s) (it takes {low} to {high})")
            if not all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.args):
                raise _refuse(node, f"{name}() with arguments that are not literal strings")
        else:
            children = list(node.args)
    elif isinstance(node, ast.Name):
        raise _refuse(node, f"the name {node.id!r}" + (" without a call" if node.id in FUNCTIONS or
                                                        node.id in CELL_FUNCTIONS else ""))
    else:
        raise _refuse(node, _WHAT.get(type(node), type(node).__name__))
    for child in children:
        _check(child, depth + 1)


def text_of(node: ast.AST, limit: int = 80) -> str:
    """A node as written (shortened), for a message."""
    try:
        text = ast.unparse(node)
    except Exception:  # noqa: BLE001 - a description only
        return type(node).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _is_number(x: object) -> bool:
    return isinstance(x, (int, float))


def _call(name: str, args: list, index: CellIndex, node: ast.Call) -> Any:
    if name in CELL_FUNCTIONS:
        strings = [a.value for a in node.args]  # checked by the grammar: literal strings
        try:
            return getattr(index, name)(*strings)
        except KeyError as exc:
            raise ExpressionError(str(exc.args[0]) if exc.args else "no such cell") from None
    if name in _OF_ONE_LIST:
        if len(args) != 1:
            raise ExpressionError(f"{name}() takes one list, got {len(args)} arguments")
        if not isinstance(args[0], list):
            raise ExpressionError(f"{name}() takes a list of numbers, got a number")
        values = args[0]
    elif name in ("min", "max"):
        values = args[0] if len(args) == 1 and isinstance(args[0], list) else args
        if not values or not all(_is_number(v) for v in values):
            raise ExpressionError(f"{name}() takes a non-empty list of numbers or two numbers or more")
        return FUNCTIONS[name](values)
    elif name == "abs":
        if len(args) != 1 or not _is_number(args[0]):
            raise ExpressionError("abs() takes one number")
        return abs(args[0])
    elif name == "round":
        if not 1 <= len(args) <= 2 or not all(_is_number(a) for a in args) or (
                len(args) == 2 and (type(args[1]) is not int or abs(args[1]) > MAX_ROUND_DIGITS)):
            raise ExpressionError(f"round() takes a number and, optionally, a whole number of digits (at most "
                                  f"{MAX_ROUND_DIGITS})")
        try:
            return round(*args)
        except (ValueError, OverflowError):  # round(nan), round(inf): no whole number
            raise ExpressionError(f"round() of {args[0]}, which is not a finite number") from None
    else:  # pragma: no cover - FUNCTIONS and the branches above agree
        raise ExpressionError(f"unknown function {name!r}")
    try:
        return FUNCTIONS[name](values)
    except OverflowError:  # a whole number too large for a float (mean of 10**600)
        raise ExpressionError(f"{name}(): a number too large for a float") from None
    except (statistics.StatisticsError, ValueError, TypeError) as exc:
        raise ExpressionError(f"{name}(): {exc}") from None


def _evaluate(node: ast.AST, index: CellIndex) -> Any:
    """The value of a node the grammar accepted: a number (bools from comparisons count as numbers) or a list."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.BinOp):
        left, right = _evaluate(node.left, index), _evaluate(node.right, index)
        symbol, apply = _BINARY[type(node.op)]
        if isinstance(node.op, ast.Add) and isinstance(left, list) and isinstance(right, list):
            if len(left) + len(right) > MAX_LIST_LENGTH:
                raise ExpressionError(f"a list longer than {MAX_LIST_LENGTH}")
            return left + right
        if not (_is_number(left) and _is_number(right)):
            raise ExpressionError(f"{symbol!r} between a {'list' if isinstance(left, list) else 'number'} and a "
                                  f"{'list' if isinstance(right, list) else 'number'} (only lists add up)")
        try:
            return apply(left, right)
        except ZeroDivisionError:
            raise ExpressionError(f"division by zero in {text_of(node)}") from None
        except OverflowError:
            raise ExpressionError(f"a number too large in {text_of(node)}") from None
    if isinstance(node, ast.UnaryOp):
        operand = _evaluate(node.operand, index)
        if not _is_number(operand):
            raise ExpressionError("a sign in front of a list")
        return _UNARY[type(node.op)](operand)
    if isinstance(node, ast.Compare):
        left = _evaluate(node.left, index)
        result = True
        for op, right_node in zip(node.ops, node.comparators):
            right = _evaluate(right_node, index)
            if not (_is_number(left) and _is_number(right)):
                raise ExpressionError("a comparison of something other than two numbers")
            result = _COMPARE[type(op)](left, right)
            if not result:
                return False
            left = right
        return result
    if isinstance(node, ast.List):
        values = [_evaluate(e, index) for e in node.elts]
        if not all(_is_number(v) for v in values):
            raise ExpressionError("a list of lists")
        return values
    if isinstance(node, ast.Subscript):
        value = _evaluate(node.value, index)
        position = node.slice
        i = -position.operand.value if isinstance(position, ast.UnaryOp) else position.value
        if not isinstance(value, list):
            raise ExpressionError("an index into a number")
        try:
            return value[i]
        except IndexError:
            raise ExpressionError(f"index {i} of a list of {len(value)}") from None
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Name)
        args = [] if node.func.id in CELL_FUNCTIONS else [_evaluate(a, index) for a in node.args]
        return _call(node.func.id, args, index, node)
    raise ExpressionError(f"{type(node).__name__} is not in the grammar")  # pragma: no cover - parse_expression


def evaluate_expression(expression: str, index: CellIndex) -> float:
    """A claim's ``recompute`` expression interpreted over the paper's cells (no code ever built or run)."""
    try:
        tree = parse_expression(expression)
        value = _evaluate(tree, index)
    except ExpressionError as exc:
        raise ExpressionError(exc.reason, expression) from None
    except RecursionError:
        raise ExpressionError("nested too deeply", expression) from None
    if isinstance(value, list):
        raise ExpressionError("evaluates to a list, not a number (wrap it in mean(), sum(), len(), ...)", expression)
    try:
        result = float(value)
    except OverflowError:
        result = math.inf
    if not math.isfinite(result):
        raise ExpressionError(f"evaluates to {result}, not a finite number", expression)
    return result
