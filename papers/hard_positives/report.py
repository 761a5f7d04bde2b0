"""Hard positives' report: Tables 1 and 3 as reproduced in the profile, the released text's blind and rule numbers,
where every file is, and the audit's verdicts.

What ``python -m common report hard_positives`` prints, the root ``dvc.yaml``'s aggregate stage
``papers/hard_positives`` (this module is the report plug-in of its ``PAPER``).
"""
from __future__ import annotations

from pathlib import Path

from common.errors import WorkspaceError
from common.paths import RESULTS
from common.report import read_summary, read_table

PAPER = "hard_positives"
COLUMNS = ("replace_orig", "replace_aug", "replace_brittleness", "swap_orig", "swap_aug", "swap_brittleness")
REAL_TEXT = ("rule_exact_match_pct", "rule_coverage_pct", "blind_lm_c_above_cn_pct", "blind_lm_cp_above_cn_pct",
             "blind_lm_c_above_cp_pct", "blind_classifier_c_above_cn_pct", "blind_classifier_cp_above_cn_pct",
             "blind_classifier_brittleness_pct")


def print_table(title: str, path: Path) -> None:
    rows = read_table(path, ("label",))
    width = max(len(r["label"]) for r in rows) + 2
    print(title)
    print(f"{'model':<{width}s}" + "".join(f"{c:>21s}" for c in COLUMNS))
    for r in rows:
        print(f"{r['label']:<{width}s}" + "".join(f"{r.get(c, ''):>21s}" for c in COLUMNS))


def report(profile: str) -> None:
    """Tables 1 and 3 of ``profile``, the real-text summary, and where everything is."""
    out_dir = RESULTS / PAPER / profile
    table1 = out_dir / "table1.csv"
    if not table1.is_file():
        raise WorkspaceError(f"{table1} does not exist yet: run `dvc repro papers/{PAPER}`")
    note = " (mini world and tiny CLIPs: not the paper's numbers)" if profile == "mini" else ""
    print_table(f"Hard positives Table 1, {profile} profile{note}", table1)
    if (out_dir / "table3.csv").is_file():
        print()
        print_table("Table 3 (hard negative loss weight)", out_dir / "table3.csv")
    print()
    for name in ("table1.csv", "table2.csv", "table3.csv", "groups.csv", "summary.json"):
        if (out_dir / name).is_file():
            print(f"{name + ':':<40s} {out_dir / name}")
    real_text = RESULTS / PAPER / "real_text"
    summary = real_text / "summary.json"
    if summary.is_file():
        values = read_summary(summary)
        print(f"{'released REPLACE text (rule, blind):':<40s} {real_text}")
        print("  " + ", ".join(f"{k} {values[k]}" for k in REAL_TEXT if k in values))
