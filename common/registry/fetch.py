"""``fetch`` and ``fetch_group``: a registry entry made a verified local path, from what is in place, the mirror or
the network (``http``, ``archives``, ``hub``), recording unpinned hashes in the lock; ``check_md5``: a file against
the md5 its entry states (its publisher's), for the modules that read it."""
from __future__ import annotations

import hashlib
import logging
import os
import shutil
from pathlib import Path, PurePosixPath
from typing import Any, Literal, Mapping

from common import paths
from common.files.io import atomic_path, sha256_file
from common.registry.archives import extract_zip, extraction_shortfall
from common.registry.errors import (
    ChecksumError, DownloadError, FetchError, IncompleteExtractionError, ManualDownloadRequired)
from common.registry.http import HTTP_TIMEOUT_S, http_download
from common.registry.hub import fetch_snapshot
from common.registry.lock import ChecksumLock
from common.registry.markers import EXTRACT_MARKER, read_marker
from common.registry.mirror import Mirror, mirror_path
from common.registry.sources import Source, get_source, sources_in_group

log = logging.getLogger(__name__)


def md5_file(path: str | os.PathLike[str]) -> str:
    """A file's md5, to compare with the one its publisher states (``Source.md5``); the workspace's own checks are
    sha256."""
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, lambda: hashlib.md5(usedforsecurity=False)).hexdigest()


def check_md5(key_or_source: str | Source, path: str | os.PathLike[str]) -> None:
    """``path`` against the md5 the registry states for the entry (``Source.md5``, its publisher's; nothing to check
    when it states none): ``ChecksumError`` naming the file and both md5s. The registry is the one place that says
    what the file must be, so a rehearsal's copy, which states its stand-ins' md5s there, passes the same check."""
    source = key_or_source if isinstance(key_or_source, Source) else get_source(key_or_source)
    if source.md5 is not None and (found := md5_file(path)) != source.md5:
        raise ChecksumError(f"{source.key}: {path} has md5 {found}, the registry states {source.md5} (the "
                            f"publisher's): not the published file, or a corrupt copy. Delete it and its entry in "
                            f"<data root>/checksums.lock.json, then fetch it again")


def fetch(
    key_or_source: str | Source,
    *,
    data_root: str | os.PathLike[str] | None = None,
    mirror: str | os.PathLike[str] | Literal[False] | None = None,
    force: bool = False,
    progress: bool = True,
    keep_archive: bool = True,
    registry: Mapping[str, Source] | None = None,
    timeout: float = HTTP_TIMEOUT_S,
) -> Path:
    """Return the local path of a verified file, extracted folder or snapshot, fetching it if needed. ``mirror``:
    None means ``VLC_MIRROR``, False none; ``force``: fetch again (a manual source is only re-verified)."""
    source = key_or_source if isinstance(key_or_source, Source) else get_source(key_or_source, registry)
    source.validate()
    root = Path(data_root) if data_root is not None else paths.data_root()
    if mirror is None:
        from_env = paths.mirror_root()
        mirror_root = Mirror(from_env, "VLC_MIRROR") if from_env is not None else None
    else:
        mirror_root = None if mirror is False else Mirror(Path(mirror), "mirror")
    if source.method in ("hf_dataset", "hf_model"):
        return fetch_snapshot(source, root, force=force)
    if source.method == "manual" and source.archive is None and source.dest_path(root).is_dir():
        folder = source.dest_path(root)
        if not _holds_a_file(folder):  # a folder made before the download or extraction was: not a finished step
            raise ManualDownloadRequired(f"{source.key}: {folder} is empty; "
                                         + _manual_message(source, folder, lead=False))
        return folder  # a manually placed folder (e.g. extracted image sets): nothing to hash
    lock = ChecksumLock(root)
    if source.archive == "zip":
        return _fetch_archive(source, root, mirror_root, lock, force=force, progress=progress,
                              keep_archive=keep_archive, timeout=timeout)
    return _ensure_file(source, root, mirror_root, lock, force=force, progress=progress, timeout=timeout)[0]


def quiet_fetch(key: str) -> Path:
    """``fetch`` without a progress bar: the default fetcher of the stages that take one (a test passes its own)."""
    return fetch(key, progress=False)


def _holds_a_file(folder: Path) -> bool:
    """Whether ``folder`` holds at least one file whose name does not start with a dot, at any depth (stops at the
    first: an image folder holds tens of thousands)."""
    for _, dirs, files in os.walk(folder):
        if any(not name.startswith(".") for name in files):
            return True
        dirs[:] = [d for d in dirs if not d.startswith(".")]
    return False


