"""``params.yaml`` is validated once, when read (``common.pipeline.params.read_params``): a bad value, a missing profile or a
file that is not YAML is one ``ParamsError`` line naming the file, the key and what the value must be, never a
traceback deep inside a stage (issue 35, items 4 and 7)."""
from __future__ import annotations

import copy
import math
import re
from pathlib import Path

import pytest
import yaml

from common.errors import WorkspaceError, run_entry_point
from common.paths import ROOT

PARAMS = ROOT / "params.yaml"
REAL = yaml.safe_load(PARAMS.read_text(encoding="utf-8"))


def _load(path: Path):
    from common.pipeline.params import read_params

    return read_params(path)


def _with(tmp_path: Path, dotted: str | None, value=None, *, drop: bool = False) -> Path:
    """A copy of the real parameters with ``dotted`` set to ``value`` (or removed)."""
    params = copy.deepcopy(REAL)
    if dotted is not None:
        *parents, last = dotted.split(".")
        node = params
        for part in parents:
            node = node[part]
        if drop:
            del node[last]
        else:
            node[last] = value
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    return path


def _one_line_error(path: Path) -> str:
    with pytest.raises(WorkspaceError) as info:
        _load(path)
    message = str(info.value)
    assert "\n" not in message, message
    assert str(path) in message, message
    return message


def test_the_workspace_params_are_valid_and_unchanged():
    """Validation never changes a value: what a stage reads is what the file says (``1`` stays an int, ``1.0e-3`` a
    float)."""
    assert _load(PARAMS) == REAL


@pytest.mark.parametrize("dotted, value, expected", [
    ("profile", "Mini", "profile: must be one of 'mini', 'full', got 'Mini'"),
    ("profile", None, "profile: must be one of 'mini', 'full', got None"),
    ("sugarcrepe.mini_examples_per_category", 0,
     "sugarcrepe.mini_examples_per_category: must be a positive integer, got 0"),
    ("sugarcrepe.mini_examples_per_category", -5,
     "sugarcrepe.mini_examples_per_category: must be a positive integer, got -5"),
    ("mini.world.train_images", "many", "mini.world.train_images: must be a positive integer, got 'many'"),
    ("mini.world.image_size", 48.5, "mini.world.image_size: must be a positive integer, got 48.5"),
    ("mini.world.image_size", "48", "mini.world.image_size: must be a positive integer, got '48'"),
    ("mini.world.seed", -1, "mini.world.seed: must be a non-negative integer"),
    ("mini.world.seed", True, "mini.world.seed: must be a non-negative integer"),
    ("mini.world.captions_per_image", [3], "mini.world.captions_per_image: must be a positive integer, got [3]"),
    ("trainer.nproc_per_node", 0, "trainer.nproc_per_node: must be a positive integer, got 0"),
    ("train.xs-2k.lr", "1e-3", "train.xs-2k.lr: must be a positive number, got '1e-3'"),
    ("train.xs-2k.lr", 0, "train.xs-2k.lr: must be a positive number, got 0"),
    ("train.xs-2k.lr", math.nan, "train.xs-2k.lr: must be a positive number, got nan"),
    ("train.xs-2k.steps", 1.5, "train.xs-2k.steps: must be a positive integer"),
    ("train.xs-2k.arch", 7, "train.xs-2k.arch: must be a non-empty string"),
    ("engine.precision", "fp8", "engine.precision: must be one of 'fp32', 'bf16', 'fp16', got 'fp8'"),
    ("aro.full.finetune.accum", 0, "aro.full.finetune.accum: must be a positive integer, got 0"),
    ("engine.num_workers", -1, "engine.num_workers: must be 'auto' or a non-negative integer, got -1"),
    ("engine.image_batch_size", 0, "engine.image_batch_size: must be a positive integer, got 0"),
    ("sugarcrepe.negclip_mini.weight_decay", -0.1, "sugarcrepe.negclip_mini.weight_decay: must be a non-negative"),
    ("sugarcrepe.negclip_mini.warmup_steps", -1, "sugarcrepe.negclip_mini.warmup_steps: must be a non-negative"),
    ("sugarcrepe.figure5.n_resamples", math.inf, "sugarcrepe.figure5.n_resamples: must be a positive integer"),
    ("aro.seeds", [0, -1], "aro.seeds: must be a non-empty list of non-negative integers, got [0, -1]"),
    ("aro.mini.finetune.lrs", [], "aro.mini.finetune.lrs: must be a non-empty list of positive numbers, got []"),
    ("aro.mini.vg_relation_cases", 0, "aro.mini.vg_relation_cases: must be a positive integer"),
    ("bivlc.full.finetune.batch_size", {"clip-coco": 0, "trohn-text": 200},
     "bivlc.full.finetune.batch_size: must be a positive integer (or a table of names to positive integers)"),
    ("bivlc.mini.val_fraction", 1.0, "bivlc.mini.val_fraction: must be a number between 0 and 1 (exclusive)"),
    ("bivlc.mini.selection.quantile", 1.5, "bivlc.mini.selection.quantile: must be a number from 0 to 1"),
    ("conclip.full.finetune.shuffle", "yes", "conclip.full.finetune.shuffle: must be true or false, got 'yes'"),
    ("conclip.full.distractors.n", 0, "conclip.full.distractors.n: must be a positive integer"),
    ("hard_positives.mini.base", "", "hard_positives.mini.base: must be a non-empty string"),
])
def test_a_bad_value_is_one_line_naming_the_key(tmp_path, dotted, value, expected):
    message = _one_line_error(_with(tmp_path, dotted, value))
    assert f"{tmp_path / 'params.yaml'}: {expected}" in message, message


