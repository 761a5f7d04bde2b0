"""Adversarial refinement: exact sign balance, the smaller cell kept whole, zero-gap rules, seeding, bad input."""
from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from common.blind.refine import RefineInputError, refine, refine_report
from common.errors import WorkspaceError


def reference_cell(g1: float, g2: float, bins: int, axis_bins: int = 10) -> tuple[str, int, int, bool] | None:
    """Brute-force statement of the pairing: (pair family, bin a, bin b, on the positive side); None if both zero."""
    def b(g: float, n: int = bins) -> int:
        return min(math.floor(abs(g) * n), n - 1)
    if g1 == 0 and g2 == 0:
        return None
    if g1 == 0:
        return ("g1=0", 0, b(g2, axis_bins), g2 > 0)
    if g2 == 0:
        return ("g2=0", b(g1, axis_bins), 0, g1 > 0)
    return ("same" if (g1 > 0) == (g2 > 0) else "opposite", b(g1), b(g2), g1 > 0)


def skewed_gaps(seed: int, n: int, share_positive: float) -> tuple[np.ndarray, np.ndarray]:
    """Gaps leaning positive, rounded to 0.05 so exact zeros, cell edges and +-1 all occur."""
    rng = np.random.default_rng(seed)
    gaps = []
    for _ in range(2):
        magnitude = rng.beta(1.0, 2.0, n)
        sign = np.where(rng.random(n) < share_positive, 1.0, -1.0)
        gaps.append(np.clip(np.round(sign * magnitude * 20) / 20, -1.0, 1.0))
    return gaps[0], gaps[1]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("share_positive,bins,axis_bins", [(0.8, 50, 10), (0.95, 10, 10), (0.5, 3, 7), (0.2, 1, 1),
                                                           (0.8, 50, 50)])
def test_kept_set_is_balanced_for_both_scorers_and_matches_brute_force(seed, share_positive, bins, axis_bins):
    g1, g2 = skewed_gaps(seed, 600, share_positive)
    kept = refine(g1, g2, bins=bins, seed=seed, axis_bins=axis_bins)

    assert kept.dtype == np.int64 and np.all(np.diff(kept) > 0)
    assert np.sum(g1[kept] > 0) == np.sum(g1[kept] < 0)
    assert np.sum(g2[kept] > 0) == np.sum(g2[kept] < 0)
    report = refine_report(g1, g2, kept)
    assert report.gap1.n_positive == report.gap1.n_negative and report.gap2.n_positive == report.gap2.n_negative
    assert report.gap1.share_positive == report.gap1.share_negative
    assert report.n_in == 600 and report.n_kept == kept.size > 0

    # Per cell: the reference's pairing says each side keeps min(|G|, |G*|); both-zero examples are all kept.
    cells = [reference_cell(a, b, bins, axis_bins) for a, b in zip(g1, g2)]
    everything, kept_counts = Counter(cells), Counter(cells[i] for i in kept)
    for cell, size in everything.items():
        if cell is None:
            assert kept_counts[cell] == size
            continue
        mirror = (*cell[:3], not cell[3])
        assert kept_counts[cell] == min(size, everything[mirror]), cell


def test_hand_made_case_kept_set():
    bins = 2  # |g| bins [0, 0.5) and [0.5, 1]
    gaps = [
        (0.2, 0.3),    # 0: (+,+) cell (0, 0)
        (-0.1, -0.4),  # 1: (-,-) cell (0, 0): mirror of 0, both kept
        (0.0, 0.0),    # 2: both zero: kept
        (1.0, -0.6),   # 3: (+,-) cell (1, 1): |g1| == 1 joins the last bin
        (-0.5, 0.9),   # 4: (-,+) cell (1, 1): mirror of 3 (0.5 opens bin 1), both kept
        (0.0, 0.3),    # 5: on the g1 = 0 axis, no g2 < 0 partner: dropped
    ]
    g1, g2 = np.array(gaps).T
    assert refine(g1, g2, bins=bins).tolist() == [0, 1, 2, 3, 4]
    g1[4] = -0.49  # now cell (0, 1): 3 and 4 lose their mirrors
    assert refine(g1, g2, bins=bins).tolist() == [0, 1, 2]


def test_smaller_cell_kept_whole_and_larger_sampled():
    g1 = np.array([0.31] * 7 + [-0.315] * 3 + [0.9] * 4 + [-0.91] * 5)  # |g1| bins 15, 15, 45, 45
    g2 = np.array([0.41] * 7 + [-0.415] * 3 + [-0.71] * 4 + [0.715] * 5)  # |g2| bins 20, 20, 35, 35
    kept = refine(g1, g2, bins=50, seed=3)
    assert set(range(7, 10)) <= set(kept) and len(set(kept) & set(range(7))) == 3  # (-,-) whole, 3 of 7 (+,+)
    assert set(range(10, 14)) <= set(kept) and len(set(kept) & set(range(14, 19))) == 4  # (+,-) whole, 4 of 5


