"""A transcription is data: a claim's ``recompute`` expression is read by a closed grammar, never run as Python.

Issue 35, item 1: the old check looked only at the outer code object's names, so a lambda or a comprehension hid
``__import__("os").system`` from it and the ordinary audit stage ran it. The grammar (``common.reporting.published``) allows
numbers, + - * /, unary minus, comparisons, lists, an integer index, ``cell``/``cells`` with literal strings and a
short list of named functions; anything else is refused when the claims file is read, naming file, line and column.
Every expression of ``results/published/*_claims.csv`` still evaluates to exactly what Python's ``eval`` gave.
"""
from __future__ import annotations

import math
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from common.audit import claims as audit_claims
from common.errors import WorkspaceError, run_entry_point
from common.paths import PUBLISHED, ROOT
from common.plugins import paper_names
from common.reporting.published import (
    CLAIM_FIELDS, CellIndex, PublishedCell, PublishedDataError, evaluate_expression, load_cells, load_claims)


def _cell(table: str, row: str, column: str, value: float | None) -> PublishedCell:
    return PublishedCell("p", table, row, column, value, "percent", "ok" if value is not None else "not_reported",
                         "", "", 0, "" if value is None else str(value))


INDEX = CellIndex([_cell("T", "a", "x", 10.0), _cell("T", "b", "x", 30.0), _cell("T", "c", "x", 20.0),
                   _cell("T", "a", "y", 0.0), _cell("T", "gone", "x", None)])


# ---- every transcription evaluates as before ----------------------------------------------------------------------
def _reference(expression: str, index: CellIndex) -> float:
    """What the old evaluator gave: Python's eval over the documented names (trusted input: our own files)."""
    names = {"mean": statistics.fmean, "median": statistics.median, "stdev": statistics.stdev,
             "pstdev": statistics.pstdev, "min": min, "max": max, "abs": abs, "round": round, "sum": sum, "len": len,
             "sorted": sorted, "cell": index.cell, "cells": index.cells}
    return float(eval(compile(expression, "<reference>", "eval"), {"__builtins__": {}}, names))  # noqa: S307


@pytest.mark.parametrize("paper", paper_names())
def test_every_transcribed_expression_evaluates_to_the_same_value(paper):
    index = CellIndex(load_cells(paper))
    with_expression = [c for c in load_claims(paper) if c.recompute]
    assert with_expression
    for claim in with_expression:
        assert evaluate_expression(claim.recompute, index) == _reference(claim.recompute, index), claim.claim_id


# ---- the grammar: what it allows ----------------------------------------------------------------------------------
@pytest.mark.parametrize("expression,value", [
    ('cell("T", "a", "x")', 10.0),
    ('cell("T", "b", "x") - cell("T", "a", "x")', 20.0),
    ('-cell("T", "a", "x") * 2 / 4 + 1', -4.0),
    ('mean(cells("T", "*", "x"))', 20.0),
    ('median(cells("T", "*", "x"))', 20.0),
    ('max(cells("T", "[ab]", "x") + cells("T", "c", "x"))', 30.0),
    ('min(cell("T", "a", "x"), 5)', 5.0),
    ('sorted(cells("T", "*", "x"))[1]', 20.0),
    ('sorted(cells("T", "*", "x"))[-1]', 30.0),
    ('sum([cell("T", "b", "x") > 15, cell("T", "a", "x") > 15, cell("T", "c", "x") >= 20])', 2.0),
    ('len(cells("T"))', 4.0),
    ('round(100 / 3, 2)', 33.33),
    ('abs(-2.5e1)', 25.0),
    ('(cell("T", "a", "x") + 2) * 3', 36.0),
    ('stdev([1, 3]) + pstdev([1, 3])', math.sqrt(2) + 1.0),
])
def test_the_grammar_evaluates_what_the_transcriptions_write(expression, value):
    assert evaluate_expression(expression, INDEX) == pytest.approx(value)


# ---- the grammar: what it refuses (known escape routes of Python sandboxes) ---------------------------------------
def _escapes(target: Path) -> list[tuple[str, str]]:
    t = str(target)
    system = f'__import__("os").system("touch {t}")'
    subclasses = ('[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == "catch_warnings"][0]()'
                  f'._module.__builtins__["__import__"]("os").system("touch {t}")')
    return [
        ("lambda-hiding-subclasses", f"(lambda: {subclasses})()"),  # the route: runs os.system before
        ("comprehension-hiding-subclasses", f"[{subclasses} for _ in [0]][0]"),
        ("lambda", f"(lambda: {system})()"),
        ("lambda-default", f"(lambda f=__import__: f('os').system('touch {t}'))()"),
        ("list-comprehension", f"[{system} for _ in [0]][0]"),
        ("generator", f"sum({system} for _ in [0])"),
        ("set-comprehension", f"len({{{system} for _ in [0]}})"),
        ("dict-comprehension", f"len({{0: {system} for _ in [0]}})"),
        ("nested-comprehension-name", f"[o.system('touch {t}') for o in [__import__('os')]][0]"),
        ("dunder-import", system),
        ("builtins-open", f'open("{t}", "w")'),
        ("getattr-string", f'getattr(getattr(mean, "__globals__")["__builtins__"], "open")("{t}", "w")'),
        ("attribute-class-bases", "().__class__.__bases__[0].__subclasses__()"),
        ("attribute-of-function", 'mean.__globals__["os"].system("true")'),
        ("subclasses-catch-warnings", subclasses),
        ("subscript-dunder-string", 'cells("T")["__class__"]'),
        ("subscript-slice", 'cells("T")[0:2]'),
        ("f-string", f'len(f"{{{system}}}")'),
        ("walrus", "(x := 1) + x"),
        ("conditional", "1 if 1 else 2"),
        ("boolean-operator", "1 and 2"),
        ("tuple", "max((1, 2))"),
        ("keyword-argument", 'sorted(cells("T"), key=abs)[0]'),
        ("star-argument", 'max(*cells("T"))'),
        ("bare-name", "cell"),
        ("string-arithmetic", '"a" + "b"'),
        ("string-to-function", 'mean("abc")'),
        ("cell-with-computed-key", 'cell("T", "a" + "", "x")'),
        ("eval", 'eval("1")'),
        ("breakpoint", "breakpoint()"),
        ("power", "2 ** 10"),
        ("floor-division", "7 // 2"),
        ("modulo", "7 % 2"),
        ("bitwise", "1 << 2"),
        ("not", "not 1"),
        ("list-repetition", "len([0] * 999999999999)"),
        ("list-times-list", "[1] * [2]"),
        ("deep-nesting", "(" * 300 + "1" + ")" * 300),
        ("deep-unary", "-" * 5000 + "1"),
        ("too-long", " + ".join(["1"] * 20000)),
        ("nul-byte", "1\x00"),
        ("not-python", "1 +"),
        ("infinite-literal", "1e999"),
        ("huge-integer", "9" * 5000),
    ]


