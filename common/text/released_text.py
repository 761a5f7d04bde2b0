"""Readers for released caption files that two or more papers read (so no paper imports another).

NegCLIP's TSVs (``valid_neg_clip.tsv``, ``train_neg_clip.tsv``, Yuksekgonul et al.'s release): ARO compares its own
negative generator with the validation file and fine-tunes on both (``neg_image``: each row's neighbours), and
SugarCrepe's blind attacks score its swap negatives.
"""
from __future__ import annotations

import ast
import csv
import io
from dataclasses import dataclass
from pathlib import Path

from common.files.tasks import DatasetError

NEGCLIP_TSV_HEADER = ("", "title", "filepath", "neg_caption", "neg_image")


@dataclass(frozen=True)
class NegClipRow:
    """One caption of NegCLIP's TSV with its released hard negatives and ``neighbours``: the rows (by index) whose
    images are the nearest to its own (``neg_image``, NegCLIP's hard-negative batches)."""

    index: int
    title: str
    filepath: str
    negatives: tuple[str, ...]
    neighbours: tuple[int, ...]


def read_negclip_tsv(path: Path) -> list[NegClipRow]:
    """Every row of the released TSV; one error naming the file and the row for anything malformed (a byte that is
    not UTF-8, a ragged row, an unreadable list, no neighbour, an index twice)."""
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DatasetError(f"{path}: line {line}: byte 0x{data[exc.start]:02x} is not UTF-8; fetch the file "
                           "again") from None
    rows: list[NegClipRow] = []
    seen: dict[int, int] = {}
    number = 0
    reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t")
    try:
        header = next(reader, None)
        if header is None or tuple(header) != NEGCLIP_TSV_HEADER:
            raise DatasetError(f"{path}: header {header!r} is not NegCLIP's {list(NEGCLIP_TSV_HEADER)!r}")
        for number, fields in enumerate(reader, start=1):
            where = f"{path}: row {number}"
            if len(fields) != len(NEGCLIP_TSV_HEADER):
                raise DatasetError(f"{where}: {len(fields)} tab-separated fields, expected {len(NEGCLIP_TSV_HEADER)}")
            index, title, filepath, neg_caption, neg_image = fields
            try:
                parsed_index = int(index)
                negatives, neighbours = ast.literal_eval(neg_caption), ast.literal_eval(neg_image)
            except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
                raise DatasetError(f"{where} (index {index!r}): unreadable index, neg_caption {neg_caption[:80]!r} or "
                                   f"neg_image {neg_image[:80]!r}: {type(exc).__name__}: {exc}") from exc
            if not isinstance(negatives, list) or not all(isinstance(n, str) for n in negatives):
                raise DatasetError(f"{where} (index {index}): neg_caption is not a list of strings: "
                                   f"{neg_caption[:80]!r}")
            if not isinstance(neighbours, list) or not neighbours or not all(isinstance(n, int) for n in neighbours):
                raise DatasetError(f"{where} (index {index}): neg_image is not a non-empty list of row indices: "
                                   f"{neg_image[:80]!r}")
            rows.append(NegClipRow(parsed_index, title, filepath, tuple(negatives), tuple(neighbours)))
            if rows[-1].index in seen:
                raise DatasetError(f"{path}: row {number}: index {rows[-1].index} again (first in row "
                                   f"{seen[rows[-1].index]}); fetch the file again")
            seen[rows[-1].index] = number
    except csv.Error as exc:
        raise DatasetError(f"{path}: row {number + 1} (line {reader.line_num}): not a valid TSV row ({exc})") from None
    return rows
