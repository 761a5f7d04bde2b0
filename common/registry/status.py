"""What is on disk for each entry, without fetching or hashing anything: ``python -m common sources``' columns."""
from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

from common import paths
from common.registry.markers import EXTRACT_MARKER, SNAPSHOT_MARKER
from common.registry.sources import Source


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
    return {**asdict(source), "allow_patterns": list(source.allow_patterns), "sha256_pinned": source.sha256 is not None,
            "present": is_present(source, data_root), "path": str(source.target_path(data_root))}
