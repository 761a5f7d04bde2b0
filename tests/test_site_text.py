"""The site's text helpers: the PDF extraction's triplicated numbers and formulas are shown once, numbers are
rounded to the printed precision, verdicts get their colour, and the index's headline verdict is the evidence closest
to the paper's own quantity."""
from __future__ import annotations

import csv

import pytest

from common.paths import RESULTS
from common.reporting import scorecard
from common.site.build import headline
from common.site.text import clean_quote, decimals, rounded, tone

CLEANED = [
    ("with 23,9372393723,937 test cases in total", "with 23,937 test cases in total"),
    ("We extract images with 484848 relations", "We extract images with 48 relations"),
    ("on VG-Relation from 63%percent6363\\%", "on VG-Relation from 63%"),
    ("0.8140.8140.814", "0.814"),
    ("0.710±0.006plus-or-minus0.7100.0060.710\\pm 0.006", "0.710±0.006"),
    # from results/published/*_claims.csv
    ("by a large margin (>30%absentpercent30>30\\%) on the held-out", "by a large margin (>30%) on the held-out"),
    ("an average improvement of 3.85%percent3.853.85\\% across all datasets",
     "an average improvement of 3.85% across all datasets"),
    ("a dataset containing 228,246228246228,246 images", "a dataset containing 228,246 images"),
    ("with 171717K true image-caption pairs", "with 17K true image-caption pairs"),
    ("use N=32,000𝑁32000N=32,000 as the batch size", "use N=32,000 as the batch size"),
    ("Here, N𝑁N is set to 188,246188246188,246", "Here, N is set to 188,246"),
    ("width lower than 1414\\frac{1}{4} of the width", "width lower than 1/4 of the width"),
    ("higher mean ΔΔ\\Delta for CoN-CLIP (62.03%)", "higher mean Δ for CoN-CLIP (62.03%)"),
    ("outperforming CREPE-Negate - 1subscript1\\mathcal{L}_{1}", "outperforming CREPE-Negate - L1"),
    ("{1e5,5e6,1e6}1𝑒55𝑒61𝑒6\\{1e-5,5e-6,1e-6\\}", "{1e-5,5e-6,1e-6}"),
    ("with 0.20.20.2 weight decay", "with 0.2 weight decay"),
]
"""The issue's examples, then quotes of the committed claims CSVs."""
KEPT = ["with more than 50,000 test cases", "number of warmup steps is 1000", "beta2 = 0.999, eps = 1e-08",
        "VG-Relation 0.59 0.63 0.81", "$25,000 \\times 40 = 1,000,000$ API calls", "obtaining 2,000 queries",
        "\\mathcal{L}_{conclip}=\\frac{1}{3}(\\mathcal{L}_{1}+\\mathcal{L}_{2}+\\mathcal{L}_{3})"]
"""Text without the extraction's duplicates (numbers, a formula quoted as TeX) is left as it is."""


@pytest.mark.parametrize(("extracted", "shown"), CLEANED)
def test_the_extractions_duplicates_are_shown_once(extracted, shown):
    assert clean_quote(extracted) == shown


@pytest.mark.parametrize("text", KEPT)
def test_clean_text_is_left_as_it_is(text):
    assert clean_quote(text) == text


def test_every_committed_quote_is_cleaned_of_percent_readings_and_tripled_numbers():
    """No quote of the committed claims CSVs keeps a reading ("percent", "plus-or-minus") or a number run that is
    itself printed three times."""
    quotes = [r["quote"] for path in sorted((RESULTS / "published").glob("*_claims.csv"))
              for r in csv.DictReader(path.open(encoding="utf-8"))]
    assert len(quotes) > 100 and any("percent" in q for q in quotes)
    cleaned = [clean_quote(q) for q in quotes]
    assert not [q for q in cleaned if "%percent" in q or "plus-or-minus" in q or "\\%" in q]


def test_numbers_are_rounded_to_the_printed_precision_or_three_decimals():
    assert decimals("0.59") == 2 and decimals("23,937") == 0 and decimals("> 0.8") == 1 and decimals("n/a") is None
    assert rounded("0.58731234", 2) == "0.59" and rounded("-2020.0", 0) == "-2020"
    assert rounded("0.58731234") == "0.587" and rounded("23937.0") == "23937" and rounded("0.0000123") == "1.23e-05"
    assert rounded("openai-clip") == "openai-clip" and rounded("") == ""


def test_verdicts_are_coloured_by_what_they_say():
    assert [tone(v) for v in (scorecard.REPRODUCED, scorecard.DIRECTION_ONLY, scorecard.NOT_REPRODUCED,
                              scorecard.NOT_RUN, "differs", "unexplained", "explained", "not recomputed yet")] == [
        "good", "partial", "bad", "none", "bad", "bad", "good", "none"]


def test_the_index_shows_the_evidence_closest_to_the_papers_quantity_that_ran():
    claim = scorecard.load(scorecard.plugins.paper_names()[0])[0]

    def finding(kind: str, verdict: str) -> scorecard.Finding:
        return scorecard.Finding(claim, kind, verdict, "")

    mini, offline = finding("mini", scorecard.REPRODUCED), finding("offline", scorecard.NOT_REPRODUCED)
    assert headline([mini, offline, finding("full", scorecard.NOT_RUN)]) is offline
    assert headline([mini, finding("offline", scorecard.NOT_MEASURED), finding("full", scorecard.NOT_RUN)]) is mini
    full = finding("full", scorecard.DIRECTION_ONLY)
    assert headline([mini, offline, full]) is full
    not_run = [finding(k, scorecard.NOT_RUN) for k in scorecard.EVIDENCE]
    assert headline(not_run) is not_run[-1]
