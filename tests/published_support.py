"""Shared fixtures and helpers for the transcription tests of results/published/<paper>*.csv.

tests/conftest.py registers the fixtures for every test module. Each fixture reads the paper from the
``paper`` fixture, which is the requesting module's ``PAPER`` (tests/papers/<paper>/test_published_<paper>.py sets
it); tests/common/test_published_common.py parametrizes ``paper`` over all papers instead.
"""
from __future__ import annotations

import csv
import fnmatch
from pathlib import Path

import pytest

from common.paths import PUBLISHED
from common.reporting.published import CellIndex, load_cells, load_claims
from shared_files import PAPER_TEXT_DIRS


# ----------------------------------------------------------------------------------------- helpers
def paper_text_candidates(paper: str) -> tuple[Path, ...]:
    """Where the extracted text of a paper may be, first match wins."""
    return tuple(folder / f"{paper}.txt" for folder in PAPER_TEXT_DIRS)


def read_raw_rows(paper: str) -> list[dict[str, str]]:
    """The cell file's rows as strings (value exactly as printed, trailing zeros kept)."""
    with open(PUBLISHED / f"{paper}.csv", newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def read_raw_claims(paper: str) -> dict[str, dict[str, str]]:
    """The claim file's rows as strings, by claim_id."""
    with open(PUBLISHED / f"{paper}_claims.csv", newline="", encoding="utf-8") as fh:
        return {r["claim_id"]: r for r in csv.DictReader(fh)}


def by_key(raw_rows):
    """Raw rows by (table, row, column)."""
    return {(r["table"], r["row"], r["column"]): r for r in raw_rows}


def values(cells, table, row_pattern="*", column_pattern="*"):
    """Like the recompute language's cells(): ok values matching fnmatch patterns, in file order."""
    return [c.value for c in cells if c.table == table and c.value is not None
            and fnmatch.fnmatchcase(c.row, row_pattern) and fnmatch.fnmatchcase(c.column, column_pattern)]


def rounding_tolerance(value_text: str) -> float:
    """Half a unit in the last printed place of ``value_text``: a claim printed like that is a rounding of
    the recomputed quantity when they differ by at most this."""
    decimals = len(value_text.split(".")[1]) if "." in value_text else 0
    return 0.5 * 10 ** -decimals + 1e-9


def flatten_whitespace(text: str) -> str:
    """Every run of whitespace (line breaks included) as one space."""
    return " ".join(text.split())


# ----------------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def paper(request) -> str:
    """The paper under test: the module's PAPER."""
    return request.module.PAPER


@pytest.fixture(scope="module")
def cells(paper):
    return load_cells(paper)


@pytest.fixture(scope="module")
def index(cells):
    return CellIndex(cells)


@pytest.fixture(scope="module")
def claims(paper):
    return load_claims(paper)


@pytest.fixture(scope="module")
def raw_rows(paper):
    return read_raw_rows(paper)


@pytest.fixture(scope="module")
def raw_claims(paper):
    return read_raw_claims(paper)


@pytest.fixture(scope="module")
def paper_text(paper):
    """The extracted paper text as is (line breaks kept); the test is skipped when it is not available."""
    for candidate in paper_text_candidates(paper):
        if candidate.is_file():
            return candidate.read_text(encoding="utf-8")
    pytest.skip(f"extracted paper text not available at {' or '.join(map(str, paper_text_candidates(paper)))}")
