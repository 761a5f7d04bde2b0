"""The offline blind scorers (n-gram language model, pairwise text classifier) and cross-fitting by image."""
from __future__ import annotations

import random

import numpy as np
import pytest

from common.blind.classifier import PairwiseTextClassifier
from common.blind.crossfit import TextPair, coco_group, crossfit, fold_of
from common.blind.ngram import NgramFluency, tokenize

SHAPES = ["circle", "square", "triangle", "star", "heart", "cross"]
COLOURS = ["red", "blue", "green", "yellow", "purple", "orange"]


def captions(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [f"a {rng.choice(COLOURS)} {rng.choice(SHAPES)} left of a {rng.choice(COLOURS)} {rng.choice(SHAPES)}"
            for _ in range(n)]


def shuffled(text: str, seed: int) -> str:
    words = text.split()
    random.Random(seed).shuffle(words)
    return " ".join(words)


def test_tokenize_keeps_punctuation_and_lowercases():
    assert tokenize("A Red circle , next to it .") == ["a", "red", "circle", ",", "next", "to", "it", "."]


def test_ngram_prefers_fluent_word_order_and_is_length_normalised():
    lm = NgramFluency().fit(captions(400))
    fluent, scrambled = "a red circle left of a blue square", "circle of a left red a square blue"
    assert lm.mean_logprob([fluent])[0] > lm.mean_logprob([scrambled])[0]
    # a caption repeated twice has about the same per-token fluency: length alone is not penalised
    one, two = lm.mean_logprob([fluent, fluent + " and " + fluent])
    assert abs(one - two) < 1.5
    scores = lm.scores([fluent, scrambled])
    assert np.all((scores > 0) & (scores < 1)) and scores[0] > scores[1]


def test_ngram_unseen_words_get_a_finite_penalty():
    lm = NgramFluency().fit(captions(200))
    values = lm.mean_logprob(["a zebra left of a hexagon", "a red circle left of a blue square"])
    assert np.all(np.isfinite(values)) and values[0] < values[1]


def test_ngram_calibration_is_held_out_of_the_fit():
    texts = captions(500)
    lm = NgramFluency(calibration_size=50).fit(texts)
    # held-out positives are centred near 0.5; in-sample ones would all score well above it
    distinct = sorted(set(texts))
    held = lm.scores(random.Random(0).sample(distinct, 50))
    assert 0.3 < float(np.median(held)) < 0.7


def test_ngram_errors():
    with pytest.raises(RuntimeError):
        NgramFluency().mean_logprob(["a"])
    with pytest.raises(ValueError):
        NgramFluency().fit(["only one"])


def test_classifier_learns_a_negative_artifact_and_scores_in_unit_interval():
    pos = captions(300)
    neg = [p + " there is no star" for p in pos]  # NEGATE-style template artifact
    clf = PairwiseTextClassifier().fit(pos, neg)
    test = captions(50, seed=1)
    s_pos, s_neg = clf.scores(test), clf.scores([t + " there is no star" for t in test])
    assert np.all(s_pos > s_neg)
    assert np.all((s_pos > 0) & (s_pos < 1))


def test_classifier_is_symmetric_with_no_signal():
    pos = captions(200)
    clf = PairwiseTextClassifier().fit(pos, pos)  # identical pairs: nothing to learn
    assert np.allclose(clf.scores(pos), 0.5)


def test_coco_group_reads_both_releases():
    assert coco_group("000000467315.jpg") == coco_group("coco/val2014/COCO_val2014_000000467315.jpg") == "coco:467315"
    with pytest.raises(ValueError):
        coco_group("vg/3968.png")


def test_folds_are_stable_and_spread():
    folds = [fold_of(f"coco:{i}", 5, seed=0) for i in range(1000)]
    assert folds == [fold_of(f"coco:{i}", 5, seed=0) for i in range(1000)]
    assert set(folds) == set(range(5)) and min(folds.count(f) for f in range(5)) > 150
    assert folds != [fold_of(f"coco:{i}", 5, seed=1) for i in range(1000)]


def test_crossfit_never_scores_a_text_with_a_model_that_saw_its_group():
    pairs = [TextPair("b", "c", f"g{i % 40}", f"pos {i}", f"neg {i}", str(i)) for i in range(200)]
    seen_by_model: list[set[str]] = []

    class Recorder:
        name = "recorder"

        def __init__(self, train):
            self.groups = {p.group for p in train}
            seen_by_model.append(self.groups)

        def scores(self, texts):
            return np.full(len(texts), float(len(seen_by_model)))

    result = crossfit(pairs, Recorder, k=4, seed=0)
    assert len(seen_by_model) == 4 and not np.isnan(result.positive).any()
    for pair, model_index in zip(pairs, result.positive.astype(int) - 1):
        assert pair.group not in seen_by_model[model_index]
    assert not result.correct.any()  # equal scores: a tie is wrong
    with pytest.raises(ValueError):
        crossfit(pairs, Recorder, k=1)


def test_crossfit_blind_attack_end_to_end_beats_chance_only_with_an_artifact():
    pos, others = captions(400), captions(400, seed=9)
    with_artifact = [TextPair("b", "c", f"g{i}", p, shuffled(p, i), str(i)) for i, p in enumerate(pos)]
    # the negative is an equally fluent caption that no model fitted on (a positive of another group would be)
    no_artifact = [TextPair("b", "c", f"g{i}", p, others[i], str(i)) for i, p in enumerate(pos)]
    fit_lm = lambda train: NgramFluency().fit(p.positive for p in train)  # noqa: E731
    assert crossfit(with_artifact, fit_lm, k=5).correct.mean() > 0.9
    acc = crossfit(no_artifact, fit_lm, k=5).correct.mean()
    assert abs(acc - 0.5) < 0.1, acc
