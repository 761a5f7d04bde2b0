"""One file per profile listing the analyses beyond Table 6 and their headline numbers, for the aggregate stage.

DVC cannot make a stage's dependency list depend on a parameter, and the analyses differ by profile: so each profile
has a stage ``analyses-<profile>`` collecting its analyses' DVC metrics into ``results/sugarcrepe/<profile>/
analyses.json``, which the aggregate stage depends on, and ``dvc repro papers/sugarcrepe`` runs exactly those.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from common.files.io import write_json_atomic
from common.files.jsonl import read_json
from common.pipeline.cli import stage_parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = stage_parser(__spec__.name, __doc__)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("metrics", nargs="+", type=Path, help="the analyses' metrics files")
    args = parser.parse_args(argv)
    collected = {str(path): read_json(path, dict, "rerun the stage that writes this analysis's metrics")
                 for path in args.metrics}
    write_json_atomic(args.out, collected)
    for path, metrics in collected.items():
        print(f"{path}: {len(metrics)} metrics")
    return 0


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
