"""The bad-input matrix's cases for images, ``eval``'s outputs, the ``VLC_*`` variables and the downloader (issue 35).

``CASES`` run exactly as ``tests/test_bad_input_matrix.py`` runs its own (read its docstring): a non-zero exit, one
``error:`` line naming the culprit, no traceback, the tracked outputs unchanged; here also nothing written anywhere
under the case's folder (a predictions file without its summary is a failure too). Each case runs in its own folder
(``--out ""`` would otherwise write into the folder pytest runs in), with ``common.paths.RESULTS`` pointing at a
``results/`` of that folder (``--out`` into the workspace's results is refused there, never tried on the real one).

The tests after the matrix are the same defects where the right outcome is a success: ``--out R.JSON`` is a file,
a full disk under the summary leaves no orphan predictions, an unwritable ``VLC_CACHE`` is a warning.
"""
from __future__ import annotations

import errno
import json
import logging
import os
from pathlib import Path
from typing import Callable

import numpy as np
import pytest
from PIL import Image

import common.paths
from common.cli import main as cli_main
from common.errors import SETTINGS, SettingError
from common.evaluation.evaluate import eval_outputs, write_eval_outputs
from common.paths import ROOT
from test_bad_input_matrix import (  # noqa: F401 - fixtures: outputs_before, tiny_models
    MODEL, Case, _run_in_process, assert_one_error_line, good_set, one_bad_example, outputs_before, tiny_models,
    tracked_outputs)


# ----------------------------------------------------------------------------------------------------------------
# case builders
# ----------------------------------------------------------------------------------------------------------------
def _eval_out(out: Callable[[Path], str], prepare: Callable[[Path], object] | None = None):
    """``eval`` of a good set with ``--out out(root)``, after ``prepare(root)``."""
    def argv(root: Path):
        manifest = good_set(root)
        if prepare is not None:
            prepare(root)
        return ["eval", "--model", MODEL, "--manifest", str(manifest), "--out", out(root)]
    return argv


def _image_of_mode(filename: str, array: np.ndarray, mode: str):
    def argv(root: Path):
        one_bad_example(root, filename)
        Image.fromarray(array, mode).save(root / "images" / filename)
        return ["eval", "--model", MODEL, "--manifest", str(root / "manifest.json"), "--out", str(root / "out")]
    return argv


def _with_env(var: str, value: Callable[[Path], Path], make: Callable[[Path], object] | None, argv: list[str]):
    """Sets ``var`` (the runner restores it) to ``value(root)``, made by ``make`` first; ``argv`` is then run."""
    def build(root: Path):
        path = value(root)
        if make is not None:
            make(path)
        os.environ[var] = str(path)
        return list(argv)
    return build


def _a_file(path: Path) -> None:
    path.write_text("a file, not a folder\n")


def _manual_empty_folder(root: Path):
    folder = Path(os.environ["VLC_DATA"]) / "flickr30k" / "flickr30k-images"
    folder.mkdir(parents=True)
    return ["fetch", "flickr30k/flickr30k-images"]


def _empty_manual_folder(_root: Path) -> str:
    return f"{Path(os.environ['VLC_DATA']) / 'flickr30k' / 'flickr30k-images'} is empty"


FLOAT_OUT_OF_RANGE = np.array([[0.0, 3.0], [1.0, 2.0]], dtype=np.float32)
INT_OUT_OF_RANGE = np.array([[-4, 10], [70000, 5]], dtype=np.int32)
SWAP_OBJ = "sugarcrepe/data/swap_obj.json"

