"""A throwaway copy of the workspace (code, params, dvc.yaml/dvc.lock files, published numbers) where DVC runs without
touching the real one: the rehearsal's (``common.rehearsal``, under the git-ignored ``build/rehearsal/``) and the
tests' (``tests/workspace_copy.py``)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Mapping

from common.paths import ROOT

IGNORED = {".venv", ".git", "build", "data", ".cache", "__pycache__", ".pytest_cache", ".ipynb_checkpoints",
           "dvc_plots"}
"""Never copied: environments, git, every data and build root, caches (a copy starts with none of them)."""
ENV_ROOTS = ("VLC_DATA", "VLC_BUILD", "VLC_CACHE")
"""Dropped from a copy's environment: its stages use the copy's own data/, build/ and .cache/ (DVC sees those)."""


def copy_workspace(dest: Path, keep_results: bool = False, root: Path = ROOT) -> Path:
    """Code, params, dvc.yaml/dvc.lock files and published numbers (and, with ``keep_results``, every result) of the
    workspace at ``root`` into ``dest`` (which must not exist), made a git repository of its own."""
    root = Path(root).resolve()

    def ignore(folder: str, names: list[str]) -> set[str]:
        rel = Path(folder).relative_to(root)
        skip = {n for n in names if n in IGNORED}
        if rel == Path(".dvc"):  # not this checkout's cache, nor its local config (a remote of its own user)
            skip |= {n for n in names if n in ("cache", "tmp", "config.local")}
        if rel == Path("results") and not keep_results:
            skip |= {n for n in names if n not in ("published",)}
        return skip

    shutil.copytree(root, dest, ignore=ignore)
    subprocess.run(["git", "init", "-q"], cwd=dest, check=True)
    return Path(dest)


def copy_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) without the data/build/cache roots, this interpreter's folder
    first on PATH (``python``, ``dvc``, ``torchrun`` of this environment)."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if k not in ENV_ROOTS}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def dvc(workspace: Path, env: Mapping[str, str] | None, *args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    """Run this environment's ``dvc`` in ``workspace`` (``env``: default this process's, with this interpreter's folder
    first on PATH)."""
    exe = Path(sys.executable).with_name("dvc")
    env = dict(os.environ if env is None else env)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run([str(exe), *args], cwd=workspace, env=env, capture_output=True, text=True, timeout=timeout)
