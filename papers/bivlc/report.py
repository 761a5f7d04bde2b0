"""BiVLC's report: the bidirectional scores (Tables 2-3), the scores per type (Table 4) and the detectors (Table 5) as
reproduced in the profile, the cross-benchmark correlations, where every file is, and the audit's verdicts.

What ``python -m common report bivlc`` prints, the root ``dvc.yaml``'s aggregate stage ``papers/bivlc`` (this
module is the report plug-in of its ``PAPER``).
"""
from __future__ import annotations

from common.report import report_tables

PAPER = "bivlc"
TABLES: dict[str, tuple[str, tuple[str, ...]]] = {
    "table2.csv": ("SugarCrepe (micro average) and BiVLC, strict comparisons (Tables 2-3)",
                   ("sugarcrepe", "I2T", "T2I", "group", "Tpos2I", "Tneg2I")),
    "table4.csv": ("BiVLC by type (Table 4)", ("replace_group", "swap_group", "add_group")),
    "table5.csv": ("Natural-vs-synthetic detectors (Table 5)", ("text_detection", "image_detection", "I2T", "T2I",
                                                                 "group", "sugarcrepe")),
}
"""Printed tables: file -> (title, columns)."""


def report(profile: str) -> None:
    """The tables of ``profile`` that exist, and where everything is."""
    report_tables(PAPER, "BiVLC", profile, TABLES, "table2.csv")
