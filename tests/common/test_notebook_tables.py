"""Every Markdown table a notebook prints parses, and each of its rows has the header's number of cells.

A cell or a column name holding ``|`` (ARO's ``Text Recall@1 | std``) splits a Markdown row unless it is written
``\\|``: the header then no longer matches the delimiter row and the whole table renders as a paragraph of pipes, or a
body row silently loses its last cells. The notebooks render their tables through ``common.reporting.markdown_table``, which
escapes; this test runs each notebook on the committed results (``tests/test_notebooks.py``'s ``_execute``) and reads
every ``text/markdown`` output with markdown-it-py (the parser of the site, ``common/site``): a line that starts with
``|`` outside any parsed table, or a row whose cell count (markdown-it's own split) differs from its header's, fails.
"""
from __future__ import annotations

import importlib
import json

import pytest

pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
from markdown_it import MarkdownIt  # noqa: E402

from common.paths import ROOT  # noqa: E402
from test_notebooks import _execute  # noqa: E402  (the notebooks' runner: python3 kernel, cwd = the root)

_escaped_split = importlib.import_module("markdown_it.rules_block.table").escapedSplit
"""markdown-it's own split of a table row into cells (an escaped ``\\|`` stays in its cell)."""

RESULTS = ROOT / "results"
NOTEBOOKS = {
    "aro": {"VLC_ARO_RESULTS": RESULTS / "aro" / "mini"},
    "audit": {"VLC_AUDIT_DIR": RESULTS / "audit"},
    "bivlc": {"VLC_BIVLC_RESULTS": RESULTS / "bivlc", "VLC_PROFILE": "mini"},
    "conclip": {"VLC_CONCLIP_RESULTS": RESULTS / "conclip"},
    "hard_positives": {"VLC_HARD_POSITIVES_RESULTS": RESULTS / "hard_positives"},
    "sugarcrepe": {"VLC_SUGARCREPE_RESULTS": RESULTS / "sugarcrepe"},
}
"""Each notebook and the committed results it is pointed at (a fresh clone has them)."""
NOT_RUN = {"cards": "reads build/cards/<profile>, which `python -m common card` writes and git does not hold; its one "
                    "table is common.card.report.comparison_markdown's"}
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


def test_every_notebook_is_checked():
    assert {p.stem for p in (ROOT / "notebooks").glob("*.ipynb")} == set(NOTEBOOKS) | set(NOT_RUN)


@pytest.mark.parametrize("name", sorted(NOTEBOOKS))
def test_every_table_a_notebook_prints_parses(name, monkeypatch):
    env = {key: str(value) for key, value in NOTEBOOKS[name].items()}
    nb = _execute(ROOT / "notebooks" / f"{name}.ipynb", env, monkeypatch)
    tables, problems = 0, []
    for k, markdown in enumerate(_markdown_outputs(nb)):
        found, wrong = table_problems(markdown)
        tables += found
        problems += [f"output {k}, {p}" for p in wrong]
    assert not problems, (f"notebooks/{name}.ipynb prints {len(problems)} table line(s) that do not parse:\n"
                          + "\n".join(problems[:12]))
    assert tables, f"notebooks/{name}.ipynb printed no table from the committed results"


@pytest.mark.parametrize("name", sorted(NOTEBOOKS))
def test_the_notebook_renders_tables_with_the_shared_renderer(name):
    """No notebook keeps its own table code: one renderer escapes for all of them."""
    nb = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text(encoding="utf-8"))
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    if "md_table(" not in code:
        return
    assert "def md_table" not in code and "def md_escape" not in code
    assert "from common.reporting.markdown_table import" in code


def test_a_bar_in_a_column_name_or_a_cell_is_escaped():
    from common.reporting.markdown_table import md_table

    rows = [{"dataset": "COCO", "Text Recall@1 | std": "0.01", "note": "a | b\nc"}, ["Flickr30k", "", "x"]]
    text = md_table(rows, ["dataset", "Text Recall@1 | std", "note"])
    assert table_problems(text) == (1, [])
    html = PARSER.render(text)
    assert "<th>Text Recall@1 | std</th>" in html and "<td>a | b c</td>" in html and "<td>Flickr30k</td>" in html


def test_the_check_fails_on_an_unescaped_bar():
    """What the notebooks rendered before: the table is a paragraph of pipes, or a row has a cell too many."""
    def unescaped(rows, columns):
        lines = ["| " + " | ".join(columns) + " |", "|" + "|".join(" --- " for _ in columns) + "|"]
        return "\n".join(lines + ["| " + " | ".join(str(r.get(c, "")) for c in columns) + " |" for r in rows])

    tables, problems = table_problems(unescaped([{"a": "1", "b | std": "2"}], ["a", "b | std"]))
    assert tables == 0 and len(problems) == 3 and "outside any table" in problems[0]
    tables, problems = table_problems(unescaped([{"a": "1 | 2", "b": "3"}], ["a", "b"]))
    assert tables == 1 and problems == ["line 3: 3 cells where the header has 2: | 1 | 2 | 3 |"]
