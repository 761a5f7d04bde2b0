"""The bad-input matrix, continued (issue 35): transcriptions, claims, the identity table, released files and run
tables, the inputs of the audit stages.

Each ``Case`` runs as ``tests/test_bad_input_matrix.py`` runs its own: a non-zero exit, one ``error:`` line that names
the culprit (here the file with its line, and the column where there is one), no traceback, nothing written into the
case's ``out`` folder and every tracked file of ``results/`` byte-identical. The runners beyond the matrix's ``cli`` and
``published``: ``claims`` (a paper's claims recomputed, as every audit stage does first), ``identities`` (the
cross-paper comparison over an identity table), ``openclip`` (open_clip's results table that SugarCrepe's Figure 5
reads), ``negclip-tsv`` (NegCLIP's released validation TSV), ``runs`` (a paper's audit, in-process, over a folder of run tables) and ``copy`` (``python -m papers.<paper>.
audit --strict`` in a throwaway copy of the workspace, which must change no file of the copy either).
"""
from __future__ import annotations

import codecs
import csv
import hashlib
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable, Sequence

import pytest

from common.cli import main as cli_main
from common.errors import run_entry_point
from common.paths import PUBLISHED, RESULTS
from shared_files import MIRROR
from test_bad_input_matrix import BIVLC_HEADER, BIVLC_ROW, Case, _bivlc, _file, assert_one_error_line, tracked_outputs
from workspace_copy import copy_workspace

IDS = PUBLISHED / "cross_paper.toml"
TOML_TEXT = IDS.read_text(encoding="utf-8")


# ----------------------------------------------------------------------------------------------------------------
# inputs
# ----------------------------------------------------------------------------------------------------------------
def _where(*parts: str, line: int | str = "", then: str = "") -> Callable[[Path], str]:
    """The culprit: ``<root>/<parts>:<line>: <then>`` (line and what follows only when given)."""
    def culprit(root: Path) -> str:
        text = str(root.joinpath(*parts))
        return text + (f":{line}" if line != "" else "") + (f": {then}" if then else "")
    return culprit


def _published_copy(root: Path) -> Path:
    folder = root / "published"
    folder.mkdir(exist_ok=True)
    for name in ("bivlc.csv", "bivlc_claims.csv"):
        (folder / name).write_bytes((PUBLISHED / name).read_bytes())
    return folder


def _cells(edit: Callable[[bytes], bytes]):
    """``published`` runner: BiVLC's transcription with its bytes edited."""
    def argv(root: Path):
        path = _published_copy(root) / "bivlc.csv"
        path.write_bytes(edit(path.read_bytes()))
        return [str(path.parent)]
    return argv


def _line(data: bytes, number: int, edit: Callable[[bytes], bytes]) -> bytes:
    """``data`` with its line ``number`` (1-based) edited."""
    lines = data.split(b"\n")
    lines[number - 1] = edit(lines[number - 1])
    return b"\n".join(lines)


def _second_line_value(new: bytes) -> Callable[[bytes], bytes]:
    """Line 2 of bivlc.csv is a not-reported cell; line 5 is the first 'ok' one (value 668)."""
    return lambda data: _line(data, 5, lambda ln: ln.replace(b",668,", b"," + new + b",", 1))


def claim_row(recompute: str) -> bytes:
    """One more claim of BiVLC, ``injected``, recomputed by ``recompute``."""
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(["bivlc", "injected", "Sec. 9", "a quote", "1", "count", "",
                                                   recompute, ""])
    return out.getvalue().encode("utf-8")


def _claims(recompute: str | None = None, edit: Callable[[bytes], bytes] | None = None):
    """``claims`` runner: BiVLC's claims with one more row (``recompute``) or its bytes edited."""
    def argv(root: Path):
        path = _published_copy(root) / "bivlc_claims.csv"
        data = path.read_bytes()
        if recompute is not None:
            data += claim_row(recompute)
        if edit is not None:
            data = edit(data)
        path.write_bytes(data)
        return ["bivlc", str(path.parent)]
    return argv


CLAIMS_LINES = len((PUBLISHED / "bivlc_claims.csv").read_bytes().splitlines())
INJECTED = CLAIMS_LINES + 1


def _toml(edit: Callable[[str], str] | None = None, raw: Callable[[bytes], bytes] | None = None):
    """``identities`` runner: the identity table, edited."""
    def argv(root: Path):
        path = root / "cross_paper.toml"
        text = edit(TOML_TEXT) if edit is not None else TOML_TEXT
        data = text.encode("utf-8")
        path.write_bytes(raw(data) if raw is not None else data)
        return [str(path)]
    return argv


