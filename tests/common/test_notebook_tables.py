"""Every Markdown table a notebook prints parses, and each of its rows has the header's number of cells.

A cell or a column name holding ``|`` (ARO's ``Text Recall@1 | std``) splits a Markdown row unless it is written
``\\|``: the header then no longer matches the delimiter row and the whole table renders as a paragraph of pipes, or a
body row silently loses its last cells. The notebooks render their tables through ``common.reporting.markdown_table``, which
escapes; ``tests/test_notebooks.py``, which runs each notebook on the committed results anyway, reads every
``text/markdown`` output of that run with markdown-it-py (the parser of the site, ``common/site``): a line that starts
with ``|`` outside any parsed table, or a row whose cell count (markdown-it's own split) differs from its header's,
fails (``assert_tables_parse``; one run of each notebook, not two). This module tests that check, and that it covers
every notebook.
"""
from __future__ import annotations

import json

import pytest

pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
from common.paths import ROOT  # noqa: E402
from test_notebooks import PARSER, TABLES_CHECKED, table_problems  # noqa: E402  (the check, run with each notebook)

NOT_RUN = {"cards": "reads build/cards/<profile>, which `python -m common card` writes and git does not hold; its one "
                    "table is common.card.report.comparison_markdown's"}


def test_every_notebook_is_checked():
    assert {p.stem for p in (ROOT / "notebooks").glob("*.ipynb")} == TABLES_CHECKED | set(NOT_RUN)


@pytest.mark.parametrize("name", sorted(TABLES_CHECKED))
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
