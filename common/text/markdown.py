"""Markdown table cells, below ``reporting`` so ``training.recipes`` writes its table with the same escaping."""


def md_cell(value: object) -> str:
    """``str(value)`` with ``|`` escaped and each ``\\n`` a space (``md_escape`` also drops a trailing line break)."""
    return str(value).replace("|", "\\|").replace("\n", " ")
