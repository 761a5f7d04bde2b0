"""JSON and JSON-lines files the pipeline writes and reads back (manifests, training rows, scenes): typed readers,
so every bad file, line or field is an error naming the file, the line and what was expected, whatever the paper, and
one atomic writer.
"""
from __future__ import annotations

import json
import math
import types
import typing
from dataclasses import MISSING, asdict, fields, is_dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, TypeVar

from common.errors import WorkspaceError
from common.files.io import atomic_path
from common.files.tasks import DatasetError

Record = TypeVar("Record")
Row = TypeVar("Row")

_JSON_TYPE_NAMES = {dict: "an object", list: "an array"}


def is_number(value: object) -> bool:
    """A finite JSON number (``true`` and ``false`` are not numbers here)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def read_json(path: Path, expect: type = dict, remedy: str = "run the stage that writes it") -> Any:
    """The JSON document at ``path``, whose top level must be ``expect`` (``dict`` or ``list``). A missing file is a
    ``WorkspaceError`` ending in ``remedy``; bad JSON a ``DatasetError`` with the line and column (and ``remedy``)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise WorkspaceError(f"{path}: missing; {remedy}") from None
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    try:
        value = parse_json(text, path)
    except DatasetError as exc:
        raise DatasetError(f"{exc}; {remedy}") from None
    if not isinstance(value, expect):
        raise DatasetError(f"{path}: expected {_JSON_TYPE_NAMES.get(expect, expect.__name__)} at the top level, "
                           f"found {type(value).__name__}; {remedy}")
    return value


def coco_captions(path: Path) -> dict:
    """A COCO captions file (``captions_train2017.json``), its ``annotations`` (in file order) checked to have an
    integer ``image_id`` and a string ``caption``: the one reader of the papers' COCO training captions."""
    record = read_json(path, dict, remedy="fetch it: python -m common fetch coco-train2017")
    if not isinstance(record.get("annotations"), list):
        raise DatasetError(f"{path}: not a COCO captions file (no 'annotations' list)")
    for k, a in enumerate(record["annotations"]):
        if not isinstance(a, dict) or not isinstance(a.get("image_id"), int) or not isinstance(a.get("caption"), str):
            raise DatasetError(f"{path}: annotations[{k}]: needs an integer 'image_id' and a string 'caption'")
    return record


def parse_json(text: str, path: Path, *, unique_keys: bool = False) -> Any:
    """``json.loads(text)``, every failure (a ``RecursionError`` too) a one-line ``DatasetError`` naming ``path``.
    ``unique_keys``: a key twice in one object is an error (where ids are keys, a repeated id would drop a record)."""
    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict:
        seen: dict = {}
        for key, value in pairs:
            if key in seen:
                raise DatasetError(f"{path}: duplicate key {key!r} (a key appears once per object)")
            seen[key] = value
        return seen

    try:
        return json.loads(text, object_pairs_hook=no_duplicates if unique_keys else None)
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}: line {exc.lineno} column {exc.colno}: not valid JSON ({exc.msg})") from None
    except RecursionError:
        raise DatasetError(f"{path}: nested too deeply to parse (a damaged file?)") from None


def _check_field(name: str, kind: Any, value: Any) -> None:
    """``DatasetError`` unless ``value`` fits the annotation ``kind`` (str, int, float, bool, list, X | None)."""
    args = typing.get_args(kind)
    if typing.get_origin(kind) in (typing.Union, types.UnionType) and type(None) in args:
        if value is None:
            return
        kind = next(a for a in args if a is not type(None))
    if value is None:
        raise DatasetError(f"no {name!r}")
    origin = typing.get_origin(kind) or kind
    if kind is str:
        ok = isinstance(value, str) and bool(value.strip())
    elif kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    elif kind is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    elif kind is bool:
        ok = isinstance(value, bool)
    elif origin in (list, tuple):
        ok = isinstance(value, list)
    else:
        ok = True
    if not ok:
        raise DatasetError(f"{name!r} is {value!r:.40}")


def read_rows(path: Path, row_type: type[Row], what: str, remedy: str = "run the stage that writes it",
              check: Callable[[Row], None] | None = None) -> list[Row]:
    """Every line of ``path`` as a ``row_type`` (a dataclass), each field of its annotated type or its default, then
    ``check(row)`` (raising ``DatasetError`` or ``ValueError``); at least one row. Errors name file, line and field."""
    path = Path(path)
    if not path.is_file():
        raise WorkspaceError(f"{path}: missing; {remedy}")
    hints = typing.get_type_hints(row_type)
    specs = [(f.name, hints[f.name], f.default) for f in fields(row_type)]

    def parse(record: Any) -> Row:
        if not isinstance(record, dict):
            raise DatasetError(f"not a JSON object but {type(record).__name__}")
        for name, kind, default in specs:
            if default is not MISSING and (name not in record or record[name] == default):
                continue  # a field's declared default is always valid (an empty "negative" where there is none)
            _check_field(name, kind, record.get(name))
        row = row_type(**{name: record[name] for name, _, _ in specs if name in record})
        if check is not None:
            try:
                check(row)
            except ValueError as exc:
                raise DatasetError(str(exc)) from None
        return row

    rows = list(read_jsonl(path, parse, what))
    if not rows:
        raise DatasetError(f"{path}: no rows")
    return rows


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
            except RecursionError:
                raise DatasetError(f"{path}: line {number}: nested too deeply to parse (a damaged file?)") from None
            except (json.JSONDecodeError, KeyError, IndexError, TypeError, ValueError) as exc:
                raise DatasetError(f"{path}: line {number}: not {what} ({exc!r})") from None


def write_jsonl(path: Path, records: Iterable[Any]) -> Path:
    """Write one JSON object per line (dataclass instances as their fields), atomically: the file appears whole or
    not at all."""
    path = Path(path)
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as handle:
            for record in records:
                handle.write(json.dumps(asdict(record) if is_dataclass(record) else record, ensure_ascii=False) + "\n")
    return path
