"""Every CLI mistake gets one line, not a traceback (issue 16 §2 and §5): the bad-input matrix.

Each ``Case`` runs one entry point against one bad input and asserts: a non-zero exit (1 for bad input, 2 for
argparse's usage errors), one ``error:`` line on stderr naming the culprit (file, record or name), no
"Traceback", and the tracked outputs (every file of ``results/`` that git tracks) byte-identical afterwards. A
corrupt embedding-cache shard is the exception: one warning naming the shard, and the run goes on to the same
results. The entry points run in-process (``common.cli.main``, which goes through ``run_entry_point``; a loader
through ``run_entry_point`` directly) with a few real ``python -m common`` subprocesses end to end.

To add a case, append a ``Case`` to ``CASES`` (or ``SUBPROCESS_CASES``): ``argv`` builds the command line from a
fresh folder holding a good SugarCrepe-format set (``good_set``) that ``argv`` may spoil first. The matrix size is
``len(CASES) + len(SUBPROCESS_CASES)`` (printed by ``test_matrix_size``).
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import pytest
from PIL import Image

from common.cli import main as cli_main
from common.errors import run_entry_point

REPO = Path(__file__).resolve().parents[1]
MODEL = "mini/xs-2k"  # a registered name; its weights are never loaded (create_model is a random tiny CLIP here)
BIVLC_HEADER = ["image", "caption", "negative_caption", "negative_image", "type", "subtype", "text_score_i0",
                "text_score_i1", "image_score_c0", "image_score_c1", "text_score", "image_score", "group_score"]


# ----------------------------------------------------------------------------------------------------------------
# inputs
# ----------------------------------------------------------------------------------------------------------------
def write_image(path: Path, colour=(200, 30, 30)) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (16, 16), colour).save(path, format="PNG")
    return path


def good_set(root: Path) -> Path:
    """A SugarCrepe-format set with two examples of one category; returns its manifest."""
    write_image(root / "images" / "a.png")
    write_image(root / "images" / "b.png", (10, 200, 10))
    write_category(root, {
        "ex-0": {"filename": "a.png", "caption": "a red square", "negative_caption": "a blue square"},
        "ex-1": {"filename": "b.png", "caption": "a green square", "negative_caption": "a green circle"},
    })
    return write_manifest(root, {"data_dir": "data", "image_root": "images", "categories": ["replace_obj"]})


def write_category(root: Path, examples, category: str = "replace_obj") -> Path:
    path = root / "data" / f"{category}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(examples if isinstance(examples, str) else json.dumps(examples), encoding="utf-8")
    return path


def write_manifest(root: Path, info) -> Path:
    path = root / "manifest.json"
    path.write_text(info if isinstance(info, str) else json.dumps(info), encoding="utf-8")
    return path


def one_bad_example(root: Path, filename: str) -> None:
    good_set(root)
    write_category(root, {
        "ex-0": {"filename": "a.png", "caption": "a red square", "negative_caption": "a blue square"},
        "ex-bad-7": {"filename": filename, "caption": "a cat", "negative_caption": "a dog"},
    })


def write_bivlc(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


BIVLC_ROW = "img0.jpg,a cat,a dog,img1.jpg,replace,obj,0.9,0.1,0.8,0.2,True,True,True"


# ----------------------------------------------------------------------------------------------------------------
# the matrix
# ----------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    entry: str
    """The entry point (test id's first half): ``eval``, ``audit-released-bivlc``, ``data-describe``, ..."""
    input: str
    """The bad input (test id's second half)."""
    argv: Callable[[Path], Sequence[str]]
    """Spoils a fresh folder and returns the command line (after ``python -m common``)."""
    culprit: Callable[[Path], str]
    """What the error line must name (a file, a record, a name)."""
    exit_code: int = 1
    runner: str = "cli"
    """``cli``: ``common.cli.main(argv)``; ``published``: ``common.reporting.published.load_cells`` through the wrapper."""

    @property
    def id(self) -> str:
        return f"{self.entry}-x-{self.input}"


def _eval(root: Path, *extra: str) -> list[str]:
    return ["eval", "--model", MODEL, "--manifest", str(root / "manifest.json"), "--out", str(root / "out"), *extra]


def _spoil(write: Callable[[Path, object], Path]):
    """A case builder: a good set with one of its files (``write_manifest`` / ``write_category``) replaced by ``text``."""
    def with_text(text):
        def argv(root: Path):
            good_set(root)
            write(root, text)
            return _eval(root)
        return argv
    return with_text


_spoil_manifest = _spoil(write_manifest)
_spoil_category = _spoil(lambda root, text: write_category(root, text))


def _bad_image(filename: str, make: Callable[[Path], None] | None = None):
    def argv(root: Path):
        one_bad_example(root, filename)
        if make is not None:
            make(root / "images" / filename)
        return _eval(root)
    return argv


def _truncate_png(path: Path) -> None:
    data = write_image(path).read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _bivlc(text: str | None, name: str = "preds.csv"):
    def argv(root: Path):
        path = root / name
        if text is not None:
            write_bivlc(path, text)
        return ["audit", "released", "bivlc", str(path)]
    return argv


def _describe_mini(text: str | None):
    def argv(root: Path):
        manifest = Path(os.environ["VLC_BUILD"]) / "mini" / "sugarcrepe" / "manifest.json"
        if text is not None:
            manifest.parent.mkdir(parents=True, exist_ok=True)
            manifest.write_text(text, encoding="utf-8")
        return ["data", "describe", "sugarcrepe", "--source", "mini"]
    return argv


def _mini_manifest(_root: Path) -> str:
    return str(Path(os.environ["VLC_BUILD"]) / "mini" / "sugarcrepe" / "manifest.json")


def _published(text: str):
    def argv(root: Path):
        (root / "published").mkdir(exist_ok=True)
        (root / "published" / "bivlc.csv").write_text(text, encoding="utf-8")
        return [str(root / "published")]
    return argv


def _file(*parts: str) -> Callable[[Path], str]:
    return lambda root: str(root.joinpath(*parts))


def _record(*parts: str, record: str) -> Callable[[Path], str]:
    return lambda root: f"{root.joinpath(*parts)}#{record}"


CATEGORY = ("data", "replace_obj.json")
CASES: list[Case] = [
    # eval: the manifest
    Case("eval", "manifest-missing", lambda r: _eval(r), _file("manifest.json")),
    Case("eval", "manifest-malformed-json", _spoil_manifest('{"data_dir": "data",, }'), _file("manifest.json")),
    Case("eval", "manifest-truncated-json", _spoil_manifest('{"data_dir": "data", "image_r'), _file("manifest.json")),
    Case("eval", "manifest-not-an-object", _spoil_manifest('["data", "images"]'), _file("manifest.json")),
    Case("eval", "manifest-missing-key", _spoil_manifest('{"data_dir": "data"}'), _file("manifest.json")),
    Case("eval", "manifest-is-a-folder", lambda r: _eval(r)[:4] + [str(r)] + _eval(r)[5:], lambda r: str(r)),
    Case("eval", "manifest-empty-categories",
         _spoil_manifest('{"data_dir": "data", "image_root": "images", "categories": []}'), _file("manifest.json")),
    Case("eval", "manifest-unknown-category",
         _spoil_manifest('{"data_dir": "data", "image_root": "images", "categories": ["replace_objx"]}'),
         lambda r: "replace_objx"),
    Case("eval", "category-file-missing",
         _spoil_manifest('{"data_dir": "data", "image_root": "images", "categories": ["swap_att"]}'),
         _file("data", "swap_att.json")),
    # eval: the benchmark JSON
    Case("eval", "benchmark-malformed-json", _spoil_category('{"ex-0": {"filename": "a.png",, }}'), _file(*CATEGORY)),
    Case("eval", "benchmark-truncated-json", _spoil_category('{"ex-0": {"filename": "a.png", "capt'), _file(*CATEGORY)),
    Case("eval", "benchmark-not-an-object", _spoil_category('[{"filename": "a.png"}]'), _file(*CATEGORY)),
    Case("eval", "benchmark-empty", _spoil_category("{}"), _file(*CATEGORY)),
    Case("eval", "benchmark-missing-key",
         _spoil_category({"ex-0": {"filename": "a.png", "caption": "a red square"}}),
         lambda r: f"{r / 'data' / 'replace_obj.json'}: example 'ex-0'"),
    Case("eval", "benchmark-record-not-an-object", _spoil_category({"ex-0": "a.png"}),
         lambda r: f"{r / 'data' / 'replace_obj.json'}: example 'ex-0'"),
    Case("eval", "benchmark-not-utf8", lambda r: (good_set(r), (r / "data" / "replace_obj.json").write_bytes(
        b'{"ex-0": {"filename": "a.png", "caption": "caf\xe9", "negative_caption": "x"}}'), _eval(r))[-1],
         _file(*CATEGORY)),
    # eval: the images
    Case("eval", "image-missing", _bad_image("gone.png"), _record(*CATEGORY, record="ex-bad-7")),
    Case("eval", "image-escaping", _bad_image("../../etc/passwd"), _record(*CATEGORY, record="ex-bad-7")),
    Case("eval", "image-absolute", _bad_image("/etc/passwd"), _record(*CATEGORY, record="ex-bad-7")),
    Case("eval", "image-truncated", _bad_image("half.png", _truncate_png), _file("images", "half.png")),
    Case("eval", "image-not-an-image", _bad_image("text.png", lambda p: p.write_text("not a PNG")),
         _file("images", "text.png")),
    # eval, zoo: names
    Case("eval", "unknown-model", lambda r: ["eval", "--model", "mini/xs2k", "--manifest", str(good_set(r))],
         lambda r: "'mini/xs2k'; did you mean 'mini/xs-2k'"),
    Case("zoo-check", "unknown-model", lambda r: ["zoo", "check", "no/such-model"], lambda r: "'no/such-model'"),
    Case("report", "unknown-paper", lambda r: ["report", "no_such_paper"], lambda r: "'no_such_paper'", exit_code=2),
    Case("audit", "unknown-paper", lambda r: ["audit", "no_such_paper"], lambda r: "'no_such_paper'", exit_code=2),
    Case("data-describe", "unknown-benchmark", lambda r: ["data", "describe", "sugarcrepx"], lambda r: "'sugarcrepx'",
         exit_code=2),
    Case("audit-released", "unknown-paper", lambda r: ["audit", "released", "aro", "x.csv"], lambda r: "'aro'",
         exit_code=2),
    # data describe: a prepared set's manifest
    Case("data-describe", "manifest-missing", _describe_mini(None), _mini_manifest),
    Case("data-describe", "manifest-malformed-json", _describe_mini("{"), _mini_manifest),
    # audit released bivlc: CSV in the authors' format
    Case("audit-released-bivlc", "csv-missing", _bivlc(None), _file("preds.csv")),
    Case("audit-released-bivlc", "csv-is-a-folder", lambda r: ["audit", "released", "bivlc", str(r)], lambda r: str(r)),
    Case("audit-released-bivlc", "csv-empty", _bivlc(""), _file("preds.csv")),
    Case("audit-released-bivlc", "csv-header-only", _bivlc(",".join(BIVLC_HEADER) + "\n"), _file("preds.csv")),
    Case("audit-released-bivlc", "csv-wrong-schema", _bivlc("a,b,c\n1,2,3\n"), _file("preds.csv")),
    Case("audit-released-bivlc", "csv-truncated-row",
         _bivlc(",".join(BIVLC_HEADER) + "\n" + BIVLC_ROW + "\n" + BIVLC_ROW[:40] + "\n"), _file("preds.csv")),
    Case("audit-released-bivlc", "csv-malformed", _bivlc(",".join(BIVLC_HEADER) + "\n\0garbage\n"), _file("preds.csv")),
    Case("audit-released-bivlc", "csv-is-json", _bivlc('{"image": "img0.jpg"}\n'), _file("preds.csv")),
    # published numbers (results/published/<paper>.csv format)
    Case("published-loader", "csv-wrong-schema", _published("a,b\n1,2\n"), _file("published", "bivlc.csv"),
         runner="published"),
    Case("published-loader", "csv-missing", lambda r: [str(r / "nowhere")], _file("nowhere", "bivlc.csv"),
         runner="published"),
]

SUBPROCESS_CASES: list[Case] = [  # the same, end to end through `python -m common` (real stderr, real exit status)
    Case("python-m-common-eval", "manifest-malformed-json", _spoil_manifest("{,}"), _file("manifest.json")),
    Case("python-m-common-eval", "unknown-model",
         lambda r: ["eval", "--model", "no/such-model", "--manifest", str(good_set(r))], lambda r: "'no/such-model'"),
    Case("python-m-common-eval", "image-escaping", _bad_image("../../etc/passwd"),
         _record(*CATEGORY, record="ex-bad-7")),
    Case("python-m-common-audit-released-bivlc", "csv-wrong-schema", _bivlc("a,b,c\n1,2,3\n"), _file("preds.csv")),
]


def test_matrix_size(capsys):
    entries = {c.entry for c in CASES + SUBPROCESS_CASES}
    size = len(CASES) + len(SUBPROCESS_CASES)
    with capsys.disabled():
        print(f"\nbad-input matrix: {size} cases, {len(entries)} entry points, "
              f"{len({c.input for c in CASES + SUBPROCESS_CASES})} kinds of bad input (+1: the corrupt cache shard)")
    assert len({c.id for c in CASES + SUBPROCESS_CASES}) == size  # ids are unique


# ----------------------------------------------------------------------------------------------------------------
# running a case
# ----------------------------------------------------------------------------------------------------------------
def tracked_outputs() -> dict[str, str]:
    """sha256 of every tracked file of results/ (what a failed run must leave untouched)."""
    listed = subprocess.run(["git", "ls-files", "-z", "results"], cwd=REPO, capture_output=True, check=True).stdout
    out = {}
    for name in filter(None, listed.decode().split("\0")):
        path = REPO / name
        out[name] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "absent"
    return out


@pytest.fixture(scope="module")
def outputs_before():
    return tracked_outputs()


@pytest.fixture
def tiny_models(monkeypatch, tiny_model):
    """``create_model`` hands out the session's random tiny CLIP (no weights are read, nothing is downloaded)."""
    import common.zoo

    def create_model(name: str, device: str = "cpu", cache_dir: str | None = None):
        common.zoo.get_spec(name)  # an unknown name fails as it would
        return tiny_model

    monkeypatch.setattr(common.zoo, "create_model", create_model)
    return tiny_model


def _run_in_process(case: Case, argv: Sequence[str]) -> int:
    if case.runner == "published":
        from common.reporting.published import load_cells

        return run_entry_point(lambda: load_cells("bivlc", root=Path(argv[0])))
    try:
        return cli_main(list(argv))
    except SystemExit as exc:  # argparse's usage errors
        return int(exc.code or 0)


def assert_one_error_line(case: Case, root: Path, code: int, stderr: str) -> None:
    assert code == case.exit_code, (code, stderr)
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if "error: " in line]
    assert len(errors) == 1, stderr
    line = errors[0]
    if case.exit_code == 1:
        assert line.startswith("error: ") and stderr.endswith(line + "\n"), stderr  # the last and only line
    culprit = case.culprit(root)
    assert culprit in line, f"{culprit!r} not in {line!r}"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_bad_input_gives_one_error_line(case: Case, tmp_path, capsys, tiny_models, outputs_before, monkeypatch):
    monkeypatch.delenv("VLC_DEBUG", raising=False)
    argv = case.argv(tmp_path)
    code = _run_in_process(case, argv)
    captured = capsys.readouterr()
    assert_one_error_line(case, tmp_path, code, captured.err)
    assert not (tmp_path / "out").exists(), "a failed eval writes no results"
    assert tracked_outputs() == outputs_before