def fetch_group(group: str, *, registry: Mapping[str, Source] | None = None, **kw: Any) -> list[Path]:
    """Fetch every entry of a group (same keyword arguments as ``fetch``): every entry is attempted and one
    ``DownloadError`` listing all failures (manual steps included) is raised at the end."""
    results: list[Path] = []
    failures: list[tuple[str, FetchError]] = []
    for source in sources_in_group(group, registry):
        try:
            results.append(fetch(source, **kw))
        except FetchError as exc:
            failures.append((source.key, exc))
    if failures:
        detail = "\n\n".join(f"- {key}: {type(exc).__name__}: {exc}" for key, exc in failures)
        raise DownloadError(
            f"group {group!r}: {len(failures)} of {len(failures) + len(results)} source(s) could not be "
            f"fetched:\n\n{detail}"
        )
    return results


def _verify_existing(source: Source, path: Path, lock: ChecksumLock) -> str:
    """Check a file already at its destination against the pinned or recorded hash (recording it if neither)."""
    actual = sha256_file(path)
    expected = source.sha256 or lock.get(source)
    if expected is None:
        lock.record(source, actual, path.stat().st_size)
        return actual
    if actual != expected:
        how = "registry sha256" if source.sha256 else f"sha256 recorded in {lock.path}"
        raise ChecksumError(
            f"{source.key}: checksum mismatch: the file already at {path} does not match the {how}: expected "
            f"sha256 {expected}{_size_text(source.size)}, found sha256 {actual} ({path.stat().st_size} bytes). "
            f"It may be corrupt or a different version: delete the corrupt file at {path} and fetch it again "
            f"(with VLC_MIRROR set to a mirror, or on a connected machine), or fetch with --force"
            + ("." if source.sha256 else f" (if upstream legitimately changed, delete the {source.key!r} entry "
                                         f"from {lock.path} first).")
        )
    if source.size is not None and path.stat().st_size != source.size:  # pragma: no cover - implied by sha
        raise ChecksumError(f"{source.key}: size mismatch: {path} has {path.stat().st_size} bytes, expected "
                            f"{source.size}; delete the corrupt file at {path} and fetch it again")
    return actual


def _ensure_file(source: Source, root: Path, mirror_root: Mirror | None, lock: ChecksumLock, *,
                 force: bool, progress: bool, timeout: float) -> tuple[Path, str]:
    """Make ``dest`` a verified copy of the source's file; return it and its sha256."""
    dest = source.dest_path(root)
    if dest.is_file() and (not force or source.method == "manual"):
        return dest, _verify_existing(source, dest, lock)
    if source.method == "manual":
        raise ManualDownloadRequired(_manual_message(source, dest))
    if dest.exists() and not dest.is_file():
        raise DownloadError(f"{source.key}: {dest} exists and is not a file; remove it first")
    assert source.url is not None
    with atomic_path(dest) as tmp:  # moved onto dest only if every check below passes
        origin = _obtain(source, tmp, mirror_root, progress=progress, timeout=timeout)
        actual = sha256_file(tmp)
        size = tmp.stat().st_size
        expected = source.sha256 or lock.get(source)
        if expected is not None and actual != expected:
            how = "registry" if source.sha256 else f"trust-on-first-use record in {lock.path}"
            raise ChecksumError(
                f"{source.key}: checksum mismatch for {origin}: expected sha256 {expected}"
                f"{_size_text(source.size, how)}, found sha256 {actual} ({size} bytes); nothing was written to "
                f"{dest}. " + _bad_copy_remedy(source, origin)
                + ("" if source.sha256 else f" If upstream legitimately changed, delete the {source.key!r} "
                                            f"entry from {lock.path} and fetch again.")
            )
        if source.size is not None and size != source.size:
            raise ChecksumError(
                f"{source.key}: size mismatch for {origin}: expected {source.size} bytes (sha256 {expected}), "
                f"found {size} bytes; nothing was written to {dest}. " + _bad_copy_remedy(source, origin)
            )
    if expected is None:
        lock.record(source, actual, size)
    log.info("%s: %s -> %s (sha256 %s)", source.key, origin, dest, actual)
    return dest, actual


def _obtain(source: Source, tmp: Path, mirror: Mirror | None, *, progress: bool, timeout: float) -> str:
    """Fill ``tmp`` from the mirror or the network; return where the bytes came from."""
    assert source.url is not None
    tried: str
    if mirror is not None:
        try:
            candidate = mirror_path(source.url, mirror.checked())
        except ValueError as exc:
            tried = f"mirror refused: {exc}"
        else:
            if candidate.is_file():
                try:
                    shutil.copyfile(candidate, tmp)
                    return str(candidate)
                except OSError as exc:
                    tried = f"mirror path {candidate} (unreadable: {exc})"
            else:
                tried = f"mirror path {candidate} (not present)"
    else:
        tried = "no mirror (VLC_MIRROR unset)"
    try:
        http_download(source.url, tmp, total_hint=source.size, progress=progress, timeout=timeout,
                       label=source.key)
    except Exception as exc:  # noqa: BLE001 - every failure becomes one clear DownloadError
        raise DownloadError(
            f"{source.key}: could not fetch {source.url}: {type(exc).__name__}: {exc}. Tried: {tried}; then the "
            f"network: nothing found. Expected {_expected_text(source)}. Set VLC_MIRROR to a mirror holding "
            f"<host>/<path> of the URL, or run on a connected machine."
        ) from exc
    return source.url


