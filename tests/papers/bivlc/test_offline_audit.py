"""A failed or degraded audit never overwrites the paper's results (issue 16).

* offline (``VLC_MIRROR`` unset, the network refused), ``dvc repro -f`` of the bivlc audit in a copy of the
  workspace fails and leaves ``results/audit/bivlc.*`` byte-identical and ``git status`` clean (its outputs are
  ``persist: true``, so DVC does not delete them first); with the mirror it reproduces the same bytes;
* a mirror file whose checksum does not match: the audit names the file, the expected and found sha256, the
  path and the remedy, exits 3 under ``--strict`` and changes nothing; without ``--strict`` the partial audit
  goes to ``results/audit/partial/`` (git-ignored), never over the real one.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from common.paths import ROOT
from shared_files import MIRROR
from workspace_copy import copy_workspace, dvc

PAPER = "bivlc"
OUTPUTS = tuple(f"results/audit/{PAPER}{suffix}" for suffix in (".md", ".csv", ".png", "_summary.json"))
CORRUPTED = "bivlc/released/results/BiVLC_ViT-B-32.csv"
needs_mirror = pytest.mark.skipif(not (MIRROR / "MANIFEST.tsv").is_file(), reason=f"no mirror at {MIRROR}")


def read_outputs(root: Path) -> dict[str, bytes]:
    return {name: (root / name).read_bytes() for name in OUTPUTS}


def offline_env(data: Path) -> dict[str, str]:
    """No mirror, and every HTTP(S) request sent to a proxy whose name never resolves (RFC 2606 ``.invalid``):
    the downloader fails at once, as on a machine without a network, even where there is one."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VLC_MIRROR", "VLC_BUILD", "no_proxy", "NO_PROXY")}
    env["VLC_DATA"] = str(data)
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        env[name] = "http://offline.invalid:9"
    return env


def git(workspace: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=workspace, check=True,
                          capture_output=True, text=True).stdout


@needs_mirror
def test_dvc_repro_offline_keeps_outputs_then_mirror_reproduces_them(tmp_path: Path) -> None:
    ws = copy_workspace(tmp_path / "ws", keep_results=True)
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "copy")
    before = read_outputs(ws)
    assert before == read_outputs(ROOT)

    env = offline_env(tmp_path / "data")
    failed = dvc(ws, env, "repro", "-f", "-s", f"papers/{PAPER}/dvc.yaml:audit", timeout=300)
    assert failed.returncode != 0, failed.stdout + failed.stderr
    assert "audit incomplete (--strict)" in failed.stderr and "nothing was written" in failed.stderr
    assert "Expected sha256" in failed.stderr and "VLC_MIRROR" in failed.stderr
    assert read_outputs(ws) == before
    assert git(ws, "status", "--porcelain") == ""
    assert not (ws / "results" / "audit" / "partial").exists()

    env["VLC_MIRROR"] = str(MIRROR)
    done = dvc(ws, env, "repro", "-f", "-s", f"papers/{PAPER}/dvc.yaml:audit", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert read_outputs(ws) == before
    assert git(ws, "status", "--porcelain", "results") == ""


@pytest.fixture
def corrupt_mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """The shared mirror (symlinked) with one pinned file replaced by corrupt bytes; the network refused."""
    from common.registry import fetch as fetching
    from common.registry.mirror import mirror_path
    from common.registry.sources import get_source

    mirror = tmp_path / "mirror"
    shutil.copytree(MIRROR, mirror, copy_function=os.symlink)
    bad = mirror_path(get_source(CORRUPTED).url, mirror)
    bad.unlink()
    bad.write_bytes(b"not the released file\n")

    def refuse(url: str, *args: object, **kwargs: object) -> None:
        raise OSError(f"network refused in tests: {url}")

    monkeypatch.setenv("VLC_MIRROR", str(mirror))
    monkeypatch.setenv("VLC_DATA", str(tmp_path / "data"))
    monkeypatch.setattr(fetching, "http_download", refuse)
    return mirror, bad


@pytest.fixture
def results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the committed bivlc audit in a temporary results folder the audit writes into."""
    import common.audit

    root = tmp_path / "results"
    for name in OUTPUTS:
        (root.parent / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, root.parent / name)
    monkeypatch.setattr(common.audit, "RESULTS", root)
    return root


@needs_mirror
def test_checksum_mismatch_is_named_and_changes_nothing(corrupt_mirror, results: Path, capsys) -> None:
    from common.registry.sources import get_source
    from papers.bivlc import audit

    _, bad = corrupt_mirror
    before = read_outputs(results.parent)
    assert audit.main(["--strict"]) == 3
    err = capsys.readouterr().err
    assert "checksum mismatch" in err
    assert get_source(CORRUPTED).sha256 in err  # expected
    assert hashlib.sha256(bad.read_bytes()).hexdigest() in err  # found
    assert f"delete the corrupt file at {bad}" in err and "VLC_MIRROR" in err  # where, and the remedy
    assert "nothing was written" in err
    assert read_outputs(results.parent) == before
    assert not (results / "audit" / "partial").exists()

    # deliberately partial (no --strict): written beside, never over the paper's audit
    assert audit.main([]) == 0
    captured = capsys.readouterr()
    partial = results / "audit" / "partial"
    assert "checksum mismatch" in captured.err and f"{partial}/" in captured.err
    assert read_outputs(results.parent) == before
    assert (partial / ".gitignore").read_text() == "*\n"
    assert {p.name for p in partial.iterdir()} == {".gitignore", *(Path(n).name for n in OUTPUTS)}
    assert (partial / f"{PAPER}.csv").read_bytes() != before[f"results/audit/{PAPER}.csv"]
    assert f"markdown: {partial / (PAPER + '.md')}" in captured.out
