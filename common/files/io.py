"""Atomic file writes, output groups and content hashing: an interrupted run never leaves a half-written file or a
mix of old and new outputs behind (docs/robustness.md, "Writers: all or nothing"). Only SIGKILL (or a power cut) can
leave a staging folder behind: git ignores it and the next output group written into the same folder removes it.
"""
from __future__ import annotations

import contextlib
import csv
import errno
import hashlib
import io
import json
import os
import re
import shutil
import socket
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from common.errors import OutputError, sigterm_as_interrupt


class DiskFull(OutputError, OSError):
    """A file that could not be written for lack of space or quota: one line naming it (an ``OutputError``), and
    still the ``OSError`` it was (errno, filename), so that an output group and a caller handling write errors see
    what they saw before."""

    def __init__(self, dest: Path, exc: OSError) -> None:
        super().__init__(exc.errno, exc.strerror, exc.filename)
        self.message = (f"cannot write {dest}: disk full ({exc.strerror}). Nothing was replaced: the previous "
                        f"{dest.name}, if any, is unchanged. Free some space, then rerun.")

    def __str__(self) -> str:
        return self.message


@contextlib.contextmanager
def atomic_path(dest: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``dest``; move it onto ``dest`` only if the block succeeds. A full disk (or
    quota) is a ``DiskFull`` naming ``dest``; the temporary file never stays behind."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    mask = os.umask(0)  # read by setting it: restored at once
    os.umask(mask)
    os.fchmod(fd, 0o666 & ~mask)  # mkstemp makes 0600; a result file gets the permissions of any other file
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, dest)
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT) and not isinstance(exc, DiskFull):
            raise DiskFull(dest, exc) from exc
        raise
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS})
"""OSErrors that only a write raises (disk full, quota, file too large, read-only file system)."""


@contextlib.contextmanager
def output_group(dest_dir: str | os.PathLike) -> Iterator[Path]:
    """Yield an empty staging folder beside ``dest_dir``'s contents, whose entries (a folder as a whole) replace their
    namesakes there together when the block succeeds, none when it raises or a move fails, others never
    (docs/robustness.md, "Writers: all or nothing"). A write failing for lack of space or permission is an
    ``OutputError`` naming ``dest_dir``. The staging folder's name holds this process's id and host, so that
    ``clean_leftovers`` never removes a live writer's."""
    dest_dir = Path(dest_dir)
    with sigterm_as_interrupt():
        try:
            dest_dir.mkdir(parents=True, exist_ok=True)
            clean_leftovers(dest_dir)
            staging = Path(tempfile.mkdtemp(prefix=f".staging.{_owner_tag()}.", dir=dest_dir))
        except OSError as exc:
            raise _output_error(dest_dir, exc) from exc
        try:
            try:
                yield staging
            except OSError as exc:
                if exc.errno in WRITE_ERRNOS or _inside(exc.filename, staging) or _inside(exc.filename2, staging):
                    raise _output_error(dest_dir, exc) from exc
                raise
            _commit(staging, dest_dir)
        finally:
            shutil.rmtree(staging, ignore_errors=True)


LEFTOVER_RE = re.compile(r"^\.(?:staging|previous)\.(?:(?P<pid>\d+)-(?P<host>[A-Za-z0-9_-]*)\.)?[^/]+$")
"""A staging folder (``.staging.``) or a set-aside previous group (``.previous.``), with its writer's id when it has one
(folders written before the id was part of the name have none)."""
UNOWNED_LEFTOVER_AGE_S = 3600.0
"""A leftover without a writer's id is removed once untouched this long (no writer takes an hour to write a group)."""


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", socket.gethostname())[:40]


def _owner_tag() -> str:
    return f"{os.getpid()}-{_host()}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def clean_leftovers(dest_dir: Path) -> list[Path]:
    """Remove the staging and set-aside folders a killed writer left in ``dest_dir`` (its pid, on this host, no longer
    runs; without a writer's id: untouched for ``UNOWNED_LEFTOVER_AGE_S``); return them."""
    removed = []
    try:
        entries = list(os.scandir(dest_dir))
    except OSError:
        return removed
    for entry in entries:
        match = LEFTOVER_RE.match(entry.name)
        if not match or not entry.is_dir(follow_symlinks=False):
            continue
        if match["pid"] is not None:
            stale = match["host"] == _host() and int(match["pid"]) != os.getpid() and not _alive(int(match["pid"]))
        else:
            try:
                stale = time.time() - entry.stat(follow_symlinks=False).st_mtime > UNOWNED_LEFTOVER_AGE_S
            except OSError:
                stale = False
        if stale:
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(Path(entry.path))
    return removed


