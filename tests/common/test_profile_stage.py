"""``common.pipeline.profile_stage``: the options and the pinned-CPU check every ``papers/<paper>/tables.py`` opens with;
``common.pipeline.cli``: the parser and the exit every stage command shares."""
from __future__ import annotations

import json

import pytest

from common.errors import WorkspaceError
from common.pipeline.cli import DEVICE_HELP, print_written, stage_parser
from common.pipeline.profile_stage import pinned_cpu, profile_stage_parser


class ToyTablesError(WorkspaceError):
    pass


def test_the_shared_options_and_the_paper_s_own():
    parser = profile_stage_parser("toy", "Toy tables.", data="the benchmark", models="the runs")
    parser.add_argument("--set", default=None)
    args = parser.parse_args(["--profile", "mini", "--set", "s"])
    assert (args.profile, args.stage, args.data, args.models, args.out, args.device, args.set) == \
        ("mini", None, None, None, None, None, "s")
    assert parser.prog == "python -m papers.toy.tables"
    with pytest.raises(SystemExit):
        parser.parse_args([])  # --profile is required
    with pytest.raises(SystemExit):
        parser.parse_args(["--profile", "mid"])


def test_the_mini_profile_refuses_another_device_before_pinning(monkeypatch):
    monkeypatch.setattr("common.pipeline.reproducible.reexec_pinned", lambda: pytest.fail("pinned before the check"))
    with pytest.raises(ToyTablesError, match=r"^--device cuda: the mini profile scores on the pinned CPU profile$"):
        pinned_cpu("cuda", ToyTablesError)


def test_a_stage_parser_is_named_by_its_module_and_described_by_its_docstring_s_first_line():
    parser = stage_parser("papers.toy.sets", "Toy sets.\n\nMore than the first line.", out="default: build/toy",
                          device=DEVICE_HELP)
    parser.add_argument("--set", default=None)
    assert (parser.prog, parser.description) == ("python -m papers.toy.sets", "Toy sets.")
    assert [a.dest for a in parser._actions] == ["help", "out", "device", "set"]  # the shared options first
    assert vars(parser.parse_args([])) == {"out": None, "device": None, "set": None}
    bare = stage_parser("papers.toy.sets", "Toy sets.")
    assert [a.dest for a in bare._actions] == ["help"]


def test_print_written_names_each_file_then_shows_the_chosen_ones(tmp_path, capsys):
    summary = tmp_path / "summary.json"
    summary.write_text('{"a": 1}', encoding="utf-8")
    table = tmp_path / "table.csv"
    table.write_text("x,y\n1,2\n", encoding="utf-8")
    assert print_written({"table": table, "summary": summary}, "table", "summary") == 0
    assert capsys.readouterr().out == (f"table: {table}\nsummary: {summary}\nx,y\n1,2\n\n"
                                       + json.dumps({"a": 1}, indent=2) + "\n")
