"""What the registry and ``fetch`` raise: one class per thing a caller may want to tell apart, each message naming
the entry and what to do next."""
from __future__ import annotations

from common.errors import WorkspaceError


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
