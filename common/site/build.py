"""Build the static site (``python -m common site [--out DIR]``) from ``results/`` and ``<build>/cards/``,
Jinja-autoescaped (a CSV cell is text, never markup); found by convention, so a new paper appears without an edit
here. Folders DVC caches are left out, so the site is the same before and after ``make repro`` fills them.
"""
from __future__ import annotations

import argparse
import csv
import os
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import jinja2
from markdown_it import MarkdownIt
from markupsafe import Markup

from common import plugins
from common.audit.core import ORDER, AuditRow
from common.audit.report import FIELDS as AUDIT_FIELDS, published_label
from common.docs.coverage import DIFFERS, MINI_ONLY, REPRODUCED, WAITING, overall
from common.errors import WorkspaceError
from common.files.io import output_group, write_text_atomic
from common.oracle.core import read_record
from common.paths import RESULTS, build_root, refuse_workspace_outputs
from common.reporting import scorecard
from common.reporting.report import CROSS_PAPER_COUNTS, read_summary, read_table
from common.site.about import about
from common.site.text import clean_quote, decimals, rounded, to_float, tone

DATA_FILES = ("common/site/templates/", "common/site/static/")
"""What the stage names besides code; not ``results/``, whose DVC-cached folders would change ``dvc.lock`` alone."""
HERE = Path(__file__).resolve().parent
STATIC = ("site.css", "filter.js")
DEFAULT_OUT = "site"
"""Under the build root: ``<build>/site/``."""
CARDS = "cards"
"""Under the build root: ``<build>/cards/<profile>/<model>.{md,png}`` (``common.card``)."""
MARKER = ".common-site"
"""A file every site holds: an existing ``--out`` folder without it is someone else's and is never replaced."""
MAX_ROWS = 300
"""Rows of a results CSV shown on a page: a longer file is cut, and the page names the file."""
AUDIT_COMMAND = "python -m common audit {paper}"
CORRELATION_COLUMNS = frozenset({"pearson", "spearman", "kendall"})
"""A results CSV with one of these columns is a correlation table (``correlations.html``)."""
CROSS_PAPER = "cross_paper"
"""``results/audit/cross_paper.{csv,png}`` and ``_summary.json``: the cross-paper comparison."""
NO_CARDS = "no cards yet: python -m common card --model SPEC"


class SiteError(WorkspaceError):
    """The site cannot be built where asked (``--out`` is a file, or a folder the site does not own)."""


@dataclass(frozen=True)
class Cell:
    """A table cell with more than text: a verdict's colour (a badge), a tooltip, provenance folded away."""

    text: str
    tone: str = ""
    title: str = ""
    more: tuple[tuple[str, str], ...] = ()
    note: str = ""
    """A second line under the text, smaller (an interval, a source)."""

    @property
    def folded(self) -> tuple[tuple[str, str], ...]:
        return tuple((k, v) for k, v in self.more if v)


@dataclass(frozen=True)
class Row:
    cells: tuple[str | Cell, ...]
    keys: Mapping[str, str] = field(default_factory=dict)
    """Filter values (``data-<key>`` attributes) that the select boxes match exactly."""


@dataclass(frozen=True)
class Grid:
    """A table for a page; with ``filters`` or ``searchable`` it gets select boxes and a text box (filter.js)."""

    id: str
    title: str
    header: tuple[str, ...]
    rows: tuple[Row, ...]
    total: int
    """Rows in the file: more than ``rows`` when it was cut at ``MAX_ROWS``."""
    filters: tuple[str, ...] = ()
    searchable: bool = False
    code: frozenset[int] = frozenset()
    """Columns shown as code (a command)."""

    @property
    def filterable(self) -> bool:
        return bool(self.filters) or self.searchable

    def options(self, key: str) -> list[str]:
        """The values of ``key`` in the rows, audit verdicts in the audit's order."""
        values = {r.keys[key] for r in self.rows}
        return sorted(values, key=lambda v: (ORDER.index(v) if v in ORDER else len(ORDER), v))


