"""A throwaway copy of the workspace for tests that run DVC on it (nothing they do touches the real one)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from common.paths import ROOT

IGNORED = {".venv", ".git", "build", "data", ".cache", "__pycache__", ".pytest_cache", ".ipynb_checkpoints",
           "dvc_plots"}


def copy_workspace(dest: Path, keep_results: bool = False) -> Path:
    """Code, params, dvc.yaml/dvc.lock files and published numbers (and, with ``keep_results``, every result)."""
    def ignore(folder: str, names: list[str]) -> set[str]:
        rel = Path(folder).relative_to(ROOT)
        skip = {n for n in names if n in IGNORED}
        if rel == Path(".dvc"):  # not this checkout's cache, nor its local config (a remote of its own user)
            skip |= {n for n in names if n in ("cache", "tmp", "config.local")}
        if rel == Path("results") and not keep_results:
            skip |= {n for n in names if n not in ("published",)}
        return skip

    shutil.copytree(ROOT, dest, ignore=ignore)
    subprocess.run(["git", "init", "-q"], cwd=dest, check=True)
    return dest


def dvc(workspace: Path, env: dict | None, *args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    """Run this environment's ``dvc`` in ``workspace``."""
    exe = Path(sys.executable).with_name("dvc")
    env = dict(os.environ if env is None else env)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run([str(exe), *args], cwd=workspace, env=env, capture_output=True, text=True, timeout=timeout)
