"""SIGTERM (what ``timeout``, CI and schedulers send) is handled like Ctrl-C, and a killed run's staging folder is
ignored by git and cleaned by the next run (issue 35, item 6).

Real child processes: each opens an output group (``common.files.io.output_group``) over previous outputs, writes into it,
says so, and waits to be signalled.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from common.files.io import output_group, write_text_atomic
from common.paths import ROOT

CHILD = """
import sys, time
from pathlib import Path
from common.errors import run_entry_point
from common.files.io import output_group, write_text_atomic

def main():
    out, ready = Path(sys.argv[1]), Path(sys.argv[2])
    with output_group(out) as staging:
        write_text_atomic(staging / "table.csv", "new table\\n")
        write_text_atomic(staging / "metrics" / "a.json", "new\\n")
        ready.write_text(str(staging))
        time.sleep(120)
    return 0

if sys.argv[3] == "entry-point":
    raise SystemExit(run_entry_point(main))
main()
"""


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith((".staging.", ".previous.")))


@pytest.fixture
def previous(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    write_text_atomic(out / "table.csv", "old table\n")
    write_text_atomic(out / "metrics" / "a.json", "old\n")
    return out


def start_writer(out: Path, ready: Path, how: str = "entry-point") -> tuple[subprocess.Popen, Path]:
    """A child inside an output group over ``out``; returns it and its staging folder once it has written there."""
    env = {k: v for k, v in os.environ.items() if k != "VLC_DEBUG"}
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(out), str(ready), how], cwd=ROOT, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (ready.is_file() and ready.read_text()):
        if child.poll() is not None or time.monotonic() > deadline:
            child.kill()
            raise AssertionError(f"the child did not start: {child.communicate()}")
        time.sleep(0.05)
    staging = Path(ready.read_text())
    assert staging.is_dir() and (staging / "table.csv").is_file()
    return child, staging


@pytest.mark.parametrize("how", ["entry-point", "bare"])
def test_sigterm_removes_the_staging_folder_and_keeps_the_previous_outputs(previous, tmp_path, how):
    """Through ``run_entry_point`` (every stage): exit 143 and one ``error:`` line; without it (a script that does not
    use the wrapper), the output group still cleans up."""
    before = snapshot(previous)
    child, staging = start_writer(previous, tmp_path / "ready", how)
    child.send_signal(signal.SIGTERM)
    _, stderr = child.communicate(timeout=60)
    assert not staging.exists() and leftovers(previous) == []
    assert snapshot(previous) == before
    if how == "entry-point":
        assert child.returncode == 143, (child.returncode, stderr)
        assert stderr.splitlines() == ["error: terminated (SIGTERM); the outputs being written were discarded"], stderr
    else:
        assert child.returncode != 0


def test_sigkill_leaves_a_staging_folder_that_git_ignores_and_the_next_run_cleans(previous, tmp_path):
    before = snapshot(previous)
    child, staging = start_writer(previous, tmp_path / "ready")
    child.kill()  # SIGKILL: nothing can clean up
    child.communicate(timeout=60)
    assert staging.exists() and snapshot(previous) == {**before, **{
        str((staging / name).relative_to(previous)): data for name, data in snapshot(staging).items()}}
    # git ignores it wherever a writer's output folder is (results/audit/ is one)
    for where in (f"results/audit/{staging.name}", f"results/audit/{staging.name}/table.csv",
                  f"results/bivlc/mini/{staging.name}/metrics/a.json"):
        check = subprocess.run(["git", "check-ignore", "--no-index", "-q", where], cwd=ROOT)
        assert check.returncode == 0, f"{where} is not ignored by .gitignore"
    with output_group(previous) as mine:  # the next run of the same writer
        write_text_atomic(mine / "table.csv", "newer table\n")
    assert not staging.exists() and leftovers(previous) == []
    assert (previous / "table.csv").read_text() == "newer table\n"


def test_a_live_writers_staging_folder_is_left_alone(previous, tmp_path):
    """Two writers at once (concurrent audits): the second never removes the first one's staging folder."""
    child, staging = start_writer(previous, tmp_path / "ready")
    try:
        with output_group(previous) as mine:
            write_text_atomic(mine / "table.csv", "from the second writer\n")
        assert staging.is_dir() and (staging / "table.csv").read_text() == "new table\n"
    finally:
        child.send_signal(signal.SIGTERM)
        child.communicate(timeout=60)
    assert not staging.exists()
    assert (previous / "table.csv").read_text() == "from the second writer\n"