def _toml_line(snippet: str) -> int:
    return TOML_TEXT[:TOML_TEXT.index(snippet)].count("\n") + 1


OPENCLIP = next(MIRROR.glob("raw.githubusercontent.com/mlfoundations/open_clip/*/docs/openclip_results.csv"), None)


def _openclip(edit: Callable[[str], str]):
    """``openclip`` runner: open_clip's results table (SugarCrepe's Figure 5 input), edited."""
    def argv(root: Path):
        if OPENCLIP is None:
            pytest.skip(f"no mirror at {MIRROR}")
        path = root / "openclip_results.csv"
        path.write_text(edit(OPENCLIP.read_text(encoding="utf-8")), encoding="utf-8")
        return [str(path)]
    return argv


def _released_bytes(data: bytes):
    """``cli`` runner: ``audit released bivlc`` on a file of these bytes."""
    def argv(root: Path):
        (root / "preds.csv").write_bytes(data)
        return ["audit", "released", "bivlc", str(root / "preds.csv")]
    return argv


NEGCLIP_TSV = ("\ttitle\tfilepath\tneg_caption\tneg_image\n"
               "0\ta dog on a sofa\tval/1.jpg\t['a sofa on a dog']\t[1]\n"
               "1\ta red car\tval/2.jpg\t['a car red']\t[2]\n").encode()


def _negclip_tsv(edit: Callable[[bytes], bytes]):
    """``negclip-tsv`` runner: NegCLIP's released validation TSV (``common.text.released_text``), edited."""
    def argv(root: Path):
        path = root / "valid_neg_clip.tsv"
        path.write_bytes(edit(NEGCLIP_TSV))
        return [str(path)]
    return argv


def _runs(paper: str, name: str, edit: Callable[[bytes], bytes]):
    """``runs`` runner: a copy of ``results/<paper>/mini`` with one table edited; the paper's audit over it."""
    def argv(root: Path):
        folder = root / "results" / paper / "mini"
        shutil.copytree(RESULTS / paper / "mini", folder)
        path = folder / name
        path.write_bytes(edit(path.read_bytes()))
        return [paper, str(root / "results")]
    return argv


def _runs_file(paper: str, name: str, line: int | str = "", then: str = "") -> Callable[[Path], str]:
    return _where("results", paper, "mini", name, line=line, then=then)


