"""The audit's coverage in the docs (``common.docs.coverage``): README's line and docs/audit.md's table are what
``results/audit/`` says, so the front door cannot promise more than is compared (issue 48)."""
from __future__ import annotations

import json

import pytest

from common.docs import coverage
from common.reporting.scorecard import ScorecardError


def test_the_committed_coverage_blocks_are_the_results():
    assert coverage.check() == [], "python -m common docs coverage --write"


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "results" / "audit").mkdir(parents=True)
    for paper, counts in {"a": {"reproduced": 3, "differs": 1, "not recomputed yet": 4},
                          "b": {"reproduced": 1, "mini profile: not comparable": 1}}.items():
        (tmp_path / "results" / "audit" / f"{paper}_summary.json").write_text(json.dumps(counts))
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("# W\n\n<!--audit-coverage-->\nstale\n<!--/audit-coverage-->\n\nmore\n")
    (tmp_path / "docs" / "audit.md").write_text("<!--audit-coverage-table-->\n<!--/audit-coverage-table-->\n")
    return tmp_path


def test_a_stale_block_is_caught_then_rewritten(workspace):
    args = dict(root=workspace, results=workspace / "results", papers=["a", "b"])
    assert coverage.check(**args) == ["README.md", "docs/audit.md"]
    assert coverage.check(**args, write=True) == ["README.md", "docs/audit.md"]
    assert coverage.check(**args) == []
    readme = (workspace / "README.md").read_text()
    words = " ".join(readme.split())
    assert "of the 10 numbers" in words and "5 (50.0%) are compared" in words and "4 reproduced, 1 differ" in words
    assert "4 (40.0%) wait on the full profile" in words and "1 (10.0%) have only a mini-world analog" in words
    assert readme.endswith("<!--/audit-coverage-->\n\nmore\n")
    table = (workspace / "docs" / "audit.md").read_text()
    assert "| all | 10 | 5 (50.0%) | 4 | 1 | 4 (40.0%) | 1 (10.0%) |" in table
    assert all(len(line) <= 120 for line in readme.splitlines())


def test_a_document_without_its_block_is_an_error(workspace):
    (workspace / "README.md").write_text("# W\n")
    with pytest.raises(ScorecardError, match="audit-coverage"):
        coverage.check(root=workspace, results=workspace / "results", papers=["a", "b"])
