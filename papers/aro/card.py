"""ARO on the report card: VG-Relation (Table 2's macro rule, and the micro average over the same relations),
VG-Attribution (its macro rule), COCO-Order and Flickr30k-Order, as ``tables.py`` scores them.

* VG: the captions (false, true), ``argmax == 1`` (a tie is wrong: ``data.ARO_VG_RULE``); the relations and attribute
  pairs each rule keeps are ``vg_rules``' (VG-Relation: ``TABLE2_RULE``, the rule Table 2 and Table 6 apply).
* Order: the caption against its four word-order perturbations, ``argmax == 0`` (a tie is correct), one draw per seed
  of ``aro.seeds``; the number is the mean over seeds (each seed's cases pooled, as every seed has the same count).
* Every model is scored by its contrastive cosine. ARO scores BLIP and FLAVA by their ITM heads
  (``tables.ARO_PAIR_SCORES``) and OpenAI's CLIPs in fp16 in the full profile (``aro.full.authors_precision``): the
  card's numbers for those are the contrastive, engine-precision ones, labelled by the rule text.
"""
from __future__ import annotations

import numpy as np

from common.card.core import CardBenchmark, Measure
from common.params import load_params
from common.paths import build_root
from papers.aro import vg_rules
from papers.aro.data import ARO_VG_RULE, AroSet

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


def benchmarks(profile: str) -> list[CardBenchmark]:
    root = build_root() / profile / "aro" / "benchmarks"
    how = f"dvc repro papers/aro/dvc.yaml:{'mini' if profile == 'mini' else 'full'}-set"
    seeds = [int(s) for s in load_params()["aro"]["seeds"]]

    def load():
        from papers.aro.tables import text_variants

        aro = AroSet.load(root)
        orders = {name: text_variants(dataset, seeds).order for name, dataset in aro.retrieval_sets().items()}
        return aro, orders

    def score(engine, data) -> list[Measure]:
        from common.scoring.selection import ARGMAX, image_to_text

        aro, orders = data
        out = vg_measures(image_to_text(engine, aro.vg_relation_items(), ARO_VG_RULE), "relation")
        out += vg_measures(image_to_text(engine, aro.vg_attribution_items(), ARO_VG_RULE), "attribution")
        for name, by_seed in orders.items():
            items = [it for seed in seeds for it in _seeded(by_seed[seed], seed)]
            label = {"coco": "COCO-Order", "flickr30k": "Flickr30k-Order"}.get(name, f"{name}-Order")
            result = image_to_text(engine, items, ARGMAX)
            out.append(Measure(f"aro/order_{name}", "ARO", f"{label} (mean over seeds {seeds})", ORDER_RULE,
                               tuple(o.item_id for o in result.outcomes),
                               np.array([o.correct for o in result.outcomes], float), ties=result.ties,
                               source=SOURCE))
        return out

    return [CardBenchmark("aro", "ARO (VG-Relation, VG-Attribution, Order)", "aro", (root / "manifest.json",), how,
                          load, score)]


def _seeded(items, seed: int):
    """The seed's Order items with the seed in their ids (the same caption is a case of every seed)."""
    from dataclasses import replace

    return [replace(it, item_id=f"{it.item_id}@seed{seed}") for it in items]
