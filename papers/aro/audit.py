"""The audit of this paper: every published number against what was recomputed here.

So far only the text's claims, from the paper's own tables (``common.audit``); the paper's experiments come with
its issue. Stage ``audit`` of ``papers/aro/dvc.yaml``: ``python -m papers.aro.audit --strict``.
"""
from __future__ import annotations

from typing import Sequence

from common.audit import stage_main

DATA_FILES = ("results/published/aro.csv", "results/published/aro_claims.csv")
"""The published numbers this audit reads (``common.stage_deps``)."""


def main(argv: Sequence[str] | None = None) -> int:
    return stage_main("aro", argv)


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
