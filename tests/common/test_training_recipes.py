"""Recipes as data (``common.training.recipes``): a bad file is one line naming the file and the key; the trainer
builds its optimiser, decay groups, schedule and clamp from the recipe and records its name, digest and the run's
deviations. Tiny synthetic runs on CPU."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from common.training import ClipLoss, FromScratch, SyntheticBatches, TrainConfig, train
from common.training.optim import lr_at
from common.training.recipes import RecipeError, mini_recipe, parse_recipes
from common.zoo import register_local_configs

ARCH = "mini-vit-xs"
RULES = """
[r]
optimizer = {value = "adamw", source = "a.py:1"}
betas = {value = [0.9, 0.999], source = "a.py:1"}
eps = {value = 1e-8, source = "a.py:1"}
decay_rule = {value = "all", source = "a.py:2"}
schedule = {value = "constant", source = "a.py:3"}
clamp_logit_scale = {value = false, source = "a.py:4"}
augmentation = {value = "center_crop", source = "a.py:5"}
weight_decay = {value = 0.2, source = "a.py:6"}
"""
CROP = 'crop_scale = {value = [0.9, 1.0], source = "a.py:7"}\n'


@pytest.mark.parametrize("edit, expected", [
    (lambda t: t + 'colour = {value = 1, source = "x"}\n', "recipes.toml: [r].colour: unknown setting"),
    (lambda t: t.replace('value = 1e-8, source = "a.py:1"', 'value = "small", source = "a.py:1"'),
     "recipes.toml: [r].eps: 'small' has the wrong type"),
    (lambda t: t.replace('{value = "all", source = "a.py:2"}', '{value = "all"}'), "recipes.toml: [r].decay_rule: expected"),
    (lambda t: t.replace('source = "a.py:3"', 'source = " "'), "recipes.toml: [r].schedule: the source must name"),
    (lambda t: t.replace('"constant"', '"linear"'), "recipes.toml: [r].schedule: 'linear' is not one of"),
    (lambda t: t.replace('clamp_logit_scale = {value = false, source = "a.py:4"}\n', ''),
     "recipes.toml: [r].clamp_logit_scale: missing"),
    (lambda t: t.replace('"center_crop"', '"random_resized_crop"'), "recipes.toml: [r].crop_scale: missing"),
    (lambda t: t + CROP, "recipes.toml: [r].crop_scale: only random_resized_crop crops"),
    (lambda t: t.replace("[0.9, 0.999]", "[0.9, 1.0]"), "recipes.toml: [r].betas: "),
    (lambda t: t.replace("[0.9, 0.999]", "[-0.1, 0.999]"), "recipes.toml: [r].betas: "),
    (lambda t: t.replace("value = 1e-8", "value = 0.0"), "recipes.toml: [r].eps: "),
    (lambda t: t + 'lr = {value = 0, source = "x"}\n', "recipes.toml: [r].lr: "),
    (lambda t: t.replace("value = 0.2", "value = -0.1"), "recipes.toml: [r].weight_decay: "),
    (lambda t: t + 'warmup_steps = {value = -1, source = "x"}\n', "recipes.toml: [r].warmup_steps: "),
    (lambda t: t + 'epochs = {value = 0, source = "x"}\n', "recipes.toml: [r].epochs: "),
    (lambda t: t + 'batch_size = {value = 0, source = "x"}\n', "recipes.toml: [r].batch_size: "),
    (lambda t: t.replace('"center_crop"', '"random_resized_crop"') + CROP.replace("0.9, 1.0", "0.0, 1.0"),
     "recipes.toml: [r].crop_scale: "),
    (lambda t: t.replace('"center_crop"', '"random_resized_crop"') + CROP.replace("0.9, 1.0", "0.9, 0.5"),
     "recipes.toml: [r].crop_scale: "),
    (lambda t: t.replace('"center_crop"', '"random_resized_crop"') + CROP.replace("0.9, 1.0", "0.9, 1.1"),
     "recipes.toml: [r].crop_scale: "),
    (lambda t: t + 'warmup_steps = {value = 5, source = "x"}\n', "recipes.toml: [r].warmup_steps: a constant"),
])
def test_a_bad_recipe_is_one_line_naming_file_and_key(edit, expected):
    with pytest.raises(RecipeError) as info:
        parse_recipes(edit(RULES), "recipes.toml")
    assert str(info.value).startswith(expected) and "\n" not in str(info.value)


def test_the_mini_recipe_is_the_workspace_s_old_optimiser():
    r = mini_recipe()
    assert (r.optimizer, r.betas, r.eps, r.decay_rule, r.schedule, r.clamp_logit_scale, r.augmentation) == (
        "adamw", (0.9, 0.98), 1e-6, "clip", "warmup_cosine", True, "center_crop")
    assert set(r.sources) == {"optimizer", "betas", "eps", "decay_rule", "schedule", "clamp_logit_scale",
                              "augmentation"}


def test_constant_schedule():
    assert [lr_at("constant", s, 1e-3, 5, 10) for s in range(10)] == [1e-3] * 10
    assert lr_at("warmup_cosine", 0, 1.0, 2, 6) == 0.5


class _HotScale(FromScratch):
    """A tiny model whose logit scale starts above ln 100, so a clamp shows."""

    def build(self):
        built = super().build()
        with torch.no_grad():
            built.model.logit_scale.fill_(5.0)
        return built


def test_the_trainer_builds_from_the_recipe_and_records_it(tmp_path):
    """Recipe ``r``: Adam(W) betas (0.9, 0.999), eps 1e-8, every tensor decayed (the logit scale too), constant lr,
    no clamp. The logit scale must stay above ln 100 (no clamp), and the record names the recipe."""
    register_local_configs()
    recipe = parse_recipes(RULES, "recipes.toml")["r"]
    seen = []
    result = train(TrainConfig(steps=2, batch_size=4, lr=1e-4, weight_decay=0.1, warmup_steps=0, validate_every=1,
                               recipe=recipe),
                   _HotScale(ARCH), SyntheticBatches(), ClipLoss, tmp_path / "m.safetensors",
                   validate=lambda m: seen.append(m.logit_scale.item()) or 0.0)
    assert seen[0] > math.log(100) and seen[1] > math.log(100)
    record = result.record["recipe"]
    assert record["name"] == "r" and record["digest"] == recipe.digest and record["file"] == "recipes.toml"
    assert record["deviations"] == {"weight_decay": {"authors": 0.2, "run": 0.1}}
    assert "recipe" not in result.record["trainer"]


def test_the_default_record_names_the_mini_recipe(tmp_path):
    register_local_configs()
    result = train(TrainConfig(steps=1, batch_size=4, warmup_steps=1), FromScratch(ARCH), SyntheticBatches(),
                   ClipLoss, tmp_path / "m.safetensors")
    assert result.record["recipe"]["name"] == "mini" and result.record["recipe"]["digest"] == mini_recipe().digest


def test_fp16_needs_cuda(tmp_path):
    with pytest.raises(ValueError, match="'fp16' needs CUDA"):
        train(TrainConfig(steps=1, batch_size=4, precision="fp16"), FromScratch(ARCH), SyntheticBatches(), ClipLoss,
              tmp_path / "m.safetensors")


@pytest.mark.parametrize("wide", [True, False])
def test_random_resized_crop_falls_back_to_torchvision_s_centre_crop(tmp_path, wide):
    """An image too elongated for any of the 10 draws (3:1 with area >= 0.9 and aspect in [3/4, 4/3]) gets
    torchvision's fallback (``RandomResizedCrop.get_params``): the centre crop at the nearest allowed aspect, the
    whole short side kept (300 x 100 -> 133 x 100). The middle 133 columns are red, the rest blue: only red comes back."""
    from PIL import Image

    from common.training.files import FileImages

    image = Image.new("RGB", (300, 100) if wide else (100, 300), (0, 0, 255))
    # the centre 133 of 300: 83..215 ((300 - 133) // 2 = 83); one more on either side would be blue
    image.paste((255, 0, 0), (83, 0, 216, 100) if wide else (0, 83, 100, 216))
    image.save(tmp_path / "a.png")
    pixels = FileImages((tmp_path / "a.png",), 16, workers=1, crop_scale=(0.9, 1.0)).get(np.array([0]), (0, 0, 0))
    assert pixels.shape == (1, 3, 16, 16)
    assert (pixels[0, 0] == 255).all() and (pixels[0, 2] == 0).all()


def test_a_table_extends_one_above_and_states_only_what_differs():
    recipes = parse_recipes(RULES + '[s]\nextends = "r"\nweight_decay = {value = 0.1, source = "b.py:9"}\n'
                            '[t]\nextends = "s"\n', "recipes.toml")
    r, s, t = recipes["r"], recipes["s"], recipes["t"]
    assert (s.weight_decay, s.sources["weight_decay"]) == (0.1, "b.py:9")
    assert {k: v for k, v in s.settings().items() if k != "weight_decay"} == \
        {k: v for k, v in r.settings().items() if k != "weight_decay"}
    assert s.sources["schedule"] == r.sources["schedule"] == "a.py:3"
    assert (t.settings(), t.digest, t.name) == (s.settings(), s.digest, "t")
    assert r.weight_decay == 0.2  # the base is not changed by the table that extends it


@pytest.mark.parametrize("extends", ['"later"', '"r "', "1", '"s"'])
def test_extends_names_a_table_above(extends):
    text = RULES + f"[s]\nextends = {extends}\n[later]\nextends = \"r\"\n"
    with pytest.raises(RecipeError) as info:
        parse_recipes(text, "recipes.toml")
    assert str(info.value).startswith("recipes.toml: [s].extends: ") and "a table extends one of r" in str(info.value)


def test_only_random_resized_crop_has_a_training_crop_scale():
    """``train_crop_scale``: what the batch source crops with. A hand-built recipe (no parse) that keeps a crop scale
    but names the centre crop still trains on the centre crop, as its record says."""
    from dataclasses import replace

    crop = parse_recipes(RULES.replace('"center_crop"', '"random_resized_crop"') + CROP, "recipes.toml")["r"]
    assert crop.train_crop_scale == (0.9, 1.0)
    assert parse_recipes(RULES, "recipes.toml")["r"].train_crop_scale is None
    centre = replace(crop, augmentation="center_crop")
    assert centre.train_crop_scale is None


VALUES = {"optimizer": '"adamw"', "betas": "[0.9, 0.999]", "eps": "1e-8", "decay_rule": '"all"',
          "schedule": '"warmup_cosine"', "clamp_logit_scale": "false", "augmentation": '"random_resized_crop"',
          "crop_scale": "[0.9, 1.0]", "lr": "1e-5", "weight_decay": "0.2", "warmup_steps": "0", "epochs": "5",
          "batch_size": "128", "precision": '"fp16"'}
OTHER = {"optimizer": '"adam"', "betas": "[0.8, 0.999]", "eps": "1e-6", "decay_rule": '"clip"',
         "schedule": '"constant"', "clamp_logit_scale": "true", "augmentation": '"center_crop"',
         "crop_scale": "[0.8, 1.0]", "lr": "2e-5", "weight_decay": "0.1", "warmup_steps": "10", "epochs": "6",
         "batch_size": "64", "precision": '"fp32"'}


def _digest(values: dict, sources: dict | None = None) -> str:
    text = "[r]\n" + "".join(f'{k} = {{value = {v}, source = "{(sources or {}).get(k, k + ".py:1")}"}}\n'
                             for k, v in values.items())
    return parse_recipes(text, "recipes.toml")["r"].digest


def test_the_digest_is_the_settings_only():
    """Two runs with one digest ran one recipe: changing any setting's value changes it; correcting a citation (a
    source, its quote, a note, the paper's differing value) or ``mini_profile`` does not change what ran."""
    base = _digest(VALUES)
    assert _digest({**VALUES, "mini_profile": '"mini"'}, {"mini_profile": "the mini's"}) == base
    for key in VALUES:
        assert _digest(VALUES, {key: "elsewhere.py:9"}) == base, key
        changed = {**VALUES, key: OTHER[key]}
        if key == "augmentation":  # the centre crop has no crop scale
            del changed["crop_scale"]
        assert _digest(changed) != base, key
    quoted = "[r]\n" + "".join(f'{k} = {{value = {v}, source = "a.py:1", quote = "words", note = "why"}}\n'
                               for k, v in VALUES.items())
    assert parse_recipes(quoted, "recipes.toml")["r"].digest == base


