"""The audit rows of runs trained with ``HardPositiveLoss`` say in their verdict text that the method is unverified
(the authors released no training code), in both profiles, in the CSV and the Markdown; rows of models trained
elsewhere (CLIP, NegCLIP, ...) do not."""
from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from common.audit.core import audit_rows
from common.audit.report import write_audit
from common.paths import RESULTS
from common.reporting.published import load_cells, load_claims
from papers.hard_positives import audit
from papers.hard_positives.runs import RUNS

PAPER = "hard_positives"
TRAINED_LABELS = {label for table in audit.PUBLISHED_ROWS.values() for row, label in table.items() if row in RUNS}


@pytest.fixture(params=["mini", "full"])
def rows(request, tmp_path):
    """The committed mini tables, audited as a mini run and as a full one (compared with the paper)."""
    out = tmp_path / PAPER / request.param
    out.mkdir(parents=True)
    for name in ("table1.csv", "table2.csv", "table3.csv"):
        shutil.copy(RESULTS / PAPER / "mini" / name, out / name)
    recs = audit.run_recomputations(request.param, results=tmp_path)
    return audit_rows(PAPER, load_cells(PAPER), load_claims(PAPER), recs)


def test_rows_of_runs_trained_here_say_the_method_is_unverified(rows, tmp_path):
    trained = [r for r in rows if r.row in TRAINED_LABELS and r.profile in ("mini", "full")]
    others = [r for r in rows if r not in trained]
    assert {r.row for r in trained} == TRAINED_LABELS - {"CLIP ViT-B/32"} and len(trained) > 50
    for r in trained:
        assert r.verdict_text.startswith(r.verdict + "; method unverified: no released training code")
        assert "HardPositiveLoss" in r.verdict_text and "Sec. 4.1" in r.verdict_text
    assert all(r.verdict_text == r.verdict for r in others)  # the base CLIP, the released models, the claims
    assert any(r.row == "CLIP ViT-B/32" and r.profile in ("mini", "full") for r in others)

    paths = write_audit(PAPER, rows, tmp_path / "audit", rows[0].profile if rows else "mini")
    with open(paths["csv"], newline="", encoding="utf-8") as fh:
        written = list(csv.DictReader(fh))
    unverified = [w for w in written if "method unverified" in w["verdict"]]
    assert len(unverified) == len(trained) and {w["row"] for w in unverified} == {r.row for r in trained}
    markdown = Path(paths["markdown"]).read_text(encoding="utf-8")
    assert markdown.count("method unverified") >= min(len(trained), 1)
    assert sum(v for v in __import__("json").loads(Path(paths["metrics"]).read_text()).values()) == len(rows)


def test_trained_rows_are_the_runs():
    """The audit names the rows trained with HardPositiveLoss without importing the loss (torch): the same set."""
    assert audit.TRAINED_ROWS == frozenset(RUNS)


def test_rows_of_runs_trained_here_name_their_recipe(tmp_path):
    """The mini context (keyed by zoo name) and the full one (keyed by run) name each trained row's recipe."""
    recipe = {"name": "mini", "digest": "d1g", "settings": {}, "deviations": {}}
    for profile, key in (("mini", "hard_positives/mini-hn"), ("full", "hn")):
        out = tmp_path / profile / PAPER / profile
        out.mkdir(parents=True)
        for name in ("table1.csv", "table2.csv", "table3.csv"):
            shutil.copy(RESULTS / PAPER / "mini" / name, out / name)
        (out / "context.json").write_text(json.dumps({"training": {key: {"recipe": recipe}}}))
        notes = {(r.table, r.row): r.note for r in audit.run_recomputations(profile, results=tmp_path / profile)}
        assert notes[("Table 1", "Our HN")].endswith("recipe mini (d1g): this workspace's settings (params.yaml)"), profile
        assert "recipe" not in notes[("Table 1", "CLIP ViT-B/32")]
