"""The audit of published numbers against recomputed ones (see ``core`` for verdicts and tolerances).

Sources of recomputations, per paper:

* ``claims``: every numeric claim of the text whose ``recompute`` expression derives it from the paper's own
  tables (done here, for every paper);
* the audit plug-in of the paper's ``PAPER`` (``papers/<paper>/audit.py``, ``common.paper.AuditPlugIn``):
  ``recompute(profile)`` returns what it recomputes from the authors' released artifacts (fetched through the
  checksum-verifying downloader) and from this workspace's runs (full profile compared; mini profile never
  compared), and may draw figures.

A paper's audit stage, ``python -m common audit <paper> --strict``, runs its plug-in's ``main``, which calls ``main``
below (or ``stage_main``) with its recomputers; the stage's code dependencies start at the plug-in, so they are
exactly what it imports.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable, Sequence

from common.audit import claims
from common.audit.core import AuditRow, Recomputed, VerdictCounts, audit_rows
from common.audit.report import write_audit
from common.errors import WorkspaceError
from common.files.io import write_text_atomic
from common.paper import load_paper
from common.paths import RESULTS
from common.registry.errors import FetchError, RegistryError
from common.reporting.published import load_cells, load_claims

Recompute = Callable[[str], list[Recomputed]]
"""profile -> recomputations (released artifacts and runs)."""
DrawFigures = Callable[[Path], dict[str, Path]]

STRICT_EXIT = 3
PARTIAL = "partial"
"""Sub-folder of ``results/audit`` where a deliberately partial audit (pinned sources unreadable, no --strict)
goes: never tracked (it holds a ``.gitignore`` of ``*``), never mistaken for the paper's audit."""


class AuditIncomplete(WorkspaceError):
    """``--strict`` and a checksum-pinned released source could not be read: nothing was written."""

    exit_code = STRICT_EXIT

    def __init__(self, paper: str, rows: Sequence[AuditRow], pinned: Sequence[str]) -> None:
        super().__init__(f"audit {paper} incomplete (--strict): {len(pinned)} pinned source(s) unreadable; "
                         "nothing was written. Fetch them (VLC_MIRROR or internet) and rerun")
        self.paper, self.rows, self.pinned = paper, list(rows), list(pinned)


def standin(rec: Recomputed) -> bool:
    """With full-profile inputs that are not comparable (``common.pipeline.inputs.FullInputs.comparable``: a capped run, such as
    a rehearsal's on stand-ins), whether ``rec`` comes from them: every run's number (profile ``full``), and a released
    file's whose sha256 the registry does not pin (a stand-in wrote it; a pinned file is the authors' own)."""
    if rec.profile == "full":
        return True
    return rec.profile == "released" and not _pinned(rec.source)


def _pinned(source: str) -> bool:
    # deferred: loads tomli only when called
    from common.registry.sources import get_source

    try:
        return get_source(source).sha256 is not None
    except RegistryError:  # a label for several files ("sugarcrepe/data/*.json"): they are pinned
        return True


def run_audit(paper: str, recompute: Recompute | None = None, figures: DrawFigures | None = None,
              profile: str | None = None, out_dir: Path | None = None,
              strict: bool = False, comparable: bool = True) -> tuple[list[AuditRow], dict[str, Path]]:
    """Join ``paper``'s published numbers with its recomputations; write the report into ``out_dir``.

    Whether the audit is complete is decided before anything is written: with ``strict``, an unreadable pinned
    released source raises ``AuditIncomplete`` and no file changes; without it, such a partial audit aimed at
    ``results/audit`` goes to ``results/audit/partial/`` instead (``partial_dir``), so the paper's audit there is
    never replaced by a degraded one. The files of one audit are replaced as a group (``write_audit``).
    ``comparable`` false (``params.yaml full_inputs.cap``: a capped run's): every recomputation from
    those inputs (``standin``) is marked ``rehearsal: not comparable``.
    """
    # deferred: loads pydantic, yaml only when called
    from common.pipeline.params import load_params

    profile = profile or load_params()["profile"]
    out_dir = out_dir or RESULTS / "audit"
    recomputed = list(claims.recompute(paper)) + (recompute(profile) if recompute is not None else [])
    rows = audit_rows(paper, load_cells(paper), load_claims(paper), recomputed,
                      rehearsal=None if comparable else standin)
    _, pinned = unreadable_sources(rows)
    if pinned and strict:
        raise AuditIncomplete(paper, rows, pinned)
    if pinned and Path(out_dir).resolve() == (RESULTS / "audit").resolve():
        out_dir = partial_dir(out_dir)
    return rows, write_audit(paper, rows, out_dir, profile, figures=figures)


