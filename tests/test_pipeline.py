"""End to end through DVC: `dvc repro papers/sugarcrepe` on a copy of the workspace with tiny settings.

Proves the wiring of dvc.yaml (world -> training -> Table 6 -> audit -> report) and that a second
`dvc repro` is a no-op. Sizes are tiny so this takes about a minute; the numbers mean nothing.
"""
from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from common.paths import ROOT

IGNORED = {".venv", ".git", "build", "data", ".cache", "__pycache__", ".pytest_cache", ".ipynb_checkpoints"}


def _copy_workspace(dest: Path) -> Path:
    def ignore(folder: str, names: list[str]) -> set[str]:
        rel = Path(folder).relative_to(ROOT)
        skip = {n for n in names if n in IGNORED}
        if rel == Path(".dvc"):
            skip |= {n for n in names if n in ("cache", "tmp")}
        if rel == Path("results"):
            skip |= {n for n in names if n not in ("published",)}
        return skip

    shutil.copytree(ROOT, dest, ignore=ignore)
    subprocess.run(["git", "init", "-q"], cwd=dest, check=True)
    return dest


def _tiny_params(workspace: Path) -> None:
    path = workspace / "params.yaml"
    params = yaml.safe_load(path.read_text())
    params["profile"] = "mini"
    params["mini"]["world"].update(train_images=256, sugarcrepe_per_category=6)
    for name, recipe in params["train"].items():
        recipe.update(n_images=min(recipe["n_images"], 256), steps=3, batch_size=32)
    path.write_text(yaml.safe_dump(params, sort_keys=False))


def _dvc(workspace: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    dvc = Path(sys.executable).with_name("dvc")
    return subprocess.run([str(dvc), *args], cwd=workspace, env=env, capture_output=True, text=True, timeout=900)


@pytest.mark.slow
def test_dvc_repro_sugarcrepe_mini_end_to_end(tmp_path, mirror):
    workspace = _copy_workspace(tmp_path / "ws")
    _tiny_params(workspace)
    env = {k: v for k, v in os.environ.items() if k not in ("VLC_BUILD", "VLC_DATA")}
    env["VLC_CACHE"] = str(tmp_path / "cache")
    env["VLC_MIRROR"] = str(mirror)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"

    first = _dvc(workspace, env, "repro", "papers/sugarcrepe")
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    for stage in ("mini/world", "mini/sugarcrepe", "mini/train@xs-2k", "mini/train@s-32k",
                  "papers/sugarcrepe/dvc.yaml:table6", "papers/sugarcrepe/dvc.yaml:audit", "papers/sugarcrepe"):
        assert f"Running stage '{stage}'" in first.stdout, stage

    results = workspace / "results" / "sugarcrepe" / "mini"
    rows = list(csv.DictReader(open(results / "table6.csv")))
    assert [r["model"] for r in rows] == ["mini/xs-2k", "mini/xs-8k", "mini/xs-32k", "mini/s-32k"]
    metrics = json.loads((results / "table6_metrics.json").read_text())
    assert metrics["context"]["dataset"]["world_version"].startswith("miniworld-")
    assert all(metrics["models"][m]["n"]["swap_obj"] == 6 for m in metrics["models"])
    assert len(list((results / "predictions").glob("*.csv"))) == 4
    audit = (workspace / "results" / "audit" / "sugarcrepe.md").read_text()
    assert "mini profile: not comparable" in audit
    assert "table:" in first.stdout and "table6.csv" in first.stdout  # the report stage printed locations

    second = _dvc(workspace, env, "repro", "papers/sugarcrepe")
    assert second.returncode == 0, second.stderr[-3000:]
    assert "Data and pipelines are up to date." in second.stdout
    assert "Running stage" not in second.stdout

    shown = _dvc(workspace, env, "metrics", "show")
    assert shown.returncode == 0 and "table6_metrics.json" in shown.stdout


def test_full_profile_wiring(tmp_path):
    """Under profile: full, papers/sugarcrepe depends on the fetched data (data.dvc) and the real zoo,
    not on the mini world (checked with `dvc dag`, which builds the graph without running anything)."""
    workspace = _copy_workspace(tmp_path / "ws")
    path = workspace / "params.yaml"
    params = yaml.safe_load(path.read_text())
    params["profile"] = "full"
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    dag = _dvc(workspace, env, "dag", "--dot", "papers/sugarcrepe")
    assert dag.returncode == 0, dag.stderr
    for node in ("full/sugarcrepe", "full/zoo", "data.dvc", "papers/sugarcrepe/dvc.yaml:table6",
                 "papers/sugarcrepe/dvc.yaml:audit"):
        assert node in dag.stdout, node
    assert "mini/" not in dag.stdout