CASES: list[Case] = [
    # eval --out (item 8) and its output group (item 5)
    Case("eval", "out-empty", _eval_out(lambda r: ""), lambda r: "--out is empty"),
    Case("eval", "out-blank", _eval_out(lambda r: "  "), lambda r: "--out is empty"),
    Case("eval", "out-in-workspace-results", _eval_out(lambda r: str(r / "results" / "sugarcrepe" / "mine.json")),
         lambda r: f"--out {r / 'results' / 'sugarcrepe' / 'mine.json'} lies in {r / 'results'}"),
    Case("eval", "out-onto-tracked-results-file",
         _eval_out(lambda r: str(r / "results" / "table.json"),
                   lambda r: ((r / "results").mkdir(), (r / "results" / "table.json").write_text("{}\n"))),
         lambda r: f"--out {r / 'results' / 'table.json'} lies in"),
    Case("eval", "out-json-is-a-folder", _eval_out(lambda r: str(r / "res.json"), lambda r: (r / "res.json").mkdir()),
         lambda r: f"{r / 'res.json'}, which is a folder"),
    Case("eval", "out-predictions-is-a-folder",
         _eval_out(lambda r: str(r / "res.json"), lambda r: (r / "res.predictions.csv").mkdir()),
         lambda r: f"{r / 'res.predictions.csv'}, which is a folder"),
    Case("eval", "out-folder-is-a-file", _eval_out(lambda r: str(r / "res"), lambda r: _a_file(r / "res")),
         lambda r: f"--out {r / 'res'} is a file"),
    # images of modes with no faithful 8-bit form (item 3)
    Case("eval", "image-float-out-of-range", _image_of_mode("depth.tif", FLOAT_OUT_OF_RANGE, "F"),
         lambda r: f"{r / 'images' / 'depth.tif'}: image mode 'F'"),
    Case("eval", "image-int-out-of-range", _image_of_mode("scan.tif", INT_OUT_OF_RANGE, "I"),
         lambda r: f"{r / 'images' / 'scan.tif'}: image mode 'I'"),
    # VLC_BUILD, VLC_MIRROR: the variable is the culprit (item 8)
    Case("data-describe", "vlc-build-is-a-file",
         _with_env("VLC_BUILD", lambda r: r / "build", _a_file, ["data", "describe", "sugarcrepe", "--source", "mini"]),
         lambda r: f"VLC_BUILD={r / 'build'} is a file, not a folder"),
    Case("data-describe", "vlc-build-missing",
         _with_env("VLC_BUILD", lambda r: r / "no" / "such" / "build", None,
                   ["data", "describe", "sugarcrepe", "--source", "mini"]),
         lambda r: f"VLC_BUILD={r / 'no' / 'such' / 'build'} does not exist"),
    Case("fetch", "vlc-mirror-is-a-file", _with_env("VLC_MIRROR", lambda r: r / "mirror", _a_file, ["fetch", SWAP_OBJ]),
         lambda r: f"VLC_MIRROR={r / 'mirror'} is a file, not a folder"),
    Case("fetch", "vlc-mirror-missing", _with_env("VLC_MIRROR", lambda r: r / "mirror", None, ["fetch", SWAP_OBJ]),
         lambda r: f"VLC_MIRROR={r / 'mirror'} does not exist"),
    Case("fetch", "mirror-option-missing", lambda r: ["fetch", SWAP_OBJ, "--mirror", str(r / "nowhere")],
         lambda r: f"mirror {r / 'nowhere'} does not exist"),
    # the downloader's names and manual steps (item 8)
    Case("fetch", "unknown-group", lambda r: ["fetch", "sugarcrep"], lambda r: "did you mean 'sugarcrepe'"),
    Case("fetch", "manual-folder-empty", _manual_empty_folder, _empty_manual_folder),
]


def files_under(folder: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None) for p in sorted(folder.rglob("*"))}


