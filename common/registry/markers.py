"""The files this code keeps in the data root beside what it fetched, named in one place: the registry refuses a
dest that would overwrite one, the fetchers write them and ``python -m common sources`` reads them."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

LOCK_NAME = "checksums.lock.json"
"""Trust-on-first-use hashes, kept at the data root (not in git: it describes this machine's copies)."""
EXTRACT_MARKER = ".vlc-extracted.json"
"""Written inside an extracted archive's folder; records the archive's sha256."""
SNAPSHOT_MARKER = ".vlc-snapshot.json"
"""Written inside a Hugging Face snapshot folder once snapshot_download has finished."""


def read_marker(marker: Path) -> dict[str, Any]:
    """A marker's JSON object, or {} when it is missing, unreadable or not an object (then it vouches for nothing)."""
    try:
        doc = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    return doc if isinstance(doc, dict) else {}
