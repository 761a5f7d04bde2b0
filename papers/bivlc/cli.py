"""BiVLC's subcommand of ``python -m common`` (its ``PAPER``'s cli plug-in, ``common.paper.CliPlugIn``): ``audit
released bivlc FILE.csv...``, described by ``register``. Exit status 0; 1 for malformed input (the message names the
file and the line); 2 for bad usage."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from papers.bivlc.released import FORMATS, ReleasedFileError, score_released_file


def _released(args: argparse.Namespace) -> int:
    out: dict[str, Any] = {}
    for path in args.files:
        try:
            out[str(path)] = score_released_file(path, args.fmt)
        except ReleasedFileError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    print(json.dumps(next(iter(out.values())) if len(out) == 1 else out, indent=2, allow_nan=True))
    return 0


def register(groups) -> None:
    p = groups.audit_released.add_parser(
        "bivlc", help="score files in the BiVLC authors' released formats",
        description="Score files in the BiVLC authors' released formats (per-instance BiVLC predictions, "
                    "SugarCrepe per-example predictions, detector outputs) and print the scores as JSON.")
    p.add_argument("files", nargs="+", type=Path, help="CSV file(s) in a released format")
    p.add_argument("--format", dest="fmt", choices=("auto", *FORMATS), default="auto",
                   help="file format (default: detected from the header)")
    p.set_defaults(func=_released)
