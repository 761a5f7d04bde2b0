"""TROHN-Img's selection (papers/bivlc/selection.py): each step on hand-made cases, the pipeline's bookkeeping,
refinement's balance, determinism, the world's scorer analogs and the one-line errors."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest

from common.miniworld import lexicon
from common.miniworld.claims import sample_claim
from common.miniworld.negatives import EDIT_TYPES
from common.miniworld.scene import sample_scene
from papers.bivlc.selection import (
    CaptionPair, NgramGrammar, SelectionError, WorldPriorPlausibility, deduplicate, form_filter, quantile_filter,
    select_negatives, stated_combinations)


class TableScorer:
    """Scores from a dict (text -> score); texts not listed score ``default``."""

    def __init__(self, table: dict[str, float], default: float = 0.5, name: str = "table"):
        self.table, self.default, self.name = table, default, name

    def scores(self, texts):
        return np.array([self.table.get(t, self.default) for t in texts], dtype=float)


def linear_quantile(values, q):
    """numpy's default quantile written out: sort, then interpolate between ranks floor(h) and floor(h) + 1."""
    x = sorted(values)
    h = (len(x) - 1) * q
    lo = math.floor(h)
    return x[lo] if lo + 1 >= len(x) else x[lo] + (h - lo) * (x[lo + 1] - x[lo])


# ----------------------------------------------------------------------------------------------------------------
# Step 1: quantiles
# ----------------------------------------------------------------------------------------------------------------
def test_quantile_filter_ties_at_the_threshold_are_kept():
    # a: 3 * 0.645 = 1.935 -> between ranks 1 and 2, both 0.5: threshold 0.5, the two tied 0.5s kept (>=)
    # b: 0.2 + 0.935 * (0.4 - 0.2) = 0.387 -> only 0.4 and 1.0 pass
    cats = ["a", "a", "a", "a", "b", "b", "b", "b"]
    p = [0.1, 0.5, 0.5, 0.9, 0.0, 0.2, 0.4, 1.0]
    g = [1.0] * 8
    keep, thresholds = quantile_filter(cats, p, g, 0.645)
    assert keep.tolist() == [False, True, True, True, False, False, True, True]
    assert thresholds["a"] == pytest.approx((0.5, 1.0), abs=1e-12)
    assert thresholds["b"] == pytest.approx((0.387, 1.0), abs=1e-12)
    assert list(thresholds) == ["a", "b"]


def test_quantile_filter_needs_both_scorers():
    cats = ["a"] * 3
    keep, _ = quantile_filter(cats, [0.9, 0.8, 0.1], [0.1, 0.8, 0.9], 0.5)
    assert keep.tolist() == [False, True, False]  # thresholds 0.8 and 0.8: only the middle one passes both


def test_quantile_filter_against_brute_force():
    rng = np.random.default_rng(3)
    cats = [f"c{k}" for k in rng.integers(0, 3, 60)]
    p = np.round(rng.random(60), 1)  # many ties
    g = np.round(rng.random(60), 1)
    for q in (0.0, 0.3, 0.645, 1.0):
        keep, thresholds = quantile_filter(cats, p, g, q)
        for c in set(cats):
            ix = [i for i, k in enumerate(cats) if k == c]
            tp, tg = linear_quantile(p[ix], q), linear_quantile(g[ix], q)
            assert thresholds[c] == pytest.approx((tp, tg), abs=1e-12)
            assert [bool(keep[i]) for i in ix] == [bool(p[i] >= tp - 1e-12 and g[i] >= tg - 1e-12) for i in ix]


# ----------------------------------------------------------------------------------------------------------------
# Steps 2 and 3: form and duplicates
# ----------------------------------------------------------------------------------------------------------------
def test_form_filter_boundary_period_and_questions():
    texts = ["A big cat.", "A big cats.", "A cat sits on a mat", "Is a cat on the mat?", "", "A cat on a mat. "]
    assert [len(t) for t in texts[:2]] == [10, 11]
    assert form_filter(texts, 10).tolist() == [False, True, False, False, False, False]
    assert form_filter(["A big cat."], 9).tolist() == [True]


def test_deduplicate_keeps_the_first_ignoring_periods():
    texts = ["A b c.", "A c d.", "A b c.", "A. b c.", "a b c.", "A c d"]
    assert deduplicate(texts).tolist() == [True, True, False, False, True, False]


# ----------------------------------------------------------------------------------------------------------------
# The pipeline
# ----------------------------------------------------------------------------------------------------------------
def _pairs(rows):
    return [CaptionPair(f"p{i}", cat, pos, neg) for i, (cat, pos, neg) in enumerate(rows)]


