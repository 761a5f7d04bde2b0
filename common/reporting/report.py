"""``python -m common report <paper>`` (the root ``dvc.yaml``'s ``papers/<paper>`` stage): a paper's reproduced
tables (its plug-in's ``REPORT``), its files and its audit; ``python -m common metrics <paper>``: its DVC metrics.
``read_table`` and ``read_summary`` refuse a damaged results file in one line naming the file, line and column.
"""
from __future__ import annotations

import argparse
import itertools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from common import plugins
from common.errors import WorkspaceError
from common.files.jsonl import is_number, read_json
from common.paper import Paper, PlugInCommand, load_paper, load_papers
from common.paths import RESULTS, ROOT
from common.pipeline.dvc_run import run_dvc
from common.pipeline.params import stage_params
from common.pipeline.stage_map import stage_running
from common.reporting.published import read_csv_rows

REMEDY = "rerun the stage that writes it (`dvc repro`) or restore it (`git checkout -- <file>`)"


class ReportInputError(WorkspaceError, ValueError):
    """A results file a report reads is damaged; the message names the file, the line and the column."""


def _remedy(path: Path) -> str:
    return REMEDY.replace("<file>", str(path))


def read_summary(path: Path, *, keys: Sequence[str] = (), numbers: Sequence[str] = (), counts: bool = False,
                 objects: bool = False) -> dict:
    """A JSON object a stage wrote, checked for what the report prints (``numbers``: finite; ``counts``, ``objects``:
    every value one)."""
    data = read_json(Path(path), dict, remedy=_remedy(path))
    for key in (*keys, *numbers):
        if key not in data:
            raise ReportInputError(f"{path}: no {key!r}; {_remedy(path)}")
    for key in numbers:
        if not is_number(data[key]):
            raise ReportInputError(f"{path}: {key!r} is {data[key]!r:.40}, not a number; {_remedy(path)}")
    for key, value in data.items():
        if counts and not (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
            raise ReportInputError(f"{path}: {key!r} is {value!r:.40}, not a count; {_remedy(path)}")
        if objects and not isinstance(value, dict):
            raise ReportInputError(f"{path}: {key!r} is a {type(value).__name__}, not an object of values; "
                                   f"{_remedy(path)}")
    return data


def read_table(path: Path, columns: Sequence[str] = (), *, numbers: Sequence[str] = (),
               any_of: Sequence[str] = ()) -> list[dict[str, str]]:
    """The rows of a results CSV as dicts, checked (UTF-8, whole, ``columns`` and one of ``any_of`` present, rows
    whole, ``numbers`` finite): the one reader of results tables (report, site, docs)."""
    path = Path(path)
    try:
        header, rows = read_csv_rows(path, ReportInputError, required=columns, whole=True)
        if any_of and not any(c in header for c in any_of):
            raise ReportInputError(f"{path}:1: missing column {' or '.join(map(repr, any_of))} (header {header})")
        for (line, row), column in itertools.product(rows, numbers):
            try:
                ok = math.isfinite(float(row[column]))
            except ValueError:
                ok = False
            if not ok:
                raise ReportInputError(f"{path}:{line}: column {column!r}: {row[column]!r:.40} is not a number")
    except ReportInputError as exc:
        raise ReportInputError(f"{exc}; {_remedy(path)}") from None
    return [row for _, row in rows]


def audit_line(paper: str) -> str:
    """Where the paper's audit report is, with its verdict counts."""
    summary = RESULTS / "audit" / f"{paper}_summary.json"
    if not summary.is_file() and load_paper(paper).audit is None:
        return f"audit:   none (papers/{paper} has no audit.py)"
    if not summary.is_file():
        raise WorkspaceError(f"{summary} does not exist yet: run `dvc repro papers/{paper}`")
    verdicts = read_summary(summary, counts=True)
    return f"audit:   {RESULTS / 'audit' / (paper + '.md')}  (" + ", ".join(f"{v}: {n}" for v, n in verdicts.items()) + ")"


@dataclass(frozen=True, kw_only=True)
class Section:
    """One part of a paper's report, read from ``results/<paper>/<path>`` (``{profile}``) when it exists."""

    path: str
    title: str
    profile: str | None = None
    """The one profile it belongs to (``None``: both)."""


@dataclass(frozen=True, kw_only=True)
class Table(Section):
    """A results CSV as a fixed-width table, one line per row: the ``labels`` columns left, the ``columns`` right."""

    labels: tuple[str, ...] = ("label",)
    columns: tuple[str, ...] = ()
    """The numbers shown (``()``: every column of the header after the labels)."""
    where: tuple[str, tuple[str, ...]] | None = None
    """``(column, values)``: only the rows whose ``column`` holds one of ``values``."""
    numbers: bool = False
    """Check that ``columns`` hold a finite number in every row (not every table has one in every cell)."""


@dataclass(frozen=True, kw_only=True)
class Tally(Section):
    """A verdict column of a results CSV, counted: ``<title>: n/N <what> (<path>)``."""

    column: str
    value: str
    what: str


@dataclass(frozen=True, kw_only=True)
class Numbers(Section):
    """A results JSON object's numbers, one line each (``keys``; ``()``: all); ``grouped``: a heading per object."""

    keys: tuple[str, ...] = ()
    grouped: bool = False


@dataclass(frozen=True)
class PaperReport:
    """What ``python -m common report <paper>`` prints of a paper (``REPORT`` of ``papers/<paper>/report.py``)."""

    title: str
    """The paper's short name: the heading is ``<title>, <profile> profile``."""
    required: str
    """The file (a ``Section.path``) without which nothing of the profile has run yet."""
    sections: tuple[Section, ...]
    files: Mapping[str, str] = field(default_factory=dict)
    """What a file or folder (a ``Section.path``) holds, said beside it in the list of files."""


def _print_table(path: Path, table: Table) -> None:
    where = (table.where[0],) if table.where is not None else ()
    rows = read_table(path, (*table.labels, *table.columns, *where), numbers=table.columns if table.numbers else ())
    columns = table.columns or tuple(c for c in rows[0] if c not in table.labels)
    if table.where is not None:
        rows = [r for r in rows if r[table.where[0]] in table.where[1]]
    shown = (*table.labels, *columns)
    lines = [list(shown), *([r[c] for c in shown] for r in rows)]
    widths = [max(len(line[i]) for line in lines) + 2 for i in range(len(shown))]
    for line in lines:
        print("".join(f"{cell:<{width}s}" if i < len(table.labels) else f"{cell:>{width}s}"
                      for i, (cell, width) in enumerate(zip(line, widths))).rstrip())


def _print_numbers(path: Path, numbers: Numbers) -> None:
    data = read_summary(path, numbers=numbers.keys, objects=numbers.grouped)
    for group, values in (data.items() if numbers.grouped else [(None, data)]):
        indent = "  " if group is None else "    "
        if group is not None:
            print(f"  {group}")
        names = numbers.keys or tuple(values)
        width = max(map(len, names), default=0) + 2
        for name in names:
            print(f"{indent}{name:<{width}s}{values[name]}")


def print_report(paper: str, report: PaperReport, profile: str) -> None:
    """A paper's report of ``profile``: its sections whose files exist, then its files with what they hold."""
    def resolve(relative: str) -> Path:
        return RESULTS / paper / relative.format(profile=profile)

    required = resolve(report.required)
    if not required.is_file():
        raise WorkspaceError(f"{required} does not exist yet: run `dvc repro papers/{paper}`")
    note = " (mini world and tiny CLIPs: not the paper's numbers)" if profile == "mini" else ""
    print(f"{report.title}, {profile} profile{note}")
    for section in report.sections:
        path = resolve(section.path)
        if section.profile not in (None, profile) or not path.is_file():
            continue
        if isinstance(section, Tally):
            verdicts = [row[section.column] for row in read_table(path, (section.column,))]
            print(f"\n{section.title}: {verdicts.count(section.value)}/{len(verdicts)} {section.what} ({path})")
            continue
        print(f"\n{section.title} ({path})")
        if isinstance(section, Table):
            _print_table(path, section)
        elif isinstance(section, Numbers):
            _print_numbers(path, section)
    out_dir = resolve("{profile}")
    said = {resolve(relative): what for relative, what in report.files.items()}
    written = [p for p in out_dir.iterdir() if not p.name.startswith(".")] if out_dir.is_dir() else []
    inside = sorted({*written, *(p for p in said if p.parent == out_dir)})
    print(f"\nfiles in {out_dir}/:")
    for path in inside:
        name = path.name + ("/" if path.is_dir() or not path.suffix else "")
        print(f"  {name:<32s} {said.get(path, '')}{'' if path.exists() else ' (not written yet)'}".rstrip())
    for path, what in said.items():
        if path.parent != out_dir:
            print(f"{what + ':':<40s} {path}{'' if path.exists() else ' (not written yet)'}")


def run(paper: str) -> int:
    """``report <paper>``: its tables (its report plug-in, if any), its audit's line and the cross-paper one."""
    report = load_paper(paper).report
    if report is not None:
        # the profile its aggregate stage declares: the root pipeline's stage whose command is `python -m common
        # report <paper>` (the stage map), whether DVC runs it or a researcher does
        profile = stage_params(stage_running("common", ["report", paper], files=["dvc.yaml"]))["profile"]
        print_report(paper, report.load().REPORT, profile)
    print(audit_line(paper))
    print(cross_paper_line())
    return 0


CROSS_PAPER_COUNTS = ("pairs", "pairs_unexplained", "pairs_explained", "pairs_consistent", "released_checked",
                      "witness_checked")


def cross_paper_line() -> str:
    """Where the cross-paper comparison is, with its verdict counts (every paper's pipeline keeps it current)."""
    summary = RESULTS / "audit" / "cross_paper_summary.json"
    if not summary.is_file():
        return f"cross-paper: {summary} does not exist yet: run `dvc repro audit/cross_paper`"
    counts = read_summary(summary, counts=True, keys=CROSS_PAPER_COUNTS)
    return (f"cross-paper: {RESULTS / 'audit' / 'cross_paper.md'}  (paper pairs: {counts['pairs']}, unexplained: "
            f"{counts['pairs_unexplained']}, explained: {counts['pairs_explained']}, consistent: "
            f"{counts['pairs_consistent']}; released recomputations: {counts['released_checked']}; third witness: "
            f"{counts['witness_checked']})")


def metric_files(paper: str) -> list[str]:
    """The metrics files (or folders) of ``papers/<paper>/dvc.yaml``'s stages that exist, as DVC resolves them."""
    # deferred: loads dvc only when called
    from dvc.repo import Repo

    dvc_file = f"papers/{paper}/dvc.yaml"
    with Repo(str(ROOT)) as repo:
        paths = [str(out.def_path) for stage in repo.index.stages if stage.path_in_repo == dvc_file
                 for out in stage.metrics]
    return [p for p in dict.fromkeys(paths) if (ROOT / p).exists()]


def _metric_names(path: Path) -> tuple[str, ...]:
    """A metrics file's keys (a folder: the folder itself): what its table's columns will be."""
    if path.is_dir():
        return ("<folder>", str(path))
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ("<unreadable>", str(path))
    return tuple(sorted(data)) if isinstance(data, dict) else ("<not an object>", str(path))


def dvc_metrics_show(files: Sequence[str]) -> int:
    """``dvc metrics show`` of ``files``, shown as DVC prints it."""
    return run_dvc("metrics", "show", *files, capture=False).returncode


CROSS_PAPER_METRICS = "results/audit/cross_paper_summary.json"
"""The cross-paper comparison's metrics (root stage ``audit/cross_paper``), shown after the papers'."""


def _cmd_metrics(args: argparse.Namespace) -> int:
    status = 0
    for paper in args.paper:
        print(f"papers/{paper}")
        files = metric_files(paper)
        if not files:
            raise WorkspaceError(f"papers/{paper}: no metrics written yet: run `dvc repro papers/{paper}`")
        # one table per set of metric names: the union of unrelated files' would be mostly empty cells
        tables: dict[tuple[str, ...], list[str]] = {}
        for name in files:
            tables.setdefault(_metric_names(ROOT / name), []).append(name)
        for group in tables.values():
            status |= dvc_metrics_show(group)
    if (ROOT / CROSS_PAPER_METRICS).is_file():
        print("audit/cross_paper (every paper's pipeline keeps it current)")
        status |= dvc_metrics_show([CROSS_PAPER_METRICS])
    return status


def _report_command(paper: Paper) -> PlugInCommand:
    """``report <paper>``: its code is the report plug-in's, or this module's alone."""
    return PlugInCommand(paper.report.module if paper.report is not None else __name__, lambda args: run(paper.name))


def register_cli(subparsers) -> None:
    p = subparsers.add_parser("report", help="print a paper's reproduced tables and where its files are")
    papers = p.add_subparsers(dest="paper", required=True, metavar="PAPER")
    for paper in load_papers():
        papers.add_parser(paper.name, help=f"{paper.name}'s tables, files and audit").set_defaults(
            func=_report_command(paper))
    m = subparsers.add_parser("metrics", help="`dvc metrics show` over one paper's metrics (a short table per paper)")
    m.add_argument("paper", nargs="+", choices=plugins.paper_names())
    m.set_defaults(func=_cmd_metrics)

