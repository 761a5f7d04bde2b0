"""``python -m common report <paper>``: a paper's reproduced tables and where its audit is; ``python -m common metrics
<paper>``: its DVC metrics alone.

The last stage of every paper's pipeline (the aggregate ``papers/<paper>`` stage of the root ``dvc.yaml`` runs
``python -m common report <paper>``). A paper with tables of its own declares a report plug-in in its ``PAPER``
(``common.paper.ReportPlugIn``: ``report(profile)`` prints them); every paper's audit summary is printed here.

A report reads files a stage wrote, which may since have been cut short, merge-conflicted or hand-edited: it reads
them through ``read_table`` and ``read_summary``, which check what the report prints (columns, counts, numbers) and
refuse a damaged file with one line naming the file, the line and the column (``ReportInputError``).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Sequence

from common import plugins
from common.errors import WorkspaceError
from common.paper import Paper, PlugInCommand, load_paper, load_papers
from common.params import stage_params
from common.paths import RESULTS
from common.stage_map import stage_running

REMEDY = "rerun the stage that writes it (`dvc repro`) or restore it (`git checkout -- <file>`)"


class ReportInputError(WorkspaceError, ValueError):
    """A results file a report reads is damaged; the message names the file, the line and the column."""


def _remedy(path: Path) -> str:
    return REMEDY.replace("<file>", str(path))


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_number(value: object) -> bool:
    import math

    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def read_summary(path: Path, *, keys: Sequence[str] = (), numbers: Sequence[str] = (), counts: bool = False,
                 objects: bool = False) -> dict:
    """A JSON object a stage wrote (a summary, metrics), checked for what the report prints: ``keys`` present,
    ``numbers`` present and finite numbers, with ``counts`` every value a count, with ``objects`` every value an
    object. A truncated or hand-edited file is a ``ReportInputError`` (``DatasetError`` for bad JSON)."""
    from common.jsonl import read_json

    data = read_json(Path(path), dict, remedy=_remedy(path))
    for key in (*keys, *numbers):
        if key not in data:
            raise ReportInputError(f"{path}: no {key!r}; {_remedy(path)}")
    for key in numbers:
        if not _is_number(data[key]):
            raise ReportInputError(f"{path}: {key!r} is {data[key]!r:.40}, not a number; {_remedy(path)}")
    for key, value in data.items():
        if counts and not _is_count(value):
            raise ReportInputError(f"{path}: {key!r} is {value!r:.40}, not a count; {_remedy(path)}")
        if objects and not isinstance(value, dict):
            raise ReportInputError(f"{path}: {key!r} is a {type(value).__name__}, not an object of values; "
                                   f"{_remedy(path)}")
    return data


def read_table(path: Path, columns: Sequence[str] = (), *, numbers: Sequence[str] = (),
               any_of: Sequence[str] = ()) -> list[dict[str, str]]:
    """The rows of a results CSV as dicts, checked: UTF-8 without NUL bytes, its last line ended (a file cut short
    is not), a header holding ``columns`` (and one of ``any_of``), no row repeating the header, every row exactly as
    many fields as the header (a merge-conflict marker or a row cut short has fewer), at least one row, and the
    ``numbers`` columns finite numbers in every row. Errors name the file, the line and the column. The one reader of
    results tables: the report, the site and the documentation's numbers (``common.results_ref``) read through it."""
    import csv
    import io
    import math

    path = Path(path)
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ReportInputError(f"{path}: line {line}: not UTF-8 text (byte {data[exc.start]:#04x}); "
                               f"{_remedy(path)}") from None
    if "\0" in text:
        line = text[: text.index("\0")].count("\n") + 1
        raise ReportInputError(f"{path}: line {line}: a NUL byte (a damaged file); {_remedy(path)}")
    if text and not text.endswith("\n"):  # every writer ends its last line: this one was cut short
        raise ReportInputError(f"{path}: line {text.count(chr(10)) + 1}: ends mid-line (a table cut short?); "
                               f"{_remedy(path)}")
    reader = csv.reader(io.StringIO(text, newline=""))
    rows: list[dict[str, str]] = []
    try:
        header = next(reader, None)
        if not header:
            raise ReportInputError(f"{path}: empty (no header); {_remedy(path)}")
        missing = [repr(c) for c in columns if c not in header]
        if any_of and not any(c in header for c in any_of):
            missing.append(" or ".join(map(repr, any_of)))
        if missing:
            shown = ", ".join(header).encode("unicode_escape").decode("ascii")  # one line, whatever the header holds
            raise ReportInputError(f"{path}: line 1: no column {missing[0]} (the header: {shown:.200}); "
                                   f"{_remedy(path)}")
        for fields in reader:
            if not fields:
                continue  # a blank line, as csv.DictReader skips it
            if fields == header:
                raise ReportInputError(f"{path}: line {reader.line_num}: repeats the header (two tables run "
                                       f"together?); {_remedy(path)}")
            if len(fields) != len(header):
                raise ReportInputError(f"{path}: line {reader.line_num}: {len(fields)} field(s) where the header has "
                                       f"{len(header)} (a merge-conflict marker, or a row cut short?); "
                                       f"{_remedy(path)}")
            row = dict(zip(header, fields))
            for column in numbers:
                try:
                    ok = math.isfinite(float(row[column]))
                except ValueError:
                    ok = False
                if not ok:
                    raise ReportInputError(f"{path}: line {reader.line_num}: column {column!r}: {row[column]!r:.40} is "
                                           f"not a number; {_remedy(path)}")
            rows.append(row)
    except csv.Error as exc:
        raise ReportInputError(f"{path}: line {reader.line_num}: not CSV ({exc}); {_remedy(path)}") from None
    if not rows:
        raise ReportInputError(f"{path}: no rows (only a header); {_remedy(path)}")
    return rows


