"""The audit of this paper: every published number against what was recomputed here.

Recomputed from the paper's own tables (claims, ``common.audit``) and, in ``released``, the REPLACE counts from the released benchmark.
No run of this paper's experiments exists yet. Stage ``audit`` of ``papers/hard_positives/dvc.yaml``:
``python -m papers.hard_positives.audit --strict``.
"""
from __future__ import annotations

from typing import Sequence

from common.audit import stage_main
from common.audit.core import Recomputed
from papers.hard_positives import released

DATA_FILES = ("results/published/hard_positives.csv", "results/published/hard_positives_claims.csv")
"""The published numbers this audit reads (``common.stage_deps``)."""


def recompute(profile: str) -> list[Recomputed]:
    """What the released artifacts give (the same in every profile)."""
    return released.recompute()


def main(argv: Sequence[str] | None = None) -> int:
    return stage_main(released.PAPER, argv, recompute)


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