def test_select_negatives_by_hand():
    """Category x: q = 0.5 over negatives (plausibility 0.25, 0.625 x 4 -> 0.625) drops p0; p1's negative has no
    period; p3 repeats p2's negative; refinement: p2 (gaps +0.25, +0.25) mirrors p4 (-0.25, -0.25): both kept.
    Category y: one pair, its own threshold, gaps (+0.5, +0.5) with no mirror: refined away."""
    pairs = _pairs([
        ("x", "P0 is a caption.", "N0 is a negative."),
        ("x", "P1 is a caption.", "N1 has no period"),
        ("x", "P2 is a caption.", "N2 is a negative."),
        ("x", "P3 is a caption.", "N2 is a negative."),
        ("x", "P4 is a caption.", "N4 is a negative."),
        ("y", "P5 is a caption.", "N5 is a negative."),
    ])
    plaus = TableScorer({"N0 is a negative.": 0.25, "N1 has no period": 0.625, "N2 is a negative.": 0.625,
                         "N4 is a negative.": 0.625, "N5 is a negative.": 0.125,
                         "P2 is a caption.": 0.875, "P3 is a caption.": 0.875, "P4 is a caption.": 0.375,
                         "P5 is a caption.": 0.625})
    gram = TableScorer({"P2 is a caption.": 0.75, "P3 is a caption.": 0.75, "P4 is a caption.": 0.25,
                        "P5 is a caption.": 1.0}, default=0.5)
    result = select_negatives(pairs, plaus, gram, quantile=0.5, seed=0)
    assert result.kept_ids == ("p2", "p4")
    assert result.counts["x"].__dict__ == dict(input=5, after_quantile=4, after_form=3, after_dedup=2,
                                               after_refinement=2)
    assert result.counts["y"].__dict__ == dict(input=1, after_quantile=1, after_form=1, after_dedup=1,
                                               after_refinement=0)
    assert result.total.after_refinement == 2 and result.total.input == 6
    assert result.thresholds["x"] == (0.625, 0.5)
    assert result.scores.plausibility_gap[2] == 0.25
    summary = result.describe()
    assert summary["total"]["after_dedup"] == 3
    assert summary["kept_gap_signs"]["plausibility"]["n_positive"] == 1
    assert summary["kept_gap_signs"]["plausibility"]["n_negative"] == 1


def _random_pairs(n, seed):
    rng = random.Random(seed)
    cats = ["replace_obj", "swap_att", "add_att"]
    return [CaptionPair(f"id{i}", rng.choice(cats), f"Positive caption number {i}.",
                        f"Negative caption number {rng.randrange(n)}." if rng.random() < 0.9 else f"Question {i}?")
            for i in range(n)]


class HashScorer:
    """A deterministic pseudo-random score per text, slightly favouring positives (so refinement has work)."""

    def __init__(self, salt: str):
        self.salt = salt

    def scores(self, texts):
        out = []
        for t in texts:
            u = random.Random(f"{self.salt}:{t}").random()
            out.append(min(1.0, u + 0.2) if t.startswith("Positive") else u)
        return np.array(out)


def test_refinement_balances_both_scorers_and_keeps_input_order():
    pairs = _random_pairs(600, 1)
    result = select_negatives(pairs, HashScorer("v"), HashScorer("c"), quantile=0.3, seed=5)
    kept = result.kept
    assert 0 < kept.size < result.refined.size
    for gap in (result.scores.plausibility_gap[kept], result.scores.grammar_gap[kept]):
        assert np.sum(gap > 0) == np.sum(gap < 0)
    before = result.scores.plausibility_gap[result.refined]
    assert np.sum(before > 0) > np.sum(before < 0)  # it was lopsided before
    order = {p.id: i for i, p in enumerate(pairs)}
    assert [order[k] for k in result.kept_ids] == sorted(order[k] for k in result.kept_ids)
    negatives = [pairs[i].negative for i in kept]
    assert len(set(negatives)) == len(negatives) and all(n.endswith(".") for n in negatives)


def test_seeded_determinism():
    pairs = _random_pairs(400, 2)
    run = lambda seed: select_negatives(pairs, HashScorer("v"), HashScorer("c"), quantile=0.2, bins=2,
                                          seed=seed).kept_ids
    assert run(7) == run(7)
    assert any(run(s) != run(7) for s in range(3))  # coarse cells: the seed picks who is kept


# ----------------------------------------------------------------------------------------------------------------
# Errors
# ----------------------------------------------------------------------------------------------------------------
def _one_line(excinfo):
    message = str(excinfo.value)
    assert "\n" not in message
    return message


