"""Every paper's ``PAPER`` (``common.paper``): each declared plug-in exists, belongs to its paper and satisfies its
protocol; no plug-in module is left undeclared; reading a ``PAPER`` imports none of them; and the commands that run
a plug-in (``audit <paper>``, ``report <paper>``) start their stage's code at the plug-in."""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import typing

import pytest

from common.cli import handler_module
from common.paper import Paper, PlugIn, load_paper, load_papers
from common.paths import ROOT
from common.pipeline.import_closure import closure
from common.plugins import paper_dir, paper_names


def _plug_in_fields() -> dict[str, type]:
    """Each plug-in field of ``Paper`` and the protocol its module satisfies (``PlugIn[<protocol>] | None``)."""
    hints = typing.get_type_hints(Paper)
    out = {}
    for field in dataclasses.fields(Paper):
        (declared, _none) = typing.get_args(hints[field.name]) or (None, None)
        if typing.get_origin(declared) is PlugIn:
            out[field.name] = typing.get_args(declared)[0]
    return out


PLUG_INS = _plug_in_fields()


def test_the_plug_in_fields_are_read():
    assert set(PLUG_INS) == {"audit", "report", "card", "oracle", "cli"}


@pytest.mark.parametrize("paper", paper_names())
def test_every_declared_plug_in_satisfies_its_protocol(paper):
    declared = load_paper(paper)
    assert declared.name == paper
    for field, protocol in PLUG_INS.items():
        plug_in = getattr(declared, field)
        if plug_in is None:
            continue
        assert plug_in.module.startswith(f"papers.{paper}."), f"{paper}.{field}: {plug_in.module} is not its own"
        module = plug_in.load()
        lacking = [m for m in dir(protocol) if not m.startswith("_") and not hasattr(module, m)]
        assert isinstance(module, protocol), f"{plug_in.module} does not satisfy {protocol.__name__}: lacks {lacking}"


@pytest.mark.parametrize("paper", paper_names())
def test_no_plug_in_module_is_left_undeclared(paper):
    """A ``papers/<paper>/<plug-in>.py`` that its ``PAPER`` does not name would be silently unused."""
    declared = load_paper(paper)
    for field in PLUG_INS:
        if (paper_dir(paper) / f"{field}.py").is_file():
            assert getattr(declared, field) == PlugIn(f"papers.{paper}.{field}"), f"papers/{paper}/{field}.py"


def test_reading_every_paper_imports_no_plug_in():
    probe = ("import json, sys; from common.paper import load_papers; load_papers(); "
             "print(json.dumps(sorted(m for m in sys.modules if m.count('.') >= 2 and m.startswith('papers.') "
             "or m.split('.')[0] in ('torch', 'numpy', 'open_clip'))))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert json.loads(done.stdout) == [], done.stderr


@pytest.mark.parametrize("paper", [p.name for p in load_papers() if p.audit is not None])
def test_the_audit_stage_starts_at_the_audit_plug_in(paper):
    assert handler_module(["audit", paper, "--strict"]) == load_paper(paper).audit.module


@pytest.mark.parametrize("paper", paper_names())
def test_the_report_stage_starts_at_the_report_plug_in(paper):
    """``report <paper>`` runs ``common.reporting.report.run``: the plug-in it starts at must import it, or the aggregate
    stage would not depend on the printer."""
    report = load_paper(paper).report
    module = handler_module(["report", paper])
    assert module == (report.module if report is not None else "common.reporting.report")
    assert "common.reporting.report" in closure([module]).modules
