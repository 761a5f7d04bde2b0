"""``common.files.io.output_group``: a stage's outputs replace the previous ones as a group, or not at all.

Group semantics (files and folders, stale files of a folder removed, untouched neighbours), an exception or a
KeyboardInterrupt in the block, a move failing half-way (rolled back), permissions (those of ``atomic_path``),
disk full (ENOSPC) and a read-only destination: ``OutputError`` naming the destination, previous outputs intact;
SIGTERM handled as Ctrl-C, and the leftovers of a killed writer removed by the next group (never a live writer's).
"""
from __future__ import annotations

import errno
import io
import os
import stat
import time
from pathlib import Path

import pytest

from common.errors import OutputError, WorkspaceError
from common.files import io as cio
from common.files.io import output_group, staged_to_final, write_json_atomic, write_text_atomic


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def previous(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    write_text_atomic(out / "table.csv", "old table\n")
    write_text_atomic(out / "report.md", "old report\n")
    write_text_atomic(out / "metrics" / "a.json", "{}\n")
    write_text_atomic(out / "metrics" / "dropped.json", "{}\n")
    write_text_atomic(out / "unrelated.txt", "not an output of this stage\n")
    return out


def no_leftovers(out: Path) -> None:
    assert not [p.name for p in out.iterdir() if p.name.startswith((".staging.", ".previous."))]


def test_outputs_replace_the_previous_ones_as_a_group(previous: Path) -> None:
    with output_group(previous) as staging:
        assert staging.parent == previous and not any(staging.iterdir())
        table = write_text_atomic(staging / "table.csv", "new table\n")
        write_text_atomic(staging / "report.md", "new report\n")
        write_json_atomic(staging / "metrics" / "a.json", {"acc": 1})
        assert (previous / "table.csv").read_text() == "old table\n"  # nothing moves before the block ends
    assert staged_to_final(table, staging, previous) == previous / "table.csv"
    assert snapshot(previous) == {
        "metrics/a.json": b'{\n  "acc": 1\n}\n',  # the folder is replaced as a whole: dropped.json is gone
        "report.md": b"new report\n", "table.csv": b"new table\n",
        "unrelated.txt": b"not an output of this stage\n",  # not written by the block: untouched
    }
    assert not staging.exists()
    no_leftovers(previous)


def test_new_destination_is_created(tmp_path: Path) -> None:
    with output_group(tmp_path / "a" / "b") as staging:
        write_text_atomic(staging / "x.txt", "x")
    assert (tmp_path / "a" / "b" / "x.txt").read_text() == "x"


@pytest.mark.parametrize("exc", [RuntimeError("stage failed"), KeyboardInterrupt()])
def test_failure_or_interrupt_leaves_previous_outputs(previous: Path, exc: BaseException) -> None:
    before = snapshot(previous)
    with pytest.raises(type(exc)):
        with output_group(previous) as staging:
            write_text_atomic(staging / "table.csv", "new table\n")
            write_text_atomic(staging / "metrics" / "a.json", "new\n")
            raise exc
    assert snapshot(previous) == before
    assert not staging.exists()
    no_leftovers(previous)


def test_move_failing_half_way_is_rolled_back(previous: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = snapshot(previous)
    real_replace = os.replace

    def replace(src, dst, *args, **kwargs):
        if Path(dst).name == "table.csv" and Path(src).parent.name.startswith(".staging."):
            raise OSError(errno.ENOSPC, "No space left on device", str(dst))
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(cio.os, "replace", replace)
    with pytest.raises(OutputError) as info:
        with output_group(previous) as staging:
            write_text_atomic(staging / "metrics" / "a.json", "new\n")  # moved first (sorted), then put back
            write_text_atomic(staging / "report.md", "new report\n")
            write_text_atomic(staging / "table.csv", "new table\n")
    assert str(previous) in str(info.value) and "disk full" in str(info.value) and "unchanged" in str(info.value)
    assert snapshot(previous) == before
    no_leftovers(previous)


def test_disk_full_while_writing(previous: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = snapshot(previous)

    def full(self, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OutputError) as info:
        with output_group(previous) as staging:
            write_text_atomic(staging / "report.md", "new report\n")
            monkeypatch.setattr(Path, "write_bytes", full)
            write_text_atomic(staging / "table.csv", "new table\n")
    assert isinstance(info.value, WorkspaceError)
    assert f"cannot write the outputs into {previous}: disk full" in str(info.value)
    assert snapshot(previous) == before
    no_leftovers(previous)


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EDQUOT])
@pytest.mark.parametrize("fails", ["write", "replace"])
def test_a_full_disk_outside_a_group_names_the_file_and_keeps_the_old_one(previous: Path, monkeypatch, err: int,
                                                                          fails: str) -> None:
    """An atomic write alone (no output group): one line naming the file, saying the disk is full and that the
    previous file is unchanged; the old file intact and no temporary file left, whether the write or the move fails."""
    real_write = Path.write_bytes

    def write(self, data):
        real_write(self, data[:3])  # part written, then the disk is full
        raise OSError(err, os.strerror(err))

    def replace(src, dst, *args, **kwargs):
        raise OSError(err, os.strerror(err), str(src), None, str(dst))

    monkeypatch.setattr(*((Path, "write_bytes", write) if fails == "write" else (cio.os, "replace", replace)))
    with pytest.raises(OutputError) as info:
        write_text_atomic(previous / "table.csv", "new table\n")
    assert str(info.value) == (f"cannot write {previous / 'table.csv'}: disk full ({os.strerror(err)}). Nothing was "
                               "replaced: the previous table.csv, if any, is unchanged. Free some space, then rerun.")
    assert isinstance(info.value, OSError) and info.value.errno == err  # still the OSError a caller may handle
    monkeypatch.undo()
    assert (previous / "table.csv").read_text() == "old table\n"
    assert not [p.name for p in previous.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("what", ["resume", "weights"])
def test_a_full_disk_during_torch_save_is_the_same_one_line_error(tmp_path: Path, monkeypatch, what: str) -> None:
    """``save_resume`` and ``save_weights``: torch's and safetensors' bytes go through a Python file, so the disk's
    OSError reaches ``atomic_path`` (on a full tmpfs, safetensors' own ``save_file`` raised a ``SafetensorError``)."""
    # deferred: only this test needs torch
    import torch

    from common.training import checkpoint

    save, load = {"resume": (checkpoint.save_resume, checkpoint.load_resume),
                  "weights": (checkpoint.save_weights, checkpoint.load_weights)}[what]
    first = {"step": torch.ones(1)}
    path = save(tmp_path / f"{what}.bin", first)

    class Full(io.BytesIO):
        def write(self, data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(checkpoint, "open", lambda *args, **kwargs: Full(), raising=False)
    with pytest.raises(OutputError) as info:
        save(path, {"step": torch.full((1,), 2.0), "weights": torch.zeros(1000)})
    assert str(info.value).startswith(f"cannot write {path}: disk full (No space left on device). Nothing was "
                                      f"replaced: the previous {what}.bin, if any, is unchanged.")
    monkeypatch.undo()
    assert torch.equal(load(path)["step"], first["step"])
    assert [p.name for p in tmp_path.iterdir()] == [f"{what}.bin"]


def test_weights_are_the_bytes_safetensors_writes(tmp_path: Path) -> None:
    """``save_weights`` writes ``safetensors.torch.save_file``'s bytes (the mini CLIPs' committed hashes hold)."""
    # deferred: only this test needs torch
    import torch
    from safetensors.torch import save_file

    from common.training import checkpoint

    state = {"b": torch.arange(6.0).reshape(2, 3), "a": torch.ones(4, dtype=torch.float16)}
    save_file(state, str(tmp_path / "reference.safetensors"))
    ours = checkpoint.save_weights(tmp_path / "ours.safetensors", state)
    assert ours.read_bytes() == (tmp_path / "reference.safetensors").read_bytes()


def test_unrelated_oserror_is_not_disguised(previous: Path) -> None:
    with pytest.raises(FileNotFoundError):
        with output_group(previous):
            open(previous.parent / "missing-input.csv").read()


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root ignores directory permissions")
def test_read_only_destination(previous: Path) -> None:
    before = snapshot(previous)
    previous.chmod(0o555)
    try:
        with pytest.raises(OutputError) as info:
            with output_group(previous) as staging:
                write_text_atomic(staging / "table.csv", "new table\n")
    finally:
        previous.chmod(0o755)
    assert str(previous) in str(info.value)
    assert snapshot(previous) == before


def test_read_only_destination_simulated(previous: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same as above where the tests run as root (permissions not enforced): mkdtemp refused."""
    before = snapshot(previous)

    def refused(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", str(previous))

    monkeypatch.setattr(cio.tempfile, "mkdtemp", refused)
    with pytest.raises(OutputError) as info:
        with output_group(previous):
            pass
    assert str(previous) in str(info.value) and "Permission denied" in str(info.value)
    assert snapshot(previous) == before


def test_permissions_are_those_of_any_file(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        with output_group(tmp_path / "out") as staging:
            write_text_atomic(staging / "a.txt", "a")
            write_text_atomic(staging / "sub" / "b.txt", "b")
    finally:
        os.umask(old)
    for path in (tmp_path / "out" / "a.txt", tmp_path / "out" / "sub" / "b.txt"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o644, path
    assert stat.S_IMODE((tmp_path / "out" / "sub").stat().st_mode) == 0o755


# ----------------------------------------------------------------------------------------------------------------
# leftovers of a killed run (issue 35, item 6; the real SIGTERM/SIGKILL children are in test_signals.py)
# ----------------------------------------------------------------------------------------------------------------
def _dead_pid() -> int:
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_leftovers_of_a_dead_writer_are_removed_by_the_next_group(previous: Path) -> None:
    host = cio._host()
    dead = _dead_pid()
    stale = [previous / f".staging.{dead}-{host}.abc123", previous / f".previous.{dead}-{host}.def456"]
    old_style = previous / ".staging.k2j4h5g6"  # named before the writer's id was part of the name
    kept = {
        "other host": previous / f".staging.{dead}-another-machine.aaa111",
        "live writer": previous / f".staging.{os.getppid()}-{host}.bbb222",
        "recent, no id": previous / ".staging.recent99",
    }
    for folder in [*stale, old_style, *kept.values()]:
        write_text_atomic(folder / "table.csv", "half-written\n")
    hour_ago = time.time() - cio.UNOWNED_LEFTOVER_AGE_S - 60
    os.utime(old_style, (hour_ago, hour_ago))
    with output_group(previous) as staging:
        assert f".staging.{os.getpid()}-{host}." in staging.name
        write_text_atomic(staging / "table.csv", "new table\n")
    assert not any(p.exists() for p in [*stale, old_style])
    assert all(p.is_dir() for p in kept.values()), {k: p.exists() for k, p in kept.items()}
    assert (previous / "table.csv").read_text() == "new table\n"


def test_a_sigterm_inside_the_block_is_an_interrupt_that_cleans_up(previous: Path) -> None:
    """In-process: SIGTERM raises ``Terminated`` (a KeyboardInterrupt) in the block; nothing moves, nothing is left."""
    import signal

    from common.errors import Terminated

    before = snapshot(previous)
    with pytest.raises(Terminated):
        with output_group(previous) as staging:
            write_text_atomic(staging / "table.csv", "new table\n")
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler raises before this ends
    assert snapshot(previous) == before and not staging.exists()
    no_leftovers(previous)
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # restored after the block
