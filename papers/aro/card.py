"""ARO on the report card: VG-Relation (Table 2's macro rule, and the micro average over the same relations),
VG-Attribution (its macro rule), COCO-Order and Flickr30k-Order, as ``tables.py`` scores them (the rules:
``papers.aro.measures``).

* Every model is scored by its contrastive cosine. ARO scores BLIP and FLAVA by their ITM heads
  (``tables.ARO_PAIR_SCORES``): the card's numbers for those are the contrastive ones, labelled by the rule text.
* Precision (full profile): ARO's evaluator loads OpenAI's CLIPs with ``clip.load`` on CUDA, fp16 weights and scores
  (``tables.AUTHORS_PRECISION_WHY``), so the card scores OpenAI's weights at fp16, the numbers it compares, and at the
  engine's precision beside them (``common.card.core.clip_load_fp16``); every other model at the engine's.
"""
from __future__ import annotations

from common.card.core import CardBenchmark, Measure, clip_load_fp16
from common.card.published import MODEL, PublishedCells
from common.card.trend import no_trends
from common.evaluation.scoring.selection import ARGMAX, image_to_text
from common.paths import build_root
from common.pipeline.params import read_params
from papers.aro.audit import TABLE6_ROWS
from papers.aro.data import ARO_VG_RULE, AroSet
from papers.aro.measures import order_measure, seeded, vg_measures
from papers.aro.tables import AUTHORS_PRECISION_WHY, text_variants

trends = no_trends


def benchmarks(profile: str) -> list[CardBenchmark]:
    root = build_root() / profile / "aro" / "benchmarks"
    how = f"dvc repro papers/aro/dvc.yaml:{'mini' if profile == 'mini' else 'full'}-set"
    seeds = [int(s) for s in read_params()["aro"]["seeds"]]

    def load():
        aro = AroSet.load(root)
        orders = {name: text_variants(dataset, seeds).order for name, dataset in aro.retrieval_sets().items()}
        return aro, orders

    def score(engine, data) -> list[Measure]:
        aro, orders = data
        out = vg_measures(image_to_text(engine, aro.vg_relation_items(), ARO_VG_RULE), "relation")
        out += vg_measures(image_to_text(engine, aro.vg_attribution_items(), ARO_VG_RULE), "attribution")
        for name, by_seed in orders.items():
            items = [it for seed in seeds for it in seeded(by_seed[seed], seed)]
            out.append(order_measure(name, image_to_text(engine, items, ARGMAX).outcomes, seeds))
        return out

    return [CardBenchmark("aro", "ARO (VG-Relation, VG-Attribution, Order)", "aro", (root / "manifest.json",), how,
                          load, score, authors_precision=clip_load_fp16(AUTHORS_PRECISION_WHY["fp16"]))]


def published() -> list:
    """ARO's tables put a model in each column (Tables 2 and 6) or in each row of a dataset's block (Table 5): the
    card reads them a row per model (Table 2's Accuracy row, Table 5's PRC rows, Table 6's benchmark rows)."""
    orders = {"aro/order_coco": "COCO-PRC", "aro/order_flickr30k": "Flickr30k-PRC"}
    table6 = {"aro/vg_relation": "VG-Relation", "aro/vg_attribution": "VG-Attribution", **orders}
    return [PublishedCells("aro", "Table 2", "ARO Table 2", {"aro/vg_relation": ("Accuracy", MODEL)}),
            PublishedCells("aro", "Table 5", "ARO Table 5",
                           {key: (f"{dataset} | {MODEL}", "Accuracy") for key, dataset in orders.items()}),
            PublishedCells("aro", "Table 6", "ARO Table 6",
                           {key: (TABLE6_ROWS[task], MODEL) for key, task in table6.items()})]
