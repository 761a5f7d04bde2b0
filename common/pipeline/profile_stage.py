"""The opening that every tables stage run for either profile shares (``python -m papers.<paper>.tables --profile
mini|full``): its common options and the mini profile's pinned CPU.
"""
from __future__ import annotations

import argparse

from common.errors import WorkspaceError
from common.pipeline import reproducible
from common.pipeline.cli import stage_parser
from common.pipeline.params import PROFILES


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