def _size_text(size: int | None, how: str | None = None) -> str:
    """" (1234 bytes, registry)", " (registry)" or "" for a checksum message."""
    parts = ([f"{size} bytes"] if size is not None else []) + ([how] if how else [])
    return f" ({', '.join(parts)})" if parts else ""


def _expected_text(source: Source) -> str:
    if source.sha256 is None:
        return "a file with no pinned sha256 (trusted on first use)"
    return f"sha256 {source.sha256}" + (f", {source.size} bytes" if source.size is not None else "")


def _bad_copy_remedy(source: Source, origin: str) -> str:
    if origin == source.url:
        return ("The download is corrupt or upstream changed the file: retry on a connected machine, or set "
                "VLC_MIRROR to a mirror holding the pinned file.")
    return (f"The mirror copy is corrupt or another version: replace or delete the corrupt file at {origin}, set "
            f"VLC_MIRROR to a mirror holding the pinned file, or run on a connected machine (with VLC_MIRROR unset).")


def _fetch_archive(source: Source, root: Path, mirror_root: Mirror | None, lock: ChecksumLock, *, force: bool,
                   progress: bool, keep_archive: bool, timeout: float) -> Path:
    """Return the extracted folder of a zip source, fetching and extracting as needed."""
    out_dir = source.target_path(root)
    marker = out_dir / EXTRACT_MARKER
    if out_dir.exists() and not force:
        if not marker.is_file():
            raise DownloadError(
                f"{source.key}: {out_dir} exists but was not extracted by this tool (no {EXTRACT_MARKER}: a "
                f"half-done or hand-made extraction); remove it and run `python -m common fetch {source.key}` (or "
                f"fetch with --force) so the archive can be verified and extracted"
            )
        recorded = read_marker(marker).get("archive_sha256")
        expected = source.sha256 or lock.get(source)
        if expected is not None and recorded != expected:
            raise ChecksumError(
                f"{source.key}: checksum mismatch: {out_dir} was extracted from an archive with sha256 {recorded}, "
                f"expected sha256 {expected}{_size_text(source.size)}; delete the folder at {out_dir} and fetch "
                f"again (with VLC_MIRROR set to a mirror, or on a connected machine), or fetch with --force"
            )
        if expected is None and isinstance(recorded, str):
            log.warning("%s: no pinned or recorded sha256; accepting %s as extracted (archive sha256 %s)",
                        source.key, out_dir, recorded)
        short = extraction_shortfall(out_dir, read_marker(marker))
        if short:
            raise IncompleteExtractionError(
                f"{source.key}: {out_dir} is incomplete ({short}): files were deleted or copied in part since "
                f"it was extracted; delete the folder at {out_dir} and run `python -m common fetch {source.key}` "
                f"again (or fetch with --force) to extract the archive afresh"
            )
        return out_dir
    archive, archive_sha = _ensure_file(source, root, mirror_root, lock, force=force, progress=progress,
                                        timeout=timeout)
    extract_zip(source, archive, out_dir, archive_sha)
    if not keep_archive:
        archive.unlink()
    return out_dir


def _manual_message(source: Source, dest: Path, lead: bool = True) -> str:
    """What a missing manual source asks of a person. Its first line (the ``error:`` line of a stage that needs it)
    names the file and the fix by itself; the steps follow, indented."""
    steps = (source.instructions or "").strip().replace("{dest}", str(dest))
    steps = steps.replace("{data_root}", str(dest.parents[len(PurePosixPath(source.dest).parts) - 1]))
    verify = "verified and extracted" if source.archive else "verified"
    return (
        f"{source.key if lead else 'it'} must be downloaded by hand (method 'manual') to {dest}, then {verify} with "
        f"`python -m common fetch {source.key}`, as its steps say; license: {source.license or 'see upstream'}.\n"
        f"Destination (exact path):\n    {dest}\n"
        "Steps:\n" + "\n".join("    " + line if line else line for line in steps.splitlines()) + "\n"
        f"Then run `python -m common fetch {source.key}` again to verify it"
        + (" and extract it." if source.archive else ".")
    )
