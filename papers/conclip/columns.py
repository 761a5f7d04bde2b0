"""CoN-CLIP's table columns and row pieces that both profiles build the same way, so the audit maps a mini and a full
run with one table of columns: a model's identity cells (which run, which loss terms, whose negatives), SugarCrepe's
seven categories with Table 6's three folds, and Table 6's row.

``papers.conclip.tables`` builds these rows from the scores it computes (its mini profile);
``papers.conclip.sugarcrepe_full`` from SugarCrepe's full set, ``papers.conclip.table6_full`` from the full-profile
CSVs of ``papers.conclip.tables``, ``papers.conclip.sugarcrepe_full`` and ``papers.conclip.zeroshot_full``.
A module of its own (no scoring, no mini world) so that the full profile's SugarCrepe and Table 6 stages do not depend
on the tables stage's code.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from papers.conclip.runs import RUNS

SUGARCREPE_CATEGORIES: tuple[str, ...] = ("replace_obj", "replace_att", "replace_rel", "add_obj", "add_att",
                                          "swap_obj", "swap_att")
"""In Tables 5, 13 and 14's column order."""
SUGARCREPE_FOLDS: dict[str, tuple[str, ...]] = {
    "replace": ("replace_obj", "replace_att", "replace_rel"), "add": ("add_obj", "add_att"),
    "swap": ("swap_obj", "swap_att")}
"""Table 6's SugarCrepe columns: each the plain mean of its categories (Table 6's rows are Table 14's so averaged,
e.g. L1's Replace 79.36 = mean(91.71, 80.58, 65.79))."""
MODEL_FIELDS = ("row", "model", "label", "run", "terms", "negatives")
SUGARCREPE_FIELDS = ("row", "model", "label", *SUGARCREPE_CATEGORIES, *(f"sugarcrepe_{f}" for f in SUGARCREPE_FOLDS))
TABLE6_FIELDS = (*MODEL_FIELDS, "sugarcrepe_replace", "sugarcrepe_add", "sugarcrepe_swap", "ccneg",
                 "classification_top1")
NOT_A_RUN = "N/A"
"""The run, terms and negatives of a model that is not one of ``RUNS`` (a pretrained or released model)."""


def pct(x: float) -> float:
    """A share as points, to the two decimals the paper prints."""
    return round(100.0 * x, 2)


def model_cells(row: str, model: str, label: str, run: str | None) -> dict:
    """A row's identity: its id (the audit's key), zoo name, label and, for a fine-tune, its run's loss terms and
    whose negated captions it trained on."""
    spec = RUNS[run] if run else None
    return {"row": row, "model": model, "label": label, "run": run or NOT_A_RUN,
            "terms": "+".join(spec.terms) if spec else NOT_A_RUN, "negatives": spec.negatives if spec else NOT_A_RUN}


def sugarcrepe_cells(accuracy_by_category: Mapping[str, float]) -> dict:
    """Each category's accuracy (a share) in points, then Table 6's folds: plain means of their categories' points."""
    cells = {c: pct(accuracy_by_category[c]) for c in SUGARCREPE_CATEGORIES}
    cells.update({f"sugarcrepe_{fold}": round(float(np.mean([cells[c] for c in cats])), 2)
                  for fold, cats in SUGARCREPE_FOLDS.items()})
    return cells


def table6_row(model: Mapping, sugarcrepe: Mapping, ccneg: float, classification_top1: float) -> dict:
    """Table 6's row of one run: its identity (``model_cells``), its SugarCrepe folds (``sugarcrepe_cells``), its
    CC-Neg accuracy and its mean standard-prompt top-1, all in points."""
    folds = {f"sugarcrepe_{fold}": sugarcrepe[f"sugarcrepe_{fold}"] for fold in SUGARCREPE_FOLDS}
    row = {**{k: model[k] for k in MODEL_FIELDS}, **folds, "ccneg": ccneg, "classification_top1": classification_top1}
    return {k: row[k] for k in TABLE6_FIELDS}
