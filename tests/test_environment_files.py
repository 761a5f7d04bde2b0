"""environment.yml (conda users) must list exactly the dependencies of pyproject.toml."""
from __future__ import annotations

import tomllib

import yaml

from common.paths import ROOT


def _pyproject_requirements() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        reqs += extra
    return {r.replace(" ", "") for r in reqs}


def _conda_pip_requirements() -> set[str]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_sections = [d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d]
    assert len(pip_sections) == 1, "environment.yml needs exactly one pip: section"
    return {r.replace(" ", "") for r in pip_sections[0] if not r.startswith("-e")}


def test_environment_yml_matches_pyproject():
    ours, conda = _pyproject_requirements(), _conda_pip_requirements()
    assert ours == conda, f"only in pyproject: {sorted(ours - conda)}; only in environment.yml: {sorted(conda - ours)}"


def test_python_versions_agree():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    python = next(d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python="))
    minimum = project["requires-python"].removeprefix(">=")
    assert python.removeprefix("python=") >= minimum


def test_torch_requirement_is_a_range():
    # users elsewhere must get current releases: never pin torch exactly
    assert any(r.startswith("torch>=") for r in _pyproject_requirements())
    assert not any(r.startswith("torch==") for r in _pyproject_requirements())
