"""``common.reporting.report.print_report``: a paper's report as data (``PaperReport``), printed by the one printer."""
from __future__ import annotations

import json

import pytest

import common.reporting.report as report
from common.errors import WorkspaceError
from common.reporting.report import Numbers, PaperReport, Table, Tally

TOY = PaperReport(
    title="Toy",
    required="{profile}/table1.csv",
    sections=(
        Table(path="{profile}/table1.csv", title="Table 1", labels=("model",)),
        Table(path="{profile}/missing.csv", title="Not run yet"),
        Table(path="shared/blind.csv", title="Blind", labels=("scorer",), columns=("accuracy",),
              where=("category", ("all",)), numbers=True),
        Tally(path="{profile}/check.csv", title="check", column="within", value="yes", what="cells within",
              profile="mini"),
        Numbers(path="{profile}/analyses.json", title="Analyses", grouped=True),
        Numbers(path="shared/metrics.json", title="Metrics", keys=("r",)),
    ),
    files={"{profile}/table1.csv": "Table 1 (the first)", "{profile}/predictions": "per-example predictions",
           "shared": "profile-independent"},
)


@pytest.fixture
def results(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "RESULTS", tmp_path)
    out = tmp_path / "toy" / "mini"
    out.mkdir(parents=True)
    (out / "table1.csv").write_text("model,a,b\nclip,1.5,2\nnegclip,10.25,3\n", encoding="utf-8")
    (out / "check.csv").write_text("cell,within\n1,yes\n2,no\n3,yes\n", encoding="utf-8")
    (out / "analyses.json").write_text(json.dumps({"x.json": {"gain": 1.5}}), encoding="utf-8")
    (out / ".gitignore").write_text("/predictions\n", encoding="utf-8")
    shared = tmp_path / "toy" / "shared"
    shared.mkdir()
    (shared / "blind.csv").write_text("scorer,category,accuracy\nlm,all,70.5\nlm,replace,60\n", encoding="utf-8")
    (shared / "metrics.json").write_text(json.dumps({"r": 0.9, "other": 1}), encoding="utf-8")
    return tmp_path


def test_every_section_whose_file_exists_is_printed(results, capsys):
    report.print_report("toy", TOY, "mini")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Toy, mini profile (mini world and tiny CLIPs: not the paper's numbers)"
    assert lines[3:6] == ["model          a  b", "clip         1.5  2", "negclip    10.25  3"]
    assert "Not run yet" not in "\n".join(lines)
    blind = next(i for i, x in enumerate(lines) if x.startswith("Blind"))
    assert lines[blind + 1:blind + 3] == ["scorer    accuracy", "lm            70.5"]  # the rows of category 'all'
    assert lines[blind + 3] == ""
    assert any(x.startswith("check: 2/3 cells within (") for x in lines)
    assert "  x.json" in lines and "    gain  1.5" in lines
    assert "  r  0.9" in lines and not any("other" in x for x in lines)
    assert "  table1.csv                       Table 1 (the first)" in lines
    assert "  predictions/                     per-example predictions (not written yet)" in lines
    assert not any(".gitignore" in x for x in lines)
    assert lines[-1] == f"{'profile-independent:':<40s} {results / 'toy' / 'shared'}"


def test_a_section_of_the_other_profile_is_left_out(results, capsys):
    (results / "toy" / "full").mkdir()
    (results / "toy" / "full" / "table1.csv").write_text("model,a\nclip,1\n", encoding="utf-8")
    (results / "toy" / "full" / "check.csv").write_text("cell,within\n1,yes\n", encoding="utf-8")
    report.print_report("toy", TOY, "full")
    out = capsys.readouterr().out
    assert out.startswith("Toy, full profile\n") and "check:" not in out


def test_nothing_run_yet_names_the_file_and_the_command(results):
    (results / "toy" / "mini" / "table1.csv").unlink()
    with pytest.raises(WorkspaceError, match=r"table1.csv does not exist yet: run `dvc repro papers/toy`"):
        report.print_report("toy", TOY, "mini")