@dataclass(frozen=True)
class Figure:
    title: str
    src: str
    """Relative to the site's folder (images are copied into ``img/``)."""


@dataclass(frozen=True)
class Section:
    title: str
    grids: tuple[Grid, ...] = ()
    figures: tuple[Figure, ...] = ()

    @property
    def anchor(self) -> str:
        return _slug(self.title)


@dataclass(frozen=True)
class Card:
    title: str
    html: Markup
    """The card's Markdown rendered (raw HTML in it escaped, never passed through)."""
    figure: Figure | None


@dataclass
class _Writer:
    """Writes one site into ``root`` (a folder inside the output group's staging folder)."""

    root: Path
    results: Path
    env: jinja2.Environment
    _figures: dict[tuple[Path, Path, str], Figure] = field(default_factory=dict)
    _grids: dict[tuple[Path, bool], Grid] = field(default_factory=dict)
    """Copied or read once: a folder's figures and correlation tables appear on two pages."""

    def image(self, path: Path, under: Path, prefix: str) -> Figure:
        """Copy ``path`` into ``img/<prefix>/`` once (its path below ``under`` kept)."""
        key = (path, under, prefix)
        if key not in self._figures:
            rel = Path("img", prefix, path.relative_to(under))
            (self.root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, self.root / rel)
            self._figures[key] = Figure(self.shown(path), rel.as_posix())
        return self._figures[key]

    def shown(self, path: Path) -> str:
        """``path`` as a page names it: relative to the workspace (``results/aro/mini/table6.csv``)."""
        try:
            return path.relative_to(self.results.parent).as_posix()
        except ValueError:
            return str(path)

    def grid(self, path: Path, *, searchable: bool = False) -> Grid:
        key = (path, searchable)
        if key not in self._grids:
            rows = read_table(path)
            header = tuple(rows[0])
            cells = tuple(Row(tuple(_shown_number(r[h]) for h in header)) for r in rows[:MAX_ROWS])
            self._grids[key] = Grid(_slug(self.shown(path)), self.shown(path), header, cells, len(rows),
                                    searchable=searchable)
        return self._grids[key]

    def page(self, name: str, template: str, **context: object) -> None:
        html = self.env.get_template(template).render(current=name, **context)
        write_text_atomic(self.root / name, html)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-")


def _environment(papers: Sequence[str]) -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.globals.update(papers=list(papers))
    return env


def _visible(path: Path) -> bool:
    return not any(part.startswith(".") for part in path.parts)


def _dvc_cached(path: Path, results: Path) -> bool:
    """Whether ``path`` lies in a folder DVC caches (listed as ``/name`` in its parent's ``.gitignore``)."""
    folder = results
    for part in path.relative_to(results).parts:
        ignore = folder / ".gitignore"
        if ignore.is_file() and f"/{part}" in ignore.read_text(encoding="utf-8").split():
            return True
        folder = folder / part
    return False


def _header(path: Path) -> list[str]:
    with path.open(newline="", encoding="utf-8", errors="replace") as fh:
        return next(csv.reader(fh), [])


# ---- what each page shows -----------------------------------------------------------------------------------------
def paper_sections(w: _Writer, paper: str) -> list[Section]:
    """One section per folder of ``results/<paper>/``: every CSV as a table, every PNG as a figure."""
    top = w.results / paper
    if not top.is_dir():
        return []
    sections = []
    for folder in [top, *sorted(p for p in top.iterdir() if p.is_dir() and _visible(p.relative_to(top)))]:
        files = sorted(folder.glob("*") if folder == top else folder.rglob("*"))
        files = [p for p in files if p.is_file() and _visible(p.relative_to(top)) and not _dvc_cached(p, w.results)]
        grids = tuple(w.grid(p) for p in files if p.suffix == ".csv")
        figures = tuple(w.image(p, w.results, "results") for p in files if p.suffix == ".png")
        if grids or figures:
            sections.append(Section(w.shown(folder) + "/", grids, figures))
    return sections


