"""Property-based tests (hypothesis) of the readers the second hardening round named (issue "Hardening, round two"):
for any damaged input, each reader gives a valid result or one ``error:`` line (no traceback), and a valid result
holds only finite numbers. Damage as in ``test_audit_inputs_properties`` (cut short, bytes inserted or dropped, lines
dropped, repeated or moved, fields replaced), plus a number of a TOML or YAML file replaced by a non-finite, huge or
wrongly typed value.

* results tables (``common.reporting.report.read_table``: the report, the site, the documentation's numbers, the scorecards);
* results JSON through ``common.reporting.results_ref.lookup`` (the documentation's and the scorecards' numbers);
* ``recipes.toml`` (``common.training.recipes.load_recipes``);
* ``scorecard.toml`` (``common.reporting.scorecard.load``);
* ``data.dvc`` (``common.pipeline.data_dvc.read_data_dvc``);
* a model folder's ``config.json`` (``common.zoo.hf.refuse_custom_code``).

Derandomized (the ``gate`` profile of tests/conftest.py); nothing is written into the workspace.
"""
from __future__ import annotations

import dataclasses
import math
import re
import tempfile
from pathlib import Path

from hypothesis import example, given, settings, strategies as st
from test_audit_inputs_properties import PROPERTY, _run, assert_one_error_line, damaged

from common.paths import RESULTS, ROOT

TABLE_EXAMPLES = 120
JSON_EXAMPLES = 80
TOML_EXAMPLES = 80
DVC_EXAMPLES = 80
CONFIG_EXAMPLES = 60

TABLE = (RESULTS / "bivlc" / "mini" / "table2.csv").read_bytes()
SUMMARY = (RESULTS / "bivlc" / "mini" / "summary.json").read_bytes()
RECIPES = (ROOT / "papers" / "bivlc" / "recipes.toml").read_bytes()
SCORECARD = (ROOT / "papers" / "bivlc" / "scorecard.toml").read_bytes()
DATA_DVC = (ROOT / "data.dvc").read_bytes()
CONFIG = b'{"architectures": ["BlipForImageTextRetrieval"], "model_type": "blip", "projection_dim": 256}\n'

VALUES = [b"nan", b"inf", b"-inf", b"+inf", b"1e999", b"-1e999", b"1" + b"0" * 400, b'"5"', b"true", b"[]", b"{}",
          b"-1", b"0", b"1e-400", b"0x10", b'"\\u0000"', b"2026-11-29", b"5", b"[5]", b'["x"]', b"{ a = 1 }"]
"""What a hand edit or a bad merge puts where a value was (a number, a text, a list)."""
VALUE = re.compile(rb"(?m)^(\s*[A-Za-z_][\w.-]*\s*[=:]\s*)(\S.*?)\s*$")
TABLE_HEADER = re.compile(rb"(?m)^\[\[?([\w.-]+)\]\]?\s*$")
HEADER_EDITS = [b"%s = 5", b'%s = ["x"]', b"%s = [5]", b"[%s]", b"[[%s]]", b"%s = {}"]


@st.composite
def renumbered(draw, data: bytes) -> bytes:
    """``data`` with one ``key = value`` (TOML) or ``key: value`` (YAML) line's value replaced by a ``VALUES`` entry,
    or a table header (``[name]``, ``[[name]]``) turned into a key of another type; then, sometimes, damaged further."""
    if draw(st.booleans()):
        spots = list(VALUE.finditer(data))
        if spots:
            spot = draw(st.sampled_from(spots))
            data = data[: spot.start(2)] + draw(st.sampled_from(VALUES)) + data[spot.end(2):]
    else:
        spots = list(TABLE_HEADER.finditer(data))
        if spots:
            spot = draw(st.sampled_from(spots))
            data = data[: spot.start()] + draw(st.sampled_from(HEADER_EDITS)) % spot.group(1) + data[spot.end():]
    if draw(st.booleans()):
        data = draw(damaged(data))
    return data


def any_damage(data: bytes):
    return st.one_of(damaged(data), renumbered(data))


def _finite_numbers(value, where: str = "") -> None:
    """Every int and float inside ``value`` (dataclasses, mappings, sequences) is finite."""
    if isinstance(value, bool) or value is None or isinstance(value, (str, bytes)):
        return
    if isinstance(value, float):
        assert math.isfinite(value), f"{where}: {value!r}"
    elif dataclasses.is_dataclass(value):
        for field in dataclasses.fields(value):
            _finite_numbers(getattr(value, field.name), f"{where}.{field.name}")
    elif isinstance(value, dict):
        for key, item in value.items():
            _finite_numbers(item, f"{where}.{key}")
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _finite_numbers(item, f"{where}[{i}]")


