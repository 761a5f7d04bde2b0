"""An audit row recomputed from a model this workspace trained names the recipe it ran with (``common.audit.runs``:
``recipe_note``, ``context_recipe_notes``), read from the checkpoint's training record as the trainer writes it."""
from __future__ import annotations

import json

import pytest

from common.audit.runs import RecipeRecordError, recipe_note
from common.training import ClipLoss, FromScratch, SyntheticBatches, TrainConfig, train
from common.training.recipes import parse_recipes
from common.zoo import register_local_configs

RECIPE = """
[negclip]
optimizer = {value = "adamw", source = "main.py:171"}
betas = {value = [0.9, 0.98], source = "params.py:4"}
eps = {value = 1e-6, source = "params.py:4"}
decay_rule = {value = "open_clip_names", source = "main.py:165"}
schedule = {value = "warmup_cosine", source = "main.py"}
clamp_logit_scale = {value = true, source = "train.py"}
augmentation = {value = "center_crop", source = "x"}
batch_size = {value = 1024, source = "paper, Appendix C.3"}
epochs = {value = 5, source = "paper, Appendix C.3"}
"""


def test_a_trained_run_s_sidecar_names_its_recipe_and_deviations(tmp_path):
    """A real 1-step run's sidecar: the recipe's name and digest, the batch that is not the authors' and the epochs
    the job recorded (its provenance) against the authors' 5."""
    register_local_configs()
    recipe = parse_recipes(RECIPE, "recipes.toml")["negclip"]
    out = tmp_path / "m.safetensors"
    train(TrainConfig(steps=1, batch_size=4, warmup_steps=1, recipe=recipe), FromScratch("mini-vit-xs"),
          SyntheticBatches(), ClipLoss, out, provenance={"epochs": 0.5})
    assert recipe_note(json.loads(out.with_suffix(".json").read_text())) == (
        f"recipe negclip ({recipe.digest}): batch_size 4 (authors 1024), epochs 0.5 (authors 5)")


def test_a_record_without_a_recipe_says_so_and_a_bad_one_is_an_error():
    assert recipe_note({"trainer": {}}) == "recipe not recorded (trained before recipes existed: retrain to name it)"
    assert recipe_note({"recipe": {"name": "mini", "digest": "ab", "deviations": {}}}) == (
        "recipe mini (ab): this workspace's settings (params.yaml)")  # no authors' numbers to agree with
    assert recipe_note({"recipe": {"name": "negclip", "digest": "cd", "settings": {"lr": 1e-5}, "deviations": {}}}) == (
        "recipe negclip (cd): the recipe's numbers")  # the recipe's: not always the authors' (hard positives')
    with pytest.raises(RecipeRecordError, match=r"m.json: 'recipe' is not the trainer's"):
        recipe_note({"recipe": {"name": 3}}, "m.json")
    with pytest.raises(RecipeRecordError, match=r"m.json: 'recipe.paper_differs' is not the trainer's"):
        recipe_note({"recipe": {"name": "a", "digest": "b", "paper_differs": [1]}}, "m.json")


def test_the_audit_row_says_where_the_paper_and_the_code_disagree(tmp_path):
    """A setting whose paper value differs from the code's (``paper = {...}`` in recipes.toml) is in the run's record
    and in every audit row's note for that run, deviation or not."""
    register_local_configs()
    text = RECIPE.replace('batch_size = {value = 1024, source = "paper, Appendix C.3"}',
                          'batch_size = {value = 256, source = "README.md:74", quote = "--batch-size=256", '
                          'paper = {value = 1024, source = "paper, Appendix C.3", quote = "N=1024 batch size"}}')
    recipe = parse_recipes(text, "recipes.toml")["negclip"]
    out = tmp_path / "m.safetensors"
    train(TrainConfig(steps=1, batch_size=4, warmup_steps=1, recipe=recipe), FromScratch("mini-vit-xs"),
          SyntheticBatches(), ClipLoss, out, provenance={"epochs": 5})
    assert recipe_note(json.loads(out.with_suffix(".json").read_text())) == (
        f"recipe negclip ({recipe.digest}): batch_size 4 (authors 256); the paper differs from the code: "
        f"batch_size 1024 in the paper (paper, Appendix C.3), 256 in the code")


def test_a_results_context_names_each_run_s_recipe_and_a_damaged_entry_is_one_error(tmp_path):
    """The tables stage copies each run's recipe into its context (``recipe_fields``); the audit reads it there."""
    from common.audit.runs import context_recipe_notes, recipe_of_row
    from common.training.records import recipe_fields

    sidecar = {"trainer": {}, "loss": "clip", "epochs": 2,
               "recipe": {"name": "mini", "digest": "ab", "settings": {"epochs": 5}, "deviations": {}}}
    assert recipe_fields(sidecar) == {"recipe": sidecar["recipe"], "epochs": 2}
    context = tmp_path / "context.json"
    context.write_text(json.dumps({"training": {"ft": recipe_fields(sidecar), "old": {"loss": "clip"}}}))
    notes = context_recipe_notes(context, "rerun the tables stage")
    assert notes == {"ft": "recipe mini (ab): epochs 2 (authors 5)",
                     "old": "recipe not recorded (trained before recipes existed: retrain to name it)"}
    assert recipe_of_row(notes, "row", "model")({"row": "base", "model": "ft"}) == notes["ft"]
    assert recipe_of_row(notes, "row")({"row": "base"}) == ""
    assert context_recipe_notes(tmp_path / "absent.json", "x") == {}
    context.write_text(json.dumps({"training": {"ft": {"recipe": {"name": "mini"}}}}))
    with pytest.raises(RecipeRecordError, match=r"context.json: training.ft: 'recipe' is not the trainer's") as err:
        context_recipe_notes(context, "x")
    assert "\n" not in str(err.value)
