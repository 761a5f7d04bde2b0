"""Markdown tables from rows of results (the notebooks' one renderer) and the cell escapers: a ``|`` in a cell or a
column name (ARO's ``Text Recall@1 | std``) would split the row, so it is written ``\\|`` and a line break a space.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence


def md_escape(value: Any) -> str:
    """``value`` as the text of one table cell: ``str(value)``, ``|`` escaped, line breaks as spaces."""
    return " ".join(str(value).replace("|", "\\|").splitlines())


def md_table(rows: Iterable[Mapping[str, Any] | Sequence[Any]], columns: Sequence[str]) -> str:
    """A Markdown table of ``columns``, a mapping row's cells by name (missing: empty), a sequence's in order."""
    lines = ["| " + " | ".join(md_escape(c) for c in columns) + " |", "|" + "|".join(" --- " for _ in columns) + "|"]
    for row in rows:
        cells = [row.get(c, "") for c in columns] if isinstance(row, Mapping) else list(row)
        lines.append("| " + " | ".join(md_escape(c) for c in cells) + " |")
    return "\n".join(lines)
