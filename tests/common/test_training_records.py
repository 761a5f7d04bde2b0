"""What a tables stage copies from training records into its results context (``common.training.records``)."""
from __future__ import annotations

import json

import pytest

from common.errors import WorkspaceError
from common.training.records import sidecar_of, training_context


def _record(path, **extra):
    path.with_suffix("").with_suffix(".json").write_text(json.dumps(
        {"trainer": {"steps": 2}, "loss": "L", "data": "d", "final_loss": 1.5, "recipe": {"name": "r"}, "epochs": 1,
         "other": 0, **extra}))


def test_runs_trained_here_are_recorded_and_released_weights_left_out(tmp_path):
    (tmp_path / "a.safetensors").write_bytes(b"")
    _record(tmp_path / "a.safetensors", frozen=["image"])
    (tmp_path / "released.safetensors").write_bytes(b"")
    context = training_context({"a": tmp_path / "a.best.safetensors", "released": tmp_path / "released.safetensors",
                                "zoo": None}, ("trainer", "loss", "data", "final_loss", "frozen"))
    assert context == {"a": {"trainer": {"steps": 2}, "loss": "L", "data": "d", "final_loss": 1.5,
                             "frozen": ["image"], "recipe": {"name": "r"}, "epochs": 1}}
    assert sidecar_of(tmp_path / "a.best.loss.safetensors") == tmp_path / "a.json"


def test_a_run_that_must_have_a_record_names_its_remedy(tmp_path):
    with pytest.raises(WorkspaceError) as info:
        training_context({"hn": tmp_path / "hn.safetensors"}, remedies={"hn": "run the mini-finetune@hn stage"})
    assert str(info.value) == f"{tmp_path / 'hn.json'}: missing; run the mini-finetune@hn stage"
    (tmp_path / "hn.json").write_text("{")
    with pytest.raises(WorkspaceError, match="run the mini-finetune@hn stage"):
        training_context({"hn": tmp_path / "hn.safetensors"}, remedies={"hn": "run the mini-finetune@hn stage"})
