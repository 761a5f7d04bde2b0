"""Every claim of every paper's scorecard can fail: fed results built from consistent per-example data on the paper's
side of its threshold, its verdict is "reproduced"; on the other side, "not reproduced".

Each claim names, in ``WORLDS``, the kind of per-example data its numbers are statistics of (two models' 0/1 outcomes
on the same examples, a hard-positive drop that can only be 0 or -1 per example, a correlation over models...). The
test makes such data with the effect the claim needs, computes every number the claim reads the way the stages do
(``common.card.core``'s paired bootstrap), writes them where the claim's references point, and judges. A claim that is
true by construction has no "other side" that consistent data can reach: it cannot be listed here, so it cannot be
in a scorecard. A claim with no entry fails the test.
"""
from __future__ import annotations

import csv
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from common.card.core import Measure, estimate, paired_difference
from common.paths import RESULTS, ROOT
from common.reporting import scorecard
from common.reporting.results_ref import SEPARATOR

N = 3000
"""Examples per simulated benchmark: enough that an effect of a few points has an interval that excludes 0."""


def _outcomes(rate: float, n: int = N, seed: int = 0) -> np.ndarray:
    """Exactly round(rate * n) ones, shuffled: the statistic is the rate itself, so a published effect used as the
    target lies at the interval's centre."""
    k = int(round(min(max(rate, 0.0), 1.0) * n))
    out = np.zeros(n)
    out[:k] = 1.0
    return np.random.default_rng(seed).permutation(out)


def _measure(values: np.ndarray, key: str = "m") -> Measure:
    return Measure(key, "simulated", "accuracy", "simulated", tuple(str(i) for i in range(len(values))), values)


@dataclass(frozen=True)
class Numbers:
    """What one evidence reads: its estimate (one value, or the two whose difference it is) and interval."""

    values: tuple[float, ...]
    low: float | None = None
    high: float | None = None


def paired_rates(effect: float) -> Numbers:
    """Two models' 0/1 outcomes on the same examples, the first ``effect`` points above the second."""
    base = 0.5 if abs(effect) < 40 else 0.35
    b = _outcomes(base, seed=1)
    a = b.copy()
    # move exactly |effect| points of examples: the pairs stay correlated, as two models on one benchmark are
    flip = np.flatnonzero(b == (0.0 if effect > 0 else 1.0))[:int(round(abs(effect) / 100 * N))]
    a[flip] = 1.0 - a[flip]
    d = paired_difference(_measure(a), _measure(b))
    return Numbers((d.value,), d.low, d.high)


def _drops(drop: float, seed: int, n: int = N) -> np.ndarray:
    """Per example Aug. minus Orig.: 0 or -1 (Aug. needs Orig.: a model right on Orig. can only lose the example when
    the hard positive is added), ``drop`` points on average."""
    orig = _outcomes(0.7, n, seed=seed)
    lost = np.flatnonzero(orig == 1.0)[:int(round(-drop / 100 * n))]
    aug = orig.copy()
    aug[lost] = 0.0
    return aug - orig


def drop_difference(effect: float) -> Numbers:
    """A fine-tune's hard-positive drop minus its base's, paired over examples; each drop consistent (never > 0)."""
    base = -15.0
    a, b = _drops(base + effect, 2), _drops(base, 3)
    d = paired_difference(_measure(a), _measure(b))
    return Numbers((d.value,), d.low, d.high)


def drop_mean(effect: float) -> Numbers:
    """One model's drop averaged over two benchmarks (REPLACE, SWAP), each resampled on its own; at the benchmarks'
    size (27,443 and 28,748 examples), where an equivalence within a point can be shown."""
    samples = []
    for seed in (4, 5):
        m = _measure(_drops(effect, seed, 27000))
        e = estimate(m)
        samples.append(e)
    value = float(np.mean([e.value for e in samples]))
    return Numbers((value,), float(np.mean([e.low for e in samples])), float(np.mean([e.high for e in samples])))


