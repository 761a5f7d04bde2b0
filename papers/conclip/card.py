"""CC-Neg on the report card: overall accuracy, by K (the number of object pairs the caption's image holds) and by
negation word, as CoN-CLIP's tables score it (``argmax`` over [c, c'], a tie counts as correct, the authors' rule:
jaisidhsingh/CoN-CLIP@503388ac README.md:131 "preds = sim.argmax(dim=-1)"; ties are counted beside it). The grouping
by K and by word is not in the authors' release (``papers.conclip.ccneg``). Mini: the rendered benchmark; full: the
released evaluation split (a manual download: listed as missing when it is not in place).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from common.card.core import CardBenchmark, Measure, MissingInput, clip_load_fp16
from common.card.published import PublishedColumns
from common.card.trend import no_trends
from common.miniworld.negation import NEGATION_WORDS
from common.paths import build_root, data_root
from common.pipeline.params import read_params
from common.registry.errors import ManualDownloadRequired
from papers.conclip import ccneg
from papers.conclip.benchmark_mini import load_test_items

RULE = ("argmax over [c, c']: the caption at least as high as its negation, a tie counts as correct "
        "(CoN-CLIP's evaluation; papers/conclip/tables.py)")
SOURCE = "papers/conclip/tables.py: ccneg_row / word_k_rows"
AUTHORS_PRECISION = ("CoN-CLIP's README snippet loads CLIP with clip.load on a GPU, fp16 weights there "
                     '(openai/CLIP@d05afc43 clip/model.py:434 "convert_weights(model)"); it casts CoN-CLIP\'s '
                     "fine-tuned weights to fp32 first, which the card's checkpoint models are")
trends = no_trends


def measures(result, ks: Sequence[int | None], words: Sequence[frozenset[str]]) -> list[Measure]:
    """Overall (micro, Table 3's CC-Neg column), then per K and per negation word (Tables 7-12's splits, pooled)."""
    outcomes = result.outcomes

    def measure(key: str, metric: str, chosen: list[int]) -> Measure:
        picked = [outcomes[i] for i in chosen]
        return Measure(key, "CC-Neg", metric, RULE, tuple(o.item_id for o in picked),
                       np.array([o.correct for o in picked], float), ties=sum(o.tie for o in picked), source=SOURCE)

    out = [measure("conclip/ccneg", "overall", list(range(len(outcomes))))]
    for k in sorted({k for k in ks if k is not None}):
        out.append(measure(f"conclip/ccneg/k{k}", f"K = {k}", [i for i, ki in enumerate(ks) if ki == k]))
    for word in NEGATION_WORDS:
        chosen = [i for i, w in enumerate(words) if word in w]
        if chosen:
            out.append(measure(f"conclip/ccneg/word-{word}", f"word '{word}'", chosen))
    return out


def _score(engine, loaded) -> list[Measure]:
    # deferred: loads PIL, torch, tqdm only when called
    from common.evaluation.scoring import selection

    items, ks, words = loaded
    return measures(selection.evaluate(engine, items, selection.ARGMAX), ks, words)


def benchmarks(profile: str) -> list[CardBenchmark]:
    if profile == "mini":
        test_dir = build_root() / "mini" / "conclip" / "test"
        inputs, how = (test_dir / "manifest.json",), "dvc repro papers/conclip/dvc.yaml:mini-test-set"

        def load():
            items = load_test_items(test_dir)
            cells = [it.group.rsplit("/k", 1) for it in items]
            return items, [int(k) for _, k in cells], [frozenset([w]) for w, _ in cells]
    else:
        inputs = (data_root() / "ccneg",)
        how = ("python -m common fetch conclip/ccneg/ccneg_preprocessed.pt and conclip/ccneg/ccneg_images (manual "
               "downloads: the command prints the steps)")

        def load():
            try:
                pt_path, images = ccneg.default_paths()
            except ManualDownloadRequired as exc:
                raise MissingInput(str(exc).splitlines()[0]) from exc
            data = ccneg.load_ccneg(pt_path, images, ccneg.eval_size_for(read_params()))
            return data.items, [e.k for e in data.entries], [e.words for e in data.entries]

    return [CardBenchmark("ccneg", "CC-Neg (negated captions)", "conclip", inputs, how, load, _score,
                          authors_precision=clip_load_fp16(AUTHORS_PRECISION))]


def published():
    """CC-Neg accuracy of Table 2 (CLIP, NegCLIP, FLAVA, BLIP) and Table 3 (the CoN-CLIP fine-tunes)."""
    return [PublishedColumns("conclip", table, f"CoN-CLIP {table}", {"conclip/ccneg": "CC-Neg Accuracy"})
            for table in ("Table 2", "Table 3")]
