"""BiVLC on the report card: I2T, T2I and group accuracy, as Table 2 scores them (``common.evaluation.scoring.group``,
strict '>' in every comparison, the authors' evaluate_BiVLC).

* Mini: the unambiguous instances of the rendered benchmark (``sets_mini``; Table 2's, ``tables.py --profile mini``).
* Full: the released test split (``tables.load_bivlc``: the snapshot's parquet files, every image written once to
  the content-named cache ``build/full/bivlc/images``), all of its ``params.yaml bivlc.full.n_instances`` (2,933 as
  released; a rehearsal's copy states its stand-in's).

Blind baseline: I2T is computed (a text-only scorer picks the same caption for both images of an instance, so it
cannot win both: 0 by construction, shown as computed); T2I and group ask to rank images, which a text-only scorer
cannot do (no baseline).
"""
from __future__ import annotations

import numpy as np

from common.card.core import CardBenchmark, Measure
from common.card.published import PublishedColumns
from common.card.trend import no_trends
from common.paths import build_root, data_root
from common.pipeline.params import read_params

RULE = "strict '>' in every comparison, a tie is wrong (BiVLC's evaluate_BiVLC; papers/bivlc/tables.py)"
METRICS = ("I2T", "T2I", "group")
trends = no_trends


def measures(result) -> list[Measure]:
    ids = tuple(o.item_id for o in result.outcomes)
    ties = result.tie_counts()
    tied = {"I2T": ("Ipos2T", "Ineg2T"), "T2I": ("Tpos2I", "Tneg2I"), "group": tuple(ties)}
    return [Measure(f"bivlc/{m}", "BiVLC", m, RULE, ids, np.array([o.decisions[m] for o in result.outcomes], float),
                    ties=sum(1 for o in result.outcomes if set(o.ties) & set(tied[m])),
                    source="papers/bivlc/tables.py table2_row")
            for m in METRICS]


def _score(engine, items) -> list[Measure]:
    # deferred: loads PIL, torch, tqdm only when called
    from common.evaluation.scoring import group

    return measures(group.evaluate(engine, items))


def benchmarks(profile: str) -> list[CardBenchmark]:
    if profile == "mini":
        test_dir = build_root() / "mini" / "bivlc" / "test"
        inputs, how = (test_dir / "manifest.json",), "dvc repro papers/bivlc/dvc.yaml:mini-test-set"

        def load():
            # deferred: loads PIL, tqdm only when called
            from papers.bivlc.sets_mini import load_test_items

            return load_test_items(test_dir)[0]  # the unambiguous instances (Table 2's)
    else:
        snapshot = data_root() / "bivlc" / "BiVLC"
        inputs, how = (snapshot,), "python -m common fetch bivlc/BiVLC (or make fetch with the full profile)"

        def load():
            # deferred: loads PIL, torch, tqdm only when called
            from papers.bivlc.tables import default_image_dir, load_bivlc

            expected = read_params()["bivlc"]["full"]["n_instances"]
            return list(load_bivlc(snapshot, default_image_dir(), expected).items)

    return [CardBenchmark("bivlc", "BiVLC (bidirectional)", "bivlc", inputs, how, load, _score,
                          blind_applies=lambda m: None if m.key == "bivlc/I2T" else
                          "a text-only scorer cannot rank images")]


def published():
    """Table 2's rows (the contrastive and generative models, human, random) on BiVLC."""
    return [PublishedColumns("bivlc", "Table 2", "BiVLC Table 2",
                             {f"bivlc/{m}": f"BiVLC | {m.capitalize() if m == 'group' else m}" for m in METRICS})]
