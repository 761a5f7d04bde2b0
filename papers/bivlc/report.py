"""BiVLC's report (``python -m common report bivlc``, the root ``dvc.yaml``'s aggregate stage ``papers/bivlc``): the
bidirectional scores (Tables 2-3), the scores per type (Table 4) and the detectors (Table 5) as reproduced, as data
that ``common.reporting.report.print_report`` prints."""
from __future__ import annotations

from common.reporting.report import PaperReport, Table

REPORT = PaperReport(
    title="BiVLC",
    required="{profile}/table2.csv",
    sections=(
        Table(path="{profile}/table2.csv", title="SugarCrepe (micro average) and BiVLC, strict comparisons "
              "(Tables 2-3)", columns=("sugarcrepe", "I2T", "T2I", "group", "Tpos2I", "Tneg2I")),
        Table(path="{profile}/table4.csv", title="BiVLC by type (Table 4)",
              columns=("replace_group", "swap_group", "add_group")),
        Table(path="{profile}/table5.csv", title="Natural-vs-synthetic detectors (Table 5)",
              columns=("text_detection", "image_detection", "I2T", "T2I", "group", "sugarcrepe")),
    ),
)
