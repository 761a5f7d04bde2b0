"""A number in ``results/`` named by a reference (docs/layout.md, "Numbers in the documentation"), as the docs'
markers and the claims scorecards name it.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path

from common.errors import WorkspaceError
from common.paths import RESULTS
from common.reporting.report import ReportInputError, read_table

SEPARATOR = "\u00a6"
"""Between a reference's parts: the broken bar, since a ``|`` splits a Markdown table row even inside a comment."""


class DocNumberError(WorkspaceError, ValueError):
    """A reference that names no number in the results; the message names where the reference is written."""


def _format(raw: str, fmt: str | None, where: str) -> str:
    if fmt is None:
        return raw
    try:
        number = float(raw)
    except ValueError as exc:
        raise DocNumberError(f"{where}: {raw!r} is not a number, so it cannot be formatted {fmt!r}") from exc
    if fmt == "%int":
        return f"{int(round(number)):,}"
    if fmt.startswith("%pct"):
        return format(100.0 * number, fmt[4:])
    return format(number, fmt[1:])


def _split_path(path: str) -> list[str]:
    return [p.replace("\0", ".") for p in path.replace("\\.", "\0").split(".")]


@functools.lru_cache(maxsize=64)
def _parsed(path: Path, stamp: tuple[int, int]):
    """A results file's JSON object or CSV rows, read once per version (``stamp``): the docs name it hundreds of
    times."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DocNumberError(f"{path}: not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start}); "
                             f"rerun the stage that writes it") from None
    if path.suffix == ".json":
        try:
            return json.loads(text)
        except ValueError as exc:
            raise DocNumberError(f"{path}: not valid JSON ({exc}); rerun the stage that writes it") from None
    try:
        return read_table(path)
    except ReportInputError as exc:
        raise DocNumberError(str(exc)) from None


def _content(path: Path):
    stat = path.stat()
    return _parsed(path, (stat.st_mtime_ns, stat.st_size))


def lookup(ref: str, where: str, results: Path = RESULTS) -> str:
    """The number ``ref`` names, as the documentation shows it."""
    parts = [p.strip() for p in ref.replace("\\|", "|").split(SEPARATOR)]
    fmt = parts.pop() if len(parts) > 2 and parts[-1].startswith("%") else None
    if len(parts) < 2:
        raise DocNumberError(f"{where}: marker {ref!r} needs a file and where the number is in it "
                             f"(FILE{SEPARATOR}...)")
    path = results / parts[0]
    if not path.is_file():
        raise DocNumberError(f"{where}: results/{parts[0]} does not exist")
    if path.suffix == ".json":
        node = _content(path)
        for key in _split_path(parts[1]):
            if isinstance(node, list) and key.isdigit() and int(key) < len(node):
                node = node[int(key)]
            elif isinstance(node, dict) and key in node:
                node = node[key]
            else:
                raise DocNumberError(f"{where}: results/{parts[0]} has no {parts[1]!r} (no {key!r})")
        if isinstance(node, (dict, list)):
            raise DocNumberError(f"{where}: results/{parts[0]} {parts[1]!r} is not a number")
        return _format(str(node), fmt, where)
    if path.suffix != ".csv":
        raise DocNumberError(f"{where}: results/{parts[0]}: only CSV and JSON files hold marked numbers")
    *filters, column = parts[1:]
    for f in filters:
        if "=" not in f:
            raise DocNumberError(f"{where}: {f!r} is not a column=value filter")
    conditions = [f.split("=", 1) for f in filters]
    rows = _content(path)
    for key in [column, *(key for key, _ in conditions)]:
        if rows and key not in rows[0]:
            raise DocNumberError(f"{where}: results/{parts[0]} has no column {key!r}")
    for row in rows:
        if all(row[k] == v for k, v in conditions):
            return _format(row[column], fmt, where)
    raise DocNumberError(f"{where}: results/{parts[0]} has no row where {', '.join(filters)}")
