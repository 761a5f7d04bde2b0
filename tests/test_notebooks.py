"""The researcher-facing notebooks run headlessly, top to bottom, without a cell error.

notebooks/audit.ipynb reads the audit outputs: they are generated first into a temporary folder (with
``run_audit``; a paper whose released artifacts cannot be fetched here, e.g. offline, is audited from the
paper's own tables and this workspace's runs only) and the notebook is pointed at it with VLC_AUDIT_DIR.
The notebook is executed with nbclient on the ``python3`` kernel of the active environment, cwd = the
repository root. Each notebook's run on the results also checks every Markdown table it prints
(``assert_tables_parse``; the check's own tests: tests/common/test_notebook_tables.py).
"""
from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

ROOT = Path(__file__).resolve().parents[1]
AUDIT_NOTEBOOK = ROOT / "notebooks" / "audit.ipynb"
TIMEOUT = 300
from markdown_it import MarkdownIt  # noqa: E402

from common.paper import load_paper  # noqa: E402
from common.plugins import paper_names  # noqa: E402
from shared_files import MIRROR  # noqa: E402

PAPERS = paper_names()


def _audit_without_released(paper: str, out_dir: Path) -> None:
    """The audit from the paper's tables (claims) only, for when released files cannot be fetched."""
    from common.audit import run_audit

    run_audit(paper, out_dir=out_dir)


@pytest.fixture(scope="module")
def audit_dir(tmp_path_factory) -> Path:
    from common.audit import run_audit
    from common.registry.errors import FetchError

    out = tmp_path_factory.mktemp("audit")
    roots = tmp_path_factory.mktemp("roots")
    with pytest.MonkeyPatch.context() as mp:
        # like conftest's isolation: released files land in temporary folders, never in the workspace's own;
        # the shared mirror (when present) serves them offline
        for name in ("CACHE", "DATA", "BUILD"):
            mp.setenv(f"VLC_{name}", str(roots / name.lower()))
        if (MIRROR / "MANIFEST.tsv").is_file():
            mp.setenv("VLC_MIRROR", str(MIRROR))
        for paper in PAPERS:
            module = load_paper(paper).audit.load()
            try:
                run_audit(paper, getattr(module, "recompute", None), getattr(module, "draw_figures", None), out_dir=out)
            except (FetchError, OSError) as exc:  # released artifacts not reachable here
                print(f"{paper}: released recomputations unavailable ({type(exc).__name__}); auditing without them")
                _audit_without_released(paper, out)
        from common.audit.cross_paper import run as cross_paper

        cross_paper(out_dir=out)  # a non-default folder: written even when the released files are unreachable
    for paper in PAPERS:
        assert (out / f"{paper}.csv").is_file() and (out / f"{paper}_summary.json").is_file(), paper
    return out


def _execute(path: Path, env: dict[str, str], monkeypatch) -> nbformat.NotebookNode:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    # the kernel is the active interpreter's (jupyter_client replaces "python" by sys.executable)
    bindir = str(Path(sys.executable).parent)
    monkeypatch.setenv("PATH", bindir + os.pathsep + os.environ.get("PATH", ""))
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=TIMEOUT, kernel_name="python3", allow_errors=False,
                                     resources={"metadata": {"path": str(ROOT)}})
    client.execute(cwd=str(ROOT))
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors, errors
    return nb


_escaped_split = importlib.import_module("markdown_it.rules_block.table").escapedSplit
"""markdown-it's own split of a table row into cells (an escaped ``\\|`` stays in its cell)."""

PARSER = MarkdownIt("commonmark").enable("table")


def _cells(line: str) -> list[str]:
    """A table row's cells as markdown-it splits them (outer pipes dropped)."""
    cells = _escaped_split(line.strip())
    if cells and cells[0] == "":
        cells.pop(0)
    if cells and cells[-1] == "":
        cells.pop()
    return cells


