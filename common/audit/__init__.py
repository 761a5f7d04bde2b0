"""The audit of published numbers against recomputed ones (see ``core`` for verdicts and tolerances).

Sources of recomputations, per paper:
* ``claims``: every numeric claim of the text whose ``recompute`` expression derives it from the
  paper's own tables;
* ``released_<paper>`` modules: numbers recomputed offline from the authors' released artifacts
  (per-example predictions, benchmark files), fetched through the checksum-verifying downloader;
* ``runs``: this workspace's pipeline results (full profile compared; mini profile never compared).
"""
from __future__ import annotations

import importlib
from pathlib import Path

from common.audit.core import AuditRow, Recomputed, audit_rows
from common.paths import RESULTS

RELEASED_MODULES = {
    "bivlc": "common.audit.released_bivlc",
    "sugarcrepe": "common.audit.released_sugarcrepe",
    "hard_positives": "common.audit.released_hard_positives",
}
"""Modules exposing ``recompute() -> list[Recomputed]`` from released artifacts."""


def released_module(paper: str):
    """The paper's released-artifact module, or None when the paper has none yet."""
    module_name = RELEASED_MODULES.get(paper)
    if module_name is None:
        return None
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise
        return None


def collect(paper: str, profile: str) -> list[Recomputed]:
    from common.audit import claims, runs

    recs = list(claims.recompute(paper))
    module = released_module(paper)
    if module is not None:
        recs += module.recompute()
    recs += runs.recompute(paper, profile)
    return recs


def run_audit(paper: str, profile: str | None = None, out_dir: Path | None = None) -> tuple[list[AuditRow], dict[str, Path]]:
    from common.audit.report import write_audit
    from common.params import load_params
    from common.published import load_cells, load_claims

    profile = profile or load_params()["profile"]
    out_dir = out_dir or RESULTS / "audit"
    rows = audit_rows(paper, load_cells(paper), load_claims(paper), collect(paper, profile))
    paths = write_audit(paper, rows, out_dir, profile)
    module = released_module(paper)
    if module is not None and hasattr(module, "draw_figures"):
        paths.update(module.draw_figures(out_dir))
    return rows, paths
