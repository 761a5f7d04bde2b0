"""The workspace's DVC parameters (``params.yaml`` at the root): one file, read by every stage."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from common.paths import ROOT

PARAMS_FILE = ROOT / "params.yaml"
PROFILES = ("mini", "full")


def load_params(path: Path = PARAMS_FILE) -> dict[str, Any]:
    with open(path, encoding="utf-8") as fh:
        params = yaml.safe_load(fh) or {}
    profile = params.get("profile")
    if profile not in PROFILES:
        raise ValueError(f"{path}: profile must be one of {PROFILES}, got {profile!r}")
    return params


def section(params: dict[str, Any], dotted: str, path: Path = PARAMS_FILE) -> Any:
    """``params['a']['b']`` for ``'a.b'``, with an error naming the file and the missing key."""
    node: Any = params
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            raise KeyError(f"{path}: missing parameter {dotted!r}")
        node = node[part]
    return node


def stage_params(stage: str, repo: Path = ROOT) -> dict[str, Any]:
    """The parameters a DVC stage declares, and only those (what ``dvc.api.params_show(stages=[stage])`` returns).

    A stage script reads its parameters here, so it cannot read one that its ``params:`` does not list (the read
    fails with a KeyError), and DVC re-runs the stage whenever any parameter it reads changes. ``stage`` is a DVC
    address: ``mini/world``, ``mini/train@xs-2k``, ``papers/sugarcrepe/dvc.yaml:table6``.

    DVC resolves the stage (its ``foreach`` item, ``${...}`` interpolation), but only the stage's own dvc.yaml is
    parsed, not every pipeline of the repository as ``params_show`` does: about 1 s instead of 4 s, paid by every
    stage of every pipeline.
    """
    from dvc.dependency.param import ParamsDependency
    from dvc.repo import Repo

    dvcfile, _, name = stage.rpartition(":")
    try:
        with Repo(str(repo)) as dvc_repo:  # the path given: DVC would read a bare target relative to the cwd
            stages = [dvc_repo.stage.load_one(path=str(Path(repo) / (dvcfile or "dvc.yaml")), name=name)]
    except Exception as exc:  # dvc raises its own exception types for unknown stages and unreadable files
        raise KeyError(f"{repo}: cannot read the parameters of DVC stage {stage!r}: {exc}") from exc
    params: dict[str, Any] = {}
    files: dict[str, dict[str, Any]] = {}
    for dep in (d for s in stages for d in s.deps if isinstance(d, ParamsDependency)):
        path = str(dep.fs_path)
        if path not in files:
            with open(path, encoding="utf-8") as fh:
                files[path] = yaml.safe_load(fh) or {}
        values = files[path]
        for key in dep.params or list(values):
            node, target, parts = values, params, key.split(".")
            for part in parts[:-1]:
                if not isinstance(node, dict) or part not in node:
                    raise KeyError(f"{path}: missing parameter {key!r} (declared by DVC stage {stage!r})")
                node, target = node[part], target.setdefault(part, {})
            if not isinstance(node, dict) or parts[-1] not in node:
                raise KeyError(f"{path}: missing parameter {key!r} (declared by DVC stage {stage!r})")
            target[parts[-1]] = node[parts[-1]]
    profile = params.get("profile")
    if profile is not None and profile not in PROFILES:
        raise ValueError(f"{PARAMS_FILE}: profile must be one of {PROFILES}, got {profile!r}")
    return params


def stage_section(stage: str, dotted: str) -> tuple[dict[str, Any], Any]:
    """A stage's parameters and the section ``dotted`` of them (``conclip.mini``): what a stage's command reads."""
    params = stage_params(stage)
    return params, section(params, dotted)
