"""Zip archives extracted all or nothing (no member may escape its folder), with a marker that later fetches check
the folder against."""
from __future__ import annotations

import datetime as _dt
import logging
import os
import re
import shutil
import tempfile
import zipfile
from pathlib import Path, PurePosixPath
from typing import Any, Mapping

from common.files.io import write_json_atomic
from common.registry.errors import DownloadError, UnsafeArchiveError
from common.registry.markers import EXTRACT_MARKER
from common.registry.sources import Source

log = logging.getLogger(__name__)


def extraction_shortfall(out_dir: Path, recorded: Mapping[str, Any]) -> str:
    """What the extracted folder lacks of what its marker says the archive held ("" when nothing): fewer files than
    its ``files`` (or, in a marker written before that count, fewer files and folders than its ``members``). A count,
    not a hash of every file: it runs on every fetch, over folders of a hundred thousand images."""
    want_files, want_members = recorded.get("files"), recorded.get("members")
    if not isinstance(want_files, int) and not isinstance(want_members, int):
        return ""
    files = folders = 0
    for folder, dirs, names in os.walk(out_dir):
        folders += len(dirs)
        files += sum(1 for name in names if not (folder == str(out_dir) and name == EXTRACT_MARKER))
    if isinstance(want_files, int):
        return f"{files} of the archive's {want_files} files are there" if files < want_files else ""
    return (f"{files + folders} of the archive's {want_members} members are there"
            if files + folders < want_members else "")


def extract_zip(source: Source, archive: Path, out_dir: Path, archive_sha: str) -> None:
    """Extract into a temporary sibling, refusing escaping members, then rename into place with a marker."""
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", suffix=".extract", dir=out_dir.parent))
    old: Path | None = None
    try:
        staging_abs = os.path.abspath(staging)
        try:
            with zipfile.ZipFile(archive) as zf:
                members = zf.infolist()
                for member in members:
                    name = member.filename
                    target = os.path.abspath(os.path.join(staging, name))
                    unsafe = (
                        name.startswith(("/", "\\"))
                        or "\\" in name
                        or re.match(r"^[A-Za-z]:", name) is not None
                        or ".." in PurePosixPath(name).parts
                        or os.path.commonpath([staging_abs, target]) != staging_abs
                    )
                    if unsafe:
                        raise UnsafeArchiveError(
                            f"{source.key}: archive {archive} has member {name!r} that would be written outside "
                            f"{out_dir}; refusing to extract anything"
                        )
                    if (member.external_attr >> 16) & 0o170000 == 0o120000:
                        raise UnsafeArchiveError(
                            f"{source.key}: archive {archive} has symlink member {name!r}; refusing to extract"
                        )
                for member in members:
                    zf.extract(member, staging)
        except zipfile.BadZipFile as exc:
            raise DownloadError(f"{source.key}: {archive} is not a valid zip archive: {exc}") from exc
        write_json_atomic(staging / EXTRACT_MARKER, {
            "key": source.key,
            "archive": source.dest,
            "archive_sha256": archive_sha,
            "members": len(members),
            "files": len({member.filename for member in members if not member.is_dir()}),
            "extracted": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
        })
        if out_dir.exists():  # --force: move the old tree aside first so the rename stays atomic
            old = out_dir.with_name(f".{out_dir.name}.old-{os.getpid()}")
            os.replace(out_dir, old)
        os.replace(staging, out_dir)
        log.info("%s: extracted %d member(s) of %s into %s", source.key, len(members), archive, out_dir)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
        if old is not None and old.exists():
            shutil.rmtree(old, ignore_errors=True)
