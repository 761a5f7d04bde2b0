"""Hard positives' report (``python -m common report hard_positives``): Tables 1 and 3 as reproduced and the
released REPLACE text's rule and blind numbers, as data that ``common.reporting.report.print_report`` prints."""
from __future__ import annotations

from common.reporting.report import Numbers, PaperReport, Table

COLUMNS = ("replace_orig", "replace_aug", "replace_brittleness", "swap_orig", "swap_aug", "swap_brittleness")

REPORT = PaperReport(
    title="Hard positives",
    required="{profile}/table1.csv",
    sections=(
        Table(path="{profile}/table1.csv", title="Table 1", columns=COLUMNS),
        Table(path="{profile}/table3.csv", title="Table 3 (hard negative loss weight)", columns=COLUMNS),
        Numbers(path="real_text/summary.json", title="Released REPLACE text (rule, blind)",
                keys=("rule_exact_match_pct", "rule_coverage_pct", "blind_lm_c_above_cn_pct",
                      "blind_lm_cp_above_cn_pct", "blind_lm_c_above_cp_pct", "blind_classifier_c_above_cn_pct",
                      "blind_classifier_cp_above_cn_pct", "blind_classifier_brittleness_pct")),
    ),
    files={"real_text": "released REPLACE text (rule, blind)"},
)
