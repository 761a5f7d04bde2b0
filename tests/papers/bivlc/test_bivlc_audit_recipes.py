"""Rows of runs trained here (the fine-tunes and the detectors' heads) name the recipe each ran with: the tables
stages copy it from the sidecars into ``context.json``'s ``training`` (row id; a detector row's heads under
``detection.head_run``), and the audit joins it to the row's note; rows of other models name none."""
from __future__ import annotations

import json
import shutil

import pytest

from common.audit.runs import RecipeRecordError
from common.paths import RESULTS
from papers.bivlc import audit
from papers.bivlc.detection import head_run

RECIPE = {"name": "mini", "digest": "d1g", "settings": {}, "deviations": {}}


def _results(tmp_path, training):
    out = tmp_path / "results" / "bivlc" / "mini"
    out.mkdir(parents=True)
    for name in ("table2.csv", "table4.csv", "table5.csv"):
        shutil.copy(RESULTS / "bivlc" / "mini" / name, out / name)
    (out / "context.json").write_text(json.dumps({"training": training}))
    return tmp_path / "results"


def test_fine_tune_and_detector_rows_name_their_recipes(tmp_path):
    results = _results(tmp_path, {"trohn-img": {"recipe": RECIPE},
                                  head_run("clipdet", "image"): {"recipe": RECIPE},
                                  head_run("clipdet", "text"): {"loss": "detector"}})
    notes = {(r.table, r.row): r.note for r in audit.run_recomputations("mini", results)}
    assert "recipe mini (d1g)" in notes[("Table 3", "CLIPTROHN-Img")]
    assert "image head: recipe mini (d1g)" in notes[("Table 5", "CLIPDet")]
    assert "text head: recipe not recorded" in notes[("Table 5", "CLIPDet")]
    assert "recipe" not in notes[("Table 3", "NegCLIP")]


def test_a_damaged_recipe_is_one_error(tmp_path):
    results = _results(tmp_path, {"trohn-img": {"recipe": {"name": 1}}})
    with pytest.raises(RecipeRecordError, match=r"context.json: training.trohn-img: 'recipe'"):
        audit.run_recomputations("mini", results)


def test_tables_stages_copy_the_recipes_of_runs_trained_here(tmp_path, monkeypatch):
    from papers.bivlc import tables

    record = json.dumps({"loss": "x", "recipe": RECIPE, "epochs": 1})
    (tmp_path / "trohn-img.json").write_text(record)
    (tmp_path / "clip-image.json").write_text(record)
    entries = [tables.ModelEntry("clip", "mini/xs-32k", "CLIP", "pretrained"),
               tables.ModelEntry("trohn-img", "bivlc/mini-trohn-img", "T", "finetune",
                                 tmp_path / "trohn-img.best.safetensors")]
    training = tables.training_records(entries, tables.mini_detectors(entries, tmp_path))
    assert set(training) == {"trohn-img", head_run("clipdet", "image")}
    assert training["trohn-img"]["recipe"] == RECIPE and training["trohn-img"]["epochs"] == 1

    monkeypatch.setenv("VLC_BUILD", str(tmp_path))
    models = tmp_path / "full" / "bivlc" / "models"
    models.mkdir(parents=True)
    (models / "clip-coco.json").write_text(record)
    (models / "det-clip-text.json").write_text(record)
    spec = tables.DetectorSpec("openai/ViT-B-32", models / "det-clip-image.best.loss.safetensors",
                               models / "det-clip-text.best.loss.safetensors")
    rows = {"clip": "openai/ViT-B-32", "clip-coco": "bivlc/clip-coco", "ft-clip-coco": "bivlc/full-clip-coco"}
    training = tables.training_records(tables.zoo_entries(rows), {"ft-clipdet": spec})
    assert set(training) == {"ft-clip-coco", head_run("ft-clipdet", "text")}
    assert training["ft-clip-coco"]["recipe"] == RECIPE