def table_problems(markdown: str) -> tuple[int, list[str]]:
    """(tables parsed, problems): a ``|`` line outside every parsed table and outside code; a row (header or body)
    whose cell count differs from the header's."""
    lines = markdown.split("\n")
    tables, problems, covered = 0, [], set()
    tokens = PARSER.parse(markdown)
    for i, token in enumerate(tokens):
        if token.type in ("fence", "code_block") and token.map:
            covered.update(range(*token.map))
        if token.type != "table_open":
            continue
        tables += 1
        start, end = token.map
        covered.update(range(start, end))
        header = 0
        for t in tokens[i + 1:]:
            if t.type == "thead_close":
                break
            header += t.type == "th_open"
        for n in (start, *range(start + 2, end)):
            found = len(_cells(lines[n]))
            if found != header:
                problems.append(f"line {n + 1}: {found} cells where the header has {header}: {lines[n][:160]}")
    for n, line in enumerate(lines):
        if line.lstrip().startswith("|") and n not in covered:
            problems.append(f"line {n + 1}: a table row outside any table (the table did not parse): {line[:160]}")
    return tables, problems


def _markdown_outputs(nb) -> list[str]:
    return [o["data"]["text/markdown"] for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
            if o.get("output_type") in ("display_data", "execute_result") and "text/markdown" in o.get("data", {})]


TABLES_CHECKED = {"aro", "audit", "bivlc", "conclip", "hard_positives", "sugarcrepe"}
"""The notebooks whose run below also checks every Markdown table it prints (``assert_tables_parse``);
tests/common/test_notebook_tables.py holds the check's own tests and that no notebook is left out."""


def assert_tables_parse(nb, name: str) -> None:
    """Every Markdown table ``nb`` printed parses, with each row the header's number of cells, and it printed one."""
    assert name in TABLES_CHECKED, name
    tables, problems = 0, []
    for k, markdown in enumerate(_markdown_outputs(nb)):
        found, wrong = table_problems(markdown)
        tables += found
        problems += [f"output {k}, {p}" for p in wrong]
    assert not problems, (f"notebooks/{name}.ipynb prints {len(problems)} table line(s) that do not parse:\n"
                          + "\n".join(problems[:12]))
    assert tables, f"notebooks/{name}.ipynb printed no table from the results"


def _text(nb) -> str:
    parts = []
    for c in nb.cells:
        for o in c.get("outputs", []):
            if o.output_type == "stream":
                parts.append(o.text)
            elif o.output_type in ("display_data", "execute_result"):
                parts.append(o.get("data", {}).get("text/markdown", "") or o.get("data", {}).get("text/plain", ""))
    return "\n".join(parts)


