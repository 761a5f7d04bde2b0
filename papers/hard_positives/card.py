"""Hard positives on the report card: REPLACE and SWAP's original accuracy, augmented accuracy and brittleness,
scored as ``evaluation.py`` scores Tables 1-3; REPLACE the unweighted mean of its two parts (Table 1's caption).
"""
from __future__ import annotations

import numpy as np

from common.card.core import CardBenchmark, Measure, clip_load_fp16
from common.card.published import PublishedColumns
from common.card.trend import no_trends
from common.evaluation.scoring.selection import TIE, negative_position, rescore
from common.paths import build_root
from papers.hard_positives import evaluation
from papers.hard_positives.sets_full import FullSet
from papers.hard_positives.sets_mini import load_test_items
from papers.hard_positives.tables import AUTHORS_PRECISION_WHY

RULE = ("strict comparisons; a tie is neither correct nor brittle (the authors' evaluator, "
        'amitakamath/hard_positives@33addaae run_eval.py:100 "if mod_scores[i][0][0] < mod_scores[i][0][1] and"; '
        "evaluation.py)")
METRICS = {"orig": "Orig. accuracy", "aug": "Aug. accuracy", "brittleness": "Brittleness"}
trends = no_trends


def measures(result) -> list[Measure]:
    """Every column's orig, aug and brittleness from one scored result."""
    orig = {o.item_id: o.correct for o in rescore(result, evaluation.ORIG).outcomes}
    out = []
    for column, groups in evaluation.COLUMNS.items():
        chosen = [o for o in result.outcomes if o.group in groups]
        if not chosen:
            continue
        ids = tuple(o.item_id for o in chosen)
        strata = tuple(o.group for o in chosen)
        codes = [negative_position(o.scores, (evaluation.ORIGINAL, evaluation.POSITIVE), evaluation.NEGATIVE)
                 for o in chosen]
        per_example = {"orig": [orig[o.item_id] for o in chosen], "aug": [o.correct for o in chosen],
                       "brittleness": [c in ("0", "1") for c in codes]}
        ties = sum(c == TIE for c in codes)
        for metric, label in METRICS.items():
            out.append(Measure(f"hard_positives/{column}_{metric}", "Hard positives", f"{column.upper()} {label}",
                               RULE, ids, np.array(per_example[metric], float), strata=strata, ties=ties,
                               source="papers/hard_positives/evaluation.py table_row"))
    return out


def benchmarks(profile: str) -> list[CardBenchmark]:
    """Mini: the rendered benchmark (``sets_mini``). Full: the prepared set (``sets_full.FullSet``), as the tables."""
    mini = profile == "mini"
    where = build_root() / "mini" / "hard_positives" / "test" if mini else build_root() / "full" / "hard_positives"
    how = f"dvc repro papers/hard_positives/dvc.yaml:{'mini-test-set' if mini else 'full-data'}"
    return [CardBenchmark("hard_positives", "Hard positives (REPLACE, SWAP)", "hard_positives", (where,), how,
                          lambda: load_test_items(where) if mini else FullSet.load(where).items(),
                          lambda engine, items: measures(evaluation.evaluate(engine, items)),
                          authors_precision=clip_load_fp16(AUTHORS_PRECISION_WHY["fp16"]))]


def published():
    """Table 1's rows (CLIP ViT-B/32, NegCLIP, the hard-negative fine-tunes and the authors' own)."""
    names = {"orig": "Orig. Test Acc.", "aug": "Aug. Test Acc.", "brittleness": "Brittleness"}
    return [PublishedColumns("hard_positives", "Table 1", "Hard positives Table 1",
                             {f"hard_positives/{c}_{m}": f"{c.upper()} | {name}"
                              for c in evaluation.COLUMNS for m, name in names.items()})]
