"""Readers for released caption files that two or more papers read (so no paper imports another).

NegCLIP's validation file (``valid_neg_clip.tsv``, Yuksekgonul et al.'s release): ARO compares its own negative
generator with it, and SugarCrepe's blind attacks score its swap negatives.
"""
from __future__ import annotations

import ast
import csv
from dataclasses import dataclass
from pathlib import Path

from common.tasks import DatasetError

NEGCLIP_TSV_HEADER = ("", "title", "filepath", "neg_caption", "neg_image")


@dataclass(frozen=True)
class NegClipRow:
    """One caption of NegCLIP's validation TSV with its released hard negatives."""

    index: int
    title: str
    filepath: str
    negatives: tuple[str, ...]


def read_negclip_tsv(path: Path) -> list[NegClipRow]:
    """Every row of the released TSV; one error naming the file and the row for anything malformed."""
    rows = []
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh, delimiter="\t")
        header = next(reader, None)
        if header is None or tuple(header) != NEGCLIP_TSV_HEADER:
            raise DatasetError(f"{path}: header {header!r} is not NegCLIP's {list(NEGCLIP_TSV_HEADER)!r}")
        for number, fields in enumerate(reader, start=1):
            where = f"{path}: row {number}"
            if len(fields) != len(NEGCLIP_TSV_HEADER):
                raise DatasetError(f"{where}: {len(fields)} tab-separated fields, expected {len(NEGCLIP_TSV_HEADER)}")
            index, title, filepath, neg_caption, _ = fields
            try:
                parsed_index = int(index)
                negatives = ast.literal_eval(neg_caption)
            except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
                raise DatasetError(f"{where} (index {index!r}): unreadable index or neg_caption "
                                   f"{neg_caption[:80]!r}: {type(exc).__name__}: {exc}") from exc
            if not isinstance(negatives, list) or not all(isinstance(n, str) for n in negatives):
                raise DatasetError(f"{where} (index {index}): neg_caption is not a list of strings: "
                                   f"{neg_caption[:80]!r}")
            rows.append(NegClipRow(parsed_index, title, filepath, tuple(negatives)))
    return rows
