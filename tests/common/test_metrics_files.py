"""Every paper's DVC metrics stay a short, readable table: flat numbers, a few per file (context goes elsewhere)."""
from __future__ import annotations

import json

import pytest

from common import plugins
from common.paths import ROOT
from common.reporting.report import metric_files

MAX_METRICS_PER_FILE = 12


def _json_files(path):
    return sorted(path.glob("*.json")) if path.is_dir() else [path]


@pytest.mark.parametrize("paper", plugins.paper_names())
def test_committed_metrics_are_few_flat_numbers(paper):
    files = metric_files(paper)
    assert all(f.startswith(("results/", "build/")) for f in files), files
    for name in files:
        for path in _json_files(ROOT / name):
            metrics = json.loads(path.read_text())
            assert isinstance(metrics, dict) and 0 < len(metrics) <= MAX_METRICS_PER_FILE, path
            bad = {k: v for k, v in metrics.items() if isinstance(v, bool) or not isinstance(v, (int, float))}
            assert not bad, f"{path}: not flat numbers: {bad}"


def test_every_paper_with_results_has_metrics():
    assert metric_files("sugarcrepe") and metric_files("aro")
    assert "results/audit/aro_summary.json" in metric_files("aro")


def test_metrics_are_shown_without_dvc_on_path(monkeypatch, capfd):
    """``python -m common metrics`` from an unactivated venv: DVC runs as this interpreter's module."""
    import sys

    from common.reporting.report import CROSS_PAPER_METRICS, dvc_metrics_show

    monkeypatch.setenv("PATH", "/nonexistent")
    assert dvc_metrics_show([CROSS_PAPER_METRICS]) == 0, sys.executable
    assert "cross_paper_summary.json" in capfd.readouterr().out
