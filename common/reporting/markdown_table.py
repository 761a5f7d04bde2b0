"""Markdown tables from rows of results: the one renderer the notebooks (``notebooks/*.ipynb``) print their tables with,
and the one cell escaper (``md_escape``, which the audit's Markdown, ``common.audit.report``, writes its cells with).

A ``|`` inside a cell or a column name (ARO's ``Text Recall@1 | std``) would split the row: the header would no
longer match the delimiter row and the whole table would render as a paragraph of pipes. Every cell and every column
name is written through ``md_escape``: ``|`` as ``\\|`` (GFM's escape, which markdown-it and Jupyter read back as
``|``) and a line break as a space (a row is one line). ``tests/common/test_notebook_tables.py`` runs the notebooks
and parses every table they print.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

__all__ = ["md_escape", "md_table"]


def md_escape(value: Any) -> str:
    """``value`` as the text of one table cell: ``str(value)``, ``|`` escaped, line breaks as spaces."""
    return " ".join(str(value).replace("|", "\\|").splitlines())


def md_table(rows: Iterable[Mapping[str, Any] | Sequence[Any]], columns: Sequence[str]) -> str:
    """A Markdown table of ``columns``: one line per row, a mapping's cells taken by column name (a missing one
    empty), a sequence's in column order."""
    lines = ["| " + " | ".join(md_escape(c) for c in columns) + " |", "|" + "|".join(" --- " for _ in columns) + "|"]
    for row in rows:
        cells = [row.get(c, "") for c in columns] if isinstance(row, Mapping) else list(row)
        lines.append("| " + " | ".join(md_escape(c) for c in cells) + " |")
    return "\n".join(lines)
