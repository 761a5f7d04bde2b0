"""``common.pipeline.profile_stage``: the options and the pinned-CPU check every ``papers/<paper>/tables.py`` opens with."""
from __future__ import annotations

import pytest

from common.errors import WorkspaceError
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