def _shown_number(text: str, digits: int | None = None) -> str | Cell:
    """A number cell rounded, the file's value as its tooltip when rounding changed it; other text as it is."""
    shown = rounded(text, digits)
    return text if shown == text else Cell(shown, title=text)


def _audit_row(d: Mapping[str, str]) -> AuditRow:
    """A row of ``results/audit/<paper>.csv`` back as the ``AuditRow`` it was written from."""
    verdict, _, caveat = d["verdict"].partition("; ")
    texts = ("paper", "table", "row", "column", "published_text", "unit", "tolerance_rule", "profile", "source", "note")
    numbers = {k: to_float(d[k]) for k in ("published", "recomputed", "difference", "tolerance")}
    return AuditRow(**{k: d[k] for k in texts}, **numbers, verdict=verdict, caveat=caveat)


AUDIT_HEADER = ("verdict", "published", "recomputed here", "difference", "table", "row", "column", "the paper's words",
                "provenance")


def audit_grid(w: _Writer, paper: str) -> Grid | None:
    """The paper's audit, one row per published cell, filterable by table and verdict."""
    path = w.results / "audit" / f"{paper}.csv"
    if not path.is_file():
        return None
    command = AUDIT_COMMAND.format(paper=paper)
    rows = []
    for d in read_table(path, AUDIT_FIELDS):
        r = _audit_row(d)
        digits = decimals(r.published_text)
        provenance = Cell(r.profile or "-", more=(("source", r.source), ("note", clean_quote(r.note)),
                                                  ("tolerance", _tolerance(d)), ("recompute with", command)))
        cells = (Cell(r.verdict, tone(r.verdict), more=(("caveat", r.caveat),)),
                 published_label(r, d["comparison"] or "="), _shown_number(d["recomputed"], digits),
                 _shown_number(d["difference"], digits), r.table, r.row, r.column, clean_quote(d["quote"]),
                 provenance)
        rows.append(Row(cells, {"table": r.table, "verdict": r.verdict}))
    return Grid(f"audit-{paper}", w.shown(path), AUDIT_HEADER, tuple(rows), len(rows), ("table", "verdict"), True)


def _tolerance(d: Mapping[str, str]) -> str:
    """The audit's tolerance as a reader checks it: the number, rounded, and its rule."""
    return " ".join(x for x in (rounded(d["tolerance"]), f"({d['tolerance_rule']})" if d["tolerance_rule"] else "")
                    if x)


def claims_grid(findings_by_claim: Sequence[Sequence[scorecard.Finding]], paper: str,
                results: Path = RESULTS) -> Grid | None:
    """The paper's claims scorecard: one row per claim, a column per kind of evidence."""
    rows = []
    for findings in findings_by_claim:
        c = findings[0].claim
        claim = Cell(c.claim, note=c.source, more=(
            ("the paper's words", " … ".join(f"“{clean_quote(q)}”" for q in c.quote)),
            ("where the numbers are", f"papers/{paper}/{scorecard.SPEC}: {c.id}")))
        cells: list[str | Cell] = [claim, scorecard.published_words(c, results), c.direction_text]
        for f in findings:
            e = c.evidence.get(f.kind)
            cells.append(Cell(f.verdict, tone(f.verdict), note=f.number, more=(
                ("measured", e.what if e else ""), ("detail", f.detail), ("tested here", c.tested_here(f.kind)))))
        rows.append(Row(tuple(cells), {}))
    if not rows:
        return None
    header = ("claim", "published effect", "the paper's direction",
              *(scorecard.EVIDENCE_TITLES[k] for k in scorecard.EVIDENCE))
    return Grid(f"claims-{paper}", f"papers/{paper}/{scorecard.SPEC}", header, tuple(rows), len(rows))


def verdict_counts(results: Path, papers: Sequence[str]) -> dict[str, dict[str, int]]:
    """paper -> its audit's verdict counts (``<paper>_summary.json``); a paper without an audit is left out."""
    files = {p: results / "audit" / f"{p}_summary.json" for p in papers}
    return {p: read_summary(f, counts=True) for p, f in files.items() if f.is_file()}