def test_errors_are_one_line():
    pairs = _pairs([("a", "P0 is here.", "N0 is here."), ("a", "P1 is here.", "N1 is here.")])
    ok = TableScorer({})
    with pytest.raises(SelectionError) as e:
        select_negatives([], ok, ok)
    assert "no pairs" in _one_line(e)
    with pytest.raises(SelectionError) as e:
        select_negatives(pairs, TableScorer({"N1 is here.": 1.5}, name="vera"), ok)
    assert "'p1'" in _one_line(e) and "1.5" in str(e.value) and "vera" in str(e.value)
    with pytest.raises(SelectionError) as e:
        select_negatives(pairs, ok, TableScorer({"P0 is here.": float("nan")}))
    assert "positive of pair 'p0'" in _one_line(e)
    with pytest.raises(SelectionError) as e:
        select_negatives(pairs, ok, TableScorer({"P0 is here.": -0.01}))
    assert "grammar" in _one_line(e)
    with pytest.raises(SelectionError) as e:
        select_negatives(pairs + pairs[:1], ok, ok)
    assert "'p0' appears more than once" in _one_line(e)
    with pytest.raises(SelectionError) as e:
        select_negatives(pairs, ok, ok, quantile=1.5)
    _one_line(e)


# ----------------------------------------------------------------------------------------------------------------
# The world's scorers
# ----------------------------------------------------------------------------------------------------------------
def test_stated_combinations_parse_surface_forms():
    assert stated_combinations("A big violet rhombus is left of a plus sign.") == (
        ("size", "large", "diamond"), ("color", "purple", "diamond"))
    assert stated_combinations("There is a circle red and a little cross.") == (("size", "small", "cross"),)
    assert stated_combinations("A heart is over a square.") == ()


def test_world_prior_ranks_rare_below_common():
    common_colour, rare_colour = lexicon.TYPICAL_COLORS["circle"][0], "red"
    assert rare_colour not in lexicon.TYPICAL_COLORS["circle"]
    prior = lexicon.color_prior("circle")
    assert prior[common_colour] > prior[rare_colour]
    scorer = WorldPriorPlausibility()
    common, rare, mixed, bare = scorer.scores([f"A {common_colour} circle.", f"A {rare_colour} circle.",
                                               "A small red circle.", "A circle."])
    assert rare < common == 1.0
    assert rare == pytest.approx((0.4 / 6) / 0.3)  # (1 - 0.6) / 6 atypical colours, against 0.6 / 2
    assert mixed == pytest.approx(((0.3 / 0.7) + (0.4 / 6) / 0.3) / 2)  # circles are typically large
    assert bare == 1.0
    assert scorer.scores(["A red circle."]).tolist() == scorer.scores(["A red circle."]).tolist()


def _world_pairs(n, seed):
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        scene = sample_scene(rng, allow_heldout=False)
        claim = sample_claim(rng, scene)
        category = rng.choice(sorted(EDIT_TYPES))
        negative = EDIT_TYPES[category](scene, claim, rng)
        if negative is not None:
            out.append(CaptionPair(str(len(out)), category, claim.text(), negative.text()))
    return out


@pytest.fixture(scope="module")
def grammar():
    rng = random.Random(11)
    captions = [sample_claim(rng, sample_scene(rng, allow_heldout=False)).text() for _ in range(400)]
    return NgramGrammar.fit(captions), captions


def test_ngram_grammar_is_deterministic_and_prefers_fluent_text(grammar):
    model, captions = grammar
    again = NgramGrammar.fit(list(reversed(captions)))
    texts = ["A red circle is above a blue square.", "circle A above is red square a blue."]
    first, second = model.scores(texts), again.scores(texts)
    assert first.tolist() == second.tolist()
    assert 0 < first[1] < first[0] < 1
    assert model.center < 0
    z = (model.fluency.mean_logprob(texts[:1])[0] - model.center) / model.scale_bits
    assert first[0] == pytest.approx(1 / (1 + math.exp(-z)))
    with pytest.raises(SelectionError):
        NgramGrammar.fit(["A circle."] * 3)


def test_world_selection_end_to_end(grammar):
    pairs = _world_pairs(300, 4)
    result = select_negatives(pairs, WorldPriorPlausibility(), grammar[0], quantile=0.3, seed=0)
    assert 0 < len(result.kept_ids) <= result.total.after_dedup
    signs = result.describe()["kept_gap_signs"]
    for scorer in ("plausibility", "grammar"):
        assert signs[scorer]["n_positive"] == signs[scorer]["n_negative"]
    assert set(result.counts) == {p.category for p in pairs}
