"""environment.yml (conda users) must list exactly the dependencies of pyproject.toml, and the version floors must
be ones the code really runs on."""
from __future__ import annotations

import tomllib

import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

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
    return {r.replace(" ", "") for r in pip_sections[0] if not r.startswith("-")}


def _floor(name: str) -> Version:
    req = next(Requirement(r) for r in _pyproject_requirements() if Requirement(r).name == name)
    floors = [Version(s.version) for s in req.specifier if s.operator == ">="]
    assert floors, f"{name} needs a >= floor"
    return max(floors)


def test_environment_yml_matches_pyproject():
    ours, conda = _pyproject_requirements(), _conda_pip_requirements()
    assert ours == conda, f"only in pyproject: {sorted(ours - conda)}; only in environment.yml: {sorted(conda - ours)}"


def test_python_versions_agree():
    """Compared as versions: as strings, '3.9' >= '3.11' would hold."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    python = next(d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python="))
    conda_python = Version(python.removeprefix("python="))
    assert conda_python in SpecifierSet(project["requires-python"]), (conda_python, project["requires-python"])


def test_torch_requirement_is_a_range():
    # users elsewhere must get current releases: never pin torch exactly
    assert any(r.startswith("torch>=") for r in _pyproject_requirements())
    assert not any(r.startswith("torch==") for r in _pyproject_requirements())


def test_floors_cover_what_the_code_calls():
    """The text encoder calls open_clip's ``text_global_pool(..., eos_token_id=...)`` (open_clip 3.1, where MetaCLIP2
    support added it) and training uses fused AdamW on the CPU (torch 2.4). The installed versions have them, and
    the declared floors are no lower than the versions that introduced them."""
    import inspect

    import open_clip
    import torch
    from open_clip.transformer import text_global_pool

    assert "eos_token_id" in inspect.signature(text_global_pool).parameters
    assert _floor("open_clip_torch") >= Version("3.1")
    assert Version(open_clip.__version__) >= _floor("open_clip_torch")
    assert _floor("torch") >= Version("2.4")
    assert Version(torch.__version__.split("+")[0]) >= _floor("torch")
    param = torch.nn.Parameter(torch.zeros(2))
    param.grad = torch.ones(2)
    torch.optim.AdamW([param], lr=0.1, fused=True).step()  # raises on a torch without fused CPU AdamW
    assert param.detach().ne(0).all()


def _constraints() -> dict[str, Version]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            req = Requirement(line)
            (spec,) = req.specifier
            assert spec.operator == "==", f"constraints.txt pins exact versions: {line}"
            pins[canonicalize_name(req.name)] = Version(spec.version)
    return pins


def test_constraints_pin_every_requirement_inside_pyprojects_ranges():
    """The lock (``constraints.txt``, issue 48) names a version of every declared package, each one the declared
    range allows, so ``make install`` cannot silently fall back to the newest release of one."""
    pins = _constraints()
    for r in map(Requirement, _pyproject_requirements()):
        name = canonicalize_name(r.name)
        assert name in pins, f"constraints.txt lacks {r.name} (make constraints)"
        assert r.specifier.contains(pins[name], prereleases=True), f"constraints.txt: {name}=={pins[name]} not in {r}"


def test_the_install_and_conda_use_the_constraints():
    assert "pip install --quiet -c constraints.txt -e" in (ROOT / "Makefile").read_text()
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    (pip,) = [d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d]
    assert "-c constraints.txt" in pip
