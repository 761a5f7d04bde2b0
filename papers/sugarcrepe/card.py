"""SugarCrepe on the report card (``python -m common card``): the 7 categories and their average as Table 6 scores
them, the recognition numbers of Figure 5 (mini profile; the full profile's ImageNet-1k needs a validation set no
stage prepares, so the card lists it as not on the card), and Figure 5's recognition trend (mini: the mini family's
points; full: the 200-checkpoint table's pre-trained checkpoints, a zoo model it lists taking its ImageNet-1k top-1).
"""
from __future__ import annotations

import csv

from common.benchmarks.caption_negatives import CATEGORIES, PreparedSet
from common.card.core import CardBenchmark, Measure, selection_measures
from common.card.published import PublishedColumns
from common.card.trend import Trend
from common.paths import RESULTS, build_root
from common.pipeline.params import read_params
from common.registry.errors import FetchError
from common.registry.fetch import quiet_fetch
from papers.sugarcrepe.audit import TABLE6_COLUMNS

STRICT_RULE = ("strict: the positive caption strictly above the negative, a tie is wrong (SugarCrepe's "
               'RAIVNLab/sugar-crepe@0047054b main_eval.py:54 "return 1 if pos_score.item() > neg_score.item() else 0"; '
               "papers/sugarcrepe/table6.py)")
RECOGNITION_X = "sugarcrepe/recognition/imagenet-analog"
IMAGENET_X = "sugarcrepe/recognition/imagenet-1k"


def _sugarcrepe(profile: str) -> CardBenchmark:
    manifest = build_root() / profile / "sugarcrepe" / "manifest.json"
    how = ("dvc repro papers/sugarcrepe/dvc.yaml:mini-set" if profile == "mini"
           else "dvc repro papers/sugarcrepe/dvc.yaml:full-set (python -m common prepare sugarcrepe)")

    def score(engine, items) -> list[Measure]:
        # deferred: loads PIL, torch, tqdm only when called
        from common.evaluation.scoring import selection

        result = selection.evaluate(engine, items, selection.STRICT)
        return selection_measures(result, "sugarcrepe", "SugarCrepe", STRICT_RULE, "papers/sugarcrepe/table6.py",
                                  groups=CATEGORIES)

    return CardBenchmark("sugarcrepe", "SugarCrepe (7 categories)", "sugarcrepe", (manifest,), how,
                         lambda: PreparedSet.load(manifest).items(), score)


def _recognition(profile: str) -> CardBenchmark:
    # deferred: loads PIL, tqdm only when called
    from common.miniworld.classification import (
        COLORED_SHAPES, SHAPES, ClassificationSetConfig, ensure_classification_set)

    set_dir = build_root() / "mini" / "classification"
    if profile != "mini":
        return CardBenchmark("recognition", "Zero-shot recognition (ImageNet-1k)", "sugarcrepe", (), "",
                             lambda: None, lambda engine, data: [],
                             not_on_card="no stage here prepares ImageNet-1k's validation set (Figure 5 reads "
                                         "open_clip's published top-1); the trend takes a listed zoo model's top-1 "
                                         "from the 200-checkpoint table")

    def load():
        """Figure 5's set, built or reused as ``figure5.run_mini`` does (it is a cache, not a stage's output: a fresh
        clone whose figure5 stage DVC skipped has none), from the same parameters."""
        params = read_params()
        world = params["mini"]["world"]
        config = ClassificationSetConfig(int(params["sugarcrepe"]["figure5"]["classification_images"]),
                                         int(world["image_size"]), int(world["seed"]))
        return ensure_classification_set(config, set_dir)[0]

    def score(engine, sets) -> list[Measure]:
        # deferred: loads PIL, torch, tqdm only when called
        from common.evaluation.scoring import classification

        out = []
        for name, label in ((COLORED_SHAPES, "ImageNet analog (56 colour-shape classes)"),
                            (SHAPES, "CIFAR analog (7 shapes)")):
            result = classification.evaluate(engine, sets[name])
            ids = tuple(f"{name}:{i}" for i in range(len(result.labels)))
            key = RECOGNITION_X if name == COLORED_SHAPES else f"sugarcrepe/recognition/{name}"
            out.append(Measure(key, "Recognition (mini)", label, "zero-shot top-1: the true class strictly above "
                               "every other, a tie is wrong (papers/sugarcrepe/figure5.py score_classification)",
                               ids, result.ranks < 1, source="papers/sugarcrepe/figure5.py"))
        return out

    return CardBenchmark("recognition", "Zero-shot recognition (mini analogs)", "sugarcrepe", (), "", load, score,
                         blind_applies=lambda m: "a text-only scorer has no image to classify")


def benchmarks(profile: str) -> list[CardBenchmark]:
    return [_sugarcrepe(profile), _recognition(profile)]


def trends(profile: str) -> list[Trend]:
    """Mini: Figure 5's points, y each category and the average. Full: the 200-checkpoint table's."""
    if profile != "mini":
        return _checkpoint_trend()
    path = RESULTS / "sugarcrepe" / "mini" / "figure5_points.csv"
    if not path.is_file():
        return []
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    points = {f"sugarcrepe/{c}": [(r["model"], float(r["imagenet_analog_top1"]), float(r[c])) for r in rows]
              for c in (*CATEGORIES, "average")}
    return [Trend(RECOGNITION_X, f"the mini family ({len(rows)} models: {path.relative_to(RESULTS.parent)})", points)]


def _checkpoint_trend() -> list[Trend]:
    """The vl_compo table's pre-trained checkpoints, fetched as the recognition stage fetches them."""
    # deferred: loads scipy only when called
    from papers.sugarcrepe import recognition

    try:
        zoo, _, _ = recognition.load_zoo_table()
        checkpoints = recognition.load_checkpoints(quiet_fetch(recognition.TABLE_KEY),
                                                   quiet_fetch(recognition.SUBSETS_KEY), zoo)
    except (FetchError, OSError) as exc:  # offline without the mirror: the card says why there is no trend
        return [Trend(IMAGENET_X, f"no trend: the vl_compo tables could not be fetched ({exc})", {})]
    pretrained = [c for c in checkpoints if not c.finetuned]
    imagenet = {c.name: c.value(recognition.TABLE_KEY, "imagenet") for c in checkpoints}
    subsets = recognition.SUBSETS_KEY
    points = {f"sugarcrepe/{cat}": [(c.zoo or c.name, imagenet[c.name], c.value(subsets, f"sugarcrepe::{cat}"))
                                    for c in pretrained] for cat in CATEGORIES}
    return [Trend(IMAGENET_X, f"{len(pretrained)} pre-trained checkpoints of the vl_compo table (Oh et al. 2024; x: "
                  "its ImageNet-1k top-1)", points, {c.zoo: imagenet[c.name] for c in checkpoints if c.zoo})]


def published():
    """Table 6's rows (every CLIP, the text-only and human rows), its columns as the audit maps them."""
    return [PublishedColumns("sugarcrepe", "Table 6", "SugarCrepe Table 6",
                             {f"sugarcrepe/{c}": column for c, column in TABLE6_COLUMNS.items()})]
