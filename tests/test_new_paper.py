"""A new paper edits no file of ``common/``: a toy paper package (``tests/toy_paper.py``: a dvc.yaml, a sources file,
a set stage, a job builder and a table) added to a throwaway copy of the workspace, with its aggregate stage in the
root dvc.yaml and its section in params.yaml, runs through ``dvc repro papers/toy`` with every file of ``common/``
unchanged. Its stages' code deps are written by ``python -m common deps --write`` and then checked, as a real
paper's are; its data comes through the checksum-verifying downloader; its fine-tune is a ``FinetuneJob`` launched
by ``add_run_command``."""
from __future__ import annotations

import csv
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from toy_paper import MIRROR, add_toy_paper
from workspace_copy import copy_workspace, dvc


def _tree_digest(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


@pytest.mark.slow
def test_a_toy_paper_runs_through_dvc_without_editing_common(tmp_path):
    if not (MIRROR / "MANIFEST.tsv").is_file():
        pytest.skip(f"no mirror at {MIRROR}: the toy paper fetches one released file from it")
    work = copy_workspace(tmp_path / "ws")
    common_before = _tree_digest(work / "common")
    toy = add_toy_paper(work)

    env = {**os.environ, "VLC_MIRROR": str(MIRROR), "VLC_DATA": str(tmp_path / "data"),
           "VLC_CACHE": str(tmp_path / "cache"), "VLC_BUILD": str(work / "build")}
    python = [sys.executable, "-m", "common", "deps"]
    wrote = subprocess.run([*python, "--write", "papers/toy/dvc.yaml"], cwd=work, env=env, capture_output=True,
                           text=True)
    assert wrote.returncode == 0, wrote.stdout + wrote.stderr
    written = (toy / "dvc.yaml").read_text()
    assert "common/training/job.py" in written and "common/registry/fetch.py" in written  # derived from the imports
    checked = subprocess.run(python, cwd=work, env=env, capture_output=True, text=True)
    assert "papers/toy/dvc.yaml" not in checked.stdout, checked.stdout

    repro = dvc(work, env, "repro", "papers/toy")
    assert repro.returncode == 0, repro.stdout[-3000:] + repro.stderr[-3000:]
    with open(work / "results" / "toy" / "mini" / "table.csv", newline="") as fh:
        (row,) = list(csv.DictReader(fh))
    assert row["model"] == "toy/clip" and int(row["n"]) == 24 and 0.0 <= float(row["accuracy"]) <= 1.0
    manifest = json.loads((work / "build" / "mini" / "toy" / "set" / "manifest.json").read_text())
    assert manifest["released_examples"] > 0
    sidecar = json.loads((work / "build" / "mini" / "toy" / "models" / "clip.json").read_text())
    assert sidecar["trainer"]["steps"] == 3
    assert "toy/clip" in repro.stdout  # the aggregate stage printed the table
    assert _tree_digest(work / "common") == common_before  # nothing of common/ was edited to add the paper
    status = dvc(work, env, "status", "papers/toy")
    assert "up to date" in status.stdout.lower() or status.stdout.strip() == "", status.stdout
