"""Where the tests find the shared files beside a clone: the mirror of the authors' releases and the papers' texts.

The mirror is ``VLC_MIRROR`` when set (what the README tells a user to export), else ``../shared/mirror`` next
to the clone (the CI layout). One definition, so a user who sets ``VLC_MIRROR`` gets the mirror-backed tests run,
not skipped. Read once at import: tests that must not see a mirror clear the variable themselves.
"""
from __future__ import annotations

from pathlib import Path

from common.paths import ROOT, mirror_root

MIRROR: Path = mirror_root() or (ROOT.parent / "shared" / "mirror").resolve()

PAPER_TEXT_DIRS: tuple[Path, ...] = tuple(dict.fromkeys([
    (ROOT.parent / "shared" / "papers").resolve(),
    MIRROR.parent / "papers",  # ../shared/papers when VLC_MIRROR points at ../shared/mirror from elsewhere
]))
