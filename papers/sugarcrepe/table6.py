"""SugarCrepe Table 6: pretrained CLIPs on the seven hard-negative categories, plus the average.

mini profile: the tiny-CLIP family on the mini world's set. full profile: the paper's 17 open_clip models on the
released benchmark, each followed by its registered variants (``common.zoo.with_variants``: DataComp small and medium
with QuickGELU, as SugarCrepe's model list pairs them, ``RAIVNLab/sugar-crepe@0047054b main_eval.py:19-20`` "#
('ViT-B-32-quickgelu', 'datacomp_s_s13m_b4k'), # ('ViT-B-32-quickgelu', 'datacomp_m_s128m_b4k'),", beside open_clip's
GELU); the audit compares both with the published row. Outputs: the README's stage table; in the mini profile each
cell is checked against the committed seed spread (``reproduction``).
"""
from __future__ import annotations

from typing import Sequence

from common.benchmarks.caption_negatives import CATEGORIES, PreparedSet
from common.evaluation.evaluate import best_device, engine_config, evaluate_selection
from common.evaluation.results import write_accuracy_table
from common.files.io import output_group, staged_to_final, write_csv_atomic
from common.paths import RESULTS, build_root
from common.pipeline import reproducible
from common.pipeline.cli import print_written, stage_parser
from common.pipeline.params import own_params
from common.reporting.figures import grouped_bars
from common.zoo import with_variants
from papers.sugarcrepe.reproduction import ONE_EXAMPLE, REPRODUCTION_FIELDS, SEEDS_CSV, read_spread, reproduction_rows


def main(argv: Sequence[str] | None = None) -> None:
    stage_parser(__spec__.name, __doc__).parse_args(argv)  # no options: --help, and an unknown one refused
    device = best_device()
    if device == "cpu":  # the mini table, bit-identical on any x86-64 CPU of this vendor (common.pipeline.reproducible)
        reproducible.pin()
    params = own_params()
    profile = params["profile"]
    models = params["sugarcrepe"]["models"][profile]
    prepared = PreparedSet.load(build_root() / profile / "sugarcrepe" / "manifest.json")
    items = prepared.items()
    out_dir = RESULTS / "sugarcrepe" / profile
    config = engine_config(params)
    # every output of the stage is written into a staging folder and replaces the previous ones as a group
    # (folders as a whole: a model dropped from the list leaves no stale predictions or metrics behind)
    with output_group(out_dir) as staging:
        results = evaluate_selection(with_variants(models), items, config, staging / "predictions", device=device)
        context = {
            "profile": profile,
            "dataset": {k: v for k, v in prepared.info.items() if k in ("world_version", "counts", "n_images", "sha256", "config")},
            "engine": {"image_batch_size": config.image_batch_size, "text_batch_size": config.text_batch_size,
                       "precision": config.precision, **(reproducible.describe() if device == "cpu" else {})},
            "note": "mini profile: tiny CLIPs on the rendered mini world; not comparable to the paper's numbers"
            if profile == "mini" else "full profile: the paper's models on the released benchmark",
        }
        paths = write_accuracy_table(staging, "table6", results, CATEGORIES, context)
        title = f"SugarCrepe Table 6 ({profile} profile" + (": mini world, tiny CLIPs)" if profile == "mini" else ")")
        grouped_bars(paths["table"], CATEGORIES, staging / "table6.png", title)
        if profile == "mini":
            rows = reproduction_rows(paths["table"], read_spread(SEEDS_CSV))
            within = sum(r["within"] == "yes" for r in rows)
            print(f"reproduction: {within}/{len(rows)} cells within the seed spread ({SEEDS_CSV.name}: |value - mean| "
                  f"<= 3 sd + {ONE_EXAMPLE} points)")
        else:
            rows = [{"model": "", "group": "", "within": "full profile: the audit compares each cell with the paper"}]
        paths["reproduction"] = write_csv_atomic(staging / "table6_reproduction.csv", rows, REPRODUCTION_FIELDS)
    print_written({name: staged_to_final(path, staging, out_dir) for name, path in paths.items()})

if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
