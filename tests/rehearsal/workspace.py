"""A throwaway copy of the workspace (code, params, dvc.yaml/dvc.lock files, published numbers) where DVC runs without
touching the real one: the rehearsal's (``tests.rehearsal``, under the git-ignored ``build/rehearsal/``) and the
tests' (``tests/workspace_copy.py``)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Mapping

import yaml

from common.paths import ROOT
from common.pipeline import reproducible
from common.pipeline.dvc_run import run_dvc
from common.pipeline.params import PROFILES

IGNORED = {".venv", ".git", "build", "data", ".cache", "__pycache__", ".pytest_cache", ".ipynb_checkpoints",
           "dvc_plots"}
"""Never copied: environments, git, every data and build root, caches (a copy starts with none of them)."""
ENV_ROOTS = ("VLC_DATA", "VLC_BUILD", "VLC_CACHE")
"""Dropped from a copy's environment: its stages use the copy's own data/, build/ and .cache/ (DVC sees those)."""


def copy_workspace(dest: Path, keep_results: bool = False, root: Path = ROOT) -> Path:
    """The workspace at ``root`` (with ``keep_results``, every result too) into ``dest`` (which may exist, empty but for
    the rehearsal's marker), made a git repository of its own."""
    root = Path(root).resolve()
    shutil.copytree(root, dest, ignore=_ignored(root, keep_results), dirs_exist_ok=True)
    if not keep_results:
        for name in committed_inputs(root):
            (Path(dest) / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / name, Path(dest) / name)
    subprocess.run(["git", "init", "-q"], cwd=dest, check=True)
    return Path(dest)


def _ignored(root: Path, keep_results: bool):
    """``shutil.copytree``'s ``ignore``: what ``copy_workspace`` leaves out of the copy."""
    def ignore(folder: str, names: list[str]) -> set[str]:
        rel = Path(folder).relative_to(root)
        skip = {n for n in names if n in IGNORED}
        if rel == Path(".dvc"):  # not this checkout's cache, nor its local config (a remote of its own user)
            skip |= {n for n in names if n in ("cache", "tmp", "config.local")}
        if rel == Path("results") and not keep_results:
            skip |= {n for n in names if n not in ("published",)}
        return skip

    return ignore


def copy_bytes(keep_results: bool = False, root: Path = ROOT) -> int:
    """Bytes ``copy_workspace`` would write, counted before it copies anything (``space.check_room`` asks first)."""
    root = Path(root).resolve()
    ignore = _ignored(root, keep_results)
    total = 0
    for folder, dirs, files in os.walk(root):
        skip = ignore(folder, [*dirs, *files])
        dirs[:] = [d for d in dirs if d not in skip and not os.path.islink(os.path.join(folder, d))]
        for name in files:
            if name not in skip:
                try:
                    total += os.stat(os.path.join(folder, name)).st_size
                except OSError:  # a dangling link: copytree fails on it, and says so
                    continue
    if not keep_results:
        total += sum((root / name).stat().st_size for name in committed_inputs(root) if (root / name).is_file())
    return total


def committed_inputs(root: Path = ROOT) -> list[str]:
    """Files under ``results/`` that a stage depends on and no stage writes (committed inputs, such as a seed-spread
    table made offline): a copy needs them as a clone has them, though it carries no result."""
    deps: set[str] = set()
    outs: list[str] = []
    for dvc_file in [Path(root) / "dvc.yaml", *sorted(Path(root).glob("papers/*/dvc.yaml"))]:
        stages = (yaml.safe_load(dvc_file.read_text(encoding="utf-8")) or {}).get("stages", {})
        for stage in stages.values():
            stage = stage.get("do", stage)
            deps.update(d for d in stage.get("deps", []) if isinstance(d, str))
            outs += [next(iter(o)) if isinstance(o, dict) else o
                     for key in ("outs", "metrics", "plots") for o in stage.get(key, [])]
    written = [o.replace("${profile}", profile).split("${")[0]  # another interpolation: all under its fixed prefix
               for o in outs for profile in PROFILES]
    return sorted(d for d in deps if d.startswith("results/") and not d.startswith("results/published/")
                  and "${" not in d and (Path(root) / d).is_file()
                  and not any(d == w or (w.endswith("/") and d.startswith(w)) or d.startswith(w.rstrip("/") + "/")
                              for w in written if w))


def copy_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) without the data/build/cache roots, this interpreter's folder
    first on PATH, and the CPU profile's pins set (``reproducible.CPU_PINS``, unless ``VLC_CPU_PROFILE`` is off): the
    environment a CPU stage would re-execute itself into, so that it starts once, not twice (torch's and open_clip's
    imports take seconds)."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if k not in ENV_ROOTS}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    if reproducible.enabled(env):
        env.update(reproducible.CPU_PINS)
    return env


def dvc(workspace: Path, env: Mapping[str, str] | None, *args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    """Run this environment's ``dvc`` in ``workspace`` (``env``: default this process's, with this interpreter's folder
    first on PATH)."""
    env = dict(os.environ if env is None else env)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # the stages' python, torchrun
    return run_dvc(*args, cwd=workspace, env=env, timeout=timeout)
