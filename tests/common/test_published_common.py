"""Generic transcription checks of results/published/<paper>*.csv, run once per paper.

The paper-specific facts checked here live in each paper's own module, tests/papers/<paper>/test_published_<paper>.py:
``EXPECTED_COUNTS`` (cells per table), ``RECOMPUTE_COUNT`` (claims with a recompute expression),
``EXPECTED_COMPARISONS`` (every claim whose comparison is not "="), and where a paper has them
``EXPECTED_GRIDS`` (the row and column keys of each table that is a full grid) and ``EXPECTED_RECOMPUTE``
(what each recompute expression evaluates to). Those modules keep the paper-specific checks: consistency
between tables, known published inconsistencies, pinned values, comparisons with the source text.

The fixtures (cells, index, claims, raw_rows, paper_text) come from published_support.py via conftest.py;
here the ``paper`` they read is parametrized instead of taken from the module's PAPER.
"""
from __future__ import annotations

import importlib
import math
import sys
from collections import Counter
from pathlib import Path

import pytest

from common.plugins import paper_names
from common.reporting.published import COMPARISONS, evaluate_expression, load_claims
from published_support import flatten_whitespace

# Test folders are on sys.path (no __init__.py; pytest's prepend import mode): the same module objects pytest
# collects, whichever folder it reaches first.
PAPERS = paper_names()
for _paper in PAPERS:  # each paper's own published-number tests live in tests/papers/<paper>/
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "papers" / _paper))
MODULES = {paper: importlib.import_module(f"test_published_{paper}") for paper in PAPERS}

# Papers whose claim quotes run across the extracted text's line breaks: compared with whitespace flattened.
QUOTES_ACROSS_LINE_BREAKS = {"bivlc", "sugarcrepe"}
# Papers whose every printed cell is one whitespace-separated token of the text (the others print ± and
# deltas inside a cell, recorded whole in `raw`; their modules reconstruct the table lines instead).
CELLS_PRINTED_AS_TOKENS = ["bivlc", "sugarcrepe"]


def papers_with(attribute: str) -> list[str]:
    return [paper for paper in PAPERS if hasattr(MODULES[paper], attribute)]


def per_paper(papers=PAPERS):
    """Parametrize ``paper`` (the fixtures' paper) over ``papers``; module scope keeps one load per paper."""
    return pytest.mark.parametrize("paper", papers, scope="module")


GRID_CASES = [(paper, table) for paper in papers_with("EXPECTED_GRIDS") for table in MODULES[paper].EXPECTED_GRIDS]
RECOMPUTE_CASES = [(paper, c.claim_id) for paper in PAPERS for c in load_claims(paper) if c.recompute]


# ----------------------------------------------------------------------------------------- schema / coverage
@per_paper()
def test_files_load_and_are_this_paper(paper, cells, claims):
    assert cells and claims
    assert {c.paper for c in cells} == {paper}
    assert {c.paper for c in claims} == {paper}


@per_paper()
def test_cell_count_per_table(paper, cells):
    assert Counter(c.table for c in cells) == MODULES[paper].EXPECTED_COUNTS


@pytest.mark.parametrize("paper,table", GRID_CASES, scope="module")
def test_every_table_is_a_full_grid_with_the_documented_keys(paper, table, cells):
    rows, cols = MODULES[paper].EXPECTED_GRIDS[table]
    got = {(c.row, c.column) for c in cells if c.table == table}
    assert got == {(r, k) for r in rows for k in cols}


# ----------------------------------------------------------------------------------------- claims
@per_paper()
def test_recompute_expression_count(paper, claims):
    assert sum(1 for c in claims if c.recompute) == MODULES[paper].RECOMPUTE_COUNT


@pytest.mark.parametrize("paper,claim_id", RECOMPUTE_CASES, scope="module")
def test_every_recompute_expression_evaluates(paper, claim_id, claims, index):
    claim = next(c for c in claims if c.claim_id == claim_id)
    assert math.isfinite(evaluate_expression(claim.recompute, index)), claim_id


@per_paper(papers_with("EXPECTED_RECOMPUTE"))
def test_recompute_values(paper, claims, index):
    expected_values = MODULES[paper].EXPECTED_RECOMPUTE
    by_id = {c.claim_id: c for c in claims}
    assert set(expected_values) == {c.claim_id for c in claims if c.recompute}
    for claim_id, expected in expected_values.items():
        got = evaluate_expression(by_id[claim_id].recompute, index)
        assert abs(got - expected) <= 0.005 + 1e-9 * abs(expected), (claim_id, got)


@per_paper()
def test_comparison_column(paper, claims):
    assert all(c.comparison in COMPARISONS for c in claims)
    assert {c.claim_id: c.comparison for c in claims if c.comparison != "="} == MODULES[paper].EXPECTED_COMPARISONS


# ----------------------------------------------------------------------------------------- against the source text
@per_paper()
def test_claim_quotes_are_verbatim(paper, claims, paper_text):
    if paper in QUOTES_ACROSS_LINE_BREAKS:
        text = flatten_whitespace(paper_text)
        for c in claims:
            assert c.quote and flatten_whitespace(c.quote) in text, c.claim_id
    else:
        for c in claims:
            assert c.quote and c.quote in paper_text, c.claim_id


@per_paper(CELLS_PRINTED_AS_TOKENS)
def test_every_value_is_printed_in_the_paper(paper, raw_rows, paper_text):
    """Each transcribed cell's printed text (raw when recorded, else value) is a token of the paper text."""
    tokens = set(paper_text.split())
    rows = [r for r in raw_rows if r["status"] == "ok" and r["table"] != "GPT-4V readme"]
    assert rows
    for r in rows:
        printed = r["raw"] or r["value"]
        assert printed in tokens, (r["table"], r["row"], r["column"], printed)