def half_bytes(data: bytes) -> bytes:
    return data[: len(data) // 2]


def half_lines(data: bytes) -> bytes:
    lines = data.splitlines(keepends=True)
    return b"".join(lines[: max(2, len(lines) // 2)])


def conflict(data: bytes) -> bytes:
    """A merge conflict on the table's third line, as git leaves it."""
    lines = data.splitlines(keepends=True)
    other = lines[2].replace(b"1", b"2")
    return b"".join(lines[:2] + [b"<<<<<<< HEAD\n", lines[2], b"=======\n", other, b">>>>>>> other\n"] + lines[3:])


def field(line: int, column: str, value: str) -> Callable[[bytes], bytes]:
    """The CSV field of ``column`` on ``line`` (1-based, the header is line 1) set to ``value``."""
    def edit(data: bytes) -> bytes:
        rows = list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))
        rows[line - 1][rows[0].index(column)] = value
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerows(rows)
        return out.getvalue().encode("utf-8")
    return edit


def row_twice(line: int) -> Callable[[bytes], bytes]:
    def edit(data: bytes) -> bytes:
        lines = data.splitlines(keepends=True)
        return b"".join(lines[:line] + [lines[line - 1]] + lines[line:])
    return edit


def drop_line(line: int) -> Callable[[bytes], bytes]:
    def edit(data: bytes) -> bytes:
        lines = data.splitlines(keepends=True)
        return b"".join(lines[: line - 1] + lines[line:])
    return edit


# ----------------------------------------------------------------------------------------------------------------
# the cases
# ----------------------------------------------------------------------------------------------------------------
PUB = ("published", "bivlc.csv")
CLM = ("published", "bivlc_claims.csv")
SYSTEM = '__import__("os").system("touch {sentinel}")'
SUBCLASSES = ('[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == "catch_warnings"][0]()'
              '._module.__builtins__["__import__"]("os").system("touch pwned")')

CASES: list[Case] = [
    # the transcription of a paper's tables (results/published/<paper>.csv)
    Case("published-loader", "cp1252-byte",
         _cells(lambda d: _line(d, 5, lambda ln: ln.replace(b"placed", b"plac\xe9"))),
         _where(*PUB, line=5, then="column 'note'"), runner="published"),
    Case("published-loader", "byte-order-mark", _cells(lambda d: codecs.BOM_UTF8 + d),
         _where(*PUB, line=1, then="the file starts with a UTF-8 byte-order mark"), runner="published"),
    Case("published-loader", "number-with-underscore", _cells(_second_line_value(b"1_652")),
         _where(*PUB, line=5, then="column 'value': '1_652' is not a number as a table prints it"), runner="published"),
    Case("published-loader", "number-nan", _cells(_second_line_value(b"nan")),
         _where(*PUB, line=5, then="column 'value'"), runner="published"),
    Case("published-loader", "number-with-spaces", _cells(_second_line_value(b'" 668"')),
         _where(*PUB, line=5, then="column 'value'"), runner="published"),
    Case("published-loader", "merge-conflict-markers", _cells(conflict),
         _where(*PUB, line=3, then="a merge-conflict marker"), runner="published"),
    Case("published-loader", "nul-byte", _cells(lambda d: _line(d, 5, lambda ln: ln.replace(b"placed", b"pla\0ced"))),
         _where(*PUB, line=5, then="column 'note'"), runner="published"),
    Case("published-loader", "header-column-missing", _cells(lambda d: d.replace(b",raw,note\n", b",note\n", 1)),
         _where(*PUB, line=1, then="missing column(s) ['raw']"), runner="published"),
    # the claims of the text (results/published/<paper>_claims.csv): a recompute expression is data, never code
    Case("claims", "lambda-hiding-code", _claims(f"(lambda: {SUBCLASSES})()"),
         _where(*CLM, line=INJECTED, then="column 'recompute' (claim 'injected')"), runner="claims"),
    Case("claims", "comprehension-hiding-code", _claims(f"[{SUBCLASSES} for _ in [0]][0]"),
         _where(*CLM, line=INJECTED, then="column 'recompute'"), runner="claims"),
    Case("claims", "dunder-import", _claims(SYSTEM.format(sentinel="pwned")),
         _where(*CLM, line=INJECTED, then="column 'recompute'"), runner="claims"),
    Case("claims", "attribute-chain", _claims("().__class__.__bases__[0].__subclasses__()"),
         _where(*CLM, line=INJECTED, then="column 'recompute'"), runner="claims"),
    Case("claims", "huge-power", _claims("9**9**9"),
         _where(*CLM, line=INJECTED, then="column 'recompute'"), runner="claims"),
    Case("claims", "unknown-cell", _claims('cell("Table 2", "No such row", "BiVLC | I2T")'),
         _where(*CLM, line=INJECTED, then="column 'recompute' (claim 'injected'): no published cell"),
         runner="claims"),
    Case("claims", "division-by-zero", _claims('cell("Table 2", "Contrastive | CLIP", "BiVLC | I2T") / 0'),
         _where(*CLM, line=INJECTED, then="column 'recompute'"), runner="claims"),
    Case("claims", "cp1252-byte",
         _claims(edit=lambda d: _line(d, 3, lambda ln: ln.replace(b"with almost", b"with alm\xf6st"))),
         _where(*CLM, line=3, then="column 'quote'"), runner="claims"),
    Case("claims", "byte-order-mark", _claims(edit=lambda d: codecs.BOM_UTF8 + d),
         _where(*CLM, line=1, then="the file starts with a UTF-8 byte-order mark"), runner="claims"),
    Case("claims", "number-with-underscore",
         _claims(edit=lambda d: _line(d, 3, lambda ln: ln.replace(b",3000,", b",3_000,"))),
         _where(*CLM, line=3, then="column 'value'"), runner="claims"),
    # the identity table of the cross-paper comparison (results/published/cross_paper.toml)
    Case("cross-paper", "cp1252-byte",
         _toml(raw=lambda d: d.replace(b"Evidence quotes", b"Evid\xe9nce quotes", 1)),
         _where("cross_paper.toml", line=_toml_line("Evidence quotes")), runner="identities"),
    Case("cross-paper", "byte-order-mark", _toml(raw=lambda d: codecs.BOM_UTF8 + d),
         _where("cross_paper.toml", line=1, then="the file starts with a UTF-8 byte-order mark"),
         runner="identities"),
    Case("cross-paper", "paper-typo-in-a-table-layout",
         _toml(lambda t: t.replace('[[table]]\npaper = "conclip"', '[[table]]\npaper = "conclp"', 1)),
         _where("cross_paper.toml", line=_toml_line('[[table]]\npaper = "conclip"'),
                then="[[table]] #4: paper 'conclp' has no transcription"), runner="identities"),
    Case("cross-paper", "paper-typo-in-a-label",
         _toml(lambda t: t.replace('{ paper = "bivlc", table = "Table 2"', '{ paper = "bivlcc", table = "Table 2"', 1)),
         lambda root: "paper 'bivlcc' has no transcription", runner="identities"),
    Case("cross-paper", "unknown-key",
         _toml(lambda t: t.replace('model_axis = "row"', 'model_axes = "row"', 1)),
         _where("cross_paper.toml", line=_toml_line('[[table]]\npaper = "sugarcrepe"'),
                then="[[table]] #1: unknown key 'model_axes'"), runner="identities"),
    Case("cross-paper", "count-not-a-number",
         _toml(lambda t: t.replace("\nn = 1652", '\nn = "many"', 1)),
         lambda root: "n 'many'", runner="identities"),
    Case("cross-paper", "count-with-underscore-negative",
         _toml(lambda t: t.replace("\nn = 1652", "\nn = -1_652", 1)),
         lambda root: "n -1652", runner="identities"),
    # a released file in the authors' format (python -m common audit released bivlc FILE)
    Case("audit-released-bivlc", "csv-duplicated-row",
         _bivlc(",".join(BIVLC_HEADER) + "\n" + BIVLC_ROW + "\n" + BIVLC_ROW + "\n"),
         _file("preds.csv:3")),
    Case("audit-released-bivlc", "csv-number-with-underscore",
         _bivlc("type,subtype,sim_C0_I0,sim_C0_I1,sim_C1_I0,sim_C1_I1\nreplace,obj,0.9,0.1,0.2,0.3\n"
                "swap,att,0_9,0.1,0.2,0.3\n"), _file("preds.csv:3: column 'sim_C0_I0'")),
    Case("audit-released-bivlc", "csv-cp1252-byte", _released_bytes(
        (",".join(BIVLC_HEADER) + "\n" + BIVLC_ROW + "\n").encode().replace(b"a cat", b"a caf\xe9")),
         _file("preds.csv:2: column 'caption'")),
    Case("audit-released-bivlc", "csv-merge-conflict",
         _bivlc(",".join(BIVLC_HEADER) + "\n<<<<<<< HEAD\n" + BIVLC_ROW + "\n=======\n" + BIVLC_ROW + "\n>>>>>>> x\n"),
         _file("preds.csv:2: a merge-conflict marker")),
    # open_clip's results table (SugarCrepe's Figure 5)
    Case("openclip-results", "empty-value", _openclip(lambda t: t.replace(",0.8437,", ",,", 1)),
         _where("openclip_results.csv", line=2, then="column 'ImageNet 1k'"), runner="openclip"),
    Case("openclip-results", "number-with-underscore", _openclip(lambda t: t.replace(",0.8437,", ",0_8437,", 1)),
         _where("openclip_results.csv", line=2, then="column 'ImageNet 1k'"), runner="openclip"),
    # NegCLIP's released validation TSV (ARO's real-text comparison, SugarCrepe's blind attacks)
    Case("negclip-tsv", "cp1252-byte", _negclip_tsv(lambda d: d.replace(b"red car", b"r\xe9d car")),
         _where("valid_neg_clip.tsv", then="line 3: byte 0xe9 is not UTF-8"), runner="negclip-tsv"),
    Case("negclip-tsv", "index-twice", _negclip_tsv(lambda d: d.replace(b"\n1\t", b"\n0\t")),
         _where("valid_neg_clip.tsv", then="row 2: index 0 again"), runner="negclip-tsv"),
    Case("negclip-tsv", "no-neighbour", _negclip_tsv(lambda d: d.replace(b"\t[2]\n", b"\t[]\n")),
         _where("valid_neg_clip.tsv", then="row 2 (index 1): neg_image is not a non-empty list of row indices"),
         runner="negclip-tsv"),
    # run tables as the audit reads them (results/<paper>/mini/*.csv)
    Case("audit-runs-bivlc", "table-cut-in-half", _runs("bivlc", "table2.csv", half_bytes),
         _runs_file("bivlc", "table2.csv"), runner="runs"),
    Case("audit-runs-bivlc", "table-half-the-rows", _runs("bivlc", "table2.csv", half_lines),
         _runs_file("bivlc", "table2.csv", then="no row for"), runner="runs"),
    Case("audit-runs-bivlc", "table-merge-conflict", _runs("bivlc", "table2.csv", conflict),
         _runs_file("bivlc", "table2.csv", line=3, then="a merge-conflict marker"), runner="runs"),
    Case("audit-runs-bivlc", "table-empty-value", _runs("bivlc", "table2.csv", field(2, "I2T", "")),
         _runs_file("bivlc", "table2.csv", line=2, then="column 'I2T'"), runner="runs"),
    Case("audit-runs-bivlc", "table-number-with-underscore", _runs("bivlc", "table2.csv", field(2, "I2T", "4_2.0")),
         _runs_file("bivlc", "table2.csv", line=2, then="column 'I2T'"), runner="runs"),
    Case("audit-runs-bivlc", "table-row-twice", _runs("bivlc", "table2.csv", row_twice(2)),
         _runs_file("bivlc", "table2.csv", line=3, then="row 'clip' (row) again"), runner="runs"),
    Case("audit-runs-bivlc", "table-not-utf8",
         _runs("bivlc", "table2.csv", lambda d: _line(d, 2, lambda ln: ln.replace(b"CLIP", b"CL\xcdP"))),
         _runs_file("bivlc", "table2.csv", line=2, then="column 'label'"), runner="runs"),
    Case("audit-runs-bivlc", "detectors-row-missing", _runs("bivlc", "table5.csv", drop_line(3)),
         _runs_file("bivlc", "table5.csv", then="no row for ['CLIPTROHN-Img/Det']"), runner="runs"),
    Case("audit-runs-conclip", "by-word-k-cut-in-half", _runs("conclip", "by_word_k.csv", half_bytes),
         _runs_file("conclip", "by_word_k.csv"), runner="runs"),
    Case("audit-runs-conclip", "table6-row-missing", _runs("conclip", "table6.csv", drop_line(2)),
         _runs_file("conclip", "table6.csv", then="no row for"), runner="runs"),
    Case("audit-runs-hard_positives", "table1-empty-value",
         _runs("hard_positives", "table1.csv", field(4, "replace_aug", "")),
         _runs_file("hard_positives", "table1.csv", line=4, then="column 'replace_aug'"), runner="runs"),
    Case("audit-runs-sugarcrepe", "table5-half-the-rows", _runs("sugarcrepe", "table5.csv", half_lines),
         _runs_file("sugarcrepe", "table5.csv", then="no row for"), runner="runs"),
    Case("audit-runs-sugarcrepe", "table4-merge-conflict", _runs("sugarcrepe", "table4.csv", conflict),
         _runs_file("sugarcrepe", "table4.csv", line=3, then="a merge-conflict marker"), runner="runs"),
    Case("audit-runs-aro", "table2-half-the-rows", _runs("aro", "table2_vg_relation.csv", half_lines),
         _runs_file("aro", "table2_vg_relation.csv", then="no row for"), runner="runs"),
    Case("audit-runs-aro", "table5-value-not-a-number", _runs("aro", "table5_order.csv", field(2, "accuracy", "0.5x")),
         _runs_file("aro", "table5_order.csv", line=2, then="column 'accuracy'"), runner="runs"),
]

TABLE2 = "results/bivlc/mini/table2.csv"
AUDIT = ["common", "audit", "bivlc", "--strict"]


def _in_copy(relative: str, edit: Callable[[bytes], bytes]) -> Callable[[Path], list[str]]:
    """``copy`` runner: one file of the workspace copy edited; the BiVLC audit stage's command."""
    def argv(root: Path) -> list[str]:
        _edit(root / relative, edit)
        return AUDIT
    return argv


COPY_CASES: list[Case] = [  # the issue's own runs: `python -m common audit bivlc --strict` in a copy of the workspace
    Case("python-m-common-audit-bivlc", "table2-cut-in-half", _in_copy(TABLE2, half_bytes),
         _where("results", "bivlc", "mini", "table2.csv"), runner="copy"),
    Case("python-m-common-audit-bivlc", "table2-merge-conflict", _in_copy(TABLE2, conflict),
         _where("results", "bivlc", "mini", "table2.csv", line=3, then="a merge-conflict marker"), runner="copy"),
    Case("python-m-common-audit-bivlc", "claims-lambda-hiding-code",
         _in_copy("results/published/bivlc_claims.csv", lambda d: d + claim_row(f"(lambda: {SUBCLASSES})()")),
         _where("results", "published", "bivlc_claims.csv", line=INJECTED, then="column 'recompute'"), runner="copy"),
]


def _edit(path: Path, edit: Callable[[bytes], bytes]) -> None:
    path.write_bytes(edit(path.read_bytes()))


# ----------------------------------------------------------------------------------------------------------------
# running a case
# ----------------------------------------------------------------------------------------------------------------
def _no_fetch(key: str) -> Path:
    from common.registry.errors import FetchError

    raise FetchError(f"{key}: not fetched in this test")


def _run_in_process(case: Case, argv: Sequence[str], root: Path) -> int:
    if case.runner == "cli":
        try:
            return cli_main(list(argv))
        except SystemExit as exc:
            return int(exc.code or 0)
    if case.runner == "published":
        from common.reporting.published import load_cells

        return run_entry_point(lambda: load_cells("bivlc", root=Path(argv[0])))
    if case.runner == "claims":
        from common.audit import claims

        return run_entry_point(lambda: claims.recompute(argv[0], root=Path(argv[1])))
    if case.runner == "identities":
        from common.audit import cross_paper

        return run_entry_point(lambda: cross_paper.run(identities=Path(argv[0]), out_dir=root / "out",
                                                       fetcher=_no_fetch))
    if case.runner == "openclip":
        from papers.sugarcrepe.released import imagenet_top1

        return run_entry_point(lambda: imagenet_top1(Path(argv[0])))
    if case.runner == "negclip-tsv":
        from common.text.released_text import read_negclip_tsv

        return run_entry_point(lambda: read_negclip_tsv(Path(argv[0])))
    if case.runner == "runs":
        from common.audit import run_audit
        from common.paper import load_paper

        paper, results = argv[0], Path(argv[1])
        module = load_paper(paper).audit.load()
        recompute = (lambda p: module.recompute(p, results=results)) if paper == "aro" else (
            lambda p: module.run_recomputations(p, results))
        return run_entry_point(lambda: run_audit(paper, recompute, profile="mini", out_dir=root / "out", strict=True))
    raise AssertionError(f"unknown runner {case.runner!r}")


@pytest.fixture(scope="module")
def outputs_before():
    return tracked_outputs()


def test_matrix_size(capsys):
    size = len(CASES) + len(COPY_CASES)
    with capsys.disabled():
        print(f"\nbad-input matrix (audit inputs): {size} cases, "
              f"{len({c.entry for c in CASES + COPY_CASES})} entry points")
    assert len({c.id for c in CASES + COPY_CASES}) == size


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_bad_input_gives_one_error_line(case: Case, tmp_path, capsys, outputs_before, monkeypatch):
    monkeypatch.delenv("VLC_DEBUG", raising=False)
    monkeypatch.chdir(tmp_path)  # a `touch pwned` that ran would leave its file here
    argv = case.argv(tmp_path)
    code = _run_in_process(case, argv, tmp_path)
    captured = capsys.readouterr()
    assert_one_error_line(case, tmp_path, code, captured.err)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir()), "a failed stage writes nothing"
    assert not (tmp_path / "pwned").exists(), "a transcription ran code"
    assert tracked_outputs() == outputs_before


def _digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """One copy of the workspace (code, params, results) for every copy case; each case restores what it damaged."""
    return copy_workspace(tmp_path_factory.mktemp("ws") / "ws", keep_results=True)


@pytest.mark.parametrize("case", COPY_CASES, ids=lambda c: c.id)
def test_bad_input_in_a_copy_of_the_workspace(case: Case, workspace, outputs_before, mirror):
    pristine = {p: p.read_bytes() for p in (workspace / "results").rglob("*") if p.is_file()}
    try:
        argv = case.argv(workspace)
        before = _digests(workspace / "results")
        env = {k: v for k, v in os.environ.items() if k != "VLC_DEBUG"}
        proc = subprocess.run([sys.executable, "-m", *argv], cwd=workspace, env=env, capture_output=True, text=True,
                              timeout=300)
        assert_one_error_line(case, workspace, proc.returncode, proc.stderr)
        assert _digests(workspace / "results") == before, "the audit changed a file of the copy"
        assert not (workspace / "pwned").exists(), "a transcription ran code"
    finally:
        for path, data in pristine.items():
            path.write_bytes(data)
    assert tracked_outputs() == outputs_before
