"""BiVLC on the report card: I2T, T2I and group accuracy on the unambiguous instances, as Table 2 scores them
(``tables_mini.py``: ``common.scoring.group``, strict '>' in every comparison, the authors' evaluate_BiVLC).

Blind baseline: I2T is computed (a text-only scorer picks the same caption for both images of an instance, so it
cannot win both: 0 by construction, shown as computed); T2I and group ask to rank images, which a text-only scorer
cannot do (no baseline). Mini profile only: the full profile's BiVLC (``tables_full.py``) is not on the card yet.
"""
from __future__ import annotations

import numpy as np

from common.card.core import CardBenchmark, Measure
from common.paths import build_root

RULE = "strict '>' in every comparison, a tie is wrong (BiVLC's evaluate_BiVLC; papers/bivlc/tables_mini.py)"
METRICS = {"I2T": "I2T", "T2I": "T2I", "group": "group"}


def measures(result) -> list[Measure]:
    ids = tuple(o.item_id for o in result.outcomes)
    ties = result.tie_counts()
    tied = {"I2T": ("Ipos2T", "Ineg2T"), "T2I": ("Tpos2I", "Tneg2I"), "group": tuple(ties)}
    return [Measure(f"bivlc/{m}", "BiVLC", label, RULE, ids,
                    np.array([o.decisions[m] for o in result.outcomes], float),
                    ties=sum(1 for o in result.outcomes if set(o.ties) & set(tied[m])),
                    source="papers/bivlc/tables_mini.py model_row")
            for m, label in METRICS.items()]


def _blind_applies(m: Measure) -> str | None:
    return None if m.key == "bivlc/I2T" else "a text-only scorer cannot rank images"


def benchmarks(profile: str) -> list[CardBenchmark]:
    if profile != "mini":
        return [CardBenchmark("bivlc", "BiVLC", "bivlc", (build_root() / "full" / "bivlc",), "dvc repro papers/bivlc",
                              lambda: None, lambda engine, data: [],
                              not_on_card="the full profile's BiVLC (tables_full.py) is not wired into the card yet")]
    test_dir = build_root() / "mini" / "bivlc" / "test"

    def load():
        from papers.bivlc.sets_mini import load_test_items

        return load_test_items(test_dir)[0]  # the unambiguous instances (Table 2's)

    def score(engine, items) -> list[Measure]:
        from common.scoring import group

        return measures(group.evaluate(engine, items))

    return [CardBenchmark("bivlc", "BiVLC (bidirectional)", "bivlc", (test_dir / "manifest.json",),
                          "dvc repro papers/bivlc/dvc.yaml:mini-test-set", load, score, blind_applies=_blind_applies)]