def test_zero_gap_rules():
    # g1 == 0: balanced on the bins of g2; g2 == 0: on the bins of g1; both zero: kept; bins differ: not paired.
    g1 = np.array([0.0, 0.0, 0.0, 0.0, 0.5, -0.55, 0.05, 0.0, 0.0, 0.0])
    g2 = np.array([0.2, 0.25, -0.21, -0.9, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    kept = set(refine(g1, g2, bins=10, seed=0).tolist())
    assert {7, 8, 9} <= kept                      # both zero
    assert 3 not in kept                          # g2 = -0.9 has no g2 > 0 partner in its bin
    assert 2 in kept and len(kept & {0, 1}) == 1  # one of the two g2 > 0 in bin 2 matches g2 = -0.21
    assert {4, 5} <= kept and 6 not in kept       # g1 = 0.5 / -0.55 share bin 5; 0.05 is alone in bin 0
    # an axis example never pairs with a quadrant one
    assert refine([0.0, 0.2], [0.3, -0.3]).tolist() == []


def test_seeded_and_seed_dependent():
    g1 = np.array([0.5] * 100 + [-0.5] * 10)
    g2 = np.array([0.5] * 100 + [-0.5] * 10)
    first = refine(g1, g2, seed=0)
    assert np.array_equal(first, refine(g1, g2, seed=0))
    assert not np.array_equal(first, refine(g1, g2, seed=1))
    assert first.size == 20 and set(range(100, 110)) <= set(first)


def test_no_choice_means_seed_irrelevant_and_empty_input():
    g1, g2 = [0.3, -0.3, 0.0], [0.3, -0.3, 0.0]
    assert refine(g1, g2, seed=0).tolist() == refine(g1, g2, seed=99).tolist() == [0, 1, 2]
    assert refine([], []).tolist() == []
    empty = refine_report([], [], [])
    assert empty.n_kept == 0 and math.isnan(empty.gap1.share_zero)


def test_report_shares():
    report = refine_report([0.5, -0.5, 0.0, 0.2], [0.1, 0.0, 0.0, -0.3], [0, 1, 2])
    assert (report.n_in, report.n_kept) == (4, 3)
    assert (report.gap1.n_positive, report.gap1.n_zero, report.gap1.n_negative) == (1, 1, 1)
    assert report.gap2.share_zero == pytest.approx(2 / 3) and report.gap2.share_negative == 0.0


@pytest.mark.parametrize("g1,g2,message", [
    ([0.1, 1.5, 0.2], [0.0, 0.0, 0.0], r"gap1\[1\] = 1\.5"),
    ([0.1, 0.2], [0.0, float("nan")], r"gap2\[1\] = nan"),
    ([0.1, -float("inf")], [0.0, 0.1], r"gap1\[1\] = -inf"),
    ([0.1, 0.2], [0.0], r"gap1 has 2 examples but gap2 has 1"),
    ([[0.1]], [[0.1]], r"1-D"),
])
def test_bad_gaps_raise_naming_the_index(g1, g2, message):
    with pytest.raises(RefineInputError, match=message) as caught:
        refine(g1, g2)
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, WorkspaceError)


def test_bad_bins_and_kept():
    with pytest.raises(RefineInputError, match="bins"):
        refine([0.1], [0.1], bins=0)
    with pytest.raises(RefineInputError, match="axis_bins"):
        refine([0.1], [0.1], axis_bins=0)
    with pytest.raises(RefineInputError, match=r"kept\[1\] = 5"):
        refine_report([0.1, 0.2], [0.1, 0.2], [0, 5])
    with pytest.raises(RefineInputError, match="more than once"):
        refine_report([0.1, 0.2], [0.1, 0.2], [1, 1])


# ------------------------------------------------------------------------------------------------------------------
# The authors' rule, transcribed from RAIVNLab/sugar-crepe@0047054b adversarial_refine.py:5-103
# "def adversarial_refine(model1_score_gap, model2_score_gap):" (BiVLC's copy, IMirandaM/BiVLC@84f0d175
# src/Training_data/TROHN_Img/adversarial_refine.py:34-132 "def adversarial_refine(model1_score_gap,
# model2_score_gap):", is the same function): 50 bins per half-axis on the plane (RAIVNLab/sugar-crepe@0047054b
# adversarial_refine.py:6 "n_grids = 50"), 10 on each zero-gap axis (RAIVNLab/sugar-crepe@0047054b
# adversarial_refine.py:65 "n_grids = 10"). Their ``np.random.choice`` is recorded as a pool (which examples, how many
# drawn) instead of drawn, so a seeded implementation can be compared with it exactly.
# ------------------------------------------------------------------------------------------------------------------
def authors_refine(model1_score_gap, model2_score_gap):
    """(examples the authors' code always keeps, [(pool, how many of it they keep at random)])."""
    n_grids = 50
    keep, pools = [], []

    def take(small, large):  # their "keep.extend(small); keep.extend(np.random.choice(large, len(small)))"
        keep.extend(small)
        if small:
            pools.append((frozenset(large), len(small)))

    score_to_idx = {}
    for i in range(1, n_grids + 1):
        for j in range(1, n_grids + 1):
            for key in ((i, j), (-i, -j), (i, -j), (-i, j)):
                score_to_idx[key] = []
    model1_zero_idx, model2_zero_idx = [], []
    for i, (model1_gap, model2_gap) in enumerate(zip(model1_score_gap, model2_score_gap)):
        if model1_gap == 0 and model2_gap == 0:
            keep.append(i)
            continue
        if model1_gap == 0:
            model1_zero_idx.append(i)
            continue
        if model2_gap == 0:
            model2_zero_idx.append(i)
            continue
        model1_id = int(abs(model1_gap) * n_grids) + 1
        model2_id = int(abs(model2_gap) * n_grids) + 1
        s1 = 1 if model1_gap > 0 else -1
        s2 = 1 if model2_gap > 0 else -1
        score_to_idx[(s1 * model1_id, s2 * model2_id)].append(i)
    for i in range(1, n_grids + 1):
        for j in range(1, n_grids + 1):
            for key, op in (((i, j), (-i, -j)), ((i, -j), (-i, j))):
                idx, op_idx = score_to_idx[key], score_to_idx[op]
                if len(idx) > 0 and len(op_idx) > 0:
                    take(op_idx, idx) if len(idx) > len(op_idx) else take(idx, op_idx)
    n_grids = 10
    for zero_idx, other_gap in ((model1_zero_idx, model2_score_gap), (model2_zero_idx, model1_score_gap)):
        if len(zero_idx) > 0:
            pos_score_to_idx, neg_score_to_idx = {i: [] for i in range(n_grids)}, {i: [] for i in range(n_grids)}
            for i in zero_idx:
                gap = other_gap[i]
                if gap > 0:
                    pos_score_to_idx[int(gap * n_grids)].append(i)
                else:
                    neg_score_to_idx[int(-gap * n_grids)].append(i)
            for i in range(n_grids):
                pos_idx, neg_idx = pos_score_to_idx[i], neg_score_to_idx[i]
                take(neg_idx, pos_idx) if len(pos_idx) > len(neg_idx) else take(pos_idx, neg_idx)
    return keep, pools


def gaps_with_zeros(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Gaps in (-1, 1) leaning positive on a bfloat16-like grid (multiples of 1/256: cell edges occur), about a third
    of them exactly zero for one scorer or both (the authors' code has no bin for a gap of exactly +-1)."""
    rng = np.random.default_rng(seed)
    gaps = []
    for _ in range(2):
        magnitude = np.minimum(np.round(rng.beta(1.0, 3.0, n) * 256), 255) / 256
        gaps.append(np.where(rng.random(n) < 0.7, 1.0, -1.0) * magnitude)
    zero = rng.random(n)
    gaps[0][zero < 0.2] = 0.0
    gaps[1][(zero > 0.15) & (zero < 0.35)] = 0.0
    return gaps[0], gaps[1]


@pytest.mark.parametrize("seed", range(8))
def test_kept_set_is_the_authors_on_gaps_with_many_zeros(seed):
    g1, g2 = gaps_with_zeros(seed, 3000)
    assert np.mean((g1 == 0) | (g2 == 0)) > 0.3
    always, pools = authors_refine(g1.tolist(), g2.tolist())
    kept = set(refine(g1, g2, seed=seed).tolist())
    assert len(kept) == len(always) + sum(k for _, k in pools)  # the kept count
    assert set(always) <= kept  # what they keep for sure, we keep
    drawn = kept - set(always)
    for pool, k in pools:  # and from each pool they draw from, as many as they draw
        assert len(drawn & pool) == k
    assert drawn <= set().union(*(pool for pool, _ in pools))


def test_zero_gap_axes_use_the_authors_ten_bins():
    """Hand-checked: on an axis |g| bins are tenths, on the plane fiftieths."""
    g1 = [0.0, 0.0, 0.15, -0.05, 0.31, -0.33, 0.0]
    g2 = [0.05, -0.09, 0.0, 0.0, 0.41, -0.41, 0.0]
    # 0, 1: g1 == 0, |g2| 0.05 and 0.09 both in [0, 0.1): paired, both kept (in fiftieths, bins 2 and 4: dropped);
    # 2, 3: g2 == 0, |g1| 0.15 in [0.1, 0.2), 0.05 in [0, 0.1): not paired;
    # 4, 5: plane, |g1| 0.31 -> bin 15, 0.33 -> bin 16: not paired (tenths would pair them); 6: both zero.
    assert refine(g1, g2).tolist() == [0, 1, 6]
    assert authors_refine(g1, g2) == ([6, 0], [(frozenset({1}), 1)])  # 6 and 0 for sure, 1 of {1} at random
    assert refine(g1, g2, axis_bins=50).tolist() == [6]  # the finer axis binning this module used before
