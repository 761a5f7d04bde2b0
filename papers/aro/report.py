"""ARO's report: Table 6 (the four benchmarks and the downstream tasks) as reproduced, where every table is, and
the audit's verdicts.

What ``python -m common report aro`` prints, the root ``dvc.yaml``'s aggregate stage ``papers/aro`` (this
module is the report plug-in of its ``PAPER``).
"""
from __future__ import annotations

from common.errors import WorkspaceError
from common.paths import RESULTS
from common.report import read_table

PAPER = "aro"
TABLES = {
    "Table 2 (VG-Relation per relation)": "table2_vg_relation.csv",
    "VG-Attribution per attribute pair": "vg_attribution.csv",
    "Table 3 (text-shuffled retrieval)": "table3_text_shuffle.csv",
    "Table 4 (image-shuffled retrieval)": "table4_image_shuffle.csv",
    "Table 5 (Order)": "table5_order.csv",
    "Table 6 (CLIP vs CLIP-FT vs NegCLIP)": "table6.csv",
}


def report(profile: str) -> None:
    """Table 6 as reproduced in ``profile``, and where every table, figure and file is."""
    out_dir = RESULTS / PAPER / profile
    table = out_dir / "table6.csv"
    if not table.is_file():
        raise WorkspaceError(f"{table} does not exist yet: run `dvc repro papers/aro`")
    rows = read_table(table, ("task",))
    header = list(rows[0])
    print(f"ARO Table 6, {profile} profile" + (" (mini world and tiny CLIPs: not the paper's numbers)"
                                                if profile == "mini" else ""))
    width = max(len(r["task"]) for r in rows) + 2
    print(f"{'task':<{width}s}" + "".join(f"{h:>24s}" for h in header[1:]))
    for row in rows:
        print(f"{row['task']:<{width}s}" + "".join(f"{row[h]:>24s}" for h in header[1:]))
    for title, name in TABLES.items():
        print(f"{title + ':':<40s} {out_dir / name}")
    print(f"{'figures:':<40s} {out_dir / 'figure1.png'}, {out_dir / 'figure2_shuffled_retrieval.png'}")
    print(f"{'metrics:':<40s} {out_dir / 'metrics'}/  (make metrics PAPER=aro)")
    print(f"{'per-example predictions:':<40s} {out_dir / 'predictions'}")
    real_text = RESULTS / PAPER / "real_text"
    if real_text.is_dir():
        print(f"{'NegCLIP generator vs released:':<40s} {real_text}")
