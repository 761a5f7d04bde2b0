"""Text files read strictly: UTF-8 (a bad byte or a byte-order mark is an error naming the file, the line and the
character) and TOML (an error naming the file and the line), so that every layer's loaders (published numbers,
registries, recipes, the zoo's models files) word a fault the same way.
"""
from __future__ import annotations

import codecs
import csv
import tomllib
from pathlib import Path
from typing import Any

from common.errors import WorkspaceError


def decode_utf8(data: bytes, path: str | Path, error: type[WorkspaceError] = WorkspaceError, *,
                bom: str = "refuse", csv_file: bool = False) -> str:
    """``data`` (the bytes of ``path``) as UTF-8, else an ``error`` naming the line and column (``csv_file``: by the
    header); a byte-order mark is refused or (``bom="strip"``: a third party's Excel file) dropped."""
    if data.startswith(codecs.BOM_UTF8):
        if bom == "strip":
            data = data[len(codecs.BOM_UTF8):]
        else:
            raise error(f"{path}:1: the file starts with a UTF-8 byte-order mark (BOM, bytes EF BB BF); save it as "
                        "UTF-8 without a BOM")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        line = data.count(b"\n", 0, exc.start) + 1
        prefix = data[line_start:exc.start].decode("utf-8", errors="replace")
        where = f"character {len(prefix) + 1}"
        if csv_file:
            names = next(csv.reader([data.split(b"\n", 1)[0].decode("utf-8", errors="replace").rstrip("\r")]), [])
            fields = next(csv.reader([prefix]), [""]) if prefix else [""]
            if line > 1 and len(fields) <= len(names):
                where = f"column {names[len(fields) - 1]!r}"
        raise error(f"{path}:{line}: {where}: byte 0x{data[exc.start]:02x} is not UTF-8 (the file looks saved as "
                    "cp1252/Latin-1); save it as UTF-8") from None


def read_utf8(path: str | Path, error: type[WorkspaceError] = WorkspaceError, *, bom: str = "refuse",
              csv_file: bool = False) -> str:
    """The text of ``path`` through ``decode_utf8`` (a missing file stays a ``FileNotFoundError`` naming it)."""
    return decode_utf8(Path(path).read_bytes(), path, error, bom=bom, csv_file=csv_file)


def parse_toml(text: str, path: str | Path, error: type[WorkspaceError] = WorkspaceError) -> dict[str, Any]:
    """The table of ``text`` (the TOML file ``path``); bad TOML is an ``error`` naming the file and the line."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: not valid TOML: {exc}") from None


def read_toml(path: str | Path, error: type[WorkspaceError] = WorkspaceError) -> tuple[str, dict[str, Any]]:
    """The text of a TOML file (``read_utf8``) and its table (``parse_toml``)."""
    text = read_utf8(path, error)
    return text, parse_toml(text, path, error)