@pytest.mark.parametrize("case", SUBPROCESS_CASES, ids=lambda c: c.id)
def test_bad_input_end_to_end(case: Case, tmp_path, outputs_before):
    argv = case.argv(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "VLC_DEBUG"}
    proc = subprocess.run([sys.executable, "-m", "common", *argv], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120)
    assert_one_error_line(case, tmp_path, proc.returncode, proc.stderr)
    assert proc.stdout == ""
    assert tracked_outputs() == outputs_before


def test_debug_shows_the_traceback(tmp_path, capsys, monkeypatch):
    """``--debug`` (and ``VLC_DEBUG=1``) re-raise the expected error: its traceback is the output."""
    from common.errors import UnknownName

    good_set(tmp_path)
    with pytest.raises(UnknownName, match="did you mean"):
        cli_main(["--debug", "eval", "--model", "mini/xs2k", "--manifest", str(tmp_path / "manifest.json")])
    monkeypatch.setenv("VLC_DEBUG", "1")
    with pytest.raises(UnknownName):
        cli_main(["eval", "--model", "mini/xs2k", "--manifest", str(tmp_path / "manifest.json")])
    proc = subprocess.run([sys.executable, "-m", "common", "--debug", "zoo", "check", "no/such-model"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "Traceback" in proc.stderr and "UnknownName" in proc.stderr


def test_a_bug_keeps_its_traceback(monkeypatch):
    """Only expected errors become one line: anything else (a bug) propagates."""
    def buggy():
        return {}["no such key"]

    with pytest.raises(KeyError):
        run_entry_point(buggy)
    with pytest.raises(OSError):  # an OSError without a file name is not the user's
        run_entry_point(lambda: (_ for _ in ()).throw(OSError(28, "No space left on device")))
    assert run_entry_point(lambda: (_ for _ in ()).throw(FileNotFoundError(2, "No such file", "/x/y"))) == 1


def test_a_paper_script_goes_through_the_wrapper(tmp_path):
    """``python -m papers.<paper>.<script>``: the same one line (here argparse's own usage error, exit 2)."""
    proc = subprocess.run([sys.executable, "-m", "papers.sugarcrepe.sets_mini", "--out", str(tmp_path / "set"),
                           "--no_such_option"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "--no_such_option" in proc.stderr


# ----------------------------------------------------------------------------------------------------------------
# a corrupt cache shard: a warning, not an error
# ----------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_corrupt_cache_shard_is_moved_aside_and_recomputed(damage, tmp_path, capsys, caplog, tiny_models,
                                                           outputs_before):
    manifest = good_set(tmp_path)
    argv = ["eval", "--model", MODEL, "--manifest", str(manifest), "--out", str(tmp_path / "first.json")]
    assert cli_main(argv) == 0
    first = json.loads((tmp_path / "first.json").read_text())
    first_predictions = (tmp_path / "first.predictions.csv").read_text()
    capsys.readouterr()
    shards = sorted(Path(os.environ["VLC_CACHE"]).rglob("shard-*.npz"))
    assert shards, "the first run caches its embeddings"
    shard = shards[0]
    data = shard.read_bytes()
    shard.write_bytes(data[: len(data) // 3] if damage == "truncated" else b"\x00garbage" * 40)

    with caplog.at_level(logging.WARNING, logger="common.evaluation.cache"):
        assert cli_main([*argv[:-1], str(tmp_path / "second.json")]) == 0
    warnings = [r.getMessage() for r in caplog.records if r.name == "common.evaluation.cache"]
    assert len(warnings) == 1 and str(shard) in warnings[0] and "\n" not in warnings[0], warnings
    assert "Traceback" not in capsys.readouterr().err
    assert shard.with_name(shard.name + ".corrupt").is_file()
    second = json.loads((tmp_path / "second.json").read_text())
    assert {k: v for k, v in second.items() if k != "predictions"} == \
        {k: v for k, v in first.items() if k != "predictions"}
    assert (tmp_path / "second.predictions.csv").read_text() == first_predictions
    assert shard.is_file(), "the recomputed entries are cached again"
    assert tracked_outputs() == outputs_before


def test_eval_writes_and_prints_its_results(tmp_path, capsys, tiny_models):
    manifest = good_set(tmp_path)
    assert cli_main(["eval", "--model", MODEL, "--manifest", str(manifest), "--out", str(tmp_path / "res")]) == 0
    printed = json.loads(capsys.readouterr().out)
    written = json.loads((tmp_path / "res" / "mini__xs-2k.json").read_text())
    assert written["accuracy"] == printed["accuracy"] and written["n"] == printed["n"] == 2
    rows = (tmp_path / "res" / "mini__xs-2k.predictions.csv").read_text().splitlines()
    assert rows[0].startswith("item_id,group,correct,tie,score_0,score_1") and len(rows) == 3
