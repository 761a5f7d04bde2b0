"""Numbers in the documentation that come from ``results/``, written by a command and checked by a test, never typed.

In a Markdown file a number from the results is written between two HTML comments (invisible when rendered)::

    VG-Relation <!--n aro/mini/table6.csv¦task=VG-Relation¦mini-XS / 32k pairs-->0.507<!--/n-->

The opening comment names a file under ``results/`` and where the number is in it, parts separated by ``¦`` (the
broken bar: a ``|`` would split a Markdown table's row even inside a comment, so a ``|`` inside a part, as in a column
named ``BiVLC | I2T``, is written ``\\|``, which tables leave alone):

* a CSV file: ``column=value`` filters (every one must hold; the first matching row is taken), then the column;
* a JSON file: one dotted path (``models.mini/xs-32k.n.swap_obj``; a dot inside a key is written ``\\.``, a list
  item by its index);
* optionally last, a format: ``%.1f`` (Python's format of the float), ``%pct.1f`` (a fraction shown in percent), or
  ``%int`` (an integer with a thousands comma); without one the file's text is kept as it is.

``python -m common docs numbers`` lists every marked number and whether the text agrees with the results;
``--write`` rewrites the text between the markers from the results (and nothing else). The test suite fails on any
disagreement, an unknown file, row, column or key (named with the Markdown file and line), so a number in the prose
cannot go stale when a result moves.
"""
from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from common.errors import WorkspaceError
from common.paths import RESULTS, ROOT

MARKER = re.compile(r"<!--n (?P<ref>.*?)-->(?P<text>.*?)<!--/n-->", re.S)
SEPARATOR = "\u00a6"
"""Between a marker's parts: the broken bar, since a ``|`` splits a Markdown table row even inside a comment."""
DOCUMENTS = ("README.md", "CHANGELOG.md", "papers/*/README.md", "docs/**/*.md")
"""The Markdown files whose marked numbers are checked (globs under the repository root)."""


class DocNumberError(WorkspaceError, ValueError):
    """A marker that names no number in the results; the message names the Markdown file and line."""


@dataclass(frozen=True)
class Marked:
    """One marked number: where it is, what it refers to, what the text says and what the results say."""

    document: Path
    line: int
    ref: str
    text: str
    value: str

    @property
    def agrees(self) -> bool:
        return self.text == self.value


def documents(root: Path = ROOT) -> list[Path]:
    found: dict[Path, None] = {}
    for pattern in DOCUMENTS:
        for path in sorted(root.glob(pattern)):
            if path.is_file() and ".venv" not in path.parts and "build" not in path.relative_to(root).parts[:1]:
                found[path] = None
    return list(found)


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
        node = json.loads(path.read_text(encoding="utf-8"))
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
    conditions = []
    for f in filters:
        key, sep, value = f.partition("=")
        if not sep:
            raise DocNumberError(f"{where}: {f!r} is not a column=value filter")
        conditions.append((key, value))
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    if rows and column not in rows[0]:
        raise DocNumberError(f"{where}: results/{parts[0]} has no column {column!r}")
    for key, _ in conditions:
        if rows and key not in rows[0]:
            raise DocNumberError(f"{where}: results/{parts[0]} has no column {key!r}")
    for row in rows:
        if all(row[k] == v for k, v in conditions):
            return _format(row[column], fmt, where)
    raise DocNumberError(f"{where}: results/{parts[0]} has no row where {', '.join(filters)}")


def marked(paths: Iterable[Path] | None = None, results: Path = RESULTS) -> list[Marked]:
    """Every marked number of the documentation, with the results' value beside the text's."""
    out = []
    for doc in (documents() if paths is None else paths):
        text = doc.read_text(encoding="utf-8")
        for m in MARKER.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            where = f"{doc.relative_to(ROOT) if doc.is_relative_to(ROOT) else doc}:{line}"
            out.append(Marked(doc, line, m.group("ref"), m.group("text"), lookup(m.group("ref"), where, results)))
    return out


def write(paths: Iterable[Path] | None = None, results: Path = RESULTS) -> list[Path]:
    """Rewrite every marked number from the results; returns the files that changed."""
    from common.io import write_text_atomic

    changed = []
    for doc in (documents() if paths is None else paths):
        text = doc.read_text(encoding="utf-8")

        def fill(m: re.Match) -> str:
            line = text.count("\n", 0, m.start()) + 1
            value = lookup(m.group("ref"), f"{doc}:{line}", results)
            return f"<!--n {m.group('ref')}-->{value}<!--/n-->"

        new = MARKER.sub(fill, text)
        if new != text:
            write_text_atomic(doc, new)
            changed.append(doc)
    return changed


def _cmd(args) -> int:
    if args.write:
        for path in write():
            print(f"rewritten: {path.relative_to(ROOT)}")
        return 0
    numbers = marked()
    wrong = [n for n in numbers if not n.agrees]
    for n in wrong:
        print(f"{n.document.relative_to(ROOT)}:{n.line}: says {n.text!r}, results/{n.ref.split(SEPARATOR)[0]} says "
              f"{n.value!r}")
    print(f"{len(numbers)} marked numbers in {len({n.document for n in numbers})} files; {len(wrong)} disagree with "
          f"results/{' (python -m common docs numbers --write rewrites them)' if wrong else ''}")
    return 1 if wrong else 0


def register_cli(subparsers) -> None:
    docs = subparsers.add_parser("docs", help="the documentation's generated parts")
    sub = docs.add_subparsers(dest="docs_command", required=True, metavar="ACTION")
    numbers = sub.add_parser("numbers", help="check (or --write) the numbers the docs take from results/")
    numbers.add_argument("--write", action="store_true", help="rewrite them from results/")
    numbers.set_defaults(func=_cmd)