def rate(effect: float) -> Numbers:
    """One scorer's accuracy (percent) with its interval."""
    e = estimate(_measure(_outcomes(effect / 100)))
    return Numbers((e.value,), e.low, e.high)


def rate_minus_fixed(effect: float) -> Numbers:
    """A scorer's accuracy with its interval, minus another's fixed number (``interval_of = "first"``)."""
    other = 40.0
    e = estimate(_measure(_outcomes((other + effect) / 100)))
    return Numbers((e.value, other), e.low, e.high)


def two_points(effect: float) -> Numbers:
    """Two point estimates (gains), no interval: any pair is consistent."""
    return Numbers((10.0 + effect, 10.0))


def correlation(effect: float) -> Numbers:
    """Pearson r between two benchmarks' accuracies over models, bootstrap over examples: ``effect`` > 0 makes the
    models that are better on one better on the other."""
    models = 6
    first = np.linspace(0.4, 0.8, models)
    second = first if effect > 0 else first[::-1]
    a = np.stack([_outcomes(p, seed=10 + i) for i, p in enumerate(first)])
    b = np.stack([_outcomes(p, seed=20 + i) for i, p in enumerate(second)])
    r = float(np.corrcoef(a.mean(axis=1), b.mean(axis=1))[0, 1])
    rng = np.random.default_rng(0)
    rs = []
    for _ in range(400):
        ix = rng.integers(0, N, N)
        rs.append(np.corrcoef(a[:, ix].mean(axis=1), b[:, ix].mean(axis=1))[0, 1])
    low, high = np.percentile(rs, [2.5, 97.5])
    return Numbers((r,), float(low), float(high))


WORLDS: dict[str, Callable[[float], Numbers]] = {
    "aro/negclip-vg-relation": paired_rates,
    "aro/negclip-vg-attribution": paired_rates,
    "aro/negclip-order": paired_rates,
    "hard_positives/clip-drop": drop_mean,
    "hard_positives/hn-larger-drop-replace": drop_difference,
    "hard_positives/hn-larger-drop-swap": drop_difference,
    "hard_positives/hn-brittleness-replace": paired_rates,
    "hard_positives/hn-brittleness-swap": paired_rates,
    "hard_positives/hphn-brittleness-replace": paired_rates,
    "hard_positives/hphn-brittleness-swap": paired_rates,
    "conclip/conclip-ccneg": paired_rates,
    "conclip/conclip-sugarcrepe": paired_rates,
    "conclip/conclip-zeroshot": paired_rates,
    "bivlc/t2i-harder": paired_rates,
    "bivlc/trohn-img-group": paired_rates,
    "sugarcrepe/blind-beats-clip": rate_minus_fixed,
    "sugarcrepe/blind-chance-on-sugarcrepe": rate,
    "sugarcrepe/hard-negative-gains-overestimated": two_points,
    "sugarcrepe/imagenet-correlates": correlation,
}
"""Claim -> the per-example world its numbers come from (an effect in the claim's unit -> the numbers)."""

PAPERS = sorted(p.parent.name for p in (ROOT / "papers").glob("*/scorecard.toml"))
CASES = [(c, kind) for p in PAPERS for c in scorecard.load(p) for kind in c.evidence]


def _write(results: Path, ref: str, value: float) -> None:
    """Put ``value`` where ``ref`` reads it: a JSON key path, or a CSV row matching its filters."""
    parts = [p.strip().replace("\\|", "|") for p in ref.split(SEPARATOR)]
    path = results / parts[0]
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".json":
        data = json.loads(path.read_text()) if path.is_file() else {}
        node = data
        keys = parts[1].split(".")
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = value
        path.write_text(json.dumps(data))
        return
    filters = dict(p.split("=", 1) for p in parts[1:-1])
    rows = list(csv.DictReader(path.open())) if path.is_file() else []
    row = next((r for r in rows if all(r.get(k) == v for k, v in filters.items())), None)
    if row is None:
        row = dict(filters)
        rows.append(row)
    row[parts[-1]] = repr(value)
    columns = list(dict.fromkeys(k for r in rows for k in r))
    with path.open("w", newline="") as handle:
        w = csv.DictWriter(handle, columns)
        w.writeheader()
        w.writerows(rows)


