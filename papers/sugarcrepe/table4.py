"""SugarCrepe's Table 4 on paired negatives: how fluent (or plausible) ARO+CREPE's and SugarCrepe's negatives are.

Each benchmark's mean score of its negatives, and the paper's "pairwise better ratio": how often SugarCrepe's
negative scores higher than ARO+CREPE's negative of the same positive. Shared by ``mini_blind`` and ``blind_real``.
"""
from __future__ import annotations

from operator import attrgetter
from typing import Callable, Hashable, Sequence

import numpy as np

from common.blind.crossfit import PairScores, TextPair
from common.files.tasks import DatasetError

FORMS = (("REPLACE", "replace", "replace_"), ("SWAP", "swap", "swap_"), ("NEGATE / ADD", "negate", "add_"))
"""Table 4's rows: the ARO+CREPE kind and the prefix of the SugarCrepe categories the paper compares it with
(NEGATE against ADD: both probe whether a concept is there, App. D.2)."""
FIELDS = ["type", "scorer", "aro_crepe_kind", "sugarcrepe_categories", "n_aro_crepe", "n_sugarcrepe",
          "mean_positive", "mean_aro_crepe", "mean_sugarcrepe", "n_pairs", "n_ties",
          "sugarcrepe_more_fluent_share", "comparison"]


by_image = attrgetter("group")
"""The mini world's positive: one per image."""
by_caption = attrgetter("group", "positive")
"""A real benchmark's positive: an image can have several captions."""


def paired_table4(pairs: Sequence[TextPair], scores: PairScores, aro_crepe: str, sugarcrepe: str,
                  positive_of: Callable[[TextPair], Hashable] = by_caption) -> list[dict]:
    """Mean score (x100) of each form's negatives, and how often SugarCrepe's negative outscores the ARO+CREPE
    negative of the same positive (every SugarCrepe negative of the form's categories; ties count half)."""
    rows = []
    for form, kind, prefix in FORMS:
        old = {positive_of(p): i for i, p in enumerate(pairs) if p.benchmark == aro_crepe and p.category == kind}
        new = [i for i, p in enumerate(pairs) if p.benchmark == sugarcrepe and p.category.startswith(prefix)]
        if not old or not new:
            raise DatasetError(f"Table 4, {form}: no {aro_crepe} {kind!r} or no {sugarcrepe} {prefix}* negatives")
        paired = [(i, old[positive_of(pairs[i])]) for i in new if positive_of(pairs[i]) in old]
        a = np.array([scores.negative[i] for i, _ in paired])
        b = np.array([scores.negative[j] for _, j in paired])
        positives = {positive_of(pairs[i]): scores.positive[i] for i in [*old.values(), *new]}
        rows.append({
            "type": form, "scorer": scores.scorer, "aro_crepe_kind": kind,
            "sugarcrepe_categories": "+".join(sorted({pairs[i].category for i in new})),
            "n_aro_crepe": len(old), "n_sugarcrepe": len(new),
            "mean_positive": round(100 * float(np.mean(list(positives.values()))), 2),
            "mean_aro_crepe": round(100 * float(np.mean(scores.negative[list(old.values())])), 2),
            "mean_sugarcrepe": round(100 * float(np.mean(scores.negative[new])), 2),
            "n_pairs": len(paired), "n_ties": int(np.sum(a == b)),
            "sugarcrepe_more_fluent_share": round(100 * float(np.mean((a > b) + 0.5 * (a == b))), 2) if paired else "",
            "comparison": "paired by positive (same image and caption), ties half",
        })
    return rows
