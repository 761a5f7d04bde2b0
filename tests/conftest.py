"""Shared fixtures: small random-weight models, temporary caches, the shared mirror, published numbers."""
from __future__ import annotations

import os
from pathlib import Path

# `make test` runs one pytest worker per core, each with torch's default of one OpenMP thread per core; OpenMP's idle
# threads spin at every barrier, so two busy workers each ran at about half speed (2026-12-02, 2 cores: a 200-step
# training took 43-47 s beside a second one, 20-22 s with passive waiting, 14 s alone). Passive waiting changes how
# an idle thread waits, not the thread count nor the bits a test checks. Set before torch is loaded; inherited by
# the workers and by every subprocess a test starts.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest
from hypothesis import settings

# The published-numbers fixtures of tests/papers/<paper>/test_published_<paper>.py and
# tests/common/test_published_common.py (paper, cells, index, claims, raw_rows, raw_claims, paper_text), registered
# here for every test module; see published_support.py.
from published_support import cells, claims, index, paper, paper_text, raw_claims, raw_rows  # noqa: F401
from shared_files import MIRROR

settings.register_profile("gate", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False, database=None)
settings.load_profile("gate")
"""Property tests draw the same examples on every run (``gate``, the default): a red CI names a change, not a
lucky draw. ``pytest --hypothesis-profile explore tests/...`` draws fresh ones to hunt for new failures (a found
one is pinned with ``@example``). Neither writes an example database into the workspace."""


@pytest.fixture(autouse=True)
def _isolated_roots(tmp_path_factory, monkeypatch):
    """No test writes into the workspace's real data, build or cache folders."""
    base = tmp_path_factory.mktemp("roots")
    monkeypatch.setenv("VLC_CACHE", str(base / "cache"))
    monkeypatch.setenv("VLC_DATA", str(base / "data"))
    monkeypatch.setenv("VLC_BUILD", str(base / "build"))


@pytest.fixture(scope="module")
def released_env(tmp_path_factory):
    """For a whole module: the shared mirror and a fresh data folder, to recompute from released files."""
    if not (MIRROR / "MANIFEST.tsv").is_file():
        pytest.skip(f"no mirror of the authors' released files at {MIRROR}")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VLC_MIRROR", str(MIRROR))
        mp.setenv("VLC_DATA", str(tmp_path_factory.mktemp("released_data")))
        yield MIRROR


@pytest.fixture
def mirror(monkeypatch) -> Path:
    if not (MIRROR / "MANIFEST.tsv").is_file():
        pytest.skip(f"no mirror of the authors' released files at {MIRROR}")
    monkeypatch.setenv("VLC_MIRROR", str(MIRROR))
    return MIRROR


@pytest.fixture(scope="session")
def tiny_model():
    """A randomly initialized mini-vit-xs behind the EmbeddingModel interface (timing/logic only)."""
    from common.zoo import random_model

    return random_model("mini-vit-xs")
