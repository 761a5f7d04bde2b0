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

(``common.results_ref`` reads a reference; the claims scorecards use the same syntax.) A marker inside code (a fenced
block or an inline code span) is an example of the syntax and is left alone.

``python -m common docs numbers`` lists every marked number and whether the text agrees with the results;
``--write`` rewrites the text between the markers from the results (and nothing else). The test suite fails on any
disagreement, an unknown file, row, column or key (named with the Markdown file and line), so a number in the prose
cannot go stale when a result moves.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from common.paths import RESULTS, ROOT
from common.results_ref import SEPARATOR, DocNumberError, lookup

__all__ = ["DOCUMENTS", "MARKER", "SEPARATOR", "DocNumberError", "Marked", "documents", "lookup", "marked", "write"]

MARKER = re.compile(r"<!--n (?P<ref>.*?)-->(?P<text>.*?)<!--/n-->", re.S)
CODE = re.compile(r"^(?P<fence>```|~~~).*?^(?P=fence)[^\n]*$|``[^\n]*?``|`[^`\n]*`", re.S | re.M)
"""Fenced code blocks and inline code spans: a marker shown there is an example of the syntax, not a number."""
DOCUMENTS = ("README.md", "CHANGELOG.md", "papers/*/README.md", "docs/**/*.md")
"""The Markdown files whose marked numbers are checked (globs under the repository root)."""


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


def _markers(text: str) -> Iterable[re.Match]:
    """The markers of ``text`` outside code (fenced blocks and inline spans)."""
    code = [m.span() for m in CODE.finditer(text)]
    for m in MARKER.finditer(text):
        if not any(start <= m.start() < end for start, end in code):
            yield m


def marked(paths: Iterable[Path] | None = None, results: Path = RESULTS) -> list[Marked]:
    """Every marked number of the documentation, with the results' value beside the text's."""
    out = []
    for doc in (documents() if paths is None else paths):
        text = doc.read_text(encoding="utf-8")
        for m in _markers(text):
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

        parts, last = [], 0
        for m in _markers(text):
            line = text.count("\n", 0, m.start()) + 1
            value = lookup(m.group("ref"), f"{doc}:{line}", results)
            parts += [text[last:m.start()], f"<!--n {m.group('ref')}-->{value}<!--/n-->"]
            last = m.end()
        new = "".join(parts) + text[last:]
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
    from common import coverage, scorecard

    scorecard.register_cli(sub)
    coverage.register_cli(sub)