def staged_to_final(path: str | os.PathLike, staging: Path, dest_dir: str | os.PathLike) -> Path:
    """Where ``path`` (written under ``staging``) lies once the group is in place."""
    path = Path(path)
    try:
        return Path(dest_dir) / path.relative_to(staging)
    except ValueError:
        return path


def _inside(name: object, folder: Path) -> bool:
    if not isinstance(name, (str, bytes, os.PathLike)):
        return False
    try:
        return Path(os.fsdecode(name)).resolve().is_relative_to(folder.resolve())
    except (OSError, ValueError):
        return False


def _output_error(dest_dir: Path, exc: OSError) -> OutputError:
    what = "disk full" if exc.errno in (errno.ENOSPC, errno.EDQUOT) else (exc.strerror or str(exc))
    where = f" ({os.fsdecode(exc.filename)})" if isinstance(exc.filename, (str, bytes, os.PathLike)) else ""
    return OutputError(
        f"cannot write the outputs into {dest_dir}: {what}{where}. Nothing there was replaced: the previous "
        f"outputs are unchanged. Free some space or make {dest_dir} writable, then rerun."
    )


def _commit(staging: Path, dest_dir: Path) -> None:
    """Move every entry of ``staging`` onto its namesake in ``dest_dir``; all or (after a failure) none."""
    entries = sorted(staging.iterdir())
    if not entries:
        return
    try:
        backup = Path(tempfile.mkdtemp(prefix=f".previous.{_owner_tag()}.", dir=dest_dir))
    except OSError as exc:
        raise _output_error(dest_dir, exc) from exc
    done: list[tuple[Path, Path | None]] = []  # (destination, its previous version or None)
    try:
        for entry in entries:
            dest = dest_dir / entry.name
            saved = backup / entry.name if dest.exists() or dest.is_symlink() else None
            if saved is not None and dest.is_dir() and not dest.is_symlink():
                os.replace(dest, saved)  # a folder cannot be replaced in one step: set it aside first
            elif saved is not None:
                try:
                    os.link(dest, saved, follow_symlinks=False)  # the file stays in place until replaced
                except OSError:
                    shutil.copy2(dest, saved, follow_symlinks=False)
            try:
                os.replace(entry, dest)
            except BaseException:
                if saved is not None and not dest.exists():
                    os.replace(saved, dest)
                raise
            done.append((dest, saved))
    except BaseException as exc:
        for dest, saved in reversed(done):  # put the previous group back
            if saved is not None:
                if dest.is_dir() and not dest.is_symlink():
                    shutil.rmtree(dest)
                os.replace(saved, dest)
            else:
                shutil.rmtree(dest) if dest.is_dir() and not dest.is_symlink() else dest.unlink()
        if isinstance(exc, OSError):
            raise _output_error(dest_dir, exc) from exc
        raise
    finally:
        shutil.rmtree(backup, ignore_errors=True)


def write_output_group(dest_dir: str | os.PathLike, write: Callable[[Path], Mapping[str, Path]]) -> dict[str, Path]:
    """``write(staging)`` as one output group of ``dest_dir`` (all its files appear together or none do); the paths
    ``write`` returned, as they are after the move."""
    dest_dir = Path(dest_dir)
    with output_group(dest_dir) as staging:
        paths = write(staging)
    return {k: staged_to_final(p, staging, dest_dir) for k, p in paths.items()}


def write_bytes_atomic(dest: str | os.PathLike, data: bytes) -> Path:
    with atomic_path(dest) as tmp:
        tmp.write_bytes(data)
    return Path(dest)


def write_text_atomic(dest: str | os.PathLike, text: str) -> Path:
    return write_bytes_atomic(dest, text.encode("utf-8"))


def write_json_atomic(dest: str | os.PathLike, obj: Any, indent: int = 2) -> Path:
    return write_text_atomic(dest, json.dumps(obj, indent=indent, sort_keys=False, ensure_ascii=False) + "\n")


def write_csv_atomic(
    dest: str | os.PathLike, rows: Iterable[Mapping[str, Any]], fieldnames: Sequence[str]
) -> Path:
    """Rows as CSV with "\\n" line ends, written atomically. The csv module quotes only the line terminator's
    characters, so a row holding a carriage return (an item id from someone's JSON keys) is written fully quoted:
    otherwise it would read back as two rows."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(fieldnames), lineterminator="\n")
    quoted = csv.DictWriter(buf, fieldnames=list(fieldnames), lineterminator="\n", quoting=csv.QUOTE_ALL)
    writer.writeheader()
    for row in rows:
        values = {k: row.get(k, "") for k in fieldnames}
        carriage_return = any("\r" in str(value) for value in values.values())
        (quoted if carriage_return else writer).writerow(values)
    return write_text_atomic(dest, buf.getvalue())


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()
