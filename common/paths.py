"""Where things live. Every path the workspace uses is derived here, overridable by environment."""
from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
"""The workspace root (the folder holding ``common/`` and ``papers/``)."""

RESULTS = ROOT / "results"
PUBLISHED = RESULTS / "published"


def data_root() -> Path:
    """Raw external data fetched by the full profile (``python -m common fetch``, checked against pinned sha256; git-ignored); ``VLC_DATA`` overrides."""
    return Path(os.environ.get("VLC_DATA", ROOT / "data"))


def build_root() -> Path:
    """Intermediate pipeline artifacts (mini world, checkpoints); DVC outputs live below it."""
    return Path(os.environ.get("VLC_BUILD", ROOT / "build"))


def build_dir(profile: str, name: str) -> Path:
    """``<build root>/<profile>/<name>``: where a paper's stages of one profile write (DVC outputs)."""
    return build_root() / profile / name


def cache_root() -> Path:
    """Persistent caches (embeddings) that survive ``dvc repro``; ``VLC_CACHE`` overrides."""
    return Path(os.environ.get("VLC_CACHE", ROOT / ".cache"))


def mirror_root() -> Path | None:
    """A local mirror of upstream files (``VLC_MIRROR``), laid out as URLs without the scheme."""
    value = os.environ.get("VLC_MIRROR")
    if not value:
        return None
    return Path(value).expanduser().resolve()
