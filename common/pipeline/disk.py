"""Free space on a disk, for the messages that say a disk is full and how full (DVC's cache, the rehearsal's room)."""
from __future__ import annotations

import shutil
from pathlib import Path


def free_bytes(folder: Path) -> int:
    """Free bytes on the file system that holds ``folder`` (or would: its nearest existing parent)."""
    folder = Path(folder).resolve()
    while not folder.exists():
        folder = folder.parent
    return shutil.disk_usage(folder).free
