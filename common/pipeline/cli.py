"""A stage command's opening and exit, written once for every paper: its parser (``python -m <module>``, described
by the module's first docstring line) and the lines naming the files it wrote. A module of its own, importing nothing
of the workspace, so that every stage's code dependencies (dvc.yaml) gain only this file.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Mapping

DEVICE_HELP = "default: cuda when available, else cpu"
"""``--device``'s help where a stage picks the device itself (``common.zoo.best_device``)."""


def stage_parser(module: str, doc: str, *, out: str | None = None,
                 device: str | None = None) -> argparse.ArgumentParser:
    """``python -m module``'s parser (``module``: the stage's ``__spec__.name``; ``__name__`` is ``__main__`` there),
    described by ``doc``'s first line; ``--out`` (help ``out``) and ``--device`` (help ``device``), default None, listed
    first when given, then the options the stage adds."""
    parser = argparse.ArgumentParser(prog=f"python -m {module}", description=doc.splitlines()[0])
    if out is not None:
        parser.add_argument("--out", default=None, help=out)
    if device is not None:
        parser.add_argument("--device", default=None, help=device)
    return parser


def print_written(paths: Mapping[str, Path], *shown: str) -> int:
    """A stage's exit: the path of each file it wrote, then the files ``shown`` (a JSON summary indented)."""
    for name, path in paths.items():
        print(f"{name}: {path}")
    for name in shown:
        text = paths[name].read_text(encoding="utf-8")
        print(json.dumps(json.loads(text), indent=2) if paths[name].suffix == ".json" else text)
    return 0
