"""The registry's entries (``Source``) and files: the shared ``sources.toml`` beside this module and each paper's.

Reading the registry imports nothing that fetches, so a stage that only looks a key up (a path, a note, a group)
depends on this module and ``errors`` alone.
"""
from __future__ import annotations

import difflib
import functools
import os
import re
import urllib.parse
from collections import Counter
from dataclasses import dataclass, fields
from pathlib import Path, PurePosixPath
from typing import Any, Iterable, Mapping

from common import paths, plugins
from common.files.utf8 import read_toml
from common.registry.errors import RegistryError
from common.registry.markers import LOCK_NAME

REGISTRY_PATH = Path(__file__).resolve().parent / "sources.toml"
"""The shared registry file (entries naming no paper, and entries two or more papers use); each paper's other
entries are in ``papers/<paper>/sources.toml``."""
DATA_FILES = ("common/registry/sources.toml",)
"""Read at run time (``common.pipeline.stage_deps``); a paper module that fetches its own keys declares its sources.toml (a
key in the shared file needs no more)."""

METHODS = frozenset({"http", "hf_dataset", "hf_model", "manual"})
ARCHIVES = frozenset({"zip"})
SHA256_RE = re.compile(r"[0-9a-f]{64}")
"""A sha256 as the registry and the checksum lock write it: 64 lowercase hex characters."""
MD5_RE = re.compile(r"[0-9a-f]{32}")


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
    md5: str | None = None
    """The md5 its publisher states (a dataset page, torchvision's pin), checked by the module that reads the file:
    the registry is where a file's expected checksum is written, so a rehearsal's copy states its stand-in's."""
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
        if self.sha256 is not None and not (isinstance(self.sha256, str) and SHA256_RE.fullmatch(self.sha256)):
            out.append(f"sha256 must be 64 lowercase hex characters (got {self.sha256!r})")
        if self.md5 is not None and not (isinstance(self.md5, str) and MD5_RE.fullmatch(self.md5)):
            out.append(f"md5 must be 32 lowercase hex characters (got {self.md5!r})")
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
        doc = read_toml(reg_path, RegistryError)[1]
    except FileNotFoundError as exc:
        raise RegistryError(f"{origin}: registry file not found") from exc
    extra = sorted(set(doc) - {"version", "source"})
    if extra:
        raise RegistryError(f"{origin}: unknown top-level key(s) {extra} (expected 'version' and [[source]] tables)")
    tables = doc.get("source", [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise RegistryError(f"{origin}: 'source' must be an array of tables ([[source]])")
    return [_source_from_table(table, origin, index) for index, table in enumerate(tables)]


def load_registry(*paths_: str | os.PathLike[str]) -> dict[str, Source]:
    """Read and validate registry files together (none: the shared file alone); keys are unique and dests don't
    collide across all of them."""
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


@functools.lru_cache(maxsize=1)
def default_registry() -> dict[str, Source]:
    """Every registered source: the shared file and every paper's ``sources.toml`` (loaded once per process)."""
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
        close = difflib.get_close_matches(key, list(registry if registry is not None else default_registry()), n=3)
        hint = f"; did you mean {close}?" if close else ""
        raise RegistryError(f"unknown source key {key!r}{hint}") from None


def groups(registry: Mapping[str, Source] | None = None) -> dict[str, int]:
    """Group name -> number of entries, in registry order."""
    reg = registry if registry is not None else default_registry()
    return dict(Counter(source.group for source in reg.values()))


def sources_in_group(group: str, registry: Mapping[str, Source] | None = None) -> list[Source]:
    """Entries of one group in registry order; an unknown group raises ``RegistryError`` listing the known ones."""
    reg = registry if registry is not None else default_registry()
    found = [s for s in reg.values() if s.group == group]
    if not found:
        raise RegistryError(f"unknown group {group!r}; known groups: {sorted(groups(reg))}")
    return found
