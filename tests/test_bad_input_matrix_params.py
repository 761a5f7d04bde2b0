"""The bad-input matrix (``tests/test_bad_input_matrix.py``), issue 35's cases for parameters, prepared sets,
reports and the family's names: each ``Case`` exits non-zero with one ``error:`` line naming the culprit, no
traceback, nothing written and every tracked file of ``results/`` unchanged.

Runners beyond the matrix's ``cli``: ``copy`` runs ``python -m <argv>`` in a throwaway copy of the workspace whose
``params.yaml`` the case spoiled (the stage reads the copy's parameters, as DVC would run it there); ``report`` runs
``python -m common report <paper>`` in-process over a copy of ``results/`` that the case damaged; ``subprocess``
runs ``python -m common <argv>`` from the workspace, end to end.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

from test_bad_input_matrix import (
    REPO, Case, _eval, _file, _run_in_process, _spoil_category, _spoil_manifest, assert_one_error_line, good_set,
    tracked_outputs, write_category, write_manifest)
from workspace_copy import copy_workspace

DEEP = "[" * 100_000 + "]" * 100_000
"""JSON nested 100,000 levels deep: Python's parser gives up with a RecursionError."""


# ----------------------------------------------------------------------------------------------------------------
# params.yaml, in a copy of the workspace
# ----------------------------------------------------------------------------------------------------------------
def _params(edit: Callable[[str], str], *command: str, keep_results: bool = False):
    """A case builder: a workspace copy whose params.yaml ``edit`` spoiled; ``command`` after ``python -m`` ("{out}"
    becomes the case's output folder)."""
    def argv(root: Path) -> list[str]:
        work = copy_workspace(root / "ws", keep_results=keep_results)
        path = work / "params.yaml"
        path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")
        return ["-m", *(word.replace("{out}", str(root / "out")) for word in command)]
    return argv


def _yaml_error_line(path: Path) -> int:
    """The line (1-based) where YAML's own parser stops on ``path``: the error must name it."""
    import yaml

    try:
        yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.MarkedYAMLError as exc:
        return exc.problem_mark.line + 1
    raise AssertionError(f"{path} parses: the case did not spoil it")


