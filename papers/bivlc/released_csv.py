"""The authors' released BiVLC CSV files read strictly: every released-file reader's rows (``papers.bivlc.released``
scores them), and a detector output's label-0 and label-1 rows paired as the authors pair them, which the tables
stages compare their heads with without depending on the audit's code."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from common.errors import WorkspaceError
from common.reporting.published import parse_number, read_csv_rows


class ReleasedFileError(WorkspaceError, ValueError):
    """A released-format file is malformed; the message names the file and the line."""


@dataclass(frozen=True)
class Row:
    line: int
    values: dict[str, str]


def read_csv(path: Path) -> tuple[list[str], list[Row]]:
    """The header and rows of a released file, read strictly (``common.reporting.published.read_csv_rows``)."""
    path = Path(path)
    try:
        header, records = read_csv_rows(path, ReleasedFileError, bom="strip")
    except OSError as exc:
        raise ReleasedFileError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    rows = [Row(line, values) for line, values in records]
    if not rows:
        raise ReleasedFileError(f"{path}:2: no data rows")
    return header, rows


def require(path: Path, header: list[str], needed: tuple[str, ...] | list[str], fmt: str) -> None:
    missing = [c for c in needed if c not in header]
    if missing:
        raise ReleasedFileError(f"{path}:1: missing column(s) {missing} for the {fmt} format (header: {header})")


def number(path: Path, row: Row, column: str) -> float:
    text = row.values[column].strip()
    try:
        return parse_number(text)
    except ValueError as exc:
        raise ReleasedFileError(f"{path}:{row.line}: column {column!r}: {exc}") from None


def split_pairs(path: Path, header: list[str], rows: list[Row], columns: tuple[str, ...], fmt: str
                ) -> tuple[list, list]:
    """A detector output's (line, probabilities of ``columns``) of its label-0 rows and of its label-1 rows, in file
    order, checked: labels 0/1, probabilities in [0, 1], as many of each."""
    require(path, header, (*columns, "label"), fmt)
    natural, synthetic = [], []
    for row in rows:
        label = number(path, row, "label")
        if label not in (0.0, 1.0):
            raise ReleasedFileError(f"{path}:{row.line}: column 'label': {row.values['label']!r} is not 0 (natural) "
                                    "or 1 (synthetic)")
        probs = []
        for column in columns:
            probs.append(number(path, row, column))
            if not 0.0 <= probs[-1] <= 1.0:
                raise ReleasedFileError(f"{path}:{row.line}: column {column!r}: {probs[-1]!r} is not a probability in "
                                        "[0, 1]")
        (synthetic if label else natural).append((row.line, tuple(probs)))
    if len(natural) != len(synthetic):
        raise ReleasedFileError(f"{path}:{rows[-1].line}: {len(natural)} natural (label 0) rows but {len(synthetic)} "
                                "synthetic (label 1) rows; the k-th natural row is paired with the k-th synthetic one")
    return natural, synthetic


def paired(natural: list, synthetic: list, index: int) -> np.ndarray:
    """(n, 2): probability ``index`` of the k-th natural and of the k-th synthetic row."""
    pairs = [(n[index], s[index]) for (_, n), (_, s) in zip(natural, synthetic)]
    return np.array(pairs, dtype=np.float64).reshape(-1, 2)


def read_released_outputs(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """A released ``BiVLC_Classifier_CORRECT_<run>.csv`` (``text_pred``, ``img_pred``, ``label``) as per-instance
    (n, 2) P(synthetic) of the (natural, synthetic) image and caption: the label-0 rows in file order are the
    instances' naturals, the label-1 rows their synthetics, paired k-th with k-th as the authors pair them
    (``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_evaluation_BiVLC.py:153-164`` "positives = df[df['label'] ==
    0]"); returns (image, text)."""
    path = Path(path)
    header, rows = read_csv(path)
    natural, synthetic = split_pairs(path, header, rows, ("text_pred", "img_pred"), "bivlc-detector")
    return paired(natural, synthetic, 1), paired(natural, synthetic, 0)
