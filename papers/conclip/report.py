"""CoN-CLIP's report (``python -m common report conclip``, the root ``dvc.yaml``'s aggregate stage
``papers/conclip``): CC-Neg accuracy (Tables 2-3), the loss ablations (Table 6) and the negated-prompt Delta
(Table 16) as reproduced, as data that ``common.reporting.report.print_report`` prints."""
from __future__ import annotations

from common.reporting.report import PaperReport, Table

REPORT = PaperReport(
    title="CoN-CLIP",
    required="{profile}/table3.csv",
    sections=(
        Table(path="{profile}/table3.csv", title="CC-Neg accuracy (Tables 2-3; ccneg: a tie counts as correct, as "
              "the authors' README snippet; strict: the paper's rule)", columns=("ccneg", "ccneg_strict", "ccneg_ties")),
        Table(path="{profile}/table6.csv", title="Loss ablations (Table 6)",
              columns=("sugarcrepe_replace", "sugarcrepe_add", "sugarcrepe_swap", "ccneg", "classification_top1")),
        Table(path="{profile}/classification.csv", title="Zero-shot top-1, standard and negated prompts (Tables 4, "
              "15, 16; delta = standard - negated)", columns=("classification_top1", "delta")),
    ),
)