def _replace(old: str, new: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        assert old in text, old
        return text.replace(old, new, 1)
    return edit


def _params_key(key: str) -> Callable[[Path], str]:
    """The culprit of a bad value: the copy's params.yaml and the key."""
    return lambda root: f"{root / 'ws' / 'params.yaml'}: {key}"


SETS_MINI = ("papers.sugarcrepe.sets_mini", "--out", "{out}")
WORLD = ("common.miniworld.build", "train", "--out", "{out}")
TRAIN = ("common", "train", "xs-2k")
EXAMPLES = "mini_examples_per_category: 500"

PARAMS_CASES: list[Case] = [
    # item 4: an impossible count was seven empty category files and exit 0
    Case("sugarcrepe-sets-mini", "params-zero-examples", _params(_replace(EXAMPLES, EXAMPLES[:-3] + "0"), *SETS_MINI),
         lambda r: f"{r / 'ws' / 'params.yaml'}: sugarcrepe.mini_examples_per_category: must be a positive integer, "
                   "got 0", runner="copy"),
    Case("sugarcrepe-sets-mini", "params-negative-examples",
         _params(_replace(EXAMPLES, EXAMPLES[:-3] + "-5"), *SETS_MINI),
         _params_key("sugarcrepe.mini_examples_per_category: must be a positive integer, got -5"), runner="copy"),
    # item 7: the profile, the file itself
    Case("sugarcrepe-sets-mini", "params-profile-typo", _params(_replace("profile: mini", "profile: Mini"), *SETS_MINI),
         _params_key("profile: must be one of 'mini', 'full', got 'Mini'"), runner="copy"),
    Case("sugarcrepe-sets-mini", "params-no-profile", _params(_replace("profile: mini", ""), *SETS_MINI),
         _params_key("profile: missing"), runner="copy"),
    Case("sugarcrepe-sets-mini", "params-yaml-syntax", _params(_replace("  world:", "  world: ["), *SETS_MINI),
         lambda r: f"{r / 'ws' / 'params.yaml'}: line {_yaml_error_line(r / 'ws' / 'params.yaml')} column",
         runner="copy"),
    Case("report", "params-profile-typo",
         _params(_replace("profile: mini", "profile: Mini"), "common", "report", "sugarcrepe", keep_results=True),
         _params_key("profile: must be one of"), runner="copy"),
    # item 7: wrong value types (a crash inside PIL or tqdm)
    Case("world-train", "params-image-size-text", _params(_replace("image_size: 48 ", "image_size: '48' "), *WORLD),
         _params_key("mini.world.image_size: must be a positive integer, got '48'"), runner="copy"),
    Case("world-train", "params-train-images-text",
         _params(_replace("train_images: 32000", "train_images: many"), *WORLD),
         _params_key("mini.world.train_images: must be a positive integer, got 'many'"), runner="copy"),
    Case("train", "params-lr-text", _params(_replace("lr: 0.002", "lr: 2e-3"), *TRAIN),
         _params_key("train.xs-2k.lr: must be a positive number, got '2e-3'"), runner="copy"),
    Case("train", "params-unknown-recipe-key", _params(_replace("warmup_steps: 100, seed: 0,", "warmup_steps: 100, sed: 0,"), *TRAIN),
         _params_key("train.xs-2k.sed: unknown key"), runner="copy"),
    Case("train", "params-missing-recipe-key", _params(_replace("n_images: 2000,  ", ""), *TRAIN),
         _params_key("train.xs-2k.n_images: missing"), runner="copy"),
    Case("train", "params-arch-disagrees-with-zoo",
         _params(_replace("xs-2k:  {arch: mini-vit-xs", "xs-2k:  {arch: mini-vit-s"), *TRAIN),
         _params_key("train.xs-2k.arch: 'mini-vit-s', but the zoo's mini/xs-2k is 'mini-vit-xs'"), runner="copy"),
]

# ----------------------------------------------------------------------------------------------------------------
# python -m common train <unknown>: a KeyError traceback from DVC (after re-executing itself)
# ----------------------------------------------------------------------------------------------------------------
SUBPROCESS_CASES: list[Case] = [
    Case("python-m-common-train", "unknown-model", lambda r: ["-m", "common", "train", "xs-2kk"],
         lambda r: "'xs-2kk'; did you mean 'xs-2k'", runner="subprocess"),
    Case("python-m-common-training-family", "unknown-model",
         lambda r: ["-m", "common.training.family", "train", "s32k"], lambda r: "'s32k'; did you mean",
         runner="subprocess"),
]


# ----------------------------------------------------------------------------------------------------------------
# prepared SugarCrepe-format sets: manifests and category files
# ----------------------------------------------------------------------------------------------------------------
def _manifest(**info) -> str:
    import json

    return json.dumps({"data_dir": "data", "image_root": "images", "categories": ["replace_obj"], **info})


def _describe_mini(text: str):
    def argv(root: Path) -> list[str]:
        manifest = Path(os.environ["VLC_BUILD"]) / "mini" / "sugarcrepe" / "manifest.json"
        manifest.parent.mkdir(parents=True, exist_ok=True)
        manifest.write_text(text, encoding="utf-8")
        return ["data", "describe", "sugarcrepe", "--source", "mini"]
    return argv


def _two_bad_examples(root: Path) -> list[str]:
    """Two examples whose images are missing: the error listed each on a line of its own."""
    good_set(root)
    write_category(root, {"ex-0": {"filename": "gone.png", "caption": "a cat", "negative_caption": "a dog"},
                          "ex-1": {"filename": "lost.png", "caption": "a cat", "negative_caption": "a dog"}})
    return _eval(root)


def _with_key(key: str) -> Callable[[Path], str]:
    return lambda root: f"{root / 'manifest.json'}: {key}"


SET_CASES: list[Case] = [
    Case("eval", "manifest-nested-100000-deep", _spoil_manifest(DEEP), _file("manifest.json")),
    Case("eval", "manifest-nul-in-data-dir", _spoil_manifest(_manifest(data_dir="da\0ta")),
         _with_key("key 'data_dir' holds a NUL")),
    Case("eval", "manifest-nul-in-image-root", _spoil_manifest(_manifest(image_root="ima\0ges")),
         _with_key("key 'image_root' holds a NUL")),
    Case("eval", "manifest-duplicate-key",
         _spoil_manifest('{"data_dir": "data", "image_root": "images", "data_dir": "other"}'),
         _with_key("duplicate key 'data_dir'")),
    Case("eval", "manifest-duplicate-category", _spoil_manifest(_manifest(categories=["replace_obj", "replace_obj"])),
         _with_key("key 'categories' lists 'replace_obj' more than once")),
    Case("eval", "manifest-counts-disagree", _spoil_manifest(_manifest(counts={"replace_obj": 3})),
         lambda r: f"{r / 'data' / 'replace_obj.json'}: holds 2 example(s)"),
    Case("eval", "manifest-counts-not-counts", _spoil_manifest(_manifest(counts={"replace_obj": "two"})),
         _with_key("key 'counts'")),
    Case("eval", "two-bad-examples", _two_bad_examples, _file("data", "replace_obj.json")),
    Case("eval", "benchmark-nested-100000-deep", _spoil_category('{"ex-0": ' + DEEP + "}"),
         _file("data", "replace_obj.json")),
    Case("data-describe", "manifest-nested-100000-deep", _describe_mini(DEEP),
         lambda r: str(Path(os.environ["VLC_BUILD"]) / "mini" / "sugarcrepe" / "manifest.json")),
]


# ----------------------------------------------------------------------------------------------------------------
# python -m common report <paper> over damaged results (a copy of results/)
# ----------------------------------------------------------------------------------------------------------------
def _report(paper: str, relative: str, damage: Callable[[Path], None]):
    """A case builder: results/<relative> of a copy of results/ damaged, then ``report <paper>``."""
    def argv(root: Path) -> list[str]:
        results = root / "results"
        for part in {paper, "audit"}:
            shutil.copytree(REPO / "results" / part, results / part)
        damage(results / relative)
        return ["report", paper]
    return argv


def _cut_half(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _text(text: str) -> Callable[[Path], None]:
    return lambda path: path.write_text(text, encoding="utf-8")


def _conflict(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join([lines[0], "<<<<<<< HEAD\n", lines[1], "=======\n", lines[1], ">>>>>>> other\n",
                             *lines[2:]]), encoding="utf-8")


def _edit(old: str, new: str) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        text = path.read_text(encoding="utf-8")
        assert old in text, (path, old)
        path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return damage


def _in_results(*parts: str) -> Callable[[Path], str]:
    return lambda root: str(root.joinpath("results", *parts))


def _line(*parts: str, line: int) -> Callable[[Path], str]:
    return lambda root: f"{root.joinpath('results', *parts)}:{line}: "


REPORT_CASES: list[Case] = [
    Case("report", "audit-summary-truncated", _report("sugarcrepe", "audit/sugarcrepe_summary.json", _cut_half),
         _in_results("audit", "sugarcrepe_summary.json"), runner="report"),
    Case("report", "audit-summary-not-an-object", _report("aro", "audit/aro_summary.json", _text("[1, 2]")),
         _in_results("audit", "aro_summary.json"), runner="report"),
    Case("report", "audit-summary-not-counts",
         _report("bivlc", "audit/bivlc_summary.json", _text('{"reproduced": "many"}')),
         lambda r: f"{r / 'results' / 'audit' / 'bivlc_summary.json'}: 'reproduced'", runner="report"),
    Case("report", "cross-paper-summary-truncated",
         _report("conclip", "audit/cross_paper_summary.json", _cut_half),
         _in_results("audit", "cross_paper_summary.json"), runner="report"),
    Case("report", "cross-paper-summary-missing-key",
         _report("hard_positives", "audit/cross_paper_summary.json", _edit('"pairs":', '"pears":')),
         lambda r: f"{r / 'results' / 'audit' / 'cross_paper_summary.json'}: no 'pairs'", runner="report"),
    Case("report", "table-merge-conflict", _report("sugarcrepe", "sugarcrepe/mini/table6.csv", _conflict),
         _line("sugarcrepe", "mini", "table6.csv", line=2), runner="report"),
    Case("report", "table-cut-in-half", _report("aro", "aro/mini/table6.csv", _cut_half),
         lambda r: f"{r / 'results' / 'aro' / 'mini' / 'table6.csv'}:", runner="report"),
    Case("report", "table-nul-byte", _report("bivlc", "bivlc/mini/table2.csv", _edit(",", ",\0")),
         _line("bivlc", "mini", "table2.csv", line=1), runner="report"),
    Case("report", "table-missing-column",
         _report("conclip", "conclip/mini/table3.csv", lambda p: p.write_text(
             "model,ccneg\nx,1.0\n", encoding="utf-8")),
         _in_results("conclip", "mini", "table3.csv"), runner="report"),
    Case("report", "table-header-only",
         _report("bivlc", "bivlc/mini/table2.csv", lambda p: p.write_text(
             p.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")),
         lambda r: f"{r / 'results' / 'bivlc' / 'mini' / 'table2.csv'}:2: no rows", runner="report"),
    Case("report", "table-not-utf8",
         _report("hard_positives", "hard_positives/mini/table1.csv",
                 lambda p: p.write_bytes(p.read_bytes().replace(b"CLIP", b"CL\xcfP", 1))),
         _line("hard_positives", "mini", "table1.csv", line=2), runner="report"),
    Case("report", "table-not-a-number",
         _report("sugarcrepe", "sugarcrepe/real_text/blind_accuracy.csv", _edit(",63.8,", ",n/a,")),
         lambda r: f"{r / 'results' / 'sugarcrepe' / 'real_text' / 'blind_accuracy.csv'}:2: column 'accuracy'",
         runner="report"),
    Case("report", "table-missing-verdict-column",
         _report("sugarcrepe", "sugarcrepe/mini/table6_reproduction.csv", _edit("within", "inside")),
         _in_results("sugarcrepe", "mini", "table6_reproduction.csv"), runner="report"),
    Case("report", "metrics-missing-key",
         _report("sugarcrepe", "sugarcrepe/recognition/metrics.json", _edit('"checkpoints"', '"checkpoint"')),
         lambda r: f"{r / 'results' / 'sugarcrepe' / 'recognition' / 'metrics.json'}: no 'checkpoints'",
         runner="report"),
    Case("report", "analyses-not-objects",
         _report("sugarcrepe", "sugarcrepe/mini/analyses.json", _text('{"a": 5}')),
         lambda r: f"{r / 'results' / 'sugarcrepe' / 'mini' / 'analyses.json'}: 'a'", runner="report"),
    Case("report", "summary-truncated",
         _report("hard_positives", "hard_positives/real_text/summary.json", _cut_half),
         _in_results("hard_positives", "real_text", "summary.json"), runner="report"),
]

CASES: list[Case] = PARAMS_CASES + SUBPROCESS_CASES + SET_CASES + REPORT_CASES


def test_matrix_size(capsys):
    with capsys.disabled():
        print(f"\nbad-input matrix, parameters / sets / reports / names: {len(CASES)} cases")
    assert len({c.id for c in CASES}) == len(CASES)


# ----------------------------------------------------------------------------------------------------------------
# running a case
# ----------------------------------------------------------------------------------------------------------------
def _digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()} if folder.is_dir() else {}


def _environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "VLC_DEBUG"}


def _run(case: Case, root: Path, argv: list[str], capsys, monkeypatch) -> tuple[int, str]:
    if case.runner == "cli":
        code = _run_in_process(case, argv)
        return code, capsys.readouterr().err
    if case.runner == "report":
        import importlib

        import common.reporting.report

        results = root / "results"
        monkeypatch.setattr(common.reporting.report, "RESULTS", results)
        module = importlib.import_module(f"papers.{argv[1]}.report")
        monkeypatch.setattr(module, "RESULTS", results, raising=False)
        code = _run_in_process(case, argv)
        return code, capsys.readouterr().err
    cwd = root / "ws" if case.runner == "copy" else REPO
    before = _digest(cwd / "results") if case.runner == "copy" else {}
    proc = subprocess.run([sys.executable, *argv], cwd=cwd, env=_environment(), capture_output=True, text=True,
                          timeout=300)
    if case.runner == "copy":
        assert _digest(cwd / "results") == before, "a failed stage changed the copy's results"
    return proc.returncode, proc.stderr


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_bad_input_gives_one_error_line(case: Case, tmp_path, capsys, tiny_models, outputs_before, monkeypatch):
    monkeypatch.delenv("VLC_DEBUG", raising=False)
    argv = list(case.argv(tmp_path))
    code, stderr = _run(case, tmp_path, argv, capsys, monkeypatch)
    assert_one_error_line(case, tmp_path, code, stderr)
    assert not (tmp_path / "out").exists(), "a failed stage writes no results"
    assert tracked_outputs() == outputs_before


@pytest.fixture(scope="module")
def outputs_before():
    return tracked_outputs()


@pytest.fixture
def tiny_models(monkeypatch, tiny_model):
    """``create_model`` hands out the session's random tiny CLIP (as the matrix's own fixture)."""
    import common.zoo

    def create_model(name: str, device: str = "cpu", cache_dir: str | None = None):
        common.zoo.get_spec(name)
        return tiny_model

    monkeypatch.setattr(common.zoo, "create_model", create_model)
    return tiny_model


# ----------------------------------------------------------------------------------------------------------------
# the good inputs these cases spoil still give a result
# ----------------------------------------------------------------------------------------------------------------
def test_a_manifest_with_matching_counts_is_scored(tmp_path, capsys, tiny_models):
    from common.cli import main as cli_main

    good_set(tmp_path)
    write_manifest(tmp_path, _manifest(counts={"replace_obj": 2, "swap_att": 7}, kind="sugarcrepe"))
    assert cli_main(_eval(tmp_path)) == 0
    assert '"n": 2' in capsys.readouterr().out
    write_category(tmp_path, {"ex-0": {"filename": "a.png", "caption": "a", "negative_caption": "b"}})
    assert cli_main(_eval(tmp_path)) == 1  # the file lost an example the manifest counts
    assert "holds 1 example(s)" in capsys.readouterr().err