ESCAPE_NAMES = [name for name, _ in _escapes(Path("x"))]


@pytest.mark.parametrize("name", ESCAPE_NAMES)
def test_an_escape_is_refused_and_runs_nothing(name, tmp_path):
    target = tmp_path / "pwned"
    expression = dict(_escapes(target))[name]
    with pytest.raises(PublishedDataError) as caught:
        evaluate_expression(expression, INDEX)
    assert "\n" not in str(caught.value)
    assert not target.exists(), "the expression ran code"


def test_a_huge_power_is_refused_at_once(tmp_path):
    """``9**9**9`` makes Python compute for hours: the grammar refuses ``**`` before anything is evaluated (run in
    a child process so that a regression is a timeout, not a hung suite)."""
    code = ("from common.reporting.published import CellIndex, evaluate_expression, PublishedDataError\n"
            "try:\n    evaluate_expression('9**9**9', CellIndex([]))\n"
            "except PublishedDataError as exc:\n    print('refused:', exc)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0 and proc.stdout.startswith("refused:"), proc.stderr


@pytest.mark.parametrize("expression,named", [
    ('cell("T", "nope", "x")', "no published cell ('T', 'nope', 'x')"),
    ('cell("T", "gone", "x")', "is not_reported"),
    ('cells("U")', "no published cells match ('U', '*', '*')"),
    ('cell("T", "a", "x") / cell("T", "a", "y")', "division by zero"),
    ('sorted(cells("T"))[9]', "index 9"),
    ('mean([])', "mean"),
    ('cells("T")', "a list"),
    ('1e308 * 10', "not a finite number"),
])
def test_a_failing_evaluation_is_an_error_naming_why(expression, named):
    with pytest.raises(PublishedDataError) as caught:
        evaluate_expression(expression, INDEX)
    assert named in str(caught.value) and "\n" not in str(caught.value)


# ---- refused when the file is read: file, line and column ---------------------------------------------------------
def _claims_file(folder: Path, paper: str, recompute: str) -> Path:
    """A copy of ``paper``'s transcriptions whose claims file gets one more row with ``recompute``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{paper}.csv").write_bytes((PUBLISHED / f"{paper}.csv").read_bytes())
    text = (PUBLISHED / f"{paper}_claims.csv").read_text(encoding="utf-8")
    quoted = recompute.replace('"', '""')
    row = f'{paper},injected,Sec. 9,"a quote",1,count,,"{quoted}",\n'
    path = folder / f"{paper}_claims.csv"
    path.write_text(text + row, encoding="utf-8")
    return path


def test_a_bad_expression_is_refused_when_the_claims_file_is_read(tmp_path):
    target = tmp_path / "pwned"
    path = _claims_file(tmp_path / "published", "bivlc", f'(lambda: __import__("os").system("touch {target}"))()')
    line = len(path.read_text(encoding="utf-8").splitlines())
    with pytest.raises(PublishedDataError) as caught:
        load_claims("bivlc", root=path.parent)
    message = str(caught.value)
    assert message.startswith(f"{path}:{line}: column 'recompute'") and "lambda" in message, message
    assert "claim 'injected'" in message and "\n" not in message
    assert not target.exists()
    assert tuple(CLAIM_FIELDS)[7] == "recompute"


def test_the_audits_claim_recomputation_is_one_error_line_and_runs_nothing(tmp_path, capsys):
    """The issue's route: the claims of a paper recomputed (what every audit stage does first)."""
    target = tmp_path / "pwned"
    path = _claims_file(tmp_path / "published", "bivlc",
                        f'[__import__("os").system("touch {target}") for _ in [0]][0]')
    code = run_entry_point(lambda: audit_claims.recompute("bivlc", root=path.parent))
    err = capsys.readouterr().err
    assert code == 1 and not target.exists()
    assert err.count("error: ") == 1 and str(path) in err and "Traceback" not in err, err


def test_an_unknown_cell_is_named_with_the_claim_and_its_line(tmp_path, capsys):
    path = _claims_file(tmp_path / "published", "bivlc", 'cell("Table 2", "No such row", "BiVLC | I2T")')
    line = len(path.read_text(encoding="utf-8").splitlines())
    with pytest.raises(WorkspaceError) as caught:
        audit_claims.recompute("bivlc", root=path.parent)
    message = str(caught.value)
    assert message.startswith(f"{path}:{line}: column 'recompute' (claim 'injected')"), message
    assert "'No such row'" in message and "\n" not in message
