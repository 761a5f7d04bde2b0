"""The claims scorecard (``common.reporting.scorecard``): each paper's README block is what ``results/`` say; the verdict
rules; a bad scorecard file or a reference that names nothing is one error naming the file and the claim."""
from __future__ import annotations

import json

import pytest

from common.plugins import paper_names
from common.reporting import scorecard as sc


def test_every_paper_lists_claims_and_its_readme_block_is_the_results():
    assert sc.check() == [], "python -m common docs claims --write"
    for paper in paper_names():
        rows = sc.scorecard(paper)
        assert rows, f"papers/{paper}/{sc.SPEC} lists no claim"
        assert all(f.verdict in sc.VERDICTS for findings in rows for f in findings)


@pytest.mark.parametrize("direction, estimate, low, high, verdict, detail", [
    (">", 3.0, 1.0, 5.0, sc.REPRODUCED, ""),
    (">", 3.0, 1.0, None, sc.REPRODUCED, ""),
    (">", 1.0, -1.0, 3.0, sc.NOT_REPRODUCED, "interval reaches 0"),
    (">", -3.0, -5.0, -1.0, sc.NOT_REPRODUCED, "interval on the other side of 0"),
    (">", -3.0, -5.0, None, sc.NOT_REPRODUCED, "interval reaches 0"),
    (">", 2.0, None, None, sc.NO_INTERVAL, "no interval in results/"),
    (">", -2.0, None, None, sc.NOT_REPRODUCED, "point estimate on the other side of 0"),
    ("<", -3.0, -5.0, -1.0, sc.REPRODUCED, ""),
    ("<", -3.0, None, -1.0, sc.REPRODUCED, ""),
    ("<", 3.0, 1.0, 5.0, sc.NOT_REPRODUCED, "interval on the other side of 0"),
    ("<", -2.0, None, None, sc.NO_INTERVAL, "no interval"),
    ("=", 0.5, -1.0, 2.0, sc.REPRODUCED, "interval within 0 \u00b1 2"),
    ("=", 0.5, -3.0, 2.0, sc.NOT_REPRODUCED, "interval reaches beyond 0 \u00b1 2"),
    ("=", 3.0, 2.5, 5.0, sc.NOT_REPRODUCED, "interval outside 0 \u00b1 2"),
    ("=", 0.0, None, None, sc.NO_INTERVAL, "no interval in results/, so equality within 2 is not tested"),
    ("=", 3.0, None, None, sc.NOT_REPRODUCED, "point estimate outside 0 \u00b1 2"),
])
def test_the_verdict_needs_the_interval_on_the_papers_side(direction, estimate, low, high, verdict, detail):
    got, text = sc.judge(direction, 0.0, estimate, low, high, 2.0 if direction == "=" else None)
    assert got == verdict and text.startswith(detail)


def test_an_equality_without_a_margin_is_no_claim():
    """ "No better than chance" passes whenever a wide enough interval holds 50: the margin is required."""
    with pytest.raises(sc.ScorecardError, match="needs its margin"):
        sc.judge("=", 50.0, 50.0, 40.0, 60.0)


@pytest.mark.parametrize("published, low, high, tolerance, verdict, detail", [
    (18.0, 15.0, 20.0, 0.0, sc.REPRODUCED, "holds the published +18"),
    (18.0, 2.0, 6.0, 0.0, sc.DIRECTION_ONLY, "the published +18 lies above the interval"),
    (18.0, 18.8, 25.0, 1.0, sc.REPRODUCED, "holds the published +18"),
    (18.0, 18.8, 25.0, 0.5, sc.DIRECTION_ONLY, "the published +18 lies below the interval"),
    (None, 2.0, 6.0, 0.0, sc.REPRODUCED, ""),
])
def test_a_rerun_of_the_papers_quantity_is_held_to_its_published_size(published, low, high, tolerance, verdict,
                                                                     detail):
    got, text = sc.size(sc.REPRODUCED, "", published, low, high, tolerance)
    assert got == verdict and text == detail
    assert sc.size(sc.NOT_REPRODUCED, "x", published, low, high, tolerance) == (sc.NOT_REPRODUCED, "x")


@pytest.fixture
def workspace(tmp_path):
    """A paper ``toy`` with three claims, and results for the mini profile only."""
    root, results = tmp_path / "ws", tmp_path / "ws" / "results"
    (root / "papers" / "toy").mkdir(parents=True)
    (results / "toy" / "mini").mkdir(parents=True)
    (results / "toy" / "mini" / "t.csv").write_text("model,acc,lo,hi\nA,0.70,0.66,0.74\nB,0.60,,\n")
    (results / "toy" / "mini" / "c.json").write_text(json.dumps({"d": 2.0, "d_ci_low": -0.5}))
    (root / "papers" / "toy" / sc.SPEC).write_text("""
[[claim]]
id = "a-beats-b"
claim = "A beats B"
source = "Table 1"
quote = "A is better than B, by ten points"
published = 10
direction = ">"
unit = "points"
[claim.mini]
what = "A minus B, B taken as fixed"
estimate = ["toy/mini/t.csv¦model=A¦acc", "toy/mini/t.csv¦model=B¦acc"]
low = "toy/mini/t.csv¦model=A¦lo"
high = "toy/mini/t.csv¦model=A¦hi"
interval_of = "first"
scale = 100
[claim.full]
what = "A minus B at scale"
estimate = ["toy/full/t.csv¦model=A¦acc", "toy/full/t.csv¦model=B¦acc"]

[[claim]]
id = "gain"
claim = "fine-tuning gains"
source = "Abstract"
quote = "fine-tuning improves the model"
published = "toy/mini/t.csv¦model=A¦acc"
published_scale = 100
direction = ">"
[claim.mini]
what = "the gain"
estimate = "toy/mini/c.json¦d"
low = "toy/mini/c.json¦d_ci_low"
""")
    return root, results