def test_a_conflict_between_paper_and_code_is_kept_and_shown(tmp_path):
    """The value is the code's; the paper's differing value, its source and words are kept, shown in the README's
    table and recorded in the training record."""

    text = "[r]\n" + "".join(f'{k} = {{value = {v}, source = "{k}.py:1"}}\n' for k, v in VALUES.items() if k != "lr")
    text += 'lr = {value = 1e-3, source = "code.py:98", quote = "lr=0.001", paper = {value = 1e-6, source = ' \
            '"paper, Appendix E", quote = "a learning rate of 1e-6"}}\n'
    recipe = parse_recipes(text, "recipes.toml")["r"]
    assert recipe.lr == 1e-3 and recipe.conflicts["lr"].value == 1e-6
    assert recipe.describe({"lr": 1e-3})["paper_differs"] == {
        "lr": {"code": 1e-3, "paper": 1e-6, "paper_source": "paper, Appendix E"}}
    assert recipe.deviations({"lr": 1e-3}) == {}
    from common.training.recipes import markdown

    path = tmp_path / "recipes.toml"
    path.write_text(text)
    (row,) = [line for line in markdown(path).splitlines() if line.startswith("| lr |")]
    assert row.startswith("| lr | 0.001 (code); **the paper: 1e-06** | code.py:98 \"lr=0.001\"; **the paper differs**: "
                          "paper, Appendix E \"a learning rate of 1e-6\" |")
    bad = text.replace('quote = "a learning rate of 1e-6"', 'quote = 5')
    with pytest.raises(RecipeError, match=r"\[r\]\.lr\.paper: quote must be text"):
        parse_recipes(bad, "recipes.toml")


