"""How much of the papers' published numbers the audit compares, generated into ``README.md`` and ``docs/audit.md``
from ``results/audit/`` so the front door never promises more than it checks (issue 48).
"""
from __future__ import annotations

import argparse
import json
import textwrap
from pathlib import Path
from typing import Mapping, Sequence

from common import plugins
from common.audit.core import VERDICTS
from common.paths import RESULTS, ROOT
from common.reporting.scorecard import check_block

DIFFERS, REPRODUCED, WAITING, MINI_ONLY = "differs", "reproduced", "not recomputed yet", "mini profile: not comparable"
assert set(VERDICTS) == {DIFFERS, REPRODUCED, WAITING, MINI_ONLY}, "common.audit.core.VERDICTS changed: update these"
BLOCKS = {"README.md": "audit-coverage", "docs/audit.md": "audit-coverage-table"}
"""Where each generated block lives (a path under the repository root) and its marker name."""


def counts(papers: Sequence[str] | None = None, results: Path = RESULTS) -> dict[str, dict[str, int]]:
    """Each paper's verdict counts, as its audit wrote them (every verdict present, 0 when absent)."""
    out = {}
    for paper in papers if papers is not None else plugins.paper_names():
        summary = json.loads((results / "audit" / f"{paper}_summary.json").read_text(encoding="utf-8"))
        out[paper] = {v: int(summary.get(v, 0)) for v in VERDICTS}
    return out


def overall(by_paper: Mapping[str, Mapping[str, int]]) -> dict[str, int]:
    """Each verdict's count summed over the papers (a verdict a paper's audit lacks counts 0)."""
    return {v: sum(p.get(v, 0) for p in by_paper.values()) for v in VERDICTS}


def _share(n: int, total: int) -> str:
    return f"{n:,} ({100 * n / total:.1f}%)" if total else "0"


def sentence(by_paper: dict[str, dict[str, int]]) -> str:
    """The front door's line: compared, waiting on the full profile, mini analog only, over every paper."""
    c = overall(by_paper)
    total = sum(c.values())
    text = (f"**What is audited:** of the {total:,} numbers the papers publish (table cells and numeric claims, "
            f"transcribed in `results/published/`), {_share(c[REPRODUCED] + c[DIFFERS], total)} are compared with a "
            f"number recomputed here: {c[REPRODUCED]:,} reproduced, {c[DIFFERS]:,} differ. "
            f"{_share(c[WAITING], total)} wait on the full profile (real data and checkpoints on a GPU; not run "
            f"here) and {_share(c[MINI_ONLY], total)} have only a mini-world analog, which is never compared with "
            f"the paper. Generated from `results/audit/` (`python -m common docs coverage`).")
    # filled to 117 columns (readable raw in a terminal), never breaking inside a code span
    kept = "`".join(part.replace(" ", "\0") if i % 2 else part for i, part in enumerate(text.split("`")))
    return textwrap.fill(kept, width=117, break_on_hyphens=False).replace("\0", " ") + "\n"


def table(by_paper: dict[str, dict[str, int]]) -> str:
    """One row per paper and a total: the published cells by what the audit could do with them."""
    rows = ["| paper | published numbers | compared | reproduced | differ | waiting on the full profile | "
            "mini analog only |", "|---|---:|---:|---:|---:|---:|---:|"]
    for name, c in [*by_paper.items(), ("all", overall(by_paper))]:
        total = sum(c.values())
        rows.append(f"| {name} | {total:,} | {_share(c[REPRODUCED] + c[DIFFERS], total)} | {c[REPRODUCED]:,} | "
                    f"{c[DIFFERS]:,} | {_share(c[WAITING], total)} | {_share(c[MINI_ONLY], total)} |")
    return "\n".join(rows) + "\n"


def check(root: Path = ROOT, results: Path = RESULTS, write: bool = False,
          papers: Sequence[str] | None = None) -> list[str]:
    """The documents whose coverage block disagrees with ``results`` (rewritten when ``write``)."""
    by_paper = counts(papers, results)
    generated = {"README.md": sentence(by_paper), "docs/audit.md": table(by_paper)}
    return [doc for doc, name in BLOCKS.items()
            if check_block(root / doc, name, generated[doc], write, "the audit's coverage")]


def _cmd(args: argparse.Namespace) -> int:
    wrong = check(write=args.write)
    print(sentence(counts()).strip())
    for doc in wrong:
        print(f"{'rewritten' if args.write else 'stale'}: {doc}'s coverage block"
              + ("" if args.write else " (python -m common docs coverage --write rewrites it)"))
    return 0 if args.write or not wrong else 1


def register_cli(docs_subparsers) -> None:
    p = docs_subparsers.add_parser("coverage", help="how many published numbers the audit compares (README's line)")
    p.add_argument("--write", action="store_true", help="rewrite the coverage blocks from results/audit/")
    p.set_defaults(func=_cmd)
