"""ARO's numbers as per-example outcomes (``common.card.core.Measure``), as ``tables.py`` computes them: what the
report card scores and what ``tables.py``'s paired comparisons resample. VG: the macro number over the groups
``vg_rules`` keeps (VG-Relation: ``TABLE2_RULE``), resampled within each kept group; Order: one draw per seed of
``aro.seeds``, the number the mean over seeds (each seed's cases pooled, as every seed has the same count).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import numpy as np

from common.card.core import Measure
from papers.aro import vg_rules

VG_RULE = ("argmax([false, true]) == 1: a tie is wrong (ARO's evaluate_scores; papers/aro/tables.py), contrastive "
           "cosine at the engine's precision")
ORDER_RULE = "argmax == 0 over the caption and its 4 perturbations: a tie is correct (papers/aro/tables.py)"
SOURCE = "papers/aro/tables.py vg_table / order_table"


def vg_measures(result, kind: str) -> list[Measure]:
    """The macro number (per-relation accuracies averaged over the rule's kept groups) and, for relations, the
    micro number over the same groups."""
    groups = result.by_group()
    rule = vg_rules.TABLE2_RULE if kind == "relation" else vg_rules.ATTRIBUTION_RULE
    kept = set(vg_rules.macro(groups, rule).kept)
    chosen = [o for o in result.outcomes if o.group in kept]
    if not chosen:  # every group under the rule's minimum (a tiny set): the paper's macro is undefined too
        return []
    name = "VG-Relation" if kind == "relation" else "VG-Attribution"
    ids, correct = tuple(o.item_id for o in chosen), np.array([o.correct for o in chosen], float)
    ties = sum(o.tie for o in chosen)
    rule_text = f"{VG_RULE}; {rule.description}"
    out = [Measure(f"aro/vg_{kind}", "ARO", f"{name} (macro, {rule.name} rule)", rule_text, ids, correct,
                   strata=tuple(o.group for o in chosen), ties=ties, source=SOURCE)]
    if kind == "relation":
        out.append(Measure(f"aro/vg_{kind}_micro", "ARO", f"{name} (micro, same relations)", rule_text, ids, correct,
                           ties=ties, source=SOURCE))
    return out


ORDER_LABELS = {"coco": "COCO-Order", "flickr30k": "Flickr30k-Order"}


def order_measure(name: str, outcomes: Sequence, seeds: Sequence[int]) -> Measure:
    """One Order set's outcomes over every seed (ids made distinct per seed: ``seeded``), as one number."""
    label = ORDER_LABELS.get(name, f"{name}-Order")
    return Measure(f"aro/order_{name}", "ARO", f"{label} (mean over seeds {list(seeds)})", ORDER_RULE,
                   tuple(o.item_id for o in outcomes), np.array([o.correct for o in outcomes], float),
                   ties=sum(o.tie for o in outcomes), source=SOURCE)


def seeded(items, seed: int):
    """The seed's Order items (or outcomes) with the seed in their ids (the same caption is a case of every seed)."""
    return [replace(it, item_id=f"{it.item_id}@seed{seed}") for it in items]
