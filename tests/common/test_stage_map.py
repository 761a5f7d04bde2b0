"""A stage's code finds its own stage without naming it: ``--stage``, else ``DVC_STAGE`` (as DVC writes it, from the
root or from a paper's folder), else the one stage whose command runs the module with these arguments."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from common.paths import ROOT
from common.pipeline.params import own_params, own_section, stage_params
from common.pipeline.stage_map import DVC_STAGE, StageNotFound, all_stages, current_stage, from_dvc_stage, stage_running


def test_the_stage_map_resolves_every_stage_as_dvc_does():
    """The map resolves the stage files itself (libyaml and DVC's resolver, no lock file): every stage's command,
    deps and declared parameters are those of DVC's own index, and ``stage_params`` reads exactly those keys."""
    from dvc.dependency.param import ParamsDependency
    from dvc.repo import Repo

    mapped = {s.address: s for s in all_stages()}
    with Repo(str(ROOT)) as repo:
        indexed = [s for s in repo.index.stages if s.cmd]
        assert len(indexed) == len(mapped) > 100
        for stage in indexed:
            ours = mapped[stage.name if stage.path_in_repo == "dvc.yaml" else f"{stage.path_in_repo}:{stage.name}"]
            assert ours.cmd == (stage.cmd if isinstance(stage.cmd, str) else " && ".join(stage.cmd))
            assert ours.deps == tuple(str(d.def_path) for d in stage.deps if not isinstance(d, ParamsDependency))
            files = {Path(d.fs_path).resolve() for d in stage.deps if isinstance(d, ParamsDependency)}
            declared = {key for d in stage.deps if isinstance(d, ParamsDependency) for key in d.params}
            params = stage_params(ours.address)
            assert files <= {ROOT / "params.yaml"} and declared <= _dotted(params), ours.address
            assert set(params) == {key.split(".")[0] for key in declared}, ours.address


def _dotted(params: dict, prefix: str = "") -> set[str]:
    """Every dotted key of nested parameters and of each of their parents (``a``, ``a.b``, ``a.b.c``)."""
    keys = set()
    for key, value in params.items():
        keys.add(prefix + key)
        if isinstance(value, dict):
            keys |= _dotted(value, f"{prefix}{key}.")
    return keys


@pytest.mark.parametrize("written, address", [
    ("papers/aro/dvc.yaml:tables", "papers/aro/dvc.yaml:tables"),                          # dvc repro from the root
    ("papers/aro/dvc.yaml:finetune-mini@negclip", "papers/aro/dvc.yaml:finetune-mini@negclip"),  # a foreach item
    ("mini/train@xs-2k", "mini/train@xs-2k"),                                              # the root dvc.yaml's
    ("tables", "papers/aro/dvc.yaml:tables"),                                              # from papers/aro/
    ("finetune-mini@clip-ft", "papers/aro/dvc.yaml:finetune-mini@clip-ft"),
    ("../../dvc.yaml:mini/world", "mini/world"),                                           # the root's, from there
])
def test_dvc_stage_as_dvc_writes_it_maps_to_the_workspace_address(written, address):
    assert from_dvc_stage(written) == address


def test_a_dvc_stage_several_files_define_is_told_apart_by_the_module():
    assert from_dvc_stage("mini-set", module="papers.sugarcrepe.sets_mini") == "papers/sugarcrepe/dvc.yaml:mini-set"
    with pytest.raises(StageNotFound, match=r"DVC_STAGE=mini-set: stage files .*papers/aro/dvc.yaml.* pass --stage"):
        from_dvc_stage("mini-set")


def test_the_order_stage_option_then_dvc_stage_then_the_stage_map(monkeypatch):
    monkeypatch.setenv(DVC_STAGE, "papers/aro/dvc.yaml:finetune-mini@clip-ft")
    assert current_stage("papers/aro/dvc.yaml:tables") == "papers/aro/dvc.yaml:tables"
    assert current_stage() == "papers/aro/dvc.yaml:finetune-mini@clip-ft"
    # a caller asking for another module's stage uses DVC_STAGE only when that stage runs the module
    assert current_stage(module="papers.aro.tables") == "papers/aro/dvc.yaml:tables"
    monkeypatch.setenv(DVC_STAGE, "mini-set")  # even one that names no stage of this workspace alone
    assert current_stage(module="papers.aro.tables") == "papers/aro/dvc.yaml:tables"
    assert current_stage(module="papers.sugarcrepe.sets_mini") == "papers/sugarcrepe/dvc.yaml:mini-set"
    monkeypatch.delenv(DVC_STAGE)
    assert current_stage(module="papers.aro.train", argv=["mini", "run", "negclip"]) == \
        "papers/aro/dvc.yaml:finetune-mini@negclip"


def test_the_stage_map_matches_arguments_and_says_what_to_do_otherwise():
    assert stage_running("papers.aro.tables", ["--anything"]) == "papers/aro/dvc.yaml:tables"  # one stage: its own
    assert stage_running("common.training.family", ["train", "xs-8k"]) == "mini/train@xs-8k"   # the same arguments
    assert stage_running("papers.aro.train", ["mini", "run", "clip-ft", "--device", "cpu"]) == \
        "papers/aro/dvc.yaml:finetune-mini@clip-ft"                                        # the same leading words
    with pytest.raises(StageNotFound, match=r"4 DVC stages run papers.aro.train \(papers/aro/dvc.yaml:"
                                            r"finetune-mini@negclip, .*@clip-ft\).*pass --stage"):
        stage_running("papers.aro.train", ["--device", "cpu"])
    with pytest.raises(StageNotFound, match=r"no DVC stage runs `python -m papers.aro.nothing` \(stage files: "
                                            r".*pass --stage"):
        stage_running("papers.aro.nothing", [])


@pytest.mark.parametrize("stage, dotted", [("papers/sugarcrepe/dvc.yaml:table6", "profile"),
                                           ("papers/conclip/dvc.yaml:mini-finetune@conclip", "conclip.mini")])
def test_own_params_under_dvc_are_the_stage_params(monkeypatch, stage, dotted):
    monkeypatch.setenv(DVC_STAGE, stage)
    assert own_params() == stage_params(stage)
    params, section = own_section(dotted)
    assert params == stage_params(stage) and section is not None


def test_dvc_sets_dvc_stage_as_read_here(tmp_path: Path):
    """A throwaway DVC project: a sub-pipeline's stage and a foreach item, run from the root and from the
    sub-pipeline's folder; each command prints what ``from_dvc_stage`` makes of the DVC_STAGE it was given."""
    show = ("import os, sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); "
            "from common.pipeline.stage_map import from_dvc_stage; "
            "print('STAGE', os.environ['DVC_STAGE'], from_dvc_stage(os.environ['DVC_STAGE'], Path.cwd()))")
    (tmp_path / "show.py").write_text(show + "\n")
    (tmp_path / "papers" / "x").mkdir(parents=True)
    (tmp_path / "papers" / "x" / "dvc.yaml").write_text(
        "stages:\n"
        "  tables:\n    wdir: ../..\n    cmd: python show.py " + str(ROOT) + "\n"
        "  finetune:\n    foreach: [negclip]\n    do:\n      wdir: ../..\n"
        "      cmd: python show.py " + str(ROOT) + " ${item}\n")
    dvc = str(Path(sys.executable).parent / "dvc")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop(DVC_STAGE, None)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([dvc, "init", "-q"], cwd=tmp_path, check=True, env=env)
    seen = set()
    for cwd, target in ((tmp_path, "papers/x/dvc.yaml"), (tmp_path / "papers" / "x", "dvc.yaml")):
        run = subprocess.run([dvc, "repro", "-f", target], cwd=cwd, capture_output=True, text=True, env=env)
        assert run.returncode == 0, run.stderr[-2000:]
        seen |= {tuple(line.split()[1:]) for line in run.stdout.splitlines() if line.startswith("STAGE ")}
    assert seen == {("papers/x/dvc.yaml:tables", "papers/x/dvc.yaml:tables"),
                    ("papers/x/dvc.yaml:finetune@negclip", "papers/x/dvc.yaml:finetune@negclip"),
                    ("tables", "papers/x/dvc.yaml:tables"),
                    ("finetune@negclip", "papers/x/dvc.yaml:finetune@negclip")}


def test_common_finds_a_papers_audit_and_aggregate_stages_by_their_commands():
    """``python -m common audit <paper>`` and ``report <paper>`` read the parameters of the stage that runs them."""
    from common.audit import audit_stage

    assert audit_stage("bivlc") == "papers/bivlc/dvc.yaml:audit"
    assert stage_running("common", ["report", "aro"], files=["dvc.yaml"]) == "papers/aro"
    with pytest.raises(StageNotFound, match="pass --stage"):
        stage_running("common", ["report", "nothing"], files=["dvc.yaml"])
