"""A new paper edits no file of ``common/``, and a team shares its build through a DVC remote (README "Data:
data.dvc and a DVC remote"), on one build of the toy paper of ``tests/toy_paper.py`` (a dvc.yaml, a sources file, a
set stage, a job builder and a table).

Clone A, a copy of the workspace with the toy paper added (its aggregate stage in the root dvc.yaml, its section in
params.yaml) and every file of ``common/`` unchanged, writes the toy stages' code deps with ``python -m common deps
--write`` (then checked, as a real paper's are) and builds with ``make repro PAPER=toy``: its data comes through the
checksum-verifying downloader, its fine-tune is a ``FinetuneJob`` launched by ``add_run_command``. A tracks a
full-profile file in ``data/full.dvc`` and pushes to a local-folder remote that its committed ``.dvc/config`` names.
Clone B, a fresh ``git clone`` of A, runs the same ``make repro PAPER=toy``: it pulls instead of building (no stage
runs), ``dvc status`` is clean, ``git status`` is clean and the results are A's bytes. Then the bad cases: an
unreachable remote and one that lacks the outputs each say so in one line, and the build falls back to reproducing.
One test, not two: each built the toy paper through DVC from a fresh copy (about a minute each).
"""
from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from common.paths import ROOT
from toy_paper import MIRROR, add_toy_paper
from workspace_copy import copy_env, copy_workspace, dvc

GIT_ID = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
          "GIT_COMMITTER_EMAIL": "t@example.org"}
TOY_STAGES = ("mini-set", "finetune-mini", "table-mini")


def _run(args: list[str], cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=1200)


def _make_repro(work: Path, env: dict, stamp: Path) -> subprocess.CompletedProcess:
    """``make repro PAPER=toy`` with this environment's venv. STAMP, the install marker, is touched just before, so
    it is newer than the copy's pyproject.toml (a fresh clone's files are new): make must never reinstall this
    environment's editable package from a throwaway copy."""
    venv = Path(sys.executable).parent.parent
    stamp.touch()
    os.utime(stamp)
    done = _run(["make", "repro", "PAPER=toy", f"VENV={venv}", f"STAMP={stamp}"], work, env)
    assert "pip install" not in done.stdout + done.stderr, "make reinstalled the test environment"
    return done


def _ran(output: str) -> list[str]:
    """The toy stages DVC ran (a ``foreach`` stage's item as its stage: ``finetune-mini@...``)."""
    return [stage for stage in TOY_STAGES if any(f"Running stage 'papers/toy/dvc.yaml:{stage}{end}" in output
                                                 for end in ("'", "@"))]


