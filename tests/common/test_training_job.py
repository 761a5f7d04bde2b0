"""The job shape and its runner (common/training/job.py, launch.py): the resume key follows the job's definition and
the import closure of its module (so an edit of any module a run executes starts it over), a job trains through the
shared trainer, and ``add_run_command`` gives a module its ``run`` subcommand. Tiny model, CPU."""
from __future__ import annotations

import argparse
import functools
import json
from pathlib import Path

import pytest

from common.training import ClipLoss, FromScratch, SyntheticBatches, TrainConfig
from common.training.job import FinetuneJob, code_files, describe_loss, resume_state_path, run_job
from common.training.launch import add_run_command, launch


def _write(root: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_code_closure_follows_imports_inside_functions(tmp_path):
    """The drift the old hand-written lists had: a batch source imported by the job module (here inside a function)
    is part of the key, so an edit there never lets an interrupted run continue from state the old code wrote."""
    from common.training.job import code_digest

    _write(tmp_path, {
        "papers/__init__.py": "", "papers/toy/__init__.py": "",
        "papers/toy/train_mini.py": "def build():\n    from papers.toy.batches import Batches\n    return Batches\n",
        "papers/toy/batches.py": "class Batches:\n    pass\n",
        "papers/toy/tables.py": "x = 1\n",
    })
    assert code_files("papers.toy.train_mini", tmp_path) == [
        "papers/__init__.py", "papers/toy/__init__.py", "papers/toy/batches.py", "papers/toy/train_mini.py"]
    before = code_digest("papers.toy.train_mini", tmp_path)
    (tmp_path / "papers/toy/tables.py").write_text("x = 2\n")  # not run by the job: same key
    assert code_digest("papers.toy.train_mini", tmp_path) == before
    (tmp_path / "papers/toy/batches.py").write_text("class Batches:\n    size = 2\n")
    assert code_digest("papers.toy.train_mini", tmp_path) != before


def _job(steps: int = 2, **overrides) -> FinetuneJob:
    fields = dict(name="toy-run", init=FromScratch("mini-vit-xs"), batches=SyntheticBatches(),
                  loss=ClipLoss, config=TrainConfig(steps=steps, batch_size=4, warmup_steps=1),
                  module="common.training.job", provenance={"set_sha256": "abc"})
    fields.update(overrides)
    return FinetuneJob(**fields)


def test_resume_key_is_the_runs_definition(tmp_path, monkeypatch):
    monkeypatch.setenv("VLC_CACHE", str(tmp_path))
    first = resume_state_path(_job())
    assert first == resume_state_path(_job()) and first.parent == tmp_path / "training" / "toy-run"
    assert first.name.endswith(".resume.pt")
    assert resume_state_path(_job(steps=3)) != first
    assert resume_state_path(_job(provenance={"set_sha256": "abd"})) != first
    assert resume_state_path(_job(), world_size=2) != first
    assert resume_state_path(_job(loss=functools.partial(ClipLoss))) == first  # same class, no keywords


def test_loss_identity_names_class_and_keywords():
    from papers.conclip.losses import ConClipLoss

    assert describe_loss(ClipLoss) == {"class": "common.training.losses.ClipLoss", "keywords": {}}
    assert describe_loss(functools.partial(ConClipLoss, terms=("l1",))) == {
        "class": "papers.conclip.losses.ConClipLoss", "keywords": {"terms": ("l1",)}}


def test_a_job_trains_and_its_steps_can_be_cut(tmp_path, monkeypatch):
    monkeypatch.setenv("VLC_CACHE", str(tmp_path / "cache"))
    job = _job(steps=5).with_steps(2)
    result = run_job(job, tmp_path / "out" / "toy.safetensors")
    sidecar = json.loads((tmp_path / "out" / "toy.json").read_text())
    assert len(result.losses) == 2 and sidecar["trainer"]["steps"] == 2 and sidecar["set_sha256"] == "abc"
    assert not (tmp_path / "cache" / "training" / "toy-run").exists()  # the state and its folder are gone


def test_run_command_launches_the_built_job(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("VLC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("VLC_CPU_PROFILE", "off")  # no pinned re-exec of the test process
    seen = {}

    def build(args, world, cpu_profile):
        seen["run"], seen["profile"] = args.run, cpu_profile
        return _job(steps=4, name=f"toy-{args.run}")

    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    add_run_command(sub, ["a", "b"], build, out_path=lambda args: tmp_path / f"{args.run}.safetensors",
                    log_dir=lambda: tmp_path / "logs")
    args = parser.parse_args(["run", "b", "--steps", "1"])
    assert args.func(args) == 0
    log = json.loads((tmp_path / "logs" / "b.json").read_text())
    assert seen["run"] == "b" and log["run"] == "toy-b" and (tmp_path / "b.safetensors").is_file()
    assert "toy-b: final loss" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        parser.parse_args(["run", "c"])


def test_launch_writes_no_log_when_the_build_fails(tmp_path, monkeypatch):
    monkeypatch.setenv("VLC_CPU_PROFILE", "off")

    def build(world, cpu_profile):
        raise ValueError("bad set")

    with pytest.raises(ValueError, match="bad set"):
        launch(build, tmp_path / "w.safetensors", tmp_path / "log.json")
    assert not (tmp_path / "log.json").exists()


def test_a_builder_run_as_main_is_keyed_by_its_real_name(monkeypatch):
    """``python -m papers.x.train_mini run ...`` makes the builder's ``__name__`` "__main__": the key follows the name
    it was run under (found by the toy-paper test: the first run failed with "not a module of this repository")."""
    import sys
    import types

    from common.training.job import module_name

    main = types.ModuleType("__main__")
    main.__spec__ = types.SimpleNamespace(name="common.training.family")
    monkeypatch.setitem(sys.modules, "__main__", main)
    assert module_name("__main__") == "common.training.family"
    assert code_files("__main__") == code_files("common.training.family")
    assert _job(module="__main__").describe() == _job(module="common.training.family").describe()
