"""Property-based tests (hypothesis) of the audit's inputs (issue 35): for any generated input, damaged or not, a
reader gives either a valid result or a non-zero exit with one ``error:`` line (no traceback), runs no code, and no
tracked file changes.

* transcriptions: ``results/published/bivlc.csv`` damaged byte- and line-wise, through ``load_cells``; recompute
  expressions assembled from the grammar's tokens and the sandbox escapes' tokens, through ``evaluate_expression``
  and, inside a claims file, ``common.audit.claims.recompute``;
* released files: BiVLC's per-instance, per-example and detector formats, damaged, through ``python -m common audit
  released bivlc``; a per-example file of the cross-paper comparison through ``read_released``;
* run tables: ``results/bivlc/mini/table2.csv`` (and table5) damaged, through the BiVLC audit's run
  recomputations: the valid result is exactly the audit's coverage of the mini run (107 cells), nothing else;
  through ``run_audit``, a failure writes nothing.

Every property is derandomized (the same examples each run) and keeps no example database (nothing is written into
the workspace).
"""
from __future__ import annotations

import codecs
import contextlib
import io
import math
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from common.audit import claims as audit_claims, run_audit
from common.audit.cross_paper import read_released
from common.audit.identities import load_identities
from common.cli import main as cli_main
from common.errors import run_entry_point
from common.paths import PUBLISHED, RESULTS
from common.reporting.published import CellIndex, PublishedDataError, evaluate_expression, load_cells
from papers.bivlc import audit as bivlc_audit
from test_bad_input_matrix import BIVLC_HEADER, tracked_outputs