def audit_line(paper: str) -> str:
    """Where the paper's audit report is, with its verdict counts."""
    summary = RESULTS / "audit" / f"{paper}_summary.json"
    if not summary.is_file() and load_paper(paper).audit is None:
        return f"audit:   none (papers/{paper} has no audit.py)"
    if not summary.is_file():
        raise WorkspaceError(f"{summary} does not exist yet: run `dvc repro papers/{paper}`")
    verdicts = read_summary(summary, counts=True)
    return f"audit:   {RESULTS / 'audit' / (paper + '.md')}  (" + ", ".join(f"{v}: {n}" for v, n in verdicts.items()) + ")"


def print_csv_table(title: str, path: Path, columns: Sequence[str]) -> None:
    """A results CSV as a fixed-width table: one line per row (its ``label``, else its ``row``), the given columns."""
    rows = read_table(path, any_of=("label", "row"))
    width = max((len(r.get("label") or r.get("row", "")) for r in rows), default=5) + 2
    print(title)
    print(f"{'model':<{width}s}" + "".join(f"{c:>21s}" for c in columns))
    for r in rows:
        print(f"{(r.get('label') or r.get('row', '')):<{width}s}" + "".join(f"{r.get(c, ''):>21s}" for c in columns))


def report_tables(paper: str, title: str, profile: str, tables: dict[str, tuple[str, Sequence[str]]],
                  required: str) -> None:
    """A paper's report: its results CSVs of ``profile`` that exist (``tables``: file -> (title, columns)), then
    where every file of ``results/<paper>/<profile>/`` is. ``required``: the file without which nothing ran yet."""
    out_dir = RESULTS / paper / profile
    if not (out_dir / required).is_file():
        raise WorkspaceError(f"{out_dir / required} does not exist yet: run `dvc repro papers/{paper}`")
    note = " (mini world and tiny CLIPs: not the paper's numbers)" if profile == "mini" else ""
    print(f"{title}, {profile} profile{note}\n")
    for name, (table_title, columns) in tables.items():
        if (out_dir / name).is_file():
            print_csv_table(table_title, out_dir / name, columns)
            print()
    for path in sorted(out_dir.glob("*.csv")) + sorted(out_dir.glob("*.json")):
        print(f"{path.name + ':':<40s} {path}")


