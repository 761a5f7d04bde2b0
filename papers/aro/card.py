"""ARO on the report card: VG-Relation (Table 2's macro rule, and the micro average over the same relations),
VG-Attribution (its macro rule), COCO-Order and Flickr30k-Order, as ``tables.py`` scores them.

* VG: the captions (false, true), ``argmax == 1`` (a tie is wrong: ``data.ARO_VG_RULE``); the relations and attribute
  pairs each rule keeps are ``vg_rules``' (VG-Relation: ``TABLE2_RULE``, the rule Table 2 and Table 6 apply).
* Order: the caption against its four word-order perturbations, ``argmax == 0`` (a tie is correct), one draw per seed
  of ``aro.seeds``; the number is the mean over seeds (each seed's cases pooled, as every seed has the same count).
* Every model is scored by its contrastive cosine. ARO scores BLIP and FLAVA by their ITM heads
  (``tables.ARO_PAIR_SCORES``): the card's numbers for those are the contrastive ones, labelled by the rule text.
* Precision (full profile): ARO's evaluator loads OpenAI's CLIPs with ``clip.load`` on CUDA, fp16 weights and scores
  (``tables.AUTHORS_PRECISION_WHY``), so the card scores OpenAI's weights at fp16, the numbers it compares, and at the
  engine's precision beside them (``common.card.core.clip_load_fp16``); every other model at the engine's.
"""
from __future__ import annotations

from common.card.core import CardBenchmark, Measure, clip_load_fp16
from common.params import load_params
from common.paths import build_root
from papers.aro.data import ARO_VG_RULE, AroSet
from papers.aro.measures import order_measure, seeded, vg_measures


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
            items = [it for seed in seeds for it in seeded(by_seed[seed], seed)]
            out.append(order_measure(name, image_to_text(engine, items, ARGMAX).outcomes, seeds))
        return out

    from papers.aro.tables import AUTHORS_PRECISION_WHY

    return [CardBenchmark("aro", "ARO (VG-Relation, VG-Attribution, Order)", "aro", (root / "manifest.json",), how,
                          load, score, authors_precision=clip_load_fp16(AUTHORS_PRECISION_WHY["fp16"]))]


def trends(profile: str) -> list:
    """No published trend to measure a model's residual against (``common.card.trend``)."""
    return []


def published() -> list:
    """None: ARO's transcribed tables (results/published/aro.csv) are not mapped onto the card's numbers yet."""
    return []