def test_the_mini_column_says_when_the_mini_has_no_crop(tmp_path):
    """The mini recipe has no crop scale (centre crop): its column says so rather than pointing at params.yaml."""
    from common.training.recipes import markdown

    (tmp_path / "recipes.toml").write_text(RULES.replace('"center_crop"', '"random_resized_crop"') + CROP)
    rows = {line.split(" | ")[0]: line for line in markdown(tmp_path / "recipes.toml").splitlines()}
    assert rows["| crop_scale"].endswith("| (0.9, 1) | none (center_crop) |")
    assert rows["| weight_decay"].endswith("| params.yaml (mini) |")


def test_a_constant_schedule_with_warmup_is_refused(tmp_path):
    """The constant schedule has no warmup: a config asking for one is refused, not silently ignored."""
    register_local_configs()
    recipe = parse_recipes(RULES, "recipes.toml")["r"]
    with pytest.raises(ValueError, match="constant schedule") as info:
        train(TrainConfig(steps=1, batch_size=4, warmup_steps=1, recipe=recipe), FromScratch(ARCH),
              SyntheticBatches(), ClipLoss, tmp_path / "m.safetensors")
    assert "\n" not in str(info.value) and not (tmp_path / "m.safetensors").exists()


def test_the_clip_decay_rule_is_the_workspace_s():
    from common.training.optim import exclude_from_wd
    from common.training.recipes import DECAY_RULES

    assert DECAY_RULES["clip"] is exclude_from_wd