def run(paper: str) -> int:
    """``report <paper>``: its tables (its report plug-in, if any), its audit's line and the cross-paper one."""
    report = load_paper(paper).report
    if report is not None:
        # the profile its aggregate stage declares: the root pipeline's stage whose command is `python -m common
        # report <paper>` (the stage map), whether DVC runs it or a researcher does
        report.load().report(stage_params(stage_running("common", ["report", paper], files=["dvc.yaml"]))["profile"])
    print(audit_line(paper))
    print(cross_paper_line())
    return 0


CROSS_PAPER_COUNTS = ("pairs", "pairs_unexplained", "pairs_explained", "pairs_consistent", "released_checked",
                      "witness_checked")
"""What ``cross_paper_line`` prints of the cross-paper summary."""


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
    """The metrics files (or folders) of the stages in ``papers/<paper>/dvc.yaml`` that exist, as DVC resolves them
    under the current profile.

    A bare ``dvc metrics show`` puts every paper's metrics in one table whose columns are the union of all their
    names; one paper's alone are a table of a few columns (``make metrics PAPER=<paper>``).
    """
    from dvc.repo import Repo

    from common.paths import ROOT

    dvc_file = f"papers/{paper}/dvc.yaml"
    with Repo(str(ROOT)) as repo:
        paths = [str(out.def_path) for stage in repo.index.stages if stage.path_in_repo == dvc_file
                 for out in stage.metrics]
    return [p for p in dict.fromkeys(paths) if (ROOT / p).exists()]


def _metric_names(path: Path) -> tuple[str, ...]:
    """What a metrics file's columns will be: its keys (a folder of per-model files: the folder itself)."""
    if path.is_dir():
        return ("<folder>", str(path))
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ("<unreadable>", str(path))
    return tuple(sorted(data)) if isinstance(data, dict) else ("<not an object>", str(path))


def show_metrics(paper: str) -> int:
    """``dvc metrics show`` over one paper's metrics files, one table per set of metric names (files that share their
    names share a table; a table whose columns were the union of unrelated files would be mostly empty cells)."""
    from common.paths import ROOT

    files = metric_files(paper)
    if not files:
        raise WorkspaceError(f"papers/{paper}: no metrics written yet: run `dvc repro papers/{paper}`")
    tables: dict[tuple[str, ...], list[str]] = {}
    for name in files:
        tables.setdefault(_metric_names(ROOT / name), []).append(name)
    status = 0
    for group in tables.values():
        status |= dvc_metrics_show(group)
    return status


def dvc_metrics_show(files: Sequence[str]) -> int:
    """``dvc metrics show`` of ``files``, shown as DVC prints it."""
    from common.dvc_run import run_dvc

    return run_dvc("metrics", "show", *files, capture=False).returncode


CROSS_PAPER_METRICS = "results/audit/cross_paper_summary.json"
"""The cross-paper comparison's metrics (root stage ``audit/cross_paper``), shown after the papers'."""


def _cmd_metrics(args: argparse.Namespace) -> int:
    from common.paths import ROOT

    status = 0
    for paper in args.paper:
        print(f"papers/{paper}")
        status |= show_metrics(paper)
    if (ROOT / CROSS_PAPER_METRICS).is_file():
        print("audit/cross_paper (every paper's pipeline keeps it current)")
        status |= dvc_metrics_show([CROSS_PAPER_METRICS])
    return status


def _report_command(paper: Paper) -> PlugInCommand:
    """``report <paper>``: what the paper's aggregate stage runs; its code is the report plug-in's (which prints with
    this module's readers), or this module's alone."""
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

