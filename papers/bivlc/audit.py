"""The audit of this paper: every published number against what was recomputed here.

Recomputed from the paper's own tables (claims, ``common.audit``) and, in ``released``, Tables 1-5 from the authors' released per-instance predictions and detector outputs.
No run of this paper's experiments exists yet. Stage ``audit`` of ``papers/bivlc/dvc.yaml``:
``python -m papers.bivlc.audit --strict``.
"""
from __future__ import annotations

from typing import Sequence

from common.audit import stage_main
from common.audit.core import Recomputed
from papers.bivlc import released

DATA_FILES = ("results/published/bivlc.csv", "results/published/bivlc_claims.csv")
"""The published numbers this audit reads (``common.stage_deps``)."""


def recompute(profile: str) -> list[Recomputed]:
    """What the released artifacts give (the same in every profile)."""
    return released.recompute()


def main(argv: Sequence[str] | None = None) -> int:
    return stage_main(released.PAPER, argv, recompute)


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
