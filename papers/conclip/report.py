"""CoN-CLIP's report: CC-Neg accuracy (Tables 2-3), the loss ablations (Table 6) and the negated-prompt Delta
(Table 16) as reproduced in the profile, where every file is, and the audit's verdicts.

What ``python -m common report conclip`` prints, the root ``dvc.yaml``'s aggregate stage ``papers/conclip`` (this
module is the report plug-in of its ``PAPER``).
"""
from __future__ import annotations


from common.report import report_tables

PAPER = "conclip"
TABLES: dict[str, tuple[str, tuple[str, ...]]] = {
    "table3.csv": ("CC-Neg accuracy (Tables 2-3; ccneg: a tie counts as correct, as the authors' README snippet; "
                   "strict: the paper's rule)", ("ccneg", "ccneg_strict", "ccneg_ties")),
    "table6.csv": ("Loss ablations (Table 6)", ("sugarcrepe_replace", "sugarcrepe_add", "sugarcrepe_swap", "ccneg",
                                                "classification_top1")),
    "classification.csv": ("Zero-shot top-1, standard and negated prompts (Tables 4, 15, 16; delta = standard - "
                           "negated)", ("classification_top1", "delta")),
}
"""Printed tables: file -> (title, columns)."""


def report(profile: str) -> None:
    """The tables of ``profile`` that exist, and where everything is."""
    report_tables(PAPER, "CoN-CLIP", profile, TABLES, "table3.csv")
