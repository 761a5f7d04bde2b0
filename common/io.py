"""Atomic file writes and content hashing.

Every result the workspace produces goes through these helpers so that an interrupted run never
leaves a half-written file behind: data is written to a temporary file in the destination folder
and moved into place with ``os.replace`` (atomic on POSIX).
"""
from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence


@contextlib.contextmanager
def atomic_path(dest: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``dest``; move it onto ``dest`` only if the block succeeds."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; a result file gets the permissions of any other file
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, dest)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


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
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(fieldnames), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: row.get(k, "") for k in fieldnames})
    return write_text_atomic(dest, buf.getvalue())


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_file(path: str | os.PathLike, chunk_size: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(chunk_size), b""):
            digest.update(chunk)
    return digest.hexdigest()
