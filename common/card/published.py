"""The published rows beside a card: each paper's transcribed rows for the numbers the card computes, which its card
plug-in's ``published()`` locates (``PublishedColumns``: a row per model; ``PublishedCells``: any layout).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping, Sequence

from common.reporting.published import load_cells

SCALE = {"percent": 1.0, "fraction": 100.0}
"""A cell's value in percent, the card's unit (other units are not card numbers and are left out)."""

MODEL = "{model}"
"""Where a ``PublishedCells`` pattern holds the model's name."""


@dataclass(frozen=True)
class PublishedCells:
    """Where card numbers sit in a table of any layout: card key -> (row, column), one of them holding ``{model}``
    ("Accuracy", "{model}" for a column per model; "COCO-PRC | {model}", "Accuracy" for a row per dataset and model)."""

    paper: str
    table: str
    title: str
    """The table's name in the card ("SugarCrepe Table 6")."""
    cells: Mapping[str, tuple[str, str]]


def PublishedColumns(paper: str, table: str, title: str, columns: Mapping[str, str]) -> PublishedCells:
    """A table with a row per model: ``columns`` maps a card number's key to its column."""
    return PublishedCells(paper, table, title, {key: (MODEL, column) for key, column in columns.items()})


def _pattern(text: str) -> re.Pattern:
    """A row or column pattern as a regular expression, the model's name captured."""
    return re.compile("^" + re.escape(text).replace(re.escape(MODEL), "(?P<model>.+)") + "$")


def published_rows(sources: Sequence[PublishedCells], keys: set[str]) -> list[dict]:
    """A row per model of each source table with at least one of ``keys`` published, in the file's order."""
    out: list[dict] = []
    for source in sources:
        places = [(key, _pattern(row), _pattern(column)) for key, (row, column) in source.cells.items() if key in keys]
        by_model: dict[str, dict[str, float]] = {}
        for cell in load_cells(source.paper) if places else ():
            if cell.table != source.table or cell.value is None or cell.unit not in SCALE:
                continue
            for key, row_pattern, column_pattern in places:  # the first place that matches the cell
                row_match, column_match = row_pattern.match(cell.row), column_pattern.match(cell.column)
                if row_match and column_match:
                    model = (row_match.groupdict() | column_match.groupdict())["model"]
                    by_model.setdefault(model, {})[key] = round(cell.value * SCALE[cell.unit], 2)
                    break
        out += [{"source": source.title, "paper": source.paper, "table": source.table, "row": model,
                 "values": values} for model, values in by_model.items()]
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
