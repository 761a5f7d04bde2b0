"""Hardening, round two (part of it): a model folder never runs code, a non-finite number never becomes a result, and
files that are not what they claim are one line naming the cause. Each case is what an attacker or an accident
gives the project; each fails before its fix (the first with a prompt or the folder's code run, the others with a
traceback, a silent 0 or a wrong cause)."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from common.errors import WorkspaceError

ARCH = "mini-vit-xs"
TRAP = "import pathlib; pathlib.Path({marker!r}).write_text('ran')\n"


def _trapped_folder(root: Path, marker: Path) -> Path:
    """A transformers model folder whose config asks for its own code (``auto_map``), which would leave ``marker``
    behind if anything imported it."""
    folder = root / "trapped"
    folder.mkdir()
    (folder / "evil.py").write_text(TRAP.format(marker=str(marker)))
    (folder / "config.json").write_text(json.dumps({
        "model_type": "evil", "auto_map": {"AutoConfig": "evil.EvilConfig", "AutoModel": "evil.EvilModel"},
        "architectures": ["EvilModel"]}))
    return folder


def test_a_model_folder_asking_for_its_own_code_is_refused_and_nothing_runs(tmp_path, monkeypatch):
    """``card --model hf:DIR`` and the zoo's transformers backend: one line naming the folder, no prompt (stdin would
    answer "y"), no code run."""
    pytest.importorskip("transformers")
    import io

    from common.card.models import resolve
    from common.zoo import ModelSpec
    from common.zoo.hf import create_hf_model

    marker = tmp_path / "ran"
    folder = _trapped_folder(tmp_path, marker)
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n" * 10))
    with pytest.raises(WorkspaceError, match="asks for code shipped with the model") as info:
        resolve(f"hf:{folder}")
    assert "\n" not in str(info.value) and "evil.py" in str(info.value)
    spec = ModelSpec(name="trapped", arch="blip", family="x", label="x", backend="transformers",
                     pretrained=str(folder))
    with pytest.raises(WorkspaceError, match="asks for code shipped with the model"):
        create_hf_model(spec)
    assert not marker.exists()
    # and transformers itself is never allowed to: without this project's own check, it refuses as well
    import transformers

    with pytest.raises(Exception):
        transformers.AutoConfig.from_pretrained(str(folder), local_files_only=True, trust_remote_code=False)
    assert not marker.exists()


@pytest.mark.parametrize("content, message", [
    ("{" * 100000 + "}" * 100000, "nested too deeply|not a JSON model config"),
    ("\xff\xfe not json", "not a JSON model config"),
    ("[1, 2]", "not a JSON object"),
])
def test_a_damaged_model_config_names_the_cause(tmp_path, content, message):
    from common.card.models import resolve

    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_bytes(content.encode("latin-1"))
    with pytest.raises(WorkspaceError, match=message) as info:
        resolve(f"hf:{folder}")
    assert "\n" not in str(info.value) and "folder without config.json" not in str(info.value)


def test_every_transformers_load_refuses_remote_code():
    """Static: every ``from_pretrained`` call of common/ and papers/ passes ``trust_remote_code=False`` (or forwards an
    options mapping that holds it), so no code path can ask, or be answered."""
    import ast

    root = Path(__file__).resolve().parent.parent
    missing = []
    for path in sorted(p for tree in ("common", "papers") for p in (root / tree).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "from_pretrained":
                named = {k.arg: k.value for k in node.keywords}
                explicit = isinstance(named.get("trust_remote_code"), ast.Constant) and \
                    named["trust_remote_code"].value is False
                forwarded = any(k.arg is None for k in node.keywords)  # **options, checked below
                if not explicit and not forwarded and not _own_classmethod(node):
                    missing.append(f"{path.relative_to(root)}:{node.lineno}")
    assert not missing, f"from_pretrained without trust_remote_code=False: {missing}"
    for where in ("common/zoo/hf.py", "common/blind/pretrained.py"):
        assert '"trust_remote_code": False' in (root / where).read_text() or \
            "trust_remote_code=False" in (root / where).read_text()


def _own_classmethod(node) -> bool:
    """``SCORER_CLASSES[name].from_pretrained(...)`` and ``cls.from_pretrained``: this project's own loaders."""
    import ast

    func = node.func.value
    return isinstance(func, ast.Subscript) or (isinstance(func, ast.Name) and func.id == "cls")