def _results(tmp_path: Path, claim: scorecard.Claim, kind: str, effect: float) -> Path:
    results = tmp_path / "results"
    shutil.rmtree(results, ignore_errors=True)
    shutil.copytree(RESULTS / "published", results / "published")
    e = claim.evidence[kind]
    numbers = WORLDS[f"{claim.paper}/{claim.id}"](effect)
    for ref, value in zip(e.estimate, numbers.values):
        if not ref.startswith("published/"):
            _write(results, ref, value / e.scale if len(e.estimate) == 1 else value)
    for ref, value in ((e.low, numbers.low), (e.high, numbers.high)):
        if ref and value is not None:
            _write(results, ref, value / e.scale)
    return results


def _sides(claim: scorecard.Claim, kind: str, published: float) -> tuple[float, float]:
    """The effect on the paper's side (the published one where the evidence reruns the paper's own quantity) and
    one on the other side."""
    threshold, margin = claim.test(kind)
    e = claim.evidence[kind]
    if claim.direction == "=":
        return (published if e.same_as_published else threshold), threshold + 5 * margin
    sign = 1.0 if claim.direction == ">" else -1.0
    step = 0.5 if claim.unit == "Pearson r" else 10.0
    paper = published if e.same_as_published else threshold + sign * step
    return paper, threshold - sign * step


def test_every_claim_has_a_world():
    missing = [f"{c.paper}/{c.id}" for p in PAPERS for c in scorecard.load(p) if f"{c.paper}/{c.id}" not in WORLDS]
    assert not missing, f"claims with no per-example world (tests/common/test_scorecard_claims.py WORLDS): {missing}"


@pytest.mark.parametrize("claim,kind", CASES, ids=[f"{c.paper}/{c.id}[{k}]" for c, k in CASES])
def test_the_verdict_flips_across_the_threshold(tmp_path, claim, kind):
    published = claim.published.value("test", RESULTS)
    paper_side, other_side = _sides(claim, kind, published)
    found = scorecard.evaluate(claim, kind, _results(tmp_path, claim, kind, paper_side))
    expected = scorecard.NO_INTERVAL if claim.evidence[kind].low is None and claim.evidence[kind].high is None \
        else scorecard.REPRODUCED
    assert found.verdict == expected, (paper_side, found)
    found = scorecard.evaluate(claim, kind, _results(tmp_path, claim, kind, other_side))
    assert found.verdict == scorecard.NOT_REPRODUCED, (other_side, found)


SIZED = [(c, k) for c, k in CASES if c.evidence[k].same_as_published and c.evidence[k].low and c.evidence[k].high
         and c.direction != "="]
"""(An ``=`` claim's margin is its size test already.)"""


@pytest.mark.parametrize("claim,kind", SIZED, ids=[f"{c.paper}/{c.id}[{k}]" for c, k in SIZED])
def test_a_rerun_of_the_papers_quantity_is_held_to_the_published_size(tmp_path, claim, kind):
    """On the paper's side but far from the published effect: in direction, not in size."""
    published = claim.published.value("test", RESULTS)
    threshold, _ = claim.test(kind)
    effect = threshold + (published - threshold) / 2
    found = scorecard.evaluate(claim, kind, _results(tmp_path, claim, kind, effect))
    assert found.verdict == scorecard.DIRECTION_ONLY, (effect, found)


def test_a_claim_true_by_construction_cannot_be_listed(tmp_path):
    """The shape of the defect this file guards against: I2T minus the group score, with the group score needing
    I2T, is never below 0 whatever the outcomes, so no world reaches the other side."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        i2t = rng.random(N) < rng.random()
        t2i = rng.random(N) < rng.random()
        group = i2t & t2i
        assert i2t.mean() - group.mean() >= 0
