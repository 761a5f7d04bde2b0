"""CC-Neg on the report card: overall accuracy, by K (the number of object pairs in the image) and by negation word,
as CoN-CLIP's tables score it (``tables_mini.py``: ``argmax`` over [c, c'], a tie counts as correct, the authors'
rule; ties are counted beside it).

Mini profile only: the full profile's CC-Neg (``tables_full.py``, the released benchmark) is not wired into the card
yet and is listed as such.
"""
from __future__ import annotations

import numpy as np

from common.card.core import CardBenchmark, Measure
from common.miniworld.negation import NEGATION_WORDS
from common.paths import build_root

RULE = ("argmax over [c, c']: the caption at least as high as its negation, a tie counts as correct "
        "(CoN-CLIP's evaluation; papers/conclip/tables_mini.py)")
SOURCE = "papers/conclip/tables_mini.py model_row / word_k_rows"


def measures(result) -> list[Measure]:
    """Overall (micro, as Table 6's CC-Neg column), then per K and per negation word (Tables 7-12's splits)."""
    outcomes = result.outcomes

    def measure(key: str, metric: str, chosen) -> Measure:
        return Measure(key, "CC-Neg", metric, RULE, tuple(o.item_id for o in chosen),
                       np.array([o.correct for o in chosen], float), ties=sum(o.tie for o in chosen), source=SOURCE)

    out = [measure("conclip/ccneg", "overall", outcomes)]
    ks = sorted({int(o.group.rsplit("/k", 1)[1]) for o in outcomes})
    out += [measure(f"conclip/ccneg/k{k}", f"K = {k}", [o for o in outcomes if o.group.endswith(f"/k{k}")])
            for k in ks]
    out += [measure(f"conclip/ccneg/word-{w}", f"word '{w}'", chosen) for w in NEGATION_WORDS
            if (chosen := [o for o in outcomes if o.group.rsplit("/k", 1)[0] == w])]
    return out


def benchmarks(profile: str) -> list[CardBenchmark]:
    if profile != "mini":
        return [CardBenchmark("ccneg", "CC-Neg", "conclip", (build_root() / "full" / "conclip",),
                              "dvc repro papers/conclip", lambda: None, lambda engine, data: [],
                              not_on_card="the full profile's CC-Neg (tables_full.py) is not wired into the card yet")]
    test_dir = build_root() / "mini" / "conclip" / "test"

    def load():
        from papers.conclip.benchmark_mini import load_test_items

        return load_test_items(test_dir)

    def score(engine, items) -> list[Measure]:
        from common.scoring import selection

        return measures(selection.evaluate(engine, items, selection.ARGMAX))

    return [CardBenchmark("ccneg", "CC-Neg (negated captions)", "conclip", (test_dir / "manifest.json",),
                          "dvc repro papers/conclip/dvc.yaml:mini-test-set", load, score)]
