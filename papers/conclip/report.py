"""CoN-CLIP's report: CC-Neg accuracy (Tables 2-3), the loss ablations (Table 6) and the negated-prompt Delta
(Table 16) as reproduced in the profile, where every file is, and the audit's verdicts.

The aggregate stage ``papers/conclip`` (root ``dvc.yaml``): ``python -m papers.conclip.report``; also what
``python -m common report conclip`` prints.
"""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Sequence

from common.errors import WorkspaceError
from common.paths import RESULTS

PAPER = "conclip"
TABLES: dict[str, tuple[str, tuple[str, ...]]] = {
    "table3.csv": ("CC-Neg accuracy (Tables 2-3; ccneg: a tie counts as correct, as the authors' code; strict: the "
                   "paper's rule)", ("ccneg", "ccneg_strict", "ccneg_ties")),
    "table6.csv": ("Loss ablations (Table 6)", ("sugarcrepe_replace", "sugarcrepe_add", "sugarcrepe_swap", "ccneg",
                                                "classification_top1")),
    "classification.csv": ("Zero-shot top-1, standard and negated prompts (Tables 4, 15, 16; delta = standard - "
                           "negated)", ("classification_top1", "delta")),
}
"""Printed tables: file -> (title, columns)."""


def _rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def print_table(title: str, path: Path, columns: Sequence[str]) -> None:
    rows = _rows(path)
    width = max((len(r.get("label") or r["row"]) for r in rows), default=5) + 2
    print(title)
    print(f"{'model':<{width}s}" + "".join(f"{c:>21s}" for c in columns))
    for r in rows:
        print(f"{(r.get('label') or r['row']):<{width}s}" + "".join(f"{r.get(c, ''):>21s}" for c in columns))


def report(profile: str) -> None:
    """The tables of ``profile`` that exist, and where everything is."""
    out_dir = RESULTS / PAPER / profile
    if not (out_dir / "table3.csv").is_file():
        raise WorkspaceError(f"{out_dir / 'table3.csv'} does not exist yet: run `dvc repro papers/{PAPER}`")
    note = " (mini world and tiny CLIPs: not the paper's numbers)" if profile == "mini" else ""
    print(f"CoN-CLIP, {profile} profile{note}\n")
    for name, (title, columns) in TABLES.items():
        if (out_dir / name).is_file():
            print_table(title, out_dir / name, columns)
            print()
    for path in sorted(out_dir.glob("*.csv")) + sorted(out_dir.glob("*.json")):
        print(f"{path.name + ':':<40s} {path}")


def main() -> int:
    from common.report import run

    return run(PAPER)


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
