"""JSON-lines files the pipeline writes and reads back (training rows, scenes): one reader, so every bad line is an
error naming the file and the line, whatever the paper."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

from common.tasks import DatasetError

Record = TypeVar("Record")


def read_jsonl(path: Path, parse: Callable[[Any], Record], what: str) -> Iterator[Record]:
    """``parse(record)`` for each non-empty line of ``path``. A line that is not JSON, or that ``parse`` rejects with
    ``KeyError``, ``IndexError``, ``TypeError`` or ``ValueError``, is a ``DatasetError``: "<path>: line <n>: not
    <what> (<reason>)"."""
    path = Path(path)
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                yield parse(json.loads(line))
            except DatasetError as exc:
                raise DatasetError(f"{path}: line {number}: {exc}") from None
            except (json.JSONDecodeError, KeyError, IndexError, TypeError, ValueError) as exc:
                raise DatasetError(f"{path}: line {number}: not {what} ({exc!r})") from None
