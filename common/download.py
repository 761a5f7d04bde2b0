"""The download registry: fetch upstream data by key or group, verified, never half-written.

Every upstream file, dataset and checkpoint is a ``[[source]]`` entry of the registry: ``common/registry/sources.toml``
(the shared entries, and those two or more papers use) or a paper's ``papers/<paper>/sources.toml``; a key is looked
up in the shared file first, then in its owner paper's (``common.plugins``).
``fetch`` turns an entry into a local path under the data root (``VLC_DATA``):

* already there and verified -> returned without work (pinned sha256, or the hash recorded on first use);
* else copied from a local mirror (``VLC_MIRROR``: URLs laid out without their scheme), else downloaded;
* bytes go to a temporary file beside the destination, are hashed, and only a verified file is moved into
  place with ``os.replace``; on any failure the temporary file is deleted, so nothing partial or unverified
  ever appears at the destination;
* entries without a published sha256 are trusted on first use: the observed hash is recorded in
  ``<data root>/checksums.lock.json`` and every later fetch (or file found in place) is checked against it;
* zip archives are extracted into a temporary sibling folder (refusing members that would escape it) and
  renamed into place, with a marker recording the archive's sha256;
* Hugging Face entries go through ``huggingface_hub.snapshot_download``; manual entries explain exactly what
  a person has to do and accept the file once it is in place (a folder once it holds a file: an empty one is an
  unfinished step, never "verified").

Errors are exceptions whose messages name the entry, the source tried and what to do next. A ``VLC_MIRROR`` (or
``--mirror``) that is not a folder is a ``SettingError`` naming it, raised when the mirror is first needed. ``fetch``
on the command line checks every name first (an unknown one lists the close keys and groups), prints each failure's
details (a manual source's steps) and ends with one ``error:`` line naming every failed target.
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import datetime as _dt
import json
import logging
import os
import re
import shutil
import socket
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from dataclasses import asdict, dataclass, fields
from pathlib import Path, PurePosixPath
from typing import Any, Iterable, Iterator, Literal, Mapping

from common.errors import SettingError, UnknownName, WorkspaceError

try:  # Python >= 3.11
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from common import __version__, paths, plugins
from common.io import atomic_path, sha256_file, write_json_atomic

log = logging.getLogger(__name__)

REGISTRY_PATH = Path(__file__).resolve().parent / "registry" / "sources.toml"
"""The shared registry file (entries naming no paper, and entries two or more papers use); each paper's other
entries are in ``papers/<paper>/sources.toml``."""
DATA_FILES = ("common/registry/sources.toml",)
"""Read at run time (``common.stage_deps``); a paper module that fetches its own keys declares its sources.toml (a
key in the shared file needs no more)."""

METHODS = frozenset({"http", "hf_dataset", "hf_model", "manual"})
ARCHIVES = frozenset({"zip"})
LOCK_NAME = "checksums.lock.json"
"""Trust-on-first-use hashes, kept at the data root (not in git: it describes this machine's copies)."""
EXTRACT_MARKER = ".vlc-extracted.json"
"""Written inside an extracted archive's folder; records the archive's sha256."""
SNAPSHOT_MARKER = ".vlc-snapshot.json"
"""Written inside a Hugging Face snapshot folder once snapshot_download has finished."""
USER_AGENT = f"vlc-workspace/{__version__} (reproducibility downloader; Python-urllib)"
HTTP_TIMEOUT_S = 60.0
HTTP_RETRIES = 2
_CHUNK = 1 << 20
_SHA256_RE = re.compile(r"[0-9a-f]{64}")


# --------------------------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------------------------
class RegistryError(WorkspaceError, ValueError):
    """The registry (or a Source built in code) is malformed; the message names the file and the entry key."""


class FetchError(WorkspaceError, RuntimeError):
    """Base class of everything ``fetch`` raises when it cannot hand back a verified local path."""


class DownloadError(FetchError):
    """Neither the mirror nor the network produced the file (or the HF snapshot failed)."""


class ChecksumError(DownloadError):
    """Bytes did not match the expected sha256 (pinned or recorded on first use); nothing was placed."""


class UnsafeArchiveError(DownloadError):
    """An archive member would be written outside its extraction folder (zip-slip); nothing was extracted."""


class IncompleteExtractionError(DownloadError):
    """An extracted archive's folder holds fewer files than its marker says the archive did (a half-done copy of the
    data root, files deleted since); nothing reads it until it is extracted again."""


class ManualDownloadRequired(FetchError):
    """A manual source is not in place yet; the message holds the human steps and the exact destination."""


# --------------------------------------------------------------------------------------------------------------
# Registry
# --------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Source:
    """One registry entry (one upstream file, archive, HF snapshot or manual artifact)."""

    key: str
    group: str
    method: str
    dest: str
    license: str = ""
    url: str | None = None
    repo_id: str | None = None
    revision: str | None = None
    sha256: str | None = None
    size: int | None = None
    archive: str | None = None
    instructions: str | None = None
    allow_patterns: tuple[str, ...] = ()
    note: str | None = None

    @property
    def repo_type(self) -> str | None:
        """``"dataset"`` / ``"model"`` for Hugging Face entries, else None."""
        return {"hf_dataset": "dataset", "hf_model": "model"}.get(self.method)

    def dest_path(self, data_root: str | os.PathLike[str] | None = None) -> Path:
        """Where the file (or snapshot folder, or archive) lives under the data root."""
        root = Path(data_root) if data_root is not None else paths.data_root()
        return root.joinpath(*PurePosixPath(self.dest).parts)

    def target_path(self, data_root: str | os.PathLike[str] | None = None) -> Path:
        """What ``fetch`` returns: the extracted folder for archives, else ``dest_path``."""
        dest = self.dest_path(data_root)
        if self.archive == "zip":
            return dest.with_name(dest.name[: -len(".zip")])
        return dest

    def problems(self) -> list[str]:
        """Everything wrong with this entry (empty when valid); used by ``validate`` and ``load_registry``."""
        out: list[str] = []
        if not isinstance(self.key, str) or not self.key.strip() or self.key != self.key.strip():
            out.append("key must be a non-empty string without surrounding whitespace")
        if not isinstance(self.group, str) or not self.group.strip():
            out.append("group must be a non-empty string")
        if self.method not in METHODS:
            out.append(f"unknown method {self.method!r} (expected one of {sorted(METHODS)})")
        out.extend(_dest_problems(self.dest))
        if self.method == "http":
            if not self.url:
                out.append("method 'http' needs a url")
            else:
                parts = urllib.parse.urlsplit(self.url)
                if parts.scheme not in ("http", "https") or not parts.netloc:
                    out.append(f"url {self.url!r} is not an http(s) URL")
        elif self.url is not None and self.method != "manual":
            out.append(f"url is only meaningful for method 'http' (got method {self.method!r})")
        if self.method in ("hf_dataset", "hf_model"):
            if not self.repo_id or not re.fullmatch(r"[\w.-]+/[\w.-]+|[\w.-]+", self.repo_id):
                out.append(f"method {self.method!r} needs repo_id as 'owner/name' (got {self.repo_id!r})")
            if self.archive:
                out.append("archive is not supported for Hugging Face snapshots")
            if self.sha256:
                out.append("sha256 cannot be checked on a Hugging Face snapshot (pin revision instead)")
        elif self.repo_id or self.revision:
            out.append("repo_id/revision are only meaningful for hf_dataset/hf_model")
        if self.method == "manual" and not (self.instructions and self.instructions.strip()):
            out.append("method 'manual' needs instructions (the exact human steps)")
        if self.sha256 is not None and not (isinstance(self.sha256, str) and _SHA256_RE.fullmatch(self.sha256)):
            out.append(f"sha256 must be 64 lowercase hex characters (got {self.sha256!r})")
        if self.size is not None and (isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 0):
            out.append(f"size must be a non-negative integer (got {self.size!r})")
        if self.archive is not None:
            if self.archive not in ARCHIVES:
                out.append(f"unknown archive {self.archive!r} (expected one of {sorted(ARCHIVES)})")
            elif not str(self.dest).endswith(".zip") or str(self.dest) == ".zip":
                out.append(f"archive 'zip' needs a dest ending in '.zip' (got {self.dest!r})")
        if not isinstance(self.allow_patterns, tuple) or not all(isinstance(p, str) for p in self.allow_patterns):
            out.append("allow_patterns must be a list of strings")
        return out

    def validate(self, origin: str = "<Source built in code>") -> None:
        """Raise ``RegistryError`` naming ``origin`` and the key if the entry is malformed."""
        problems = self.problems()
        if problems:
            raise RegistryError(f"{origin}: source {self.key!r}: " + "; ".join(problems))


_FIELD_NAMES: tuple[str, ...] = tuple(f.name for f in fields(Source))


def _dest_problems(dest: object) -> list[str]:
    """A dest must be a plain relative POSIX path that stays inside the data root."""
    if not isinstance(dest, str) or not dest:
        return ["dest must be a non-empty relative path"]
    if "\\" in dest or "\x00" in dest:
        return [f"dest {dest!r} must use '/' separators"]
    pure = PurePosixPath(dest)
    if pure.is_absolute() or re.match(r"^[A-Za-z]:", dest):
        return [f"dest {dest!r} must be relative to the data root"]
    if any(part in ("..", ".") for part in dest.split("/")) or "" in dest.split("/"):
        return [f"dest {dest!r} escapes the data root or is not normalized ('..', '.', '//' are not allowed)"]
    if dest == LOCK_NAME:
        return [f"dest {dest!r} would overwrite the checksum lock"]
    return []


def _source_from_table(table: Mapping[str, Any], origin: str, index: int) -> Source:
    key = table.get("key", f"<entry #{index + 1} without key>")
    unknown = sorted(set(table) - set(_FIELD_NAMES))
    if unknown:
        raise RegistryError(f"{origin}: source {key!r}: unknown field(s) {unknown} (known: {list(_FIELD_NAMES)})")
    missing = [name for name in ("key", "group", "method", "dest") if name not in table]
    if missing:
        raise RegistryError(f"{origin}: source {key!r}: missing field(s) {missing}")
    kwargs = dict(table)
    patterns = kwargs.get("allow_patterns", ())
    if isinstance(patterns, list):
        kwargs["allow_patterns"] = tuple(patterns)
    source = Source(**kwargs)
    source.validate(origin)
    if not source.license.strip():
        raise RegistryError(f"{origin}: source {key!r}: license is required (write 'see upstream' when unstated)")
    return source


def _read_registry_file(reg_path: Path) -> list[Source]:
    """The validated entries of one registry file, in file order."""
    origin = str(reg_path)
    try:
        with open(reg_path, "rb") as fh:
            doc = tomllib.load(fh)
    except FileNotFoundError as exc:
        raise RegistryError(f"{origin}: registry file not found") from exc
    except tomllib.TOMLDecodeError as exc:
        raise RegistryError(f"{origin}: not valid TOML: {exc}") from exc
    extra = sorted(set(doc) - {"version", "source"})
    if extra:
        raise RegistryError(f"{origin}: unknown top-level key(s) {extra} (expected 'version' and [[source]] tables)")
    tables = doc.get("source", [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise RegistryError(f"{origin}: 'source' must be an array of tables ([[source]])")
    return [_source_from_table(table, origin, index) for index, table in enumerate(tables)]


def load_registry(*paths_: str | os.PathLike[str]) -> dict[str, Source]:
    """Read and validate registry files together; keys are unique and dests don't collide across all of them.

    With no argument: the shared file alone (``REGISTRY_PATH``); ``default_registry`` adds every paper's file.
    """
    registry: dict[str, Source] = {}
    claimed: list[tuple[PurePosixPath, bool, str]] = []  # (path, is a folder we create, key)
    for reg_path in [Path(p) for p in paths_] or [REGISTRY_PATH]:
        origin = str(reg_path)
        for index, source in enumerate(_read_registry_file(reg_path)):
            if source.key in registry:
                raise RegistryError(f"{origin}: source {source.key!r}: duplicate key (entry #{index + 1})")
            mine = [(PurePosixPath(source.dest), source.method in ("hf_dataset", "hf_model"))]
            if source.archive:
                mine.append((PurePosixPath(source.dest[: -len(".zip")]), True))
            for path, is_folder in mine:
                for other, other_folder, other_key in claimed:
                    if path == other or (other_folder and other in path.parents) or (is_folder and path in other.parents):
                        raise RegistryError(
                            f"{origin}: source {source.key!r}: dest {str(path)!r} collides with {str(other)!r} "
                            f"of source {other_key!r}"
                        )
            claimed.extend((path, is_folder, source.key) for path, is_folder in mine)
            registry[source.key] = source
    return registry


def _check_placement(reg_path: Path, keys: Iterable[str]) -> None:
    """A paper's file holds only that paper's keys (``common.plugins.may_hold``); the shared file holds any."""
    for key in keys:
        if not plugins.may_hold(reg_path, key, REGISTRY_PATH):
            raise RegistryError(f"{reg_path}: source {key!r} "
                                f"{plugins.where_it_belongs(key, reg_path.name, REGISTRY_PATH)}")


def _check_owners(files: list[Path]) -> None:
    """Each key sits in its owner's file or in the shared file, never in another paper's file and never in both, so
    a lookup by key (shared file first, then the owner's) finds the one entry."""
    found_in: dict[str, Path] = {}
    for reg_path in files:
        keys = [source.key for source in _read_registry_file(reg_path)]
        _check_placement(reg_path, keys)
        for key in keys:
            if key in found_in and found_in[key] != reg_path:
                raise RegistryError(f"{reg_path}: source {key!r} is also in {found_in[key]}; keep one entry (in "
                                    f"{REGISTRY_PATH} if several papers use it, else in its owner's sources.toml)")
            found_in.setdefault(key, reg_path)


@functools.lru_cache(maxsize=None)
def _file_registry(path: Path) -> dict[str, Source]:
    """One registry file of this workspace, its keys checked against the file (``_check_placement``)."""
    registry = load_registry(path)
    _check_placement(path, registry)
    return registry


def default_registry() -> dict[str, Source]:
    """Every registered source: the shared file and every paper's ``sources.toml`` (loaded once per process)."""
    return _merged_registry()


@functools.lru_cache(maxsize=1)
def _merged_registry() -> dict[str, Source]:
    files = plugins.registry_files(REGISTRY_PATH.name, REGISTRY_PATH)
    _check_owners(files)
    return load_registry(*files)


def get_source(key: str, registry: Mapping[str, Source] | None = None) -> Source:
    """Look up one entry: in ``registry``, or else in the shared file and then the key's owner paper's
    (``common.plugins.lookup_files``); unknown keys raise ``RegistryError`` with close matches."""
    if registry is None:
        for reg_path in plugins.lookup_files(key, REGISTRY_PATH.name, REGISTRY_PATH):
            entries = _file_registry(reg_path) if reg_path.is_file() else {}
            if key in entries:
                return entries[key]
    try:
        return (registry if registry is not None else {})[key]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(key, list(registry if registry is not None else default_registry()), n=3)
        hint = f"; did you mean {close}?" if close else ""
        raise RegistryError(f"unknown source key {key!r}{hint}") from None


def groups(registry: Mapping[str, Source] | None = None) -> dict[str, int]:
    """Group name -> number of entries, in registry order."""
    reg = registry if registry is not None else default_registry()
    counts: dict[str, int] = {}
    for source in reg.values():
        counts[source.group] = counts.get(source.group, 0) + 1
    return counts


def sources_in_group(group: str, registry: Mapping[str, Source] | None = None) -> list[Source]:
    """Entries of one group in registry order; an unknown group raises ``RegistryError`` listing the known ones."""
    reg = registry if registry is not None else default_registry()
    found = [s for s in reg.values() if s.group == group]
    if not found:
        raise RegistryError(f"unknown group {group!r}; known groups: {sorted(groups(reg))}")
    return found


# --------------------------------------------------------------------------------------------------------------
# Mirror
# --------------------------------------------------------------------------------------------------------------
def mirror_path(url: str, mirror_root: str | os.PathLike[str]) -> Path:
    """``<mirror_root>/<url without scheme>``; refuses URLs that could resolve outside the mirror."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"not an http(s) URL: {url!r}")
    if parts.query or parts.fragment or "?" in url or "#" in url:
        raise ValueError(f"URL {url!r} has a query string or fragment; it has no place in the mirror layout")
    if "@" in parts.netloc or "\\" in url:
        raise ValueError(f"URL {url!r} has credentials or backslashes; refused for the mirror")
    host = parts.netloc
    segments = parts.path.split("/")[1:] if parts.path.startswith("/") else parts.path.split("/")
    if not segments or segments == [""]:
        raise ValueError(f"URL {url!r} names no file")
    for seg in [host, *segments]:
        decoded = urllib.parse.unquote(seg)
        if seg in ("", ".", "..") or decoded in ("", ".", "..") or "/" in decoded or "\\" in decoded:
            raise ValueError(f"URL {url!r} has a segment {seg!r} that could escape the mirror root")
    root = Path(mirror_root)
    candidate = root.joinpath(host, *segments)
    if os.path.commonpath([os.path.abspath(root), os.path.abspath(candidate)]) != os.path.abspath(root):
        raise ValueError(f"URL {url!r} resolves outside the mirror root {root}")
    return candidate


# --------------------------------------------------------------------------------------------------------------
# Trust-on-first-use lock
# --------------------------------------------------------------------------------------------------------------
class ChecksumLock:
    """``<data_root>/checksums.lock.json``: sha256 observed the first time an unpinned source was fetched."""

    def __init__(self, data_root: Path) -> None:
        self.path = Path(data_root) / LOCK_NAME

    def _read(self) -> dict[str, Any]:
        if not self.path.exists():
            return {}
        try:
            doc = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise DownloadError(f"{self.path}: unreadable checksum lock ({exc}); fix or delete it") from exc
        entries = doc.get("sources", {}) if isinstance(doc, dict) else None
        if not isinstance(entries, dict):
            raise DownloadError(f"{self.path}: malformed checksum lock (expected {{'sources': {{key: ...}}}})")
        return entries

    def get(self, source: Source) -> str | None:
        """The recorded sha256 for this source, or None (none recorded, or recorded for another URL/dest)."""
        entry = self._read().get(source.key)
        if not isinstance(entry, dict):
            return None
        if entry.get("url") != source.url or entry.get("dest") != source.dest:
            log.warning(
                "%s: %s has an entry recorded for another url/dest (%s, %s); ignoring it",
                source.key, self.path, entry.get("url"), entry.get("dest"),
            )
            return None
        sha = entry.get("sha256")
        return sha if isinstance(sha, str) and _SHA256_RE.fullmatch(sha) else None

    def record(self, source: Source, sha256: str, size: int) -> None:
        """Record (atomically) the hash observed for ``source``."""
        with self._locked():
            entries = self._read()
            entries[source.key] = {
                "sha256": sha256,
                "size": size,
                "url": source.url,
                "dest": source.dest,
                "recorded": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
            }
            write_json_atomic(self.path, {
                "comment": "sha256 recorded on first fetch of sources without a pinned hash (trust on first use); "
                           "written by common/download.py",
                "sources": dict(sorted(entries.items())),
            })
        log.warning(
            "%s: no sha256 pinned in the registry; trusting on first use and recording sha256 %s in %s",
            source.key, sha256, self.path,
        )

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Serialize read-modify-write between concurrent fetches (best effort where fcntl exists)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            import fcntl
        except ImportError:  # pragma: no cover - non-POSIX
            yield
            return
        with open(self.path.with_name(f".{LOCK_NAME}.flock"), "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)


# --------------------------------------------------------------------------------------------------------------
# Fetch
# --------------------------------------------------------------------------------------------------------------
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
    """Return the local path of a verified file, extracted folder or snapshot, fetching it if needed.

    ``mirror``: a mirror root; None means ``paths.mirror_root()`` (``VLC_MIRROR``), False disables the mirror.
    ``force``: fetch again even if a verified copy is present (manual sources are only re-verified).
    ``keep_archive``: keep the ``.zip`` beside its extracted folder (default) or delete it once extracted.
    """
    source = key_or_source if isinstance(key_or_source, Source) else get_source(key_or_source, registry)
    source.validate()
    root = Path(data_root) if data_root is not None else paths.data_root()
    mirror_root: Mirror | None
    if mirror is False:
        mirror_root = None
    elif mirror is None:
        from_env = paths.mirror_root()
        mirror_root = Mirror(from_env, "VLC_MIRROR") if from_env is not None else None
    else:
        mirror_root = Mirror(Path(mirror), "mirror")
    if source.method in ("hf_dataset", "hf_model"):
        return _fetch_hf(source, root, force=force)
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


def _holds_a_file(folder: Path) -> bool:
    """Whether ``folder`` holds at least one file whose name does not start with a dot, at any depth (stops at the
    first: an image folder holds tens of thousands)."""
    for _, dirs, files in os.walk(folder):
        if any(not name.startswith(".") for name in files):
            return True
        dirs[:] = [d for d in dirs if not d.startswith(".")]
    return False


@dataclass(frozen=True)
class Mirror:
    """A mirror root and what named it (``VLC_MIRROR``, or the ``mirror`` argument / ``--mirror`` option)."""

    root: Path
    named_by: str

    def checked(self) -> Path:
        """The root, once it is known to be a folder: a wrong setting is named as such, never reported as a file "not
        present" in the mirror followed by a network failure."""
        if not self.root.is_dir():
            what = "is a file, not a folder" if self.root.exists() else "does not exist"
            if self.named_by == "VLC_MIRROR":
                raise SettingError(f"VLC_MIRROR={os.environ.get('VLC_MIRROR', self.root)} {what}: set VLC_MIRROR to "
                                   f"the mirror folder (holding <host>/<path> of each URL), or unset it to download")
            raise SettingError(f"mirror {self.root} {what}: give the mirror folder (holding <host>/<path> of each "
                               f"URL), or no mirror to download")
        return self.root


def fetch_group(group: str, *, keep_going: bool = True, registry: Mapping[str, Source] | None = None,
                **kw: Any) -> list[Path]:
    """Fetch every entry of a group (same keyword arguments as ``fetch``).

    With ``keep_going`` (default) every entry is attempted and one ``DownloadError`` listing all failures
    (manual steps included) is raised at the end; otherwise the first failure propagates.
    """
    results: list[Path] = []
    failures: list[tuple[str, FetchError]] = []
    for source in sources_in_group(group, registry):
        try:
            results.append(fetch(source, **kw))
        except FetchError as exc:
            if not keep_going:
                raise
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
        _http_download(source.url, tmp, total_hint=source.size, progress=progress, timeout=timeout,
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


def _http_download(url: str, out: Path, *, total_hint: int | None, progress: bool, timeout: float,
                   label: str) -> None:
    """Stream ``url`` into ``out`` (retrying transient failures); raise on HTTP errors or truncation."""
    last: Exception | None = None
    for attempt in range(HTTP_RETRIES + 1):
        try:
            request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
            with urllib.request.urlopen(request, timeout=timeout) as response, open(out, "wb") as fh:
                length = response.headers.get("Content-Length")
                expected = int(length) if length and length.isdigit() else None
                written = 0
                with _progress_bar(expected or total_hint, label, progress) as bar:
                    while chunk := response.read(_CHUNK):
                        fh.write(chunk)
                        written += len(chunk)
                        bar(len(chunk))
                if expected is not None and written != expected:
                    raise OSError(f"truncated transfer: got {written} of {expected} bytes")
            return
        except urllib.error.HTTPError as exc:
            if exc.code < 500 and exc.code != 429:
                raise
            last = exc
        except (urllib.error.URLError, socket.timeout, TimeoutError, ConnectionError, OSError) as exc:
            if isinstance(exc, urllib.error.URLError) and isinstance(exc.reason, socket.gaierror):
                raise  # no DNS: offline, retrying will not help
            last = exc
        if attempt < HTTP_RETRIES:
            time.sleep(1.5 * (attempt + 1))
    assert last is not None
    raise last


@contextlib.contextmanager
def _progress_bar(total: int | None, label: str, enabled: bool) -> Iterator[Any]:
    """Yield an ``update(n)`` callable backed by tqdm when available and wanted."""
    if not enabled:
        yield lambda n: None
        return
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        yield lambda n: None
        return
    with tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=label, leave=False) as bar:
        yield bar.update


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
        recorded = _read_marker(marker).get("archive_sha256")
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
        short = _extraction_shortfall(out_dir, _read_marker(marker))
        if short:
            raise IncompleteExtractionError(
                f"{source.key}: {out_dir} is incomplete ({short}): files were deleted or copied in part since "
                f"it was extracted; delete the folder at {out_dir} and run `python -m common fetch {source.key}` "
                f"again (or fetch with --force) to extract the archive afresh"
            )
        return out_dir
    archive, archive_sha = _ensure_file(source, root, mirror_root, lock, force=force, progress=progress,
                                        timeout=timeout)
    _extract_zip(source, archive, out_dir, archive_sha)
    if not keep_archive:
        archive.unlink()
    return out_dir


def _extraction_shortfall(out_dir: Path, recorded: Mapping[str, Any]) -> str:
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


def _read_marker(marker: Path) -> dict[str, Any]:
    try:
        doc = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _extract_zip(source: Source, archive: Path, out_dir: Path, archive_sha: str) -> None:
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
        f"Steps:\n{_indent(steps)}\n"
        f"Then run `python -m common fetch {source.key}` again to verify it"
        + (" and extract it." if source.archive else ".")
    )


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line if line else line for line in text.splitlines())


def _fetch_hf(source: Source, root: Path, *, force: bool) -> Path:
    """Snapshot a Hugging Face repository into ``<data_root>/<dest>``; a marker makes later calls offline."""
    local_dir = source.dest_path(root)
    marker = local_dir / SNAPSHOT_MARKER
    wanted = {"repo_id": source.repo_id, "repo_type": source.repo_type, "revision": source.revision,
              "allow_patterns": list(source.allow_patterns)}
    if not force and marker.is_file():
        recorded = _read_marker(marker)
        if all(recorded.get(k) == v for k, v in wanted.items()):
            return local_dir
    rev = source.revision or "main (unpinned)"
    connected_cmd = (
        f"hf download {source.repo_id} --repo-type {source.repo_type}"
        + (f" --revision {source.revision}" if source.revision else "")
        + "".join(f" --include '{p}'" for p in source.allow_patterns)
        + f" --local-dir {source.dest}"
    )
    advice = (
        f"This needs internet access to huggingface.co (and HF_HUB_OFFLINE unset). On a connected machine run "
        f"`python -m common fetch {source.key}` (or `{connected_cmd}` from the data root; `huggingface-cli download` "
        f"on older huggingface_hub) and copy the folder to {local_dir}; a folder fetched with `python -m common "
        f"fetch` carries {SNAPSHOT_MARKER}, which makes later fetches here return it without the network."
    )
    try:
        from huggingface_hub import snapshot_download
    except ImportError as exc:
        raise DownloadError(
            f"{source.key}: huggingface_hub is not installed (pip install huggingface_hub); needed for "
            f"{source.repo_type} {source.repo_id!r}. {advice}"
        ) from exc
    created = not local_dir.exists()
    try:
        local_dir.mkdir(parents=True, exist_ok=True)
        snapshot_download(
            repo_id=source.repo_id,
            repo_type=source.repo_type,
            revision=source.revision,
            local_dir=str(local_dir),
            allow_patterns=list(source.allow_patterns) or None,
        )
    except Exception as exc:  # noqa: BLE001 - every failure becomes one clear DownloadError
        if created:
            with contextlib.suppress(OSError):
                local_dir.rmdir()  # only if still empty: leave nothing behind for a failed first attempt
        raise DownloadError(
            f"{source.key}: could not download Hugging Face {source.repo_type} {source.repo_id!r} "
            f"(revision {rev}) into {local_dir}: {type(exc).__name__}: {exc}. {advice}"
        ) from exc
    write_json_atomic(marker, {**wanted, "completed": _dt.datetime.now(_dt.timezone.utc)
                               .replace(microsecond=0).isoformat()})
    if not source.revision:
        log.warning("%s: %s fetched at an unpinned revision (main); pin `revision` in the registry",
                    source.key, source.repo_id)
    return local_dir


# --------------------------------------------------------------------------------------------------------------
# Status and CLI
# --------------------------------------------------------------------------------------------------------------
def is_present(source: Source, data_root: str | os.PathLike[str] | None = None) -> bool:
    """Whether the source's result is on disk (presence only; ``fetch`` does the verification)."""
    root = Path(data_root) if data_root is not None else paths.data_root()
    if source.method in ("hf_dataset", "hf_model"):
        return (source.dest_path(root) / SNAPSHOT_MARKER).is_file()
    if source.archive:
        return (source.target_path(root) / EXTRACT_MARKER).is_file()
    return source.dest_path(root).exists()


def describe(source: Source, data_root: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """A JSON-ready row for ``sources``: every field plus pinning and presence."""
    row = asdict(source)
    row["allow_patterns"] = list(source.allow_patterns)
    row["sha256_pinned"] = source.sha256 is not None
    row["present"] = is_present(source, data_root)
    row["path"] = str(source.target_path(data_root))
    return row


def register_cli(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``fetch`` and ``sources`` subcommands to an argparse subparsers object."""
    p = subparsers.add_parser(
        "fetch", help="download registry entries (by key or group), verified",
        description="Fetch registry entries by key or group into the data root, verifying sha256. "
                    "Uses the VLC_MIRROR mirror when set, else the network.",
    )
    p.add_argument("targets", nargs="+", metavar="KEY_OR_GROUP", help="a source key or a group name")
    p.add_argument("--force", action="store_true", help="fetch again even if a verified copy is present")
    p.add_argument("--data-root", type=Path, default=None, help="data root (default: VLC_DATA or <repo>/data)")
    p.add_argument("--mirror", type=Path, default=None, help="mirror root (default: VLC_MIRROR)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(func=run_fetch)

    s = subparsers.add_parser("sources", help="list registry entries",
                              description="List registry entries: key, method, license, size, sha256 pinned "
                                          "or not, present locally or not.")
    s.add_argument("--group", default=None, help="only this group")
    s.add_argument("--json", action="store_true", help="machine-readable output (every field)")
    s.add_argument("--data-root", type=Path, default=None, help="data root (default: VLC_DATA or <repo>/data)")
    s.set_defaults(func=run_sources)


def run_fetch(args: argparse.Namespace) -> int:
    """``fetch KEY_OR_GROUP...``: print each fetched path; raise one error listing every failure."""
    registry = default_registry()
    known_groups = groups(registry)
    kw: dict[str, Any] = {
        "data_root": getattr(args, "data_root", None),
        "mirror": getattr(args, "mirror", None),
        "force": bool(getattr(args, "force", False)),
        "progress": not getattr(args, "no_progress", False),
        "registry": registry,
    }
    for target in args.targets:  # every name checked before anything is fetched
        if target not in registry and target not in known_groups:
            raise unknown_target(target, registry, known_groups)
    failures: list[str] = []
    for target in args.targets:
        try:
            paths_out = [fetch(target, **kw)] if target in registry else fetch_group(target, **kw)
        except (FetchError, RegistryError) as exc:
            # the details (a manual source's steps, each failure of a group) above, the one error line last
            print(f"{target}: {type(exc).__name__}: {exc}\n", file=sys.stderr)
            failures.append(f"{target} ({_gist(exc, target)})")
            continue
        for path in paths_out:
            print(path)
    if failures:
        raise DownloadError(f"{len(failures)} of {len(args.targets)} target(s) failed, details above: "
                            + "; ".join(failures))
    return 0


def _gist(exc: BaseException, target: str, limit: int = 160) -> str:
    """The first clause of an error's first line, without the target's name: what the one error line says of it."""
    line = next((line for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
    gist = line.removeprefix(f"{target}: ").split("; ")[0].rstrip(":.")
    return gist if len(gist) <= limit else gist[: limit - 3] + "..."


def unknown_target(target: str, registry: Mapping[str, Source], known_groups: Mapping[str, int]) -> UnknownName:
    """``fetch``'s error for a name that is neither a key nor a group: the close matches among both, the groups."""
    import difflib

    close = difflib.get_close_matches(target, [*known_groups, *registry], n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
    return UnknownName(f"unknown source key or group {target!r}{hint} (groups: {', '.join(sorted(known_groups))}; "
                       f"`python -m common sources` lists every key)")


def run_sources(args: argparse.Namespace) -> int:
    """``sources [--group G] [--json]``: list entries with pinning and local presence."""
    registry = default_registry()
    group = getattr(args, "group", None)
    chosen = sources_in_group(group, registry) if group else list(registry.values())
    data_root = getattr(args, "data_root", None)
    lock = ChecksumLock(Path(data_root) if data_root is not None else paths.data_root())
    rows = [describe(s, data_root) for s in chosen]
    for row, source in zip(rows, chosen):
        row["sha256_recorded"] = None if source.sha256 or source.repo_id else lock.get(source)
    if getattr(args, "json", False):
        json.dump(rows, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    header = ("key", "group", "method", "size", "sha256", "present", "license")
    table = [header] + [
        (r["key"], r["group"], r["method"], _human_size(r["size"]),
         "pinned" if r["sha256_pinned"] else ("n/a" if r["method"].startswith("hf_")
                                              else "recorded" if r["sha256_recorded"] else "unpinned"),
         "yes" if r["present"] else "no", r["license"])
        for r in rows
    ]
    widths = [max(len(str(row[i])) for row in table) for i in range(len(header) - 1)]
    for row in table:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)) + "  " + str(row[-1]))
    return 0


def _human_size(size: int | None) -> str:
    if size is None:
        return "?"
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return str(size)  # pragma: no cover


__all__ = [
    "REGISTRY_PATH", "LOCK_NAME", "EXTRACT_MARKER", "SNAPSHOT_MARKER", "Source", "RegistryError", "FetchError",
    "DownloadError", "ChecksumError", "UnsafeArchiveError", "IncompleteExtractionError", "ManualDownloadRequired",
    "ChecksumLock",
    "load_registry", "default_registry", "get_source", "groups", "sources_in_group", "mirror_path", "fetch",
    "fetch_group", "is_present", "describe", "register_cli", "run_fetch", "run_sources",
]