def correlation_sections(w: _Writer, papers: Sequence[str]) -> list[Section]:
    """Every results CSV with a correlation column, by folder, with the folder's PNGs."""
    folders: dict[Path, list[Path]] = {}
    for paper in papers:
        for path in sorted((w.results / paper).rglob("*.csv")):
            if _visible(path.relative_to(w.results)) and not _dvc_cached(path, w.results) \
                    and CORRELATION_COLUMNS & set(_header(path)):
                folders.setdefault(path.parent, []).append(path)
    return [Section(w.shown(folder) + "/", tuple(w.grid(p, searchable=True) for p in paths),
                    tuple(w.image(p, w.results, "results") for p in sorted(folder.glob("*.png"))))
            for folder, paths in folders.items()]


def cards(w: _Writer, folder: Path) -> list[Card]:
    """Every ``<profile>/<name>.md`` under ``folder`` (cards and comparisons), rendered, with its PNG if any."""
    markdown = MarkdownIt("js-default")  # tables on, raw HTML escaped
    found = []
    for md in sorted(folder.glob("*/*.md")) if folder.is_dir() else []:
        png = md.with_suffix(".png")
        figure = w.image(png, folder, CARDS) if png.is_file() else None
        found.append(Card(f"{md.parent.name}/{md.stem}", Markup(markdown.render(md.read_text(encoding="utf-8"))),
                          figure))
    return found


CROSS_PAPER_FILTERS = ("verdict", "kind", "benchmark")
CROSS_PAPER_HEADER = ("verdict", "benchmark", "model", "one paper", "the other", "difference", "cause")


def _side(r: Mapping[str, str], side: str) -> Cell:
    """One paper's number in a cross-paper row: the value, the paper under it, where it is printed as a tooltip."""
    return Cell(r[f"value_{side}"], note=r[f"source_{side}"],
                title=f"{r[f'location_{side}']} ({r[f'averaging_{side}']})")


def cross_paper_grid(w: _Writer, path: Path) -> Grid:
    """The cross-paper CSV, filterable by verdict, kind and benchmark."""
    rows = []
    for r in read_table(path, CROSS_PAPER_FILTERS):
        summary, _, rest = r["evidence"].partition(" | ")
        cause = Cell(r["cause"] or "none found", note=summary, more=(("evidence", rest), ("mapping", r["mapping"]),
                                                                      ("kind", r["kind"])))
        cells = (Cell(r["verdict"], tone(r["verdict"])), Cell(r["benchmark"], note=r["category"]), r["model"],
                 _side(r, "a"), _side(r, "b"), _shown_number(r["difference"]), cause)
        rows.append(Row(cells, {k: r[k] for k in CROSS_PAPER_FILTERS}))
    return Grid("cross-paper", w.shown(path), CROSS_PAPER_HEADER, tuple(rows), len(rows), CROSS_PAPER_FILTERS, True)


def headline(findings: Sequence[scorecard.Finding]) -> scorecard.Finding:
    """The finding the index shows: the evidence closest to the paper's own quantity that ran."""
    shown = [f for f in findings if f.verdict not in (scorecard.NOT_RUN, scorecard.NOT_MEASURED)]
    order = ("full", "offline", "mini")
    return min(shown or findings, key=lambda f: order.index(f.kind) if f.kind in order else len(order))


# ---- the site -----------------------------------------------------------------------------------------------------
def coverage(counts: Mapping[str, Mapping[str, int]]) -> dict[str, int]:
    """The audit's verdict counts over every paper, under the index's names: what is compared and what is not."""
    names = {REPRODUCED: "reproduced", DIFFERS: "differs", WAITING: "waiting", MINI_ONLY: "mini"}
    summed = overall(counts)
    return {short: summed[verdict] for verdict, short in names.items()}