def test_a_missing_profile_names_the_remedy(tmp_path):
    message = _one_line_error(_with(tmp_path, "profile", drop=True))
    assert "profile: missing" in message and "profile: mini" in message, message


def test_the_line_of_the_bad_value_is_named(tmp_path):
    text = PARAMS.read_text(encoding="utf-8")
    line = next(n for n, row in enumerate(text.splitlines(), 1) if "mini_examples_per_category: 500" in row)
    path = tmp_path / "params.yaml"
    path.write_text(text.replace("mini_examples_per_category: 500", "mini_examples_per_category: 0"), encoding="utf-8")
    message = _one_line_error(path)
    assert message == (f"{path}: sugarcrepe.mini_examples_per_category: must be a positive integer, got 0 "
                       f"(line {line})"), message


def test_text_read_as_a_number_gets_a_hint(tmp_path):
    """YAML 1.1 reads ``1e-3`` (no dot) as text: the message says how to write the number."""
    text = PARAMS.read_text(encoding="utf-8").replace("lr: 0.002", "lr: 2e-3", 1)
    path = tmp_path / "params.yaml"
    path.write_text(text, encoding="utf-8")
    message = _one_line_error(path)
    assert "train.xs-2k.lr: must be a positive number, got '2e-3'" in message and "2.0e-3" in message, message


@pytest.mark.parametrize("name, text, expected", [
    ("yaml-syntax", "profile: mini\nmini:\n  world: [1, 2\n", r"line \d+ column \d+: not valid YAML"),
    ("bad-indent", "profile: mini\nmini:\n  world:\n    seed: 0\n   image_size: 48\n",
     r"line \d+ column \d+: not valid YAML"),
    ("tab", "profile: mini\nmini:\n\tworld: 1\n", r"line \d+ column \d+: not valid YAML"),
    ("duplicate-key", "profile: mini\nmini:\n  world:\n    seed: 0\n    seed: 1\n",
     r"mini\.world\.seed: duplicate key \(line 5; first on line 4\); keep one$"),
    ("empty", "", r"empty"),
    ("comments-only", "# nothing\n", r"empty"),
    ("top-level-list", "- profile\n- mini\n", r"a YAML mapping at the top level"),
    ("not-utf8", "profile: mini\n# caf\xe9\n", r"line 2: not UTF-8 text \(byte 0xe9\); save it as UTF-8$"),
    ("nested-100000", "a: " + "[" * 100_000 + "]" * 100_000 + "\nprofile: mini\n", r"nested too deeply"),
])
def test_an_unreadable_file_is_one_line(tmp_path, name, text, expected):
    path = tmp_path / "params.yaml"
    if name == "not-utf8":
        path.write_bytes(text.encode("cp1252"))
    else:
        path.write_text(text, encoding="utf-8")
    message = _one_line_error(path)
    assert re.search(expected, message), message


def test_a_lookup_of_a_missing_section_is_a_workspace_error():
    from common.pipeline.params import section

    with pytest.raises(WorkspaceError, match=r"params\.yaml: missing parameter 'sugarcrepe\.nothing'"):
        section(REAL, "sugarcrepe.nothing")
    with pytest.raises(KeyError):  # still a KeyError for the callers that expect one
        section(REAL, "sugarcrepe.nothing")


def test_the_entry_point_prints_one_error_line(tmp_path, capsys):
    path = _with(tmp_path, "sugarcrepe.mini_examples_per_category", 0)
    assert run_entry_point(lambda: _load(path)) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}: sugarcrepe.mini_examples_per_category: must be a positive integer, got 0 "
                          "(line ") and err.count("\n") == 1 and err.endswith(")\n"), err


# ------------------------------------------------------------------------------------------------------------------
# stage_params: the file is validated before DVC reads it (DVC's own errors were a KeyError traceback)
# ------------------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    from workspace_copy import copy_workspace

    return copy_workspace(tmp_path_factory.mktemp("params") / "ws")


@pytest.mark.parametrize("name, edit, expected", [
    ("profile-typo", lambda t: t.replace("profile: mini", "profile: Mini", 1), "profile: must be one of"),
    ("no-profile", lambda t: t.replace("profile: mini", "", 1), "profile: missing"),
    ("yaml-syntax", lambda t: t.replace("  world:", "  world: [", 1), "not valid YAML"),
    ("zero-examples", lambda t: t.replace("mini_examples_per_category: 500", "mini_examples_per_category: 0"),
     "sugarcrepe.mini_examples_per_category: must be a positive integer, got 0"),
])
def test_stage_params_validate_the_file_first(workspace, name, edit, expected):
    from common.pipeline.params import stage_params

    path = workspace / "params.yaml"
    path.write_text(edit(PARAMS.read_text(encoding="utf-8")), encoding="utf-8")
    try:
        with pytest.raises(WorkspaceError) as info:
            stage_params("papers/sugarcrepe/dvc.yaml:mini-set", repo=workspace)
    finally:
        path.write_text(PARAMS.read_text(encoding="utf-8"), encoding="utf-8")
    message = str(info.value)
    assert "\n" not in message and str(path) in message and expected in message, message


def test_an_unknown_stage_is_a_workspace_error(workspace):
    from common.pipeline.params import stage_params

    with pytest.raises(WorkspaceError, match="no-such-stage") as info:
        stage_params("papers/sugarcrepe/dvc.yaml:no-such-stage", repo=workspace)
    assert "\n" not in str(info.value)
