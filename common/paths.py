"""Where things live. Every path the workspace uses is derived here, overridable by environment.

A variable set to an empty string counts as unset (never the current folder). A variable naming a file or a folder
that does not exist is named as the culprit of the error it causes (``common.errors.with_setting_hint``, at every
entry point; the downloader checks ``VLC_MIRROR`` before using it); an unwritable ``VLC_CACHE`` is a warning
(``common.evaluation.cache``).
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Iterable

from common.errors import SettingError

ROOT = Path(__file__).resolve().parent.parent
"""The workspace root (the folder holding ``common/`` and ``papers/``)."""

RESULTS = ROOT / "results"
PUBLISHED = RESULTS / "published"


def data_root() -> Path:
    """Raw external data fetched by the full profile (``python -m common fetch``, checked against pinned sha256; git-ignored); ``VLC_DATA`` overrides."""
    return Path(os.environ.get("VLC_DATA") or ROOT / "data")


def build_root() -> Path:
    """Intermediate pipeline artifacts (mini world, checkpoints); DVC outputs live below it."""
    return Path(os.environ.get("VLC_BUILD") or ROOT / "build")


def build_dir(profile: str, name: str) -> Path:
    """``<build root>/<profile>/<name>``: where a paper's stages of one profile write (DVC outputs)."""
    return build_root() / profile / name


def cache_root() -> Path:
    """Persistent caches (embeddings) that survive ``dvc repro``; ``VLC_CACHE`` overrides."""
    return Path(os.environ.get("VLC_CACHE") or ROOT / ".cache")


def mirror_root() -> Path | None:
    """A local mirror of upstream files (``VLC_MIRROR``), laid out as URLs without the scheme."""
    value = os.environ.get("VLC_MIRROR")
    if not value:
        return None
    return Path(value).expanduser().resolve()


def refuse_workspace_outputs(paths: Iterable[Path], option: str) -> None:
    """Refuse a user-chosen output path (``--out``) inside the workspace's ``results/`` (the tracked results the
    pipeline stages write, and only they) or onto a file git tracks: ``SettingError`` naming ``option`` and the path.
    """
    paths = [Path(p) for p in paths]
    results = Path(RESULTS).resolve()
    for path in paths:
        if path.resolve().is_relative_to(results):
            raise SettingError(f"{option} {path} lies in {RESULTS}, the tracked results the pipeline stages write: "
                               f"choose a path outside it (e.g. under {build_root() / 'eval'})")
    tracked = _git_tracked([p for p in paths if p.is_file()])
    if tracked:
        raise SettingError(f"{option} {tracked[0]} would overwrite a file git tracks in this workspace: choose "
                           f"another path (e.g. under {build_root() / 'eval'})")


def _git_tracked(paths: list[Path]) -> list[Path]:
    """Those of ``paths`` (existing files) that git tracks in the workspace; none when git or the repository is not
    there."""
    inside = [p for p in paths if p.resolve().is_relative_to(ROOT)]
    if not inside:
        return []
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--", *(str(p.resolve()) for p in inside)], cwd=ROOT,
                                capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if listed.returncode != 0:
        return []
    names = {(ROOT / name).resolve() for name in listed.stdout.decode(errors="replace").split("\0") if name}
    return [p for p in inside if p.resolve() in names]