def _checkpoint(tmp_path: Path, poison: float | None) -> Path:
    from common.training.checkpoint import portable_state, save_weights
    from common.zoo import random_model

    state = portable_state(random_model(ARCH, seed=3).model)
    if poison is not None:
        key = next(k for k, v in state.items() if v.is_floating_point())
        state[key] = state[key].clone()
        state[key].view(-1)[0] = poison
    path = tmp_path / f"m-{poison}.safetensors"
    save_weights(path, state)
    return path


@pytest.mark.parametrize("poison", [math.nan, math.inf])
def test_non_finite_weights_are_refused_before_anything_is_scored(tmp_path, poison):
    from common.card.models import build, resolve
    from common.zoo import ModelUnavailable

    path = _checkpoint(tmp_path, poison)
    with pytest.raises(ModelUnavailable, match=r"holds non-finite weights: .* \(1 of \d+ values NaN or infinite\)"):
        build(resolve(f"{ARCH}:{path}"))
    build(resolve(f"{ARCH}:{_checkpoint(tmp_path, None)}"))  # the same file, intact, loads


def test_a_non_finite_embedding_never_becomes_a_score(tmp_path, monkeypatch):
    """A model that gives NaN (weights damaged in memory, an overflow): the engine stops naming it and caches
    nothing, so no rerun reads a NaN score as a decision."""
    from common.evaluation.engine import Engine, EngineConfig, NonFiniteEmbedding
    from common.zoo import random_model

    monkeypatch.setenv("VLC_CACHE", str(tmp_path / "cache"))
    model = random_model(ARCH, seed=3)
    real = model.encode_tokens

    def broken(tokens):
        out = real(tokens)
        out[0, 0] = float("nan")
        return out

    monkeypatch.setattr(model, "encode_tokens", broken)
    engine = Engine(model, EngineConfig(progress=False))
    with pytest.raises(NonFiniteEmbedding, match=r"1 of 2 text embeddings are NaN or infinite"):
        engine.embed([], ["a red circle", "a blue square"])
    monkeypatch.setattr(model, "encode_tokens", real)
    assert np.isfinite(Engine(model, EngineConfig(progress=False)).embed([], ["a red circle"]).text_matrix).all()


@pytest.mark.parametrize("target, why", [
    (lambda tmp: tmp, "is a folder, not a checkpoint file"),
    (lambda tmp: Path("/dev/zero"), "is not a regular file"),
    (lambda tmp: tmp / "absent.safetensors", "not found"),
])
def test_a_checkpoint_that_is_not_a_file_names_what_it_is(tmp_path, target, why):
    from common.card.models import resolve
    from common.zoo import ModelUnavailable, random_model
    from common.zoo.openclip import load_state_dict

    path = target(tmp_path)
    if path != Path("/dev/zero") or path.exists():
        with pytest.raises(ModelUnavailable, match=why):
            load_state_dict(random_model(ARCH).model, path, "m")
        if path.suffix or path.is_dir() or path.exists():
            with pytest.raises(WorkspaceError, match=why):
                resolve(f"{ARCH}:{path}")


@pytest.mark.parametrize("value", ["inf", "nan", "-inf"])
def test_a_recipe_number_that_is_not_finite_is_refused(value):
    from common.training.recipes import RecipeError, parse_recipes

    text = ('[r]\noptimizer = {value = "adam", source = "x"}\nbetas = {value = [0.9, 0.999], source = "x"}\n'
            f'eps = {{value = {value}, source = "x"}}\ndecay_rule = {{value = "all", source = "x"}}\n'
            'schedule = {value = "constant", source = "x"}\nclamp_logit_scale = {value = false, source = "x"}\n'
            'augmentation = {value = "center_crop", source = "x"}\n')
    with pytest.raises(RecipeError, match=r"\[r\]\.eps: .* not a finite number"):
        parse_recipes(text, "recipes.toml")
    with pytest.raises(RecipeError, match=r"\[r\]\.betas: .* not finite"):
        parse_recipes(text.replace(f"value = {value}", "value = 1e-8").replace("[0.9, 0.999]", f"[0.9, {value}]"),
                      "recipes.toml")


def test_a_recipes_file_that_is_not_utf8_is_one_line(tmp_path):
    from common.training.recipes import RecipeError, load_recipes

    path = tmp_path / "recipes.toml"
    path.write_bytes(b'# caf\xe9\n[r]\n')
    with pytest.raises(RecipeError, match=r"recipes\.toml:1: character 6: byte 0xe9 is not UTF-8"):
        load_recipes(path)


