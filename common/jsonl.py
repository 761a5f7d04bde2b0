"""JSON-lines files the pipeline writes and reads back (training rows, scenes): one reader, so every bad line is an
error naming the file and the line, whatever the paper, and one atomic writer."""
from __future__ import annotations

import json
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, TypeVar

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


def write_jsonl(path: Path, records: Iterable[Any]) -> Path:
    """Write one JSON object per line (dataclass instances as their fields), atomically: the file appears whole or
    not at all."""
    from common.io import atomic_path

    path = Path(path)
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as handle:
            for record in records:
                handle.write(json.dumps(asdict(record) if is_dataclass(record) else record, ensure_ascii=False) + "\n")
    return path