def _tree_digest(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def _git(work: Path, env: dict, *args: str) -> str:
    done = _run(["git", *args], work, env)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.pipeline
def test_a_toy_paper_builds_without_editing_common_and_a_fresh_clone_pulls_it_running_nothing(tmp_path):
    if not (MIRROR / "MANIFEST.tsv").is_file():
        pytest.skip(f"no mirror at {MIRROR}: data.dvc's inputs and the toy paper's file are fetched from it")
    if shutil.which("make") is None:
        pytest.skip("no make")
    env = copy_env()  # data.dvc tracks <ws>/data; the CPU profile's pins set (each stage starts once)
    env.update(GIT_ID, VLC_MIRROR=str(MIRROR), VLC_CACHE=str(tmp_path / "cache"))
    stamp = tmp_path / "installed"
    remote = tmp_path / "remote"

    a = copy_workspace(tmp_path / "a")
    common_before = _tree_digest(a / "common")
    toy = add_toy_paper(a)
    deps = [sys.executable, "-m", "common", "deps"]
    wrote = _run([*deps, "--write", "papers/toy/dvc.yaml"], a, env)
    assert wrote.returncode == 0, wrote.stdout + wrote.stderr
    written = (toy / "dvc.yaml").read_text()
    assert "common/training/job.py" in written and "common/registry/fetch.py" in written  # derived from the imports
    checked = _run(deps, a, env)
    assert "papers/toy/dvc.yaml" not in checked.stdout, checked.stdout
    built = _make_repro(a, env, stamp)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    assert "no DVC remote configured" in built.stdout
    assert _ran(built.stdout + built.stderr) == list(TOY_STAGES)
    with open(a / "results" / "toy" / "mini" / "table.csv", newline="") as fh:
        (row,) = list(csv.DictReader(fh))
    assert row["model"] == "toy/clip" and int(row["n"]) == 24 and 0.0 <= float(row["accuracy"]) <= 1.0
    manifest = json.loads((a / "build" / "mini" / "toy" / "set" / "manifest.json").read_text())
    assert manifest["released_examples"] > 0
    sidecar = json.loads((a / "build" / "mini" / "toy" / "models" / "clip.json").read_text())
    assert sidecar["trainer"]["steps"] == 3
    assert "toy/clip" in built.stdout  # the aggregate stage printed the table
    assert _tree_digest(a / "common") == common_before  # nothing of common/ was edited to add the paper
    assert dvc(a, env, "remote", "add", "-d", "team", str(remote)).returncode == 0
    tracked = _run([sys.executable, "-m", "common", "data", "track", "toy/swap_att.json"], a, env)
    assert tracked.returncode == 0 and "data/toy/swap_att.json" in tracked.stdout, tracked.stdout + tracked.stderr
    _git(a, env, "add", "-A")
    _git(a, env, "commit", "-qm", "toy paper built")
    assert _git(a, env, "status", "--porcelain") == ""
    pushed = dvc(a, env, "push", "data.dvc", "data/full.dvc", "papers/toy", "--with-deps")
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr

    b = tmp_path / "b"
    _git(tmp_path, env, "clone", "-q", str(a), str(b))
    pulled = _make_repro(b, env, stamp)
    output = pulled.stdout + pulled.stderr
    assert pulled.returncode == 0, output[-3000:]
    assert "pulled from DVC remote 'team'" in pulled.stdout, pulled.stdout
    assert _ran(output) == [], output[-3000:]  # every stage came from the remote
    assert dvc(b, env, "pull", "data/full.dvc").returncode == 0  # the full profile's data: pulled on demand
    status = dvc(b, env, "status", "data.dvc", "data/full.dvc", "papers/toy", "--with-deps")
    assert status.returncode == 0 and "up to date" in status.stdout.lower(), status.stdout
    assert _git(b, env, "status", "--porcelain") == ""
    for rel in ("results/toy/mini/table.csv", "build/mini/toy/models/clip.safetensors",
                "data/sugarcrepe/data/swap_att.json"):
        assert (b / rel).read_bytes() == (a / rel).read_bytes(), rel
    assert (b / "data/toy/swap_att.json").read_bytes() == (a / "data/toy/swap_att.json").read_bytes()

    # A remote that lacks the outputs: one line, then dvc repro builds them.
    shutil.rmtree(b / "build" / "mini" / "toy")
    shutil.rmtree(b / ".dvc" / "cache")
    empty = tmp_path / "empty-remote"
    empty.mkdir()
    assert dvc(b, env, "remote", "modify", "--local", "team", "url", str(empty)).returncode == 0
    lacking = _make_repro(b, env, stamp)
    assert lacking.returncode == 0, (lacking.stdout + lacking.stderr)[-3000:]
    (line,) = [x for x in lacking.stdout.splitlines() if "DVC remote" in x]
    assert "lacks" in line and "dvc repro builds those" in line, line
    # the set and the fine-tune are rebuilt; they come out the same bytes, so the table stage has nothing to redo
    assert _ran(lacking.stdout + lacking.stderr) == ["mini-set", "finetune-mini"]
    assert (b / "results/toy/mini/table.csv").read_bytes() == (a / "results/toy/mini/table.csv").read_bytes()

    # An unreachable remote: one line, and the build goes on.
    assert dvc(b, env, "remote", "modify", "--local", "team", "url", "http://127.0.0.1:9/remote").returncode == 0
    unreachable = _run([sys.executable, "-m", "common", "data", "pull", "toy"], b, env)
    assert unreachable.returncode == 0, unreachable.stderr
    (line,) = unreachable.stdout.splitlines()
    assert "unreachable or empty" in line and "127.0.0.1:9" in line and "building locally" in line, line
    # this environment's package still resolves to the workspace under test (from a neutral folder), not to a clone
    where = _run([sys.executable, "-c", "import common; print(common.__file__)"], tmp_path, env)
    assert Path(where.stdout.strip()).resolve().parent.parent == ROOT.resolve(), where.stdout + where.stderr
