"""The audit of published numbers against recomputed ones (see ``core`` for verdicts and tolerances).

Sources of recomputations, per paper:

* ``claims``: every numeric claim of the text whose ``recompute`` expression derives it from the paper's own
  tables (done here, for every paper);
* the paper's own ``papers/<paper>/audit.py`` (``common.plugins``): ``recompute(profile)`` returns what it
  recomputes from the authors' released artifacts (fetched through the checksum-verifying downloader) and from
  this workspace's runs (full profile compared; mini profile never compared), and may draw figures.

A paper's audit stage is its own ``audit.py`` calling ``main`` below with its recomputers, so the stage's code
dependencies are exactly what it imports; ``python -m common audit <paper>`` runs the same ``main``.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable, Sequence

from common.audit.core import AuditRow, Recomputed, VerdictCounts, audit_rows
from common.paths import RESULTS

Recompute = Callable[[str], list[Recomputed]]
"""profile -> recomputations (released artifacts and runs)."""
DrawFigures = Callable[[Path], dict[str, Path]]

STRICT_EXIT = 3


def collect(paper: str, profile: str, recompute: Recompute | None = None) -> list[Recomputed]:
    from common.audit import claims

    return list(claims.recompute(paper)) + (recompute(profile) if recompute is not None else [])


def run_audit(paper: str, recompute: Recompute | None = None, figures: DrawFigures | None = None,
              profile: str | None = None, out_dir: Path | None = None) -> tuple[list[AuditRow], dict[str, Path]]:
    """Join ``paper``'s published numbers with its recomputations; write the report into ``out_dir``."""
    from common.audit.report import write_audit
    from common.params import load_params
    from common.published import load_cells, load_claims

    profile = profile or load_params()["profile"]
    out_dir = out_dir or RESULTS / "audit"
    rows = audit_rows(paper, load_cells(paper), load_claims(paper), collect(paper, profile, recompute))
    paths = write_audit(paper, rows, out_dir, profile)
    if figures is not None:
        paths.update(figures(out_dir))
    return rows, paths


def unreadable_sources(rows: Sequence[AuditRow]) -> tuple[list[str], list[str]]:
    """(every released source that could not be read, those of them whose sha256 is pinned in the registry)."""
    from common.download import RegistryError, get_source

    def pinned(source: str) -> bool:
        try:
            return get_source(source).sha256 is not None
        except RegistryError:  # a label for several files ("sugarcrepe/data/*.json"): they are pinned
            return True

    unavailable = sorted({r.source for r in rows if r.profile == "released" and r.recomputed is None})
    # A checksum-pinned source that could not be read makes the audit incomplete; a source with no pinned hash
    # (not mirrored, not verifiable here) stays "not recomputed yet" without failing.
    return unavailable, [s for s in unavailable if pinned(s)]


def main(paper: str, argv: Sequence[str] | None = None, recompute: Recompute | None = None,
         figures: DrawFigures | None = None, profile: str | None = None) -> int:
    """``audit <paper> [--strict]``: write the paper's audit and print where it is and what could not be read."""
    parser = argparse.ArgumentParser(prog=f"python -m papers.{paper}.audit",
                                     description=f"{paper}: published vs recomputed numbers (results/audit/).")
    parser.add_argument("--strict", action="store_true",
                        help=f"exit {STRICT_EXIT} when a pinned released source could not be fetched "
                             "(pipelines: never cache a partial audit)")
    args = parser.parse_args(argv)
    rows, paths = run_audit(paper, recompute, figures, profile)
    counts = VerdictCounts.of(rows).counts
    print(f"audit {paper}: " + ", ".join(f"{v}: {n}" for v, n in counts.items()))
    for kind, path in paths.items():
        print(f"{kind}: {path}")
    unavailable, pinned = unreadable_sources(rows)
    if unavailable:
        print(f"{len(unavailable)} released source(s) could not be read (their cells say why):", file=sys.stderr)
        for source in unavailable:
            print(f"  {source}", file=sys.stderr)
        if args.strict and pinned:
            print(f"audit incomplete (--strict): {len(pinned)} pinned source(s) unreadable; fetch them "
                  "(VLC_MIRROR or internet) and rerun", file=sys.stderr)
            return STRICT_EXIT
    return 0


def stage_main(paper: str, argv: Sequence[str] | None = None, recompute: Recompute | None = None,
               figures: DrawFigures | None = None) -> int:
    """``main`` as the ``audit`` stage of ``papers/<paper>/dvc.yaml``, with the profile the stage declares."""
    from common.params import stage_params

    return main(paper, argv, recompute, figures, stage_params(audit_stage(paper))["profile"])


def audit_stage(paper: str) -> str:
    """The DVC address of a paper's audit stage."""
    return f"papers/{paper}/dvc.yaml:audit"