def _written(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


_REFUSED = object()


def read_or_one_line(read, culprit: str):
    """``read()``'s result, or ``_REFUSED`` after checking that it failed with one ``error:`` line naming
    ``culprit``; any other exception fails the test (a traceback is a bug)."""
    got: list = []
    code, err = _run(lambda: got.append(read()) or 0)
    if code == 0:
        return got[0]
    assert_one_error_line(code, err, culprit)
    return _REFUSED


@settings(max_examples=TABLE_EXAMPLES, **PROPERTY)
@given(data=damaged(TABLE))
@example(data=b'"' + TABLE)  # a quote opening the header: the header then holds a line break
def test_a_damaged_results_table_reads_whole_or_is_one_error_line(data):
    from common.reporting.report import read_table

    header = TABLE.splitlines()[0].decode().split(",")
    numbers = header[4:]  # row, model, label, kind, then the scores and n
    with tempfile.TemporaryDirectory() as tmp:
        path = _written(Path(tmp), "table2.csv", data)
        rows = read_or_one_line(lambda: read_table(path), str(path))
        if rows is not _REFUSED:
            text = data.decode("utf-8")
            assert text.endswith("\n") and "\0" not in text
            assert rows and all(list(r) == list(rows[0]) for r in rows)
            assert all(list(r.values()) != list(r) for r in rows), "a repeated header read as a row"
        strict = read_or_one_line(lambda: read_table(path, numbers, numbers=numbers), str(path))
        if strict is not _REFUSED:
            _finite_numbers([float(r[k]) for r in strict for k in numbers], "table")


@settings(max_examples=JSON_EXAMPLES, **PROPERTY)
@given(data=any_damage(SUMMARY))
def test_a_damaged_results_json_gives_its_number_or_one_error_line(data):
    import json

    from common.reporting import results_ref

    key = next(iter(json.loads(SUMMARY)))
    with tempfile.TemporaryDirectory() as tmp:
        path = _written(Path(tmp) / "bivlc" / "mini", "summary.json", data)
        got = read_or_one_line(lambda: results_ref.lookup(f"bivlc/mini/summary.json | {key}", "docs/x.md", Path(tmp)),
                               "summary.json")
        assert got is _REFUSED or isinstance(got, str)


@settings(max_examples=TOML_EXAMPLES, **PROPERTY)
@given(data=any_damage(RECIPES))
@example(data=b"x = 5\n")
@example(data=b"[x]\nlr = {value = 1e999}\n")
def test_a_damaged_recipes_file_loads_finite_or_is_one_error_line(data):
    from common.training.recipes import load_recipes

    with tempfile.TemporaryDirectory() as tmp:
        path = _written(Path(tmp), "recipes.toml", data)
        got = read_or_one_line(lambda: load_recipes(path), str(path))
        if got is not _REFUSED:
            _finite_numbers(got, "recipes")


@settings(max_examples=TOML_EXAMPLES, **PROPERTY)
@given(data=any_damage(SCORECARD))
@example(data=b"claim = 5\n")
@example(data=b'claim = ["x"]\n')
@example(data=b"[claim]\nid = 'x'\n")
@example(data=b"[[claim]]\nid = 'x'\nclaim = 'y'\nsource = 'z'\ndirection = '>'\nquote = 'eight chars'\n"
              b"published = 'x'\nmini = 5\n")
def test_a_damaged_scorecard_loads_finite_or_is_one_error_line(data):
    from common.reporting import scorecard

    with tempfile.TemporaryDirectory() as tmp:
        path = _written(Path(tmp) / "papers" / "bivlc", "scorecard.toml", data)
        got = read_or_one_line(lambda: scorecard.load("bivlc", Path(tmp)), str(path))
        if got is not _REFUSED:
            _finite_numbers(got, "scorecard")


@settings(max_examples=DVC_EXAMPLES, **PROPERTY)
@given(data=any_damage(DATA_DVC))
def test_a_damaged_data_dvc_reads_or_is_one_error_line(data):
    from common.pipeline.data_dvc import read_data_dvc

    with tempfile.TemporaryDirectory() as tmp:
        path = _written(Path(tmp), "data.dvc", data)
        got = read_or_one_line(lambda: read_data_dvc(path), str(path))
        if got is not _REFUSED:
            assert all(item.size >= 0 and len(item.md5) == 32 for item in got)


def test_a_yaml_alias_bomb_in_data_dvc_is_refused_at_once(tmp_path):
    """Nine nested aliases of nine (a "billion laughs" file) would take for ever to expand."""
    from common.pipeline.data_dvc import read_data_dvc
    from common.pipeline.params import MAX_ALIASES

    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    path = _written(tmp_path, "data.dvc", ("\n".join(lines) + "\nouts: *a9\n").encode())
    code, err = _run(lambda: read_data_dvc(path) and 0)
    assert_one_error_line(code, err, str(path))
    assert f"more than {MAX_ALIASES} aliases (*name): refused before anything expands them" in err, err
    assert "; restore it: `git checkout -- data.dvc`" in err, err


@settings(max_examples=CONFIG_EXAMPLES, **PROPERTY)
@given(data=st.one_of(damaged(CONFIG), st.sampled_from([b"[" * 100_000, b"{" * 5, b"\xff", b"null", b"[]"])))
def test_a_damaged_model_config_passes_or_is_one_error_line(data):
    from common.zoo.hf import refuse_custom_code

    with tempfile.TemporaryDirectory() as tmp:
        _written(Path(tmp), "config.json", data)
        code, err = _run(lambda: refuse_custom_code(Path(tmp), "hf:" + tmp) or 0)
        if code != 0:
            assert_one_error_line(code, err, "config.json")
