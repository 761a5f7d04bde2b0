"""How much the mini Table 6 moves when only the training seed changes: the yardstick for "reproduced" across CPUs.

Across CPU vendors MKL takes other code paths and the mini family's weights differ in their last bits, which training
amplifies (``common.pipeline.reproducible``); whether such a run still reproduces the committed table is then a
statistical question. What it writes: the README's "How much of this is the seed".
"""
from __future__ import annotations

import statistics
import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Sequence

from common.benchmarks.caption_negatives import CATEGORIES, PreparedSet
from common.evaluation.engine import Engine
from common.evaluation.evaluate import engine_config
from common.evaluation.scoring.selection import image_to_text
from common.files.io import output_group, write_csv_atomic, write_json_atomic
from common.paths import ROOT, build_root
from common.pipeline import reproducible
from common.pipeline.cli import stage_parser
from common.pipeline.params import read_params
from common.training.family import family_config, train_clip
from common.zoo import ModelSpec, OpenClipModel, create_model
from common.zoo.trained import build_from_checkpoint, tokenizer_for
from papers.sugarcrepe.reproduction import SEEDS_CSV

DEFAULT_SEEDS = (1, 2, 3, 4)


def _score(model, items, config) -> dict[str, float]:
    """Accuracy (percent) per category, and their mean as "average"."""
    result = image_to_text(Engine(model, config), items)
    scores = {g: 100.0 * s.accuracy for g, s in result.by_group().items()}
    return {**scores, "average": statistics.fmean(scores[c] for c in CATEGORIES)}


def measure(seeds: Sequence[int], out_csv: Path = SEEDS_CSV) -> Path:
    params = read_params()
    items = PreparedSet.load(build_root() / "mini" / "sugarcrepe" / "manifest.json").items()
    config = engine_config(params)
    train_set = build_root() / "mini" / "world" / "train"
    rows = []
    with tempfile.TemporaryDirectory(prefix="vlc-seeds-") as tmp:
        for name, recipe in params["train"].items():
            per_seed = {0: _score(create_model(f"mini/{name}"), items, config)}
            for seed in seeds:
                arch, n_images, train_config = family_config(name, recipe)
                out = Path(tmp) / f"{name}-seed{seed}.safetensors"
                train_clip(arch, n_images, replace(train_config, seed=seed), train_set, out, progress=False,
                           provenance=reproducible.describe())
                net, transform = build_from_checkpoint(arch, out)
                spec = ModelSpec(name=f"mini/{name}@seed{seed}", arch=arch, family="mini",
                                 label=f"mini/{name}@seed{seed}", checkpoint=f"build:{out.name}")
                per_seed[seed] = _score(OpenClipModel(spec, net, transform, tokenizer_for(arch), "cpu"), items, config)
            for group in [*CATEGORIES, "average"]:
                values = [per_seed[s][group] for s in sorted(per_seed)]
                rows.append({"model": f"mini/{name}", "group": group,
                             **{f"seed_{s}": f"{v:.2f}" for s, v in zip(sorted(per_seed), values)},
                             "mean": f"{statistics.fmean(values):.2f}", "sd": f"{statistics.stdev(values):.2f}",
                             "min": f"{min(values):.2f}", "max": f"{max(values):.2f}"})
            print(f"mini/{name}: " + ", ".join(f"{r['group']} {r['mean']} ± {r['sd']}" for r in rows[-8:]), flush=True)
    all_seeds = [0, *seeds]
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    with output_group(out_csv.parent) as staging:  # the table and its provenance, together or not at all
        write_csv_atomic(staging / out_csv.name, rows,
                         ["model", "group", *[f"seed_{s}" for s in all_seeds], "mean", "sd", "min", "max"])
        write_json_atomic(staging / out_csv.with_suffix(".json").name, {
            "what": "mini Table 6 accuracy (percent) per training seed; seed 0 = the pipeline's checkpoints",
            "seeds": all_seeds, "code_commit": commit or "unknown", **reproducible.describe(),
            "machine": reproducible.machine(), "command": "python -m papers.sugarcrepe.seed_spread",
        })
    return out_csv


def main(argv: Sequence[str] | None = None) -> int:
    parser = stage_parser(__spec__.name, __doc__)
    parser.add_argument("--seeds", type=int, nargs="+", default=list(DEFAULT_SEEDS),
                        help="training seeds besides the pipeline's own seed 0")
    args = parser.parse_args(argv)
    reproducible.pin()
    print(f"wrote {measure(args.seeds)}")
    return 0


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