def test_a_scorecard_reads_its_numbers_and_says_what_was_not_run(workspace):
    root, results = workspace
    (a, b) = sc.scorecard("toy", results, root)
    mini, offline, full = a
    assert mini.verdict == sc.REPRODUCED
    assert (round(mini.estimate, 6), round(mini.low, 6), round(mini.high, 6)) == (10.0, 6.0, 14.0)
    assert mini.number == "+10.0 [+6.0, +14.0]"
    assert offline.verdict == sc.NOT_MEASURED
    assert (full.verdict, full.detail) == (sc.NOT_RUN, "no results/toy/full/t.csv")
    assert (b[0].verdict, b[0].number) == (sc.NOT_REPRODUCED, "+2.0 [-0.5, …]")
    assert sc.line("toy", results, root) == ("toy: 2 headline claims; mini: 1 reproduced, 1 not reproduced; "
                                             "full: not run (papers/toy/README.md#claims-scorecard)")


def test_the_readme_block_is_checked_and_rewritten(workspace):
    root, results = workspace
    readme = root / "papers" / "toy" / sc.README
    readme.write_text("# Toy\n\n<!--claims-->\nstale\n<!--/claims-->\n\nmore\n")
    assert sc.check(["toy"], root, results) == ["toy"]
    assert sc.check(["toy"], root, results, write=True) == ["toy"]
    text = readme.read_text()
    assert text.startswith("# Toy\n\n<!--claims-->\n| claim") and text.endswith("<!--/claims-->\n\nmore\n")
    assert ('| **A beats B** (Table 1: "A is better than B, by ten points"; published: +10.0 points; tested: above 0 '
            'points) | mini profile |') in text
    assert sc.check(["toy"], root, results) == []
    readme.write_text("# Toy, no block\n")
    with pytest.raises(sc.ScorecardError, match="has no <!--claims-->"):
        sc.check(["toy"], root, results)


@pytest.mark.parametrize("edit, message", [
    (('direction = ">"', 'direction = "up"'), "direction 'up' is not one of"),
    (('id = "gain"', 'id = "a-beats-b"'), "appears twice"),
    (('source = "Abstract"', 'source = "Abstract"\ncolour = "red"'), r"unknown keys \['colour'\]"),
    (('interval_of = "first"', 'interval_of = "second"'), "interval_of is 'estimate'"),
    (('claim = "A beats B"', 'claim = 3'), "needs claim"),
    (("[[claim]]", "[[claim]"), "not valid TOML"),
    (('unit = "points"', 'unit = "points"\nthreshold = "zero"'), "threshold is a finite number"),
    (('unit = "points"', 'unit = "points"\nthreshold = nan'), "threshold is a finite number"),
    (('quote = "A is better than B, by ten points"', ''), "needs quote"),
    (('quote = "A is better than B, by ten points"', 'quote = "short"'), "needs quote"),
    (('published = 10\n', ''), "published is the effect the paper states"),
    (('published = 10\n', 'published = inf\n'), "published is the effect the paper states"),
    (('direction = ">"', 'direction = "="'), "states its margin"),
    (('direction = ">"', 'direction = ">"\nmargin = 2'), "margin goes with direction '=' only"),
    (('direction = ">"', 'direction = "="\nmargin = -1'), "margin is a finite number > 0"),
    (('published_scale = 100', 'published_scale = "x"'), "published_scale is a finite number"),
    (("scale = 100\n[claim.full]", "scale = \"100\"\n[claim.full]"), r"\[mini\] scale is not a finite number"),
    (("interval_of = \"first\"", "interval_of = \"first\"\nhgih = 3"), r"unknown keys \['hgih'\]"),
    (('source = "Abstract"', 'source = "Abstract"\nfull = "x"'), r"\[full\] is not a table"),
])
def test_a_bad_scorecard_is_one_error_naming_the_file_and_claim(workspace, edit, message):
    root, results = workspace
    spec = root / "papers" / "toy" / sc.SPEC
    spec.write_text(spec.read_text().replace(*edit, 1))
    with pytest.raises(sc.ScorecardError, match=message) as info:
        sc.scorecard("toy", results, root)
    assert str(spec) in str(info.value)


def test_a_reference_that_names_nothing_names_the_claim(workspace):
    root, results = workspace
    (results / "toy" / "mini" / "c.json").write_text(json.dumps({"d": 2.0}))
    with pytest.raises(sc.ScorecardError, match=r"claim 'gain' \[mini\].*has no 'd_ci_low'"):
        sc.scorecard("toy", results, root)