TRANSCRIPTION_EXAMPLES = 150
EXPRESSION_EXAMPLES = 300
CLAIMS_FILE_EXAMPLES = 40
RELEASED_EXAMPLES = 120
RELEASED_PER_EXAMPLE_EXAMPLES = 80
RUN_TABLE_EXAMPLES = 150
RUN_AUDIT_EXAMPLES = 10
PROPERTY = dict(deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.fixture(scope="module", autouse=True)
def outputs_before():
    before = tracked_outputs()
    yield before
    assert tracked_outputs() == before, "a reader changed a tracked file"


def _run(call) -> tuple[int, str]:
    """(exit status, stderr) of ``call()`` through the entry-point wrapper; any other exception fails (a bug)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = run_entry_point(call)
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, err.getvalue()


def assert_one_error_line(code: int, stderr: str, culprit: str) -> None:
    assert code == 1, (code, stderr)
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if "error: " in line]
    assert len(errors) == 1 and stderr.endswith(errors[0] + "\n") and errors[0].startswith("error: "), stderr
    assert culprit in errors[0], (culprit, errors[0])


# ---- damage ------------------------------------------------------------------------------------------------------
PIECES = [b"\x00", b"\xe9", b"\xff\xfe", codecs.BOM_UTF8, b'"', b",", b"\n", b"\r\n", b"<<<<<<< HEAD\n", b"=======\n",
          b">>>>>>> theirs\n", b"_", b"nan", b"inf", b"-", b"1e999", b" ", b"\t", b"1_652", b"\xc3", b"", b"0", b"1.5"]


@st.composite
def damaged(draw, data: bytes) -> bytes:
    """``data`` after one to three edits of the kinds files meet: cut short, bytes inserted or dropped, a line
    dropped, repeated or moved, a field emptied or replaced."""
    for _ in range(draw(st.integers(1, 3))):
        lines = data.splitlines(keepends=True) or [b""]
        kind = draw(st.sampled_from(["cut", "insert", "drop-bytes", "drop-line", "repeat-line", "swap-lines",
                                     "field"]))
        if kind == "cut":
            data = data[: draw(st.integers(0, max(len(data) - 1, 0)))]
        elif kind == "insert":
            at = draw(st.integers(0, len(data)))
            data = data[:at] + draw(st.sampled_from(PIECES)) + data[at:]
        elif kind == "drop-bytes":
            at = draw(st.integers(0, len(data)))
            data = data[:at] + data[at + draw(st.integers(1, 8)):]
        elif kind == "drop-line":
            i = draw(st.integers(0, len(lines) - 1))
            data = b"".join(lines[:i] + lines[i + 1:])
        elif kind == "repeat-line":
            i = draw(st.integers(0, len(lines) - 1))
            data = b"".join(lines[: i + 1] + [lines[i]] + lines[i + 1:])
        elif kind == "swap-lines":
            i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
            data = b"".join(lines)
        else:
            i = draw(st.integers(0, len(lines) - 1))
            fields = lines[i].split(b",")
            k = draw(st.integers(0, len(fields) - 1))
            fields[k] = draw(st.sampled_from(PIECES))
            data = b"".join(lines[:i] + [b",".join(fields)] + lines[i + 1:])
    return data


# ---- transcriptions ----------------------------------------------------------------------------------------------
CELLS = (PUBLISHED / "bivlc.csv").read_bytes()
CELLS_HEAD = b"".join(CELLS.splitlines(keepends=True)[:60])  # a valid transcription of 59 cells, read fast


@settings(max_examples=TRANSCRIPTION_EXAMPLES, **PROPERTY)
@given(data=damaged(CELLS_HEAD))
def test_a_damaged_transcription_reads_or_is_one_error_line(data):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bivlc.csv"
        path.write_bytes(data)
        result: list = []
        code, err = _run(lambda: result.append(load_cells("bivlc", root=Path(folder))))
        if code == 0:
            cells = result[0]
            assert len({c.key for c in cells}) == len(cells)
            assert all(c.value is None or math.isfinite(c.value) for c in cells)
            assert all(c.paper == "bivlc" and c.table and c.row and c.column for c in cells)
        else:
            assert_one_error_line(code, err, str(path))


INDEX = CellIndex(load_cells("bivlc"))
TOKENS = ['cell("Table 2", "Contrastive | CLIP", "BiVLC | I2T")', 'cells("Table 3")', 'cells("Table 3", "*", "*T*")',
          "mean", "max", "min", "sum", "len", "sorted", "round", "abs", "median", "stdev", "(", ")", "[", "]", ",",
          "+", "-", "*", "/", "**", "//", "%", ">", "<=", "==", "1", "0", "2.5", "1e308", "9", "[0]", "[-1]",
          "lambda: ", "__import__('os').system('touch pwned')", ".__class__", ".__globals__", " for x in ", "x",
          ":=", "f'{1}'", "getattr", '"s"', " if 1 else ", "not ", "open", "__builtins__", "*[1]", "key=abs"]


@settings(max_examples=EXPRESSION_EXAMPLES, **PROPERTY)
@given(parts=st.lists(st.sampled_from(TOKENS), min_size=1, max_size=12))
def test_any_expression_evaluates_or_is_refused_and_runs_nothing(parts):
    expression = "".join(parts)
    with tempfile.TemporaryDirectory() as folder, contextlib.chdir(folder):  # a `touch pwned` that ran lands here
        try:
            value = evaluate_expression(expression, INDEX)
        except PublishedDataError as exc:
            assert "\n" not in str(exc)
        else:
            assert math.isfinite(value)
        assert os.listdir(".") == [], "an expression ran code"


CLAIMS = (PUBLISHED / "bivlc_claims.csv").read_bytes()


@settings(max_examples=CLAIMS_FILE_EXAMPLES, **PROPERTY)
@given(data=damaged(CLAIMS))
def test_a_damaged_claims_file_recomputes_or_is_one_error_line(data):
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "bivlc.csv").write_bytes(CELLS)
        path = Path(folder) / "bivlc_claims.csv"
        path.write_bytes(data)
        result: list = []
        code, err = _run(lambda: result.append(audit_claims.recompute("bivlc", root=Path(folder))))
        if code == 0:
            assert all(math.isfinite(r.value) for r in result[0])
        else:
            assert_one_error_line(code, err, str(path))


# ---- released files ----------------------------------------------------------------------------------------------
def _released_base(kind: str) -> bytes:
    if kind == "instances":
        kinds = [("replace", "obj"), ("swap", "att"), ("add", "obj"), ("replace", "rel")] * 3
        rows = [f"img{i}.jpg,cap {i},neg {i},nimg{i}.jpg,{t},{s},True,False,True,True,False,True,False"
                for i, (t, s) in enumerate(kinds)]
        return (",".join(BIVLC_HEADER) + "\n" + "\n".join(rows) + "\n").encode()
    if kind == "similarities":
        rows = [f"{t},{s},0.{i + 3},0.{i + 1},0.2,0.{9 - i}" for i, (t, s) in
                enumerate([("replace", "obj"), ("swap", "att"), ("add", "att")] * 2)]
        return ("type,subtype,sim_C0_I0,sim_C0_I1,sim_C1_I0,sim_C1_I1\n" + "\n".join(rows) + "\n").encode()
    if kind == "examples":
        rows = [f"f{i}.jpg,cap {i},neg {i},{t},{s},{i % 2}" for i, (t, s) in
                enumerate([("replace", "obj"), ("swap", "att"), ("add", "obj")] * 3)]
        return ("filename,caption,negative_caption,type,subtype,correct\n" + "\n".join(rows) + "\n").encode()
    rows = [f"0.{i + 1},0.{8 - i},{float(i % 2)}" for i in range(8)]
    return ("text_pred,img_pred,label\n" + "\n".join(rows) + "\n").encode()


@settings(max_examples=RELEASED_EXAMPLES, **PROPERTY)
@given(data=st.sampled_from(["instances", "similarities", "examples", "detector"]).flatmap(
    lambda kind: damaged(_released_base(kind))))
def test_a_damaged_released_file_scores_or_is_one_error_line(data):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "preds.csv"
        path.write_bytes(data)
        code, err = _run(lambda: cli_main(["audit", "released", "bivlc", str(path)]))
        if code != 0:
            assert_one_error_line(code, err, str(path))


SPEC = load_identities().released[0]


@settings(max_examples=RELEASED_PER_EXAMPLE_EXAMPLES, **PROPERTY)
@given(data=damaged(_released_base("examples")))
def test_a_damaged_per_example_file_counts_or_is_one_error_line(data):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "preds.csv"
        path.write_bytes(data)
        result: list = []
        code, err = _run(lambda: result.append(read_released(path, SPEC)))
        if code == 0:
            counts = result[0]
            assert all(0 <= k <= n for k, n in counts.values())
            lines = {ln.strip() for ln in data.decode("utf-8-sig").splitlines()[1:] if ln.strip(", \t")}
            assert sum(n for _, n in counts.values()) <= len(lines)  # no example counted twice
        else:
            assert_one_error_line(code, err, str(path))


# ---- run tables --------------------------------------------------------------------------------------------------
MINI = RESULTS / "bivlc" / "mini"
COVERAGE = sorted(r.key for r in bivlc_audit.run_recomputations("mini"))


@settings(max_examples=RUN_TABLE_EXAMPLES, **PROPERTY)
@given(name=st.sampled_from(["table2.csv", "table5.csv"]), data=st.data())
def test_a_damaged_run_table_gives_the_same_coverage_or_one_error_line(name, data):
    """The mini run's values are never compared, so a damaged table that still reads must cover exactly the cells
    the intact one covers; anything else is an error naming the table."""
    damage = data.draw(damaged((MINI / name).read_bytes()))
    with tempfile.TemporaryDirectory() as folder:
        results = Path(folder) / "results"
        shutil.copytree(MINI, results / "bivlc" / "mini")
        path = results / "bivlc" / "mini" / name
        path.write_bytes(damage)
        result: list = []
        code, err = _run(lambda: result.append(bivlc_audit.run_recomputations("mini", results)))
        if code == 0:
            assert sorted(r.key for r in result[0]) == COVERAGE
            assert all(r.profile == "mini" and math.isnan(r.value) for r in result[0])
        else:
            assert_one_error_line(code, err, str(path))


@settings(max_examples=RUN_AUDIT_EXAMPLES, **PROPERTY)
@given(data=damaged((MINI / "table2.csv").read_bytes()))
def test_the_audit_over_a_damaged_run_table_writes_all_or_nothing(data):
    with tempfile.TemporaryDirectory() as folder:
        results, out = Path(folder) / "results", Path(folder) / "out"
        shutil.copytree(MINI, results / "bivlc" / "mini")
        (results / "bivlc" / "mini" / "table2.csv").write_bytes(data)
        def audit() -> None:
            run_audit("bivlc", lambda p: bivlc_audit.run_recomputations(p, results), profile="mini", out_dir=out,
                      strict=True)

        code, err = _run(audit)
        written = sorted(p.name for p in out.iterdir()) if out.exists() else []
        if code == 0:
            assert written == ["bivlc.csv", "bivlc.md", "bivlc.png", "bivlc_summary.json"]
        else:
            assert_one_error_line(code, err, str(results / "bivlc" / "mini" / "table2.csv"))
            assert written == []
