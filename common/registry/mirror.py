"""A local mirror of upstream URLs (``VLC_MIRROR``): each URL's file at ``<mirror>/<host>/<path>``, never outside."""
from __future__ import annotations

import os
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from common.errors import SettingError


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
