"""A stage command's opening and exit, written once for every paper: its parser (``python -m <module>``, described
by the module's first docstring line), the options that every tables stage run for either profile shares
(``python -m papers.<paper>.tables --profile mini|full``) and the mini profile's pinned CPU, and the lines naming the
files it wrote.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Mapping

from common.errors import WorkspaceError
from common.pipeline import reproducible
from common.pipeline.params import PROFILES

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


def profile_stage_parser(paper: str, description: str, *, data: str, models: str) -> argparse.ArgumentParser:
    """``python -m papers.<paper>.tables``'s parser with the options every profile stage has: ``--profile``,
    ``--stage``, ``--data`` and ``--models`` (``data`` and ``models``: their help, which says the paper's defaults),
    ``--out`` and ``--device``."""
    parser = stage_parser(f"papers.{paper}.tables", description)
    parser.add_argument("--profile", choices=PROFILES, required=True)
    parser.add_argument("--stage", default=None, help="the DVC stage whose parameters to read (default: the stage "
                                                      "running this module with this --profile)")
    parser.add_argument("--data", default=None, help=data)
    parser.add_argument("--models", default=None, help=models)
    parser.add_argument("--out", default=None, help=f"default: results/{paper}/<profile>")
    parser.add_argument("--device", default=None, help="full: default cuda when available, else cpu (the mini "
                                                       "profile runs on the pinned CPU profile)")
    return parser


def pinned_cpu(device: str | None, error: type[WorkspaceError]) -> str:
    """The mini profile's device: the CPU, on the pinned CPU profile (the same bits on any x86-64 CPU of one vendor:
    ``common.pipeline.reproducible``; this process re-executed under it where it was not). Any other ``--device`` is an
    ``error`` (the paper's own), raised before the re-execution."""
    if device not in (None, "cpu"):
        raise error(f"--device {device}: the mini profile scores on the pinned CPU profile")
    reproducible.pin()
    return "cpu"