@pytest.fixture
def own_folders(tmp_path, monkeypatch):
    """The case's folder as the current one and as the workspace's results/; the ``VLC_*`` variables restored."""
    for var in SETTINGS:
        # setenv first, so that the undo also removes a variable a case sets while it was unset (delenv of an
        # absent variable records nothing to undo)
        monkeypatch.setenv(var, os.environ.get(var, ""))
        if not os.environ[var]:
            monkeypatch.delenv(var)
    monkeypatch.delenv("VLC_DEBUG", raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(common.paths, "RESULTS", tmp_path / "results")
    return tmp_path


def test_matrix_size(capsys):
    from test_bad_input_matrix import CASES as MATRIX, SUBPROCESS_CASES

    assert len({c.id for c in CASES}) == len(CASES) and not {c.id for c in CASES} & {c.id for c in MATRIX}
    with capsys.disabled():
        print(f"\nbad-input matrix, images/eval outputs/VLC_* variables/downloader: {len(CASES)} cases "
              f"(the matrix itself: {len(MATRIX) + len(SUBPROCESS_CASES)})")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_bad_input_gives_one_error_line(case: Case, tmp_path, capsys, tiny_models, outputs_before, own_folders):
    argv = case.argv(tmp_path)
    before = files_under(tmp_path)
    code = _run_in_process(case, argv)
    captured = capsys.readouterr()
    assert_one_error_line(case, tmp_path, code, captured.err)
    assert not (tmp_path / "out").exists(), "a failed eval writes no results"
    assert files_under(tmp_path) == before, "a failed run writes nothing (no predictions without their summary)"
    assert tracked_outputs() == outputs_before


# ----------------------------------------------------------------------------------------------------------------
# the same defects where the right outcome is a success
# ----------------------------------------------------------------------------------------------------------------
def test_out_with_an_upper_case_json_suffix_is_a_file(tmp_path, capsys, tiny_models, own_folders):
    manifest = good_set(tmp_path)
    assert cli_main(["eval", "--model", MODEL, "--manifest", str(manifest), "--out", str(tmp_path / "R.JSON")]) == 0
    capsys.readouterr()
    assert (tmp_path / "R.JSON").is_file() and (tmp_path / "R.predictions.csv").is_file()
    assert json.loads((tmp_path / "R.JSON").read_text())["predictions"] == str(tmp_path / "R.predictions.csv")


def test_eval_outputs_appear_together_or_not_at_all(tmp_path, capsys, tiny_models, own_folders, monkeypatch):
    """A full disk while the summary is written (the predictions already were): one error line, no orphan
    predictions file, and the previous pair as it was."""
    manifest = good_set(tmp_path)
    out = tmp_path / "res"
    argv = ["eval", "--model", MODEL, "--manifest", str(manifest), "--out", str(out)]
    assert cli_main(argv) == 0
    previous = files_under(out)
    assert sorted(previous) == ["mini__xs-2k.json", "mini__xs-2k.predictions.csv"]
    (out / "mini__xs-2k.predictions.csv").write_text("previous predictions\n")
    (out / "mini__xs-2k.json").unlink()  # a lone previous file must not gain a partner either
    previous = files_under(out)
    capsys.readouterr()
    real_write_bytes = Path.write_bytes

    def full_for_json(self, data):
        if self.name.startswith(".mini__xs-2k.json."):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write_bytes(self, data)

    monkeypatch.setattr(Path, "write_bytes", full_for_json)
    assert cli_main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("error: ") == 1 and err.startswith("error: cannot write the outputs into") and "disk full" in err
    assert files_under(out) == previous


def test_eval_outputs_are_one_output_group(tmp_path):
    """``write_eval_outputs`` itself: a failure writing the summary leaves nothing new (the CLI test above runs it
    through ``python -m common eval``)."""
    from common.evaluation.scoring.selection import Outcome, SelectionResult

    result = SelectionResult("m", "f" * 32, "image_to_text", "strict")
    result.outcomes.append(Outcome("a/0", "a", (0.5, 0.25), True, False))
    summary_path, predictions_path = eval_outputs(str(tmp_path / "r.json"), "m")
    with pytest.raises(TypeError):  # not JSON-serialisable: the summary fails after the predictions were written
        write_eval_outputs(summary_path, predictions_path, {"bad": object()}, result)
    assert list(tmp_path.iterdir()) == []
    assert write_eval_outputs(summary_path, predictions_path, {"n": 1}, result) == (summary_path, predictions_path)
    assert json.loads(summary_path.read_text()) == {"n": 1, "predictions": str(predictions_path)}
    assert predictions_path.read_text().splitlines()[1].startswith("a/0,a,1,0,")


def test_eval_outputs_refuses_a_file_git_tracks():
    tracked = ROOT / "common" / "zoo" / "model_configs" / "mini-vit-xs.json"
    assert tracked.is_file()
    with pytest.raises(SettingError, match=f"--out {tracked} would overwrite a file git tracks"):
        eval_outputs(str(tracked), MODEL)
    with pytest.raises(SettingError, match="lies in"):
        eval_outputs(str(ROOT / "results" / "sugarcrepe"), MODEL)
    assert eval_outputs(str(ROOT / "build" / "eval"), MODEL)[0] == ROOT / "build" / "eval" / "mini__xs-2k.json"


def test_an_unwritable_vlc_cache_is_a_warning_and_eval_goes_on(tmp_path, capsys, caplog, tiny_models, own_folders,
                                                                monkeypatch):
    manifest = good_set(tmp_path)
    not_a_folder = tmp_path / "cache"
    not_a_folder.write_text("a file\n")
    monkeypatch.setenv("VLC_CACHE", str(not_a_folder))
    with caplog.at_level(logging.WARNING, logger="common.evaluation.cache"):
        assert cli_main(["eval", "--model", MODEL, "--manifest", str(manifest), "--out", str(tmp_path / "r.json")]) == 0
    warnings = [r.getMessage() for r in caplog.records if r.name == "common.evaluation.cache"]
    assert len(warnings) == 1 and f"{not_a_folder} (VLC_CACHE)" in warnings[0], warnings
    assert json.loads((tmp_path / "r.json").read_text())["n"] == 2
    assert "error" not in capsys.readouterr().err


@pytest.mark.parametrize("var", ["VLC_BUILD", "VLC_DATA", "VLC_CACHE"])
def test_an_empty_variable_is_unset_not_the_current_folder(var, monkeypatch):
    default = {"VLC_BUILD": "build", "VLC_DATA": "data", "VLC_CACHE": ".cache"}[var]
    getter = {"VLC_BUILD": common.paths.build_root, "VLC_DATA": common.paths.data_root,
              "VLC_CACHE": common.paths.cache_root}[var]
    monkeypatch.setenv(var, "")
    assert getter() == ROOT / default