def partial_dir(audit_dir: Path) -> Path:
    """``<audit_dir>/partial``, created with a ``.gitignore`` that keeps everything in it out of git."""
    folder = Path(audit_dir) / PARTIAL
    folder.mkdir(parents=True, exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.is_file():
        write_text_atomic(ignore, "*\n")
    return folder


def unreadable_sources(rows: Sequence[AuditRow]) -> tuple[list[str], list[str]]:
    """(every released source that could not be read, those of them whose sha256 is pinned in the registry)."""
    unavailable = sorted({r.source for r in rows if r.profile == "released" and r.recomputed is None})
    # A checksum-pinned source that could not be read makes the audit incomplete; a source with no pinned hash
    # (not mirrored, not verifiable here) stays "not recomputed yet" without failing.
    return unavailable, [s for s in unavailable if _pinned(s)]


def why_unreadable(source: str, rows: Sequence[AuditRow], pinned: bool) -> str:
    """Why ``source`` could not be read: for a pinned registry entry, the downloader's own message in full (the
    file, the expected sha256 and size, what was found, the remedy); otherwise what its cells' notes recorded."""
    # deferred: loads tomli only when called
    from common.registry.fetch import fetch
    from common.registry.sources import get_source

    if pinned:
        try:
            get_source(source)
        except RegistryError:
            pass  # a label for several files: the notes say which one failed
        else:
            try:
                fetch(source, progress=False)  # fails the same way (the cells keep only a shortened reason)
            except FetchError as exc:
                return f"{type(exc).__name__}: {exc}"
    notes = dict.fromkeys(r.note.removeprefix("not recomputed yet: ") for r in rows
                          if r.source == source and r.profile == "released" and r.recomputed is None)
    return "; ".join(n for n in notes if n) or "unreadable (no reason recorded)"


def print_unreadable(rows: Sequence[AuditRow], file=None) -> None:
    """Each released source that could not be read, with why (stderr)."""
    file = file or sys.stderr
    unavailable, pinned = unreadable_sources(rows)
    if not unavailable:
        return
    print(f"{len(unavailable)} released source(s) could not be read ({len(pinned)} of them checksum-pinned):",
          file=file)
    for source in unavailable:
        reason = why_unreadable(source, rows, source in pinned)
        print(f"  {source}{' (pinned)' if source in pinned else ''}:", file=file)
        for line in reason.splitlines():
            print(f"      {line}" if line.strip() else "", file=file)


def main(paper: str, argv: Sequence[str] | None = None, recompute: Recompute | None = None,
         figures: DrawFigures | None = None, profile: str | None = None, comparable: bool = True) -> int:
    """``audit <paper> [--strict]``: write the paper's audit and print where it is and what could not be read."""
    parser = argparse.ArgumentParser(prog=f"python -m common audit {paper}",
                                     description=f"{paper}: published vs recomputed numbers (results/audit/).")
    parser.add_argument("--strict", action="store_true",
                        help=f"exit {STRICT_EXIT}, writing nothing, when a pinned released source could not be "
                             "fetched (pipelines: never replace an audit by a partial one); without it such a "
                             f"partial audit goes to results/audit/{PARTIAL}/")
    args = parser.parse_args(argv)
    try:
        rows, paths = run_audit(paper, recompute, figures, profile, strict=args.strict, comparable=comparable)
    except AuditIncomplete as exc:
        print_unreadable(exc.rows)
        print(f"audit incomplete (--strict): {len(exc.pinned)} pinned source(s) unreadable; nothing was written "
              f"(the previous {RESULTS / 'audit' / paper}.* are unchanged). Fetch them (VLC_MIRROR or internet) "
              "and rerun", file=sys.stderr)
        return STRICT_EXIT
    counts = VerdictCounts.of(rows).counts
    print(f"audit {paper}: " + ", ".join(f"{v}: {n}" for v, n in counts.items()))
    for kind, path in paths.items():
        print(f"{kind}: {path}")
    print_unreadable(rows)
    if Path(paths["markdown"]).parent.name == PARTIAL:
        print(f"partial audit: pinned released sources unreadable, so it was written to "
              f"{Path(paths['markdown']).parent}/, not {RESULTS / 'audit'}/ (whose files are unchanged); "
              "fetch the sources and rerun for the real audit", file=sys.stderr)
    return 0


def stage_main(paper: str, argv: Sequence[str] | None = None, recompute: Recompute | None = None,
               figures: DrawFigures | None = None) -> int:
    """``main`` as the ``audit`` stage of ``papers/<paper>/dvc.yaml``, with the profile the stage declares and whether
    the full profile's inputs are comparable with the paper's (``full_inputs``, which the stage must declare once
    ``params.yaml`` says they are not: a capped run's numbers are never audited as the paper's)."""
    # deferred: loads pydantic, yaml only when called
    from common.pipeline.inputs import SECTION, full_inputs
    from common.pipeline.params import load_params, stage_params

    stage = audit_stage(paper)
    params = stage_params(stage)
    if SECTION not in params and not full_inputs(load_params()).comparable:
        raise WorkspaceError(f"params.yaml: {SECTION} says the full profile's inputs are not comparable with the "
                             f"paper's (a capped run) but stage {stage} does not "
                             f"declare {SECTION} among its params: it would audit their numbers as the paper's; add it")
    return main(paper, argv, recompute, figures, params["profile"], full_inputs(params).comparable)


def audit_stage(paper: str) -> str:
    """The DVC address of a paper's audit stage: the stage of the paper's pipeline whose command is ``python -m common
    audit <paper>`` (the stage map), whether DVC runs it or a researcher does."""
    # deferred: loads yaml only when called
    from common.pipeline.stage_map import stage_running

    return stage_running("common", ["audit", paper], files=[load_paper(paper).dvc_file])