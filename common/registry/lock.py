"""The trust-on-first-use lock: the sha256 first observed for each source that the registry pins none for."""
from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl  # POSIX, as common.files.io's atomic writers are: concurrent fetches serialize their writes of the lock
import json
import logging
from pathlib import Path
from typing import Any, Iterator

from common.files.io import write_json_atomic
from common.registry.errors import DownloadError
from common.registry.markers import LOCK_NAME
from common.registry.sources import SHA256_RE, Source

log = logging.getLogger(__name__)


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
        return sha if isinstance(sha, str) and SHA256_RE.fullmatch(sha) else None

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
                           "written by common/registry/lock.py",
                "sources": dict(sorted(entries.items())),
            })
        log.warning(
            "%s: no sha256 pinned in the registry; trusting on first use and recording sha256 %s in %s",
            source.key, sha256, self.path,
        )

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Serialize read-modify-write between concurrent fetches (an exclusive fcntl lock)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_name(f".{LOCK_NAME}.flock"), "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)
