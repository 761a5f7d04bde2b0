"""Numbers in the documentation that come from ``results/``, written by ``python -m common docs numbers --write``
and checked, never typed (docs/layout.md, "Numbers in the documentation").
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from common.docs import coverage
from common.files.io import write_text_atomic
from common.paths import RESULTS, ROOT
from common.reporting import scorecard
from common.reporting.results_ref import SEPARATOR, DocNumberError, lookup

MARKER = re.compile(r"<!--n(?:(?P<id>\d+)| (?P<ref>.*?))-->(?P<text>.*?)<!--/n-->", re.S)
"""A marked number: by ID (its reference in the document's ``REFERENCES`` block) or with its reference inline."""
REFERENCES = re.compile(r"\n*^<!-- numbers \(python -m common docs numbers\)[^\n]*\n(?P<body>.*?)^-->\n?\Z",
                        re.S | re.M)
"""The document's last comment: one ``nID = reference`` per line."""
REFERENCES_HEAD = ("<!-- numbers (python -m common docs numbers): the results/ reference of each marked number "
                   "above")
"""The block's first line (a marker's own syntax would close the comment)."""
DEFINITION = re.compile(r"^n(?P<id>\d+) = (?P<ref>.+)$")
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
    return list(dict.fromkeys(
        path for pattern in DOCUMENTS for path in sorted(root.glob(pattern))
        if path.is_file() and ".venv" not in path.parts and "build" not in path.relative_to(root).parts[:1]))


def _markers(text: str) -> Iterable[re.Match]:
    """The markers of ``text`` outside code (fenced blocks and inline spans)."""
    code = [m.span() for m in CODE.finditer(text)]
    for m in MARKER.finditer(text):
        if not any(start <= m.start() < end for start, end in code):
            yield m


def _split(text: str, where: str) -> tuple[str, dict[int, str]]:
    """The document without its references block, and the block's references by ID."""
    block = REFERENCES.search(text)
    if block is None:
        return text, {}
    first = text.count("\n", 0, block.start("body")) + 1
    references: dict[int, str] = {}
    for offset, line in enumerate(block.group("body").splitlines()):
        definition = DEFINITION.match(line)
        if definition is None or int(definition["id"]) in references:
            raise DocNumberError(f"{where}:{first + offset}: not one new 'nID = reference' line: {line!r}")
        references[int(definition["id"])] = definition["ref"]
    return text[:block.start()] + "\n", references


def _read(doc: Path, original: str, results: Path) -> tuple[str, dict[int, str], list[tuple[re.Match, int, str, str]]]:
    """``original`` without its references, the references by ID, and (match, line, reference, value) per marker."""
    name = str(doc.relative_to(ROOT) if doc.is_relative_to(ROOT) else doc)
    text, references = _split(original, name)
    found = []
    for m in _markers(text):
        line = text.count("\n", 0, m.start()) + 1
        ref = m["ref"] if m["ref"] is not None else references.get(int(m["id"]))
        if ref is None:
            raise DocNumberError(f"{name}:{line}: n{m['id']} has no reference in the numbers comment at the "
                                 f"document's end")
        found.append((m, line, ref, lookup(ref, f"{name}:{line}", results)))
    return text, references, found


def marked(paths: Iterable[Path] | None = None, results: Path = RESULTS) -> list[Marked]:
    """Every marked number of the documentation, with the results' value beside the text's."""
    return [Marked(doc, line, ref, m["text"], value) for doc in (documents() if paths is None else paths)
            for m, line, ref, value in _read(doc, doc.read_text(encoding="utf-8"), results)[2]]


def write(paths: Iterable[Path] | None = None, results: Path = RESULTS) -> list[Path]:
    """Rewrite every marked number from the results, every reference moved to the end block; the files changed."""
    changed = []
    for doc in (documents() if paths is None else paths):
        original = doc.read_text(encoding="utf-8")
        text, references, found = _read(doc, original, results)
        ids = {ref: number for number, ref in reversed(references.items())}
        used: dict[int, str] = {}
        parts, last = [], 0
        for m, _, ref, value in found:
            number = (int(m["id"]) if m["id"] is not None
                      else ids.setdefault(ref, max([0, *references, *ids.values()]) + 1))
            used[number] = ref
            parts += [text[last:m.start()], f"<!--n{number}-->{value}<!--/n-->"]
            last = m.end()
        new = "".join(parts) + text[last:]
        if used:
            new = new.rstrip("\n") + "\n\n" + "\n".join(
                [REFERENCES_HEAD, *(f"n{number} = {used[number]}" for number in sorted(used)), "-->"]) + "\n"
        if new != original:
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
    numbers.add_argument("--write", action="store_true",
                         help="rewrite them from results/ (an inline reference moves to the document's end)")
    numbers.set_defaults(func=_cmd)

    scorecard.register_cli(sub)
    coverage.register_cli(sub)
