"""The audit of published numbers against recomputed ones (docs/audit.md), from the claims' ``recompute``
expressions and the paper's audit plug-in (``papers/<paper>/audit.py``), whose ``main`` calls ``main`` or
``stage_main`` below.
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
"""Sub-folder of ``results/audit`` for a partial audit (pinned sources unreadable, no --strict), never tracked."""


class AuditIncomplete(WorkspaceError):
    """``--strict`` and a checksum-pinned released source could not be read: nothing was written."""

    exit_code = STRICT_EXIT

    def __init__(self, paper: str, rows: Sequence[AuditRow], pinned: Sequence[str]) -> None:
        super().__init__(f"audit {paper} incomplete (--strict): {len(pinned)} pinned source(s) unreadable; "
                         "nothing was written. Fetch them (VLC_MIRROR or internet) and rerun")
        self.paper, self.rows, self.pinned = paper, list(rows), list(pinned)


def standin(rec: Recomputed) -> bool:
    """Whether ``rec`` comes from a rehearsal's capped inputs: a run's, or a released file's with no pinned sha256."""
    return rec.profile == "full" or (rec.profile == "released" and not _pinned(rec.source))


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
    """Join ``paper``'s published and recomputed numbers and write the report (``strict``: ``AuditIncomplete`` when
    incomplete, else ``partial_dir``); ``comparable`` false: a capped run's."""
    # deferred: loads pydantic, yaml only when called
    from common.pipeline.params import read_params

    profile = profile or read_params()["profile"]
    out_dir = out_dir or RESULTS / "audit"
    recomputed = list(claims.recompute(paper)) + (recompute(profile) if recompute is not None else [])
    rows = audit_rows(paper, load_cells(paper), load_claims(paper), recomputed,
                      rehearsal=None if comparable else standin)
    _, pinned = unreadable_sources(rows)
    if pinned and strict:
        raise AuditIncomplete(paper, rows, pinned)
    return rows, write_audit(paper, rows, partial_dir(out_dir, bool(pinned)), profile, figures=figures)


def partial_dir(out_dir: Path, partial: bool) -> Path:
    """``out_dir``, or for a ``partial`` audit aimed at ``results/audit`` its git-ignored ``partial/``."""
    if not partial or Path(out_dir).resolve() != (RESULTS / "audit").resolve():
        return Path(out_dir)
    folder = Path(out_dir) / PARTIAL
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
    """Why ``source`` could not be read: a pinned entry's downloader message in full, else its cells' notes."""
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


def print_unreadable(rows: Sequence[AuditRow]) -> None:
    """Each released source that could not be read, with why (stderr)."""
    unavailable, pinned = unreadable_sources(rows)
    if not unavailable:
        return
    print(f"{len(unavailable)} released source(s) could not be read ({len(pinned)} of them checksum-pinned):",
          file=sys.stderr)
    for source in unavailable:
        reason = why_unreadable(source, rows, source in pinned)
        print(f"  {source}{' (pinned)' if source in pinned else ''}:", file=sys.stderr)
        for line in reason.splitlines():
            print(f"      {line}" if line.strip() else "", file=sys.stderr)


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
    """``main`` with the profile and input comparability (``full_inputs``) the paper's ``audit`` stage declares."""
    # deferred: loads pydantic, yaml only when called
    from common.pipeline.inputs import SECTION, full_inputs
    from common.pipeline.params import read_params, stage_params

    stage = audit_stage(paper)
    params = stage_params(stage)
    if SECTION not in params and not full_inputs(read_params()).comparable:
        raise WorkspaceError(f"params.yaml: {SECTION} says the full profile's inputs are not comparable with the "
                             f"paper's (a capped run) but stage {stage} does not "
                             f"declare {SECTION} among its params: it would audit their numbers as the paper's; add it")
    return main(paper, argv, recompute, figures, params["profile"], full_inputs(params).comparable)


def audit_stage(paper: str) -> str:
    """The DVC address of the stage of the paper's pipeline whose command is ``python -m common audit <paper>``."""
    # deferred: loads yaml only when called
    from common.pipeline.stage_map import stage_running

    return stage_running("common", ["audit", paper], files=[load_paper(paper).dvc_file])