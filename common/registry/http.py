"""A URL streamed into a file, retrying transient failures: what ``fetch`` does when the mirror lacks the file."""
from __future__ import annotations

import contextlib
import socket
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Iterator

from common import __version__

USER_AGENT = f"vlc-workspace/{__version__} (reproducibility downloader; Python-urllib)"
HTTP_TIMEOUT_S = 60.0
HTTP_RETRIES = 2
_CHUNK = 1 << 20


def http_download(url: str, out: Path, *, total_hint: int | None, progress: bool, timeout: float,
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
    """Yield an ``update(n)`` callable backed by tqdm when wanted."""
    if not enabled:
        yield lambda n: None
        return
    # deferred: tqdm.auto takes about 50 ms to import, paid only when a bar is drawn (`fetch --help` stays fast)
    from tqdm.auto import tqdm

    with tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=label, leave=False) as bar:
        yield bar.update