def test_committed_notebook_has_no_outputs():
    nb = nbformat.read(AUDIT_NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code
    for c in code:
        assert c.outputs == [] and c.execution_count is None, c.source[:80]
    assert nb.metadata["kernelspec"]["name"] == "python3"


def test_audit_notebook_runs(audit_dir, monkeypatch):
    nb = _execute(AUDIT_NOTEBOOK, {"VLC_AUDIT_DIR": str(audit_dir)}, monkeypatch)
    assert_tables_parse(nb, "audit")
    text = _text(nb)
    assert "loaded: aro, bivlc, conclip, hard_positives, sugarcrepe" in text
    assert "| paper | differs | reproduced |" in text  # the verdict table
    assert "pipeline profile (params.yaml): mini" in text
    assert "discrepanc" in text
    images = [o for c in nb.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    assert images, "the y = x figure was not drawn"
    assert "Figure 5" in text  # redrawn, the saved one shown, or a message saying why not
    assert "Cross-paper summary: pairs:" in text and "**Paper against paper**" in text


def test_audit_notebook_without_outputs_says_how_to_create_them(tmp_path, monkeypatch):
    nb = _execute(AUDIT_NOTEBOOK, {"VLC_AUDIT_DIR": str(tmp_path)}, monkeypatch)
    text = _text(nb)
    for paper in PAPERS:
        assert f"create it with `python -m common audit {paper}`" in text
    assert "loaded: nothing" in text
    assert "create it with `python -m common.audit.cross_paper`" in text


ARO_NOTEBOOK = ROOT / "notebooks" / "aro.ipynb"


def test_aro_notebook_committed_without_outputs():
    nb = nbformat.read(ARO_NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    assert all(c.outputs == [] and c.execution_count is None for c in nb.cells if c.cell_type == "code")


def test_aro_notebook_redraws_the_committed_results(monkeypatch):
    """Fig. 1 and the shuffled-retrieval figure from results/aro/mini (committed: a fresh clone has them)."""
    results = ROOT / "results" / "aro" / "mini"
    assert (results / "table6.csv").is_file(), "results/aro/mini is committed with the code"
    nb = _execute(ARO_NOTEBOOK, {"VLC_ARO_RESULTS": str(results)}, monkeypatch)
    assert_tables_parse(nb, "aro")
    text = _text(nb)
    assert "| task |" in text and "VG-Relation" in text and "Shuffle all words" in text
    images = [o for c in nb.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    assert len(images) == 2, "Fig. 1 and the shuffled-retrieval figure"


def test_aro_notebook_without_results_says_how_to_create_them(tmp_path, monkeypatch):
    text = _text(_execute(ARO_NOTEBOOK, {"VLC_ARO_RESULTS": str(tmp_path)}, monkeypatch))
    assert "create it with `dvc repro papers/aro`" in text


SUGARCREPE_NOTEBOOK = ROOT / "notebooks" / "sugarcrepe.ipynb"


def test_sugarcrepe_notebook_committed_without_outputs():
    nb = nbformat.read(SUGARCREPE_NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    assert all(c.outputs == [] and c.execution_count is None for c in nb.cells if c.cell_type == "code")


def test_sugarcrepe_notebook_redraws_the_committed_results(monkeypatch):
    """Table 6, the real-text blind figures and tables, and Fig. 5 from results/sugarcrepe (committed)."""
    results = ROOT / "results" / "sugarcrepe"
    assert (results / "real_text" / "blind_accuracy.csv").is_file(), "results/sugarcrepe/real_text is committed"
    nb = _execute(SUGARCREPE_NOTEBOOK, {"VLC_SUGARCREPE_RESULTS": str(results)}, monkeypatch)
    assert_tables_parse(nb, "sugarcrepe")
    text = _text(nb)
    assert "does not exist yet" not in text
    assert "| model |" in text and "vl-checklist" in text and "retrained_classifier_after" in text
    assert "sugarcrepe_more_fluent_share" in text and "published_r" in text
    assert "mini-aro-crepe" in text and "Table 10" in text
    assert "fine-tunes above trend" in text and "table_reproduces_paper" in text  # Fig. 5 at scale
    images = [o for c in nb.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    assert len(images) == 5, "Figs. 1/4, Fig. 2, Fig. 5, Fig. 5 at scale and Table 5's gains"


def test_sugarcrepe_notebook_without_results_says_how_to_create_them(tmp_path, monkeypatch):
    text = _text(_execute(SUGARCREPE_NOTEBOOK, {"VLC_SUGARCREPE_RESULTS": str(tmp_path)}, monkeypatch))
    assert "create it with `dvc repro papers/sugarcrepe`" in text


HARD_POSITIVES_NOTEBOOK = ROOT / "notebooks" / "hard_positives.ipynb"


def test_hard_positives_notebook_committed_without_outputs():
    nb = nbformat.read(HARD_POSITIVES_NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    assert all(c.outputs == [] and c.execution_count is None for c in nb.cells if c.cell_type == "code")


def test_hard_positives_notebook_redraws_the_committed_results(monkeypatch):
    """Tables 1-3, the mean scores, the paper-vs-run comparison and the released text, from results/hard_positives."""
    results = ROOT / "results" / "hard_positives"
    assert (results / "real_text" / "blind.csv").is_file(), "results/hard_positives/real_text is committed"
    nb = _execute(HARD_POSITIVES_NOTEBOOK, {"VLC_HARD_POSITIVES_RESULTS": str(results)}, monkeypatch)
    assert_tables_parse(nb, "hard_positives")
    text = _text(nb)
    assert "does not exist yet" not in text
    assert "| label | replace_orig |" in text and "Our HP+HN" in text
    assert "| comparison | column | metric | paper | this run |" in text and "HP+HN - HN" in text
    assert "authors' replacement is no WordNet synonym" in text and "cp_above_cn" in text
    images = [o for c in nb.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    assert "clip_correct_hn_wrong" in text  # Fig. 3's examples and their counts
    assert len(images) == 5, "Tables 1-3, Fig. 3's examples and the blind bars"


def test_hard_positives_notebook_without_results_says_how_to_create_them(tmp_path, monkeypatch):
    text = _text(_execute(HARD_POSITIVES_NOTEBOOK, {"VLC_HARD_POSITIVES_RESULTS": str(tmp_path)}, monkeypatch))
    assert "create it with `dvc repro papers/hard_positives`" in text


CONCLIP_NOTEBOOK = ROOT / "notebooks" / "conclip.ipynb"


def test_conclip_notebook_committed_without_outputs():
    nb = nbformat.read(CONCLIP_NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    assert all(c.outputs == [] and c.execution_count is None for c in nb.cells if c.cell_type == "code")


def test_conclip_notebook_redraws_the_committed_results(monkeypatch):
    """Tables 2-3, the by-word x K panels, classification with negated prompts, SugarCrepe and the ablations."""
    results = ROOT / "results" / "conclip"
    assert (results / "mini" / "table3.csv").is_file(), "results/conclip/mini is committed"
    nb = _execute(CONCLIP_NOTEBOOK, {"VLC_CONCLIP_RESULTS": str(results)}, monkeypatch)
    assert_tables_parse(nb, "conclip")
    text = _text(nb)
    assert "does not exist yet" not in text
    assert "| label | ccneg | ccneg_strict | ccneg_ties |" in text and "CC-Neg - L_conclip" in text
    assert "conclip_minus_clip_ccneg" in text and "classification_top1" in text
    images = [o for c in nb.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    assert len(images) == 4, "Tables 2-3, by word x K, classification, SugarCrepe"


def test_conclip_notebook_without_results_says_how_to_create_them(tmp_path, monkeypatch):
    text = _text(_execute(CONCLIP_NOTEBOOK, {"VLC_CONCLIP_RESULTS": str(tmp_path)}, monkeypatch))
    assert "create it with `dvc repro papers/conclip`" in text


BIVLC_NOTEBOOK = ROOT / "notebooks" / "bivlc.ipynb"


def test_bivlc_notebook_committed_without_outputs():
    nb = nbformat.read(BIVLC_NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    assert all(c.outputs == [] and c.execution_count is None for c in nb.cells if c.cell_type == "code")


def test_bivlc_notebook_redraws_the_committed_results(monkeypatch):
    """Tables 2-5, Finding 3 (published and runs) and the cross-benchmark heatmap, from results/bivlc (committed)."""
    results = ROOT / "results" / "bivlc"
    for name in ("mini/table2.csv", "mini/benchmark_correlations.csv", "finding3.csv"):
        assert (results / name).is_file(), f"results/bivlc/{name} is committed"
    nb = _execute(BIVLC_NOTEBOOK, {"VLC_BIVLC_RESULTS": str(results), "VLC_PROFILE": "mini"}, monkeypatch)
    assert_tables_parse(nb, "bivlc")
    text = _text(nb)
    assert "does not exist yet" not in text
    assert "| label | kind | sugarcrepe | I2T | T2I | group |" in text and "CLIP_TROHN-Img" in text
    assert "| source | score | n | spearman |" in text and "published table2+table3" in text and "runs-mini" in text
    assert "| benchmark_a | benchmark_b | n_models |" in text and "bivlc:group" in text
    images = [o for c in nb.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    assert len(images) == 5, "Tables 2-3, Table 4, Table 5, Finding 3, the benchmark heatmap"


def test_bivlc_notebook_without_results_says_how_to_create_them(tmp_path, monkeypatch):
    text = _text(_execute(BIVLC_NOTEBOOK, {"VLC_BIVLC_RESULTS": str(tmp_path), "VLC_PROFILE": "mini"}, monkeypatch))
    assert "create it with `dvc repro papers/bivlc`" in text