def test_a_yaml_alias_bomb_in_params_is_refused_at_once(tmp_path):
    import time

    from common.pipeline.params import ParamsError, read_params

    lines = ["profile: mini", "a: &a [x, x, x, x, x, x, x, x, x]"]
    lines += [f"{c}: &{c} [{', '.join(['*' + p] * 9)}]" for p, c in zip("abcdefgh", "bcdefghi")]
    path = tmp_path / "params.yaml"
    path.write_text("\n".join(lines) + "\n")
    start = time.monotonic()
    with pytest.raises(ParamsError, match=r"line 10: more than 64 aliases"):
        read_params(path)
    assert time.monotonic() - start < 5


def test_data_dvc_that_is_not_utf8_is_one_line(tmp_path):
    from common.pipeline.data_dvc import DataDvcError, read_data_dvc

    path = tmp_path / "data.dvc"
    path.write_bytes(b"outs:\n- path: caf\xe9\n")
    with pytest.raises(DataDvcError, match=r"not UTF-8 text \(byte 0xe9"):
        read_data_dvc(path)


def test_torch_checkpoints_never_unpickle_code(tmp_path):
    """A .pt whose pickle would run code when loaded: refused by torch's weights-only loader, nothing run."""
    from common.zoo import ModelUnavailable, random_model
    from common.zoo.openclip import load_state_dict

    marker = tmp_path / "ran"

    class Trap:
        def __reduce__(self):
            return (Path.write_text, (marker, "ran"))

    path = tmp_path / "trap.pt"
    torch.save({"state_dict": Trap()}, path)
    with pytest.raises(ModelUnavailable, match="could not be loaded"):
        load_state_dict(random_model(ARCH).model, path, "m")
    assert not marker.exists()


