"""Shared fixtures: small random-weight models, temporary caches, the shared mirror."""
from __future__ import annotations

from pathlib import Path

import pytest

from common.paths import ROOT

MIRROR = (ROOT.parent / "shared" / "mirror").resolve()


@pytest.fixture(autouse=True)
def _isolated_roots(tmp_path_factory, monkeypatch):
    """No test writes into the workspace's real data, build or cache folders."""
    base = tmp_path_factory.mktemp("roots")
    monkeypatch.setenv("VLC_CACHE", str(base / "cache"))
    monkeypatch.setenv("VLC_DATA", str(base / "data"))
    monkeypatch.setenv("VLC_BUILD", str(base / "build"))


@pytest.fixture
def mirror(monkeypatch) -> Path:
    if not (MIRROR / "MANIFEST.tsv").is_file():
        pytest.skip(f"no mirror of the authors' released files at {MIRROR}")
    monkeypatch.setenv("VLC_MIRROR", str(MIRROR))
    return MIRROR


@pytest.fixture(scope="session")
def tiny_model():
    """A randomly initialized mini-vit-xs behind the EmbeddingModel interface (timing/logic only)."""
    from common.bench import random_model

    return random_model("mini-vit-xs")