def write_site(root: Path, results: Path = RESULTS, cards_dir: Path | None = None) -> list[str]:
    """Write every page, static file and image into the empty folder ``root``; the pages' names."""
    papers = plugins.paper_names()
    w = _Writer(root, Path(results), _environment(papers))
    root.mkdir(parents=True, exist_ok=True)
    for name in STATIC:
        shutil.copyfile(HERE / "static" / name, root / name)
    audit = w.results / "audit"
    counts = verdict_counts(w.results, papers)
    verdicts = [v for v in ORDER if any(v in c for c in counts.values())]
    cross_summary = audit / f"{CROSS_PAPER}_summary.json"
    cross_counts = read_summary(cross_summary, counts=True, keys=CROSS_PAPER_COUNTS) if cross_summary.is_file() else {}
    claims = {p: scorecard.scorecard(p, w.results) for p in papers}
    oracles = {p: read_record(p, w.results) for p in papers}
    w.env.globals.update(abouts={p: about(p) for p in papers})
    w.page("index.html", "index.html.j2", counts=counts, verdicts=verdicts, cross_counts=cross_counts, oracles=oracles,
           claims={p: scorecard.reproduced_counts(rows) for p, rows in claims.items() if rows},
           headlines={p: [headline(f) for f in rows] for p, rows in claims.items()},
           evidence=scorecard.EVIDENCE_TITLES, tone=tone, coverage=coverage(counts))
    for paper in papers:
        figures = sorted(p for p in audit.glob(f"{paper}*.png") if p.stem == paper or p.stem.startswith(paper + "_"))
        w.page(f"{paper}.html", "paper.html.j2", paper=paper, claims=claims_grid(claims[paper], paper, w.results),
               sections=paper_sections(w, paper),
               audit=audit_grid(w, paper), counts=counts.get(paper, {}),
               audit_figures=[w.image(p, w.results, "results") for p in figures],
               command=AUDIT_COMMAND.format(paper=paper), oracle=oracles[paper])
    cross_csv, cross_png = audit / f"{CROSS_PAPER}.csv", audit / f"{CROSS_PAPER}.png"
    table = cross_paper_grid(w, cross_csv) if cross_csv.is_file() else None
    figure = w.image(cross_png, w.results, "results") if cross_png.is_file() else None
    w.page("cross_paper.html", "cross_paper.html.j2", table=table, figure=figure, counts=cross_counts)
    w.page("correlations.html", "correlations.html.j2", sections=correlation_sections(w, papers))
    w.page("cards.html", "cards.html.j2", cards=cards(w, cards_dir or build_root() / CARDS), empty=NO_CARDS)
    write_text_atomic(root / MARKER, "written by `python -m common site`; the next build replaces this folder\n")
    return ["index.html", *(f"{p}.html" for p in papers), "cross_paper.html", "correlations.html", "cards.html"]


def build_site(out: str | os.PathLike, results: Path = RESULTS, cards_dir: Path | None = None) -> Path:
    """Build the site into ``out`` as one output group; its ``index.html``."""
    out = Path(os.path.abspath(out))
    refuse_workspace_outputs([out], "--out")
    if out.exists() and not out.is_dir():
        raise SiteError(f"--out {out} is a file: give a folder (default: {build_root() / DEFAULT_OUT})")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise SiteError(f"--out {out} is a folder this command did not write (no {MARKER}), and the build replaces "
                        f"it as a whole: give a new or empty folder")
    with output_group(out.parent) as staging:
        write_site(staging / out.name, results, cards_dir)
    return out / "index.html"


def _cmd_site(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    index = build_site(args.out or build_root() / DEFAULT_OUT)
    print(f"site: {index} ({time.perf_counter() - start:.1f} s; opens offline: every file is in {index.parent})")
    return 0


def register_cli(subparsers) -> None:
    p = subparsers.add_parser("site", help="a static HTML site of results/: papers, audits, correlations, cards",
                              description="Build a static HTML site from results/ (and the report cards of "
                                          "<build>/cards/) that opens offline in any browser.")
    p.add_argument("--out", metavar="DIR", help=f"the site's folder, replaced as a whole (default: <build root>/"
                                                f"{DEFAULT_OUT})")
    p.set_defaults(func=_cmd_site)
