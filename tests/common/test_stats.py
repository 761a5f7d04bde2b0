"""Seeded intervals: known values, determinism, degenerate inputs, bad input."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from common.errors import WorkspaceError
from common.evaluation.stats import (
    Interval, StatsInputError, bootstrap_mean_ci, bootstrap_pearson_ci, fisher_pearson_ci, pearson_r)


def test_pearson_r_known_values():
    x = np.arange(10.0)
    assert pearson_r(x, 3 * x + 2) == pytest.approx(1.0)
    assert pearson_r(x, -x) == pytest.approx(-1.0)
    # hand-computed: x = 0.1..0.4, y = 10, 20, 30, 50: sxy = 6.5, sxx = 0.05, syy = 875
    assert pearson_r([0.1, 0.2, 0.3, 0.4], [10, 20, 30, 50]) == pytest.approx(6.5 / math.sqrt(0.05 * 875))


def test_pearson_r_constant_side_is_nan_without_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert math.isnan(pearson_r([1, 1, 1], [1, 2, 3]))
        assert math.isnan(pearson_r([1, 2, 3], [4, 4, 4]))


def test_fisher_ci_closed_form():
    # r = 0.5, n = 20: z = atanh(0.5) = 0.549306, half width 1.959964 / sqrt(17) = 0.4753611
    interval = fisher_pearson_ci(0.5, 20)
    assert interval.low == pytest.approx(math.tanh(0.5493061443 - 0.4753611), abs=1e-6)
    assert interval.high == pytest.approx(math.tanh(0.5493061443 + 0.4753611), abs=1e-6)
    assert interval.low == pytest.approx(0.0738, abs=1e-4) and interval.high == pytest.approx(0.7718, abs=1e-4)
    assert interval.n_resamples == 0 and interval.low <= 0.5 <= interval.high
    assert fisher_pearson_ci(0.5, 20, confidence=0.99).low < interval.low  # wider at higher confidence


def test_fisher_ci_degenerate():
    small = fisher_pearson_ci(0.9, 3)
    assert (small.low, small.high) == (-1.0, 1.0) and "undefined" in small.method
    perfect = fisher_pearson_ci(-1.0, 10)
    assert (perfect.low, perfect.high) == (-1.0, -1.0)
    assert math.isnan(fisher_pearson_ci(math.nan, 10).low)
    with pytest.raises(StatsInputError, match="r = 1.5"):
        fisher_pearson_ci(1.5, 10)


def test_bootstrap_mean_ci_seeded_and_sensible():
    correct = np.random.default_rng(7).random(300) < 0.7
    first = bootstrap_mean_ci(correct, seed=0)
    assert first == bootstrap_mean_ci(correct, seed=0)
    assert first != bootstrap_mean_ci(correct, seed=1)
    assert first.low < first.estimate < first.high and first.estimate == pytest.approx(correct.mean())
    # the normal approximation of a proportion's interval: within a few thousandths for n = 300
    half_width = 1.959964 * math.sqrt(first.estimate * (1 - first.estimate) / correct.size)
    assert first.high - first.low == pytest.approx(2 * half_width, abs=0.015)
    assert bootstrap_mean_ci(correct, confidence=0.5).high - bootstrap_mean_ci(correct, confidence=0.5).low \
        < first.high - first.low


def test_bootstrap_mean_ci_constant_sample_is_degenerate_without_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for sample in ([1, 1, 1, 1], [0.0], [0.3] * 7):
            interval = bootstrap_mean_ci(sample)
            assert interval.low == interval.estimate == interval.high == pytest.approx(sample[0])


def test_bootstrap_pearson_ci_seeded_and_contains_estimate():
    rng = np.random.default_rng(3)
    x = rng.normal(size=40)
    y = 0.6 * x + rng.normal(size=40)
    first = bootstrap_pearson_ci(x, y, seed=0)
    assert first == bootstrap_pearson_ci(x, y, seed=0) and first != bootstrap_pearson_ci(x, y, seed=5)
    assert first.low < first.estimate < first.high and first.estimate == pytest.approx(pearson_r(x, y))
    assert first.dropped == 0
    # agrees roughly with Fisher's closed form at this size
    fisher = fisher_pearson_ci(first.estimate, 40)
    assert first.low == pytest.approx(fisher.low, abs=0.1) and first.high == pytest.approx(fisher.high, abs=0.1)


def test_bootstrap_pearson_ci_drops_constant_resamples():
    # three points: a resample is constant when it draws one index thrice (3 of 27 draws)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        interval = bootstrap_pearson_ci([1, 2, 3], [1, 3, 2], n_resamples=2700, seed=0)
    assert 0 < interval.dropped < 2700
    assert interval.dropped / 2700 == pytest.approx(3 / 27, abs=0.03)
    assert -1.0 <= interval.low <= interval.estimate <= interval.high <= 1.0
    constant = bootstrap_pearson_ci([1, 2, 3], [5, 5, 5])
    assert math.isnan(constant.estimate) and math.isnan(constant.low) and math.isnan(constant.high)


@pytest.mark.parametrize("call,message", [
    (lambda: bootstrap_mean_ci([]), "values"),
    (lambda: bootstrap_mean_ci([0.1, float("nan")]), r"values\[1\] = nan"),
    (lambda: bootstrap_mean_ci([0, 1], confidence=1.0), "confidence"),
    (lambda: bootstrap_mean_ci([0, 1], n_resamples=0), "n_resamples"),
    (lambda: pearson_r([1, 2, 3], [1, 2]), "x has 3 values but y has 2"),
    (lambda: pearson_r([1], [1]), "at least 2"),
    (lambda: bootstrap_pearson_ci([1, 2], [1, float("inf")]), r"y\[1\] = inf"),
])
def test_bad_input(call, message):
    with pytest.raises(StatsInputError, match=message) as caught:
        call()
    assert isinstance(caught.value, WorkspaceError) and isinstance(caught.value, ValueError)


def test_interval_is_frozen():
    interval = Interval(0.5, 0.4, 0.6, 0.95, 10, "test")
    with pytest.raises(AttributeError):
        interval.low = 0.0  # type: ignore[misc]