@pytest.mark.parametrize("damage, message", [
    (lambda t: t[: len(t) // 2 + 3], "the last line does not end: the file was cut short"),
    (lambda t: t[: t.index("m10,") + 3] + "\n", r"t.csv:12: expected 2 fields \(header \['model', 'acc'\]\), got 1"),
    (lambda t: t + t.splitlines()[0] + "\n", "repeats the header"),
    (lambda t: t.replace("0.5", "0.\xe9", 1), "not UTF-8"),
])
def test_a_damaged_results_table_is_refused_by_the_docs_scorecard_and_site_reader(tmp_path, damage, message):
    """``common.reporting.results_ref`` (behind ``docs numbers``, ``docs claims`` and the site): a table cut mid-row, a header
    repeated as a row, a byte that is not UTF-8: one line naming the file, never a half table or a traceback."""
    from common.reporting.results_ref import DocNumberError, lookup

    text = "model,acc\n" + "".join(f"m{i},0.5{i}\n" for i in range(20))
    path = tmp_path / "t.csv"
    path.write_bytes(damage(text).encode("latin-1"))
    with pytest.raises(DocNumberError, match=message) as info:
        lookup("t.csv¦model=m1¦acc", "README.md", tmp_path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("text", ['{"a": 1, "b": ', '{"a": 1}\xe9'])
def test_a_damaged_results_json_is_refused(tmp_path, text):
    from common.reporting.results_ref import DocNumberError, lookup

    path = tmp_path / "c.json"
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(DocNumberError, match="not valid JSON|not UTF-8"):
        lookup("c.json¦a", "README.md", tmp_path)


@pytest.mark.parametrize("old, new, message", [
    ("mini_examples_per_category: 500", "mini_examples_per_category: 100000000000000000000000",
     "sugarcrepe.mini_examples_per_category: must be at most 100,000 (a mini-world set, rendered here on a CPU)"),
    ("steps: 250,", "steps: 25000000000,", "train.xs-2k.steps: must be at most 1,000,000,000"),
    ("seed: 0\n", "seed: 99999999999999999999999\n", "must be at most 9,223,372,036,854,775,807"),
])
def test_a_count_past_its_stated_maximum_is_refused(tmp_path, old, new, message):
    """A count a user can set has a stated maximum: 10**23 examples is a typo, refused in one line, not run."""
    from common.pipeline.params import PARAMS_FILE, ParamsError, read_params

    path = tmp_path / "params.yaml"
    path.write_text(PARAMS_FILE.read_text(encoding="utf-8").replace(old, new, 1))
    with pytest.raises(ParamsError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_params(path)


def test_an_interrupted_mini_sugarcrepe_set_leaves_the_previous_set_whole(tmp_path, monkeypatch):
    """SIGTERM (here: the interrupt it becomes) while the set's images are being written: --out keeps the previous
    set, every image of it under its own manifest, and no image of the new one."""
    import hashlib

    from papers.sugarcrepe import sets_mini

    out = tmp_path / "set"
    params = {"mini": {"world": {"image_size": 32, "seed": 0}}, "sugarcrepe": {"mini_examples_per_category": 3}}
    monkeypatch.setattr(sets_mini, "stage_params", lambda stage, **_: params, raising=False)
    monkeypatch.setattr("common.pipeline.params.stage_params", lambda stage, **_: params)
    monkeypatch.setenv("DVC_STAGE", "papers/sugarcrepe/dvc.yaml:mini-set")  # as `dvc repro` sets it
    assert sets_mini.main(["--out", str(out)]) == 0

    def digest():
        return {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(out.rglob("*")) if p.is_file()}

    before = digest()
    params["mini"]["world"]["image_size"] = 48
    real, calls = sets_mini.render, []

    def interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt  # what common.errors.sigterm_as_interrupt makes of SIGTERM
        return real(*args, **kwargs)

    monkeypatch.setattr(sets_mini, "render", interrupted)
    with pytest.raises(KeyboardInterrupt):
        sets_mini.main(["--out", str(out)])
    assert digest() == before
    assert not [p for p in out.iterdir() if p.name.startswith(".staging")]


@pytest.mark.parametrize("error, why", [(28, "no room left on its disk"), (30, "a read-only file system")])
def test_a_rehearsal_copy_that_cannot_be_written_is_one_line_and_leaves_nothing(tmp_path, monkeypatch, error, why):
    """``rehearse --dir`` on a full or read-only disk: one line, the partial copy removed; the copy is marked before
    its first file, so a copy cut short by a signal is the rehearsal's and the next run replaces it."""
    import errno
    import os

    from tests.rehearsal import run, workspace

    assert errno.errorcode[error] in ("ENOSPC", "EROFS")
    seen = []

    def copy(dest, *args, **kwargs):
        seen.append((dest / run.MARKER).is_file())
        (dest / "common").mkdir()
        (dest / "common" / "half.py").write_text("x")
        raise OSError(error, os.strerror(error), str(dest / "common" / "more.py"))

    monkeypatch.setattr(run, "copy_workspace", copy)
    ws = tmp_path / "rehearsal" / "ws"
    with pytest.raises(run.RehearsalError, match=f"could not be copied there \\({why}") as info:
        run.prepare(ws, ["aro"], tmp_path / "mirror", 2, log=lambda line: None)
    assert seen == [True] and not ws.exists() and "\n" not in str(info.value)
    # a copy cut short by a signal keeps its marker: the next run removes it rather than refusing it
    ws.mkdir(parents=True)
    (ws / run.MARKER).write_text("x")
    (ws / "partial").write_text("x")
    with pytest.raises(run.RehearsalError, match="could not be copied"):
        run.prepare(ws, ["aro"], tmp_path / "mirror", 2, log=lambda line: None)
    assert not ws.exists()


@pytest.mark.parametrize("expression, reason", [
    ("mean([" + "9" * 300 + " * " + "9" * 300 + "])", "too large for a float"),
    ("round(1e308 * 10 - 1e308 * 10)", "round() of nan"),
    ("round(1e308 * 10)", "round() of inf"),
])
def test_a_recompute_expression_that_overflows_is_refused(expression, reason):
    """Expressions inside the grammar whose arithmetic overflows: one ``ExpressionError``, never a traceback."""
    from common.reporting.published import CellIndex, ExpressionError, evaluate_expression

    with pytest.raises(ExpressionError, match=reason.replace("(", r"\(").replace(")", r"\)")):
        evaluate_expression(expression, CellIndex([]))


DVC_FULL_DISK = (
    "ERROR: failed to transfer '5953c4db45af642373a935bbddca80f8' - [Errno 28] No space left on device: "
    "'data/bivlc/released/results/SUGARCREPE_CORRECT_CLIP_COCO.csv' -> '/tmp/tiny/cache/files/md5/59/53c4'\n"
    "ERROR: unexpected error - [Errno 28] No space left on device\n\n"
    "Having any troubles? Hit us up at https://dvc.org/support, we are always happy to help!\n")
"""What `dvc commit` printed (DVC 3) with its cache on a 64 KB tmpfs, 2026-11-29; with --quiet only the last line."""


@pytest.mark.parametrize("stderr, refused", [(DVC_FULL_DISK, True), (DVC_FULL_DISK.replace("[Errno 28] No space left "
                                             "on device", "Permission denied"), False)])
def test_data_fetch_names_a_full_disk_under_dvcs_cache_not_dvcs_footer(tmp_path, monkeypatch, capsys, stderr, refused):
    """`data fetch` with DVC's cache on a full disk: one line naming the cache and its free space, exit 1 (it was
    exit 0 and "Having any troubles?" as the cause); another failure stays a note, naming DVC's error."""
    import subprocess

    from common.pipeline import data_dvc

    record = tmp_path / "data.dvc"
    record.write_text("outs: []\n")
    monkeypatch.setattr(data_dvc, "DATA_DVC", record)

    def fake_dvc(*args, **kwargs):
        if args[:2] == ("cache", "dir"):
            return subprocess.CompletedProcess(args, 0, str(tmp_path / "cache") + "\n", "")
        assert "--quiet" not in args, "--quiet hides DVC's error"
        return subprocess.CompletedProcess(args, 255, "", stderr)

    monkeypatch.setattr(data_dvc, "dvc", fake_dvc)
    if refused:
        with pytest.raises(data_dvc.DataDvcError, match=r"DVC's cache .*cache: no room left on its disk \(.* MB free\)"):
            data_dvc._commit_to_cache()
    else:
        data_dvc._commit_to_cache()
        note = capsys.readouterr().err
        assert "Permission denied" in note and "Having any troubles" not in note


class _Trap:
    """An object whose unpickling writes ``marker``: proof that a loader ran code from a file."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.write_text, (self.marker, "ran"))


@pytest.mark.parametrize("kind", ["params.yaml", "data.dvc", "images.npy"])
def test_a_booby_trapped_file_is_refused_and_runs_nothing(kind, tmp_path):
    """YAML tags that construct Python objects (``!!python/object/apply``) in the two YAML files the project reads,
    and a pickled object array where a set's images belong: each refused, the trap never sprung. (Torch checkpoints
    and model folders asking for their own code: the tests above.)"""
    from common.paths import ROOT

    marker = tmp_path / "ran"
    tag = f'!!python/object/apply:os.system ["touch {marker}"]'
    if kind == "params.yaml":
        from common.pipeline.params import read_params

        path = tmp_path / "params.yaml"
        path.write_text((ROOT / "params.yaml").read_text(encoding="utf-8") + f"trap: {tag}\n")
        with pytest.raises(WorkspaceError, match="params.yaml"):
            read_params(path)
    elif kind == "data.dvc":
        from common.pipeline.data_dvc import DataDvcError, read_data_dvc

        path = tmp_path / "data.dvc"
        path.write_text(f"outs: {tag}\n")
        with pytest.raises(DataDvcError, match="not valid YAML"):
            read_data_dvc(path)
    else:
        from papers.aro.finetune_rows_mini import FinetuneSplit
        from papers.aro.finetune_sets_mini import FinetuneSetConfig, build_finetune_set

        build_finetune_set(FinetuneSetConfig(train_images=4, val_images=2, captions_per_image=2, image_size=16),
                           tmp_path / "set", generate=lambda captions, seed: [[] for _ in captions])
        np.save(tmp_path / "set" / "train" / "images.npy", np.array([_Trap(marker)], dtype=object), allow_pickle=True)
        from common.files.arrays import ArrayFileError

        with pytest.raises(ArrayFileError, match=r"images\.npy: holds|images\.npy: not a readable array.*nothing in "
                                                 r"it was run") as caught:
            FinetuneSplit.load(tmp_path / "set", "train")
        assert "\n" not in str(caught.value)
    assert not marker.exists(), f"{kind}: loading it ran code"


def _npy_header_only(path: Path) -> None:
    np.save(path, np.zeros((4, 8, 8, 3), np.uint8))
    path.write_bytes(path.read_bytes()[:128])


NPY_DAMAGE = {
    "object array": (lambda p: np.save(p, np.array([{"a": 1}], dtype=object), allow_pickle=True),
                     "nothing in it was run"),
    "plain pickle": (lambda p: p.write_bytes(__import__("pickle").dumps([1, 2, 3])), "nothing in it was run"),
    "cut short": (_npy_header_only, "not a readable array"),
    "empty file": (lambda p: p.write_bytes(b""), "not a readable array"),
    "text": (lambda p: p.write_text("images go here\n"), "not a readable array"),
    "strings": (lambda p: np.save(p, np.array(["a", "b"])), "not numbers"),
    "npz archive": (lambda p: np.savez(p.with_suffix(""), images=np.zeros(3)) or p.with_suffix(".npz").rename(p),
                    "npz archive"),
    "a folder": (lambda p: p.mkdir(), "a folder"),
}


@pytest.mark.parametrize("mmap", [False, True], ids=["read", "mmap"])
@pytest.mark.parametrize("damage", sorted(NPY_DAMAGE))
def test_a_damaged_npy_is_one_line_naming_the_file(damage, mmap, tmp_path):
    """Every ``.npy`` a stage reads goes through ``common.files.arrays.load_array``: what numpy refuses with its own
    exception (shown with a traceback before 2026-11-29) is one line naming the file."""
    from common.files.arrays import ArrayFileError, load_array

    path = tmp_path / "images.npy"
    write, message = NPY_DAMAGE[damage]
    write(path)
    with pytest.raises(ArrayFileError) as caught:
        load_array(path, mmap=mmap)
    text = str(caught.value)
    assert text.startswith(f"{path}: ") and message in text and "\n" not in text, text
    assert isinstance(caught.value, WorkspaceError)


def test_a_missing_npy_stays_the_callers_to_word(tmp_path):
    """A missing set keeps each reader's own remedy ("no fine-tuning set here; run the mini-finetune-set stage"):
    ``load_array`` leaves ``FileNotFoundError`` to its caller, and an entry point prints it as one line."""
    from common.errors import run_entry_point
    from common.files.arrays import load_array

    with pytest.raises(FileNotFoundError):
        load_array(tmp_path / "images.npy")
    assert run_entry_point(lambda: load_array(tmp_path / "images.npy")) == 1


def test_every_npy_a_stage_reads_goes_through_the_one_loader():
    """No module calls ``np.load`` itself but ``common.files.arrays`` and the embedding cache (whose every failure moves
    the shard aside and recomputes it): a new reader cannot skip the rule by accident."""
    from common.paths import ROOT

    allowed = {"common/files/arrays.py", "common/evaluation/cache.py"}
    callers = sorted(p.relative_to(ROOT).as_posix() for d in ("common", "papers") for p in (ROOT / d).rglob("*.py")
                     if "np.load(" in p.read_text(encoding="utf-8"))
    assert set(callers) <= allowed, sorted(set(callers) - allowed)
    assert "common/files/arrays.py" in callers  # the check sees the files it should


@pytest.mark.parametrize("damage", ["data.dvc", "dvc.yaml", "none"])
def test_data_check_on_a_pipeline_dvc_cannot_read_is_one_line(damage, tmp_path):
    """``python -m common data check`` (``make repro``'s step before DVC) asks DVC for the pipeline's inputs: a
    ``data.dvc`` with a non-UTF-8 byte, or a ``dvc.yaml`` cut short, was DVC's traceback; now one line naming it."""
    from common.pipeline.data_dvc import DataDvcError, check_inputs

    (tmp_path / ".dvc").mkdir()
    (tmp_path / ".dvc" / "config").write_text("[core]\n    no_scm = true\n")
    (tmp_path / "dvc.yaml").write_text("stages:\n  papers/toy:\n    cmd: echo\n    deps:\n      - build/y\n")
    (tmp_path / "papers" / "toy").mkdir(parents=True)
    stage = "stages:\n  s:\n    wdir: ../..\n    cmd: echo\n    deps:\n      - data/x.txt\n    outs:\n      - build/y\n"
    (tmp_path / "papers" / "toy" / "dvc.yaml").write_text(stage if damage != "dvc.yaml" else stage + "  t: [\n")
    (tmp_path / "data.dvc").write_bytes(b"outs:\n- path: data/x.txt\n" + (b"# caf\xe9\n" if damage == "data.dvc" else b""))
    with pytest.raises(DataDvcError) as caught:
        check_inputs(["toy"], root=tmp_path)
    text = str(caught.value)
    named = {"data.dvc": "'data.dvc', is not valid utf-8", "dvc.yaml": "'papers/toy/dvc.yaml', YAML file structure",
             "none": "reads 1 input(s)"}[damage]  # the control: undamaged, DVC reads the pipeline and names its input
    assert named in text and "\n" not in text and ("git checkout" in text or damage == "none"), text
