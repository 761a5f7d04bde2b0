"""Adversarial refinement: exact sign balance, the smaller cell kept whole, zero-gap rules, seeding, bad input."""
from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from common.blind.refine import RefineInputError, refine, refine_report
from common.errors import WorkspaceError


def reference_cell(g1: float, g2: float, bins: int) -> tuple[str, int, int, bool] | None:
    """Brute-force statement of the pairing: (pair family, bin a, bin b, on the positive side); None if both zero."""
    def b(g: float) -> int:
        return min(math.floor(abs(g) * bins), bins - 1)
    if g1 == 0 and g2 == 0:
        return None
    if g1 == 0:
        return ("g1=0", 0, b(g2), g2 > 0)
    if g2 == 0:
        return ("g2=0", b(g1), 0, g1 > 0)
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
@pytest.mark.parametrize("share_positive,bins", [(0.8, 50), (0.95, 10), (0.5, 3), (0.2, 1)])
def test_kept_set_is_balanced_for_both_scorers_and_matches_brute_force(seed, share_positive, bins):
    g1, g2 = skewed_gaps(seed, 600, share_positive)
    kept = refine(g1, g2, bins=bins, seed=seed)

    assert kept.dtype == np.int64 and np.all(np.diff(kept) > 0)
    assert np.sum(g1[kept] > 0) == np.sum(g1[kept] < 0)
    assert np.sum(g2[kept] > 0) == np.sum(g2[kept] < 0)
    report = refine_report(g1, g2, kept)
    assert report.gap1.n_positive == report.gap1.n_negative and report.gap2.n_positive == report.gap2.n_negative
    assert report.gap1.share_positive == report.gap1.share_negative
    assert report.n_in == 600 and report.n_kept == kept.size > 0

    # Per cell: the reference's pairing says each side keeps min(|G|, |G*|); both-zero examples are all kept.
    cells = [reference_cell(a, b, bins) for a, b in zip(g1, g2)]
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
    with pytest.raises(RefineInputError, match=r"kept\[1\] = 5"):
        refine_report([0.1, 0.2], [0.1, 0.2], [0, 5])
    with pytest.raises(RefineInputError, match="more than once"):
        refine_report([0.1, 0.2], [0.1, 0.2], [1, 1])
