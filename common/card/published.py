"""The published rows beside a card: each paper's transcribed table (``results/published/<paper>.csv``) rows for the
same numbers the card computes (SugarCrepe's Table 6 rows for CLIP ViT-B/32, NegCLIP, ...), labelled as published
with their source table.

A paper offers them from its card plug-in (``common.paper.CardPlugIn``) with ``published() ->
list[PublishedColumns]``: which table, and which of its columns is which card number. Only a full-profile card (not a
rehearsal's) is like-for-like with them: the same benchmark under the same rule; a mini card's numbers are the mini
world's, and the card says they are not comparable.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from common.published import load_cells

SCALE = {"percent": 1.0, "fraction": 100.0}
"""A cell's value in percent, the card's unit (other units are not card numbers and are left out)."""


@dataclass(frozen=True)
class PublishedColumns:
    """Where a paper's published table holds card numbers: ``columns`` maps a card number's key to the column."""

    paper: str
    table: str
    title: str
    """The table's name in the card ("SugarCrepe Table 6")."""
    columns: Mapping[str, str]


def published_rows(sources: Sequence[PublishedColumns], keys: set[str]) -> list[dict]:
    """Every row of each source table with at least one of ``keys`` published: {"source", "paper", "table", "row",
    "values": {card key: percent}}, in the file's order."""
    out: list[dict] = []
    for source in sources:
        wanted = {column: key for key, column in source.columns.items() if key in keys}
        if not wanted:
            continue
        by_row: dict[str, dict[str, float]] = {}
        for cell in load_cells(source.paper):
            if (cell.table == source.table and cell.column in wanted and cell.value is not None
                    and cell.unit in SCALE):
                by_row.setdefault(cell.row, {})[wanted[cell.column]] = round(cell.value * SCALE[cell.unit], 2)
        out += [{"source": source.title, "paper": source.paper, "table": source.table, "row": row, "values": values}
                for row, values in by_row.items()]
    return out


def comparability(profile: str, rehearsal: bool) -> str:
    """Whether the card's numbers compare with the published rows, in words."""
    if rehearsal:
        return "not comparable: a rehearsal's numbers (stand-in data, random weights)"
    if profile == "mini":
        return ("not comparable: this card is scored on the mini world's rendered scenes; the published rows are the "
                "papers' real benchmarks (use --profile full)")
    return ("like-for-like: the same benchmark under the same rule (the published rows as transcribed from the "
            "papers, results/published/)")
