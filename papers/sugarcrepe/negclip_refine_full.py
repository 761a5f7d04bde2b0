"""Adversarial refinement of the full NegCLIP training pairs (stage ``negclip-full-refine``, GPU): Algorithm 1 with
the paper's blind scorers (Vera and the CoLA grammar model), the rows Table 10's refined runs train on.

``refined.json`` keeps the surviving row indices per kind, as the mini set does; only the refined runs and the table
read it (``negclip_rows``, ``negclip_tables``).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from common.blind.refine import DEFAULT_AXIS_BINS, refine, refine_report
from common.files.io import sha256_file, write_json_atomic
from common.paths import build_dir
from common.pipeline.cli import stage_parser
from common.pipeline.params import add_stage_option, own_section
from papers.sugarcrepe.negclip_rows import TrainRow, load_rows
from papers.sugarcrepe.runs import KINDS

SCORERS = ("vera", "grammar")


def refine_rows(rows: Sequence[TrainRow], scorers: Mapping[str, object], bins: int = 50, seed: int = 0) -> dict:
    """Per kind, the row indices Algorithm 1 keeps given the two scorers' caption-minus-negative gaps."""
    if len(scorers) != 2:
        raise ValueError(f"Algorithm 1 takes two scorers, got {list(scorers)}")
    texts = list(dict.fromkeys([r.caption for r in rows] + [r.negatives[k] for r in rows for k in KINDS]))
    position = {t: i for i, t in enumerate(texts)}
    scores = {name: np.asarray(s.scores(texts), dtype=np.float64)  # type: ignore[attr-defined]
              for name, s in scorers.items()}
    caption_at = np.array([position[r.caption] for r in rows], dtype=np.int64)
    out = {}
    for kind in KINDS:
        negative_at = np.array([position[r.negatives[kind]] for r in rows], dtype=np.int64)
        gaps = {name: s[caption_at] - s[negative_at] for name, s in scores.items()}
        first, second = gaps.values()
        kept = refine(first, second, bins, seed)
        report = refine_report(first, second, kept)
        out[kind] = {
            "n_in": report.n_in, "n_kept": report.n_kept,
            "blind_accuracy_before": {n: round(float((g > 0).mean()), 4) for n, g in gaps.items()},
            "blind_accuracy_after": {n: round(float((g[kept] > 0).mean()), 4) if kept.size else None
                                     for n, g in gaps.items()},
            "kept": [int(k) for k in kept],
        }
    return out


def build_refined(set_dir: Path, out_path: Path, scorers: Mapping[str, object], bins: int = 50, seed: int = 0) -> dict:
    rows = load_rows(set_dir)
    kinds = refine_rows(rows, scorers, bins, seed)
    record = {"config": {"bins": bins, "axis_bins": DEFAULT_AXIS_BINS, "seed": seed, "scorers": list(scorers)},
              "fingerprints": {n: getattr(s, "fingerprint", None) for n, s in scorers.items()},
              "set_manifest_sha256": sha256_file(Path(set_dir) / "manifest.json"), "kinds": kinds}
    write_json_atomic(out_path, record, indent=None)
    return record


def main(argv: Sequence[str] | None = None) -> int:
    # deferred: loads torch only when called
    from common.blind.pretrained import load_text_scorer
    # deferred: loads PIL, torch, tqdm only when called
    from common.evaluation.evaluate import best_device

    parser = stage_parser(__spec__.name, __doc__)
    parser.add_argument("--set", type=Path, default=None, help="default: build/full/sugarcrepe_negclip/set")
    parser.add_argument("--out", type=Path, default=None, help="default: build/full/sugarcrepe_negclip/refined.json")
    parser.add_argument("--device", default=None, help="default: cuda when available")
    add_stage_option(parser)
    args = parser.parse_args(argv)
    _, refine = own_section("sugarcrepe.negclip_full.refine", args.stage)
    device = args.device or best_device()
    scorers = {name: load_text_scorer(name, device=device) for name in SCORERS}
    out = args.out or build_dir("full", "sugarcrepe_negclip") / "refined.json"
    record = build_refined(args.set or build_dir("full", "sugarcrepe_negclip") / "set", out, scorers, refine["bins"],
                           refine["seed"])
    print(json.dumps({k: {f: v[f] for f in v if f != "kept"} for k, v in record["kinds"].items()}, indent=2))
    return 0


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
