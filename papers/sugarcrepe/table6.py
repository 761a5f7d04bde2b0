"""SugarCrepe Table 6: pretrained CLIPs on the seven hard-negative categories, plus the average.

mini profile: the tiny-CLIP family on the mini world's SugarCrepe-format set.
full profile: the paper's 17 open_clip models on the released benchmark with COCO val2017 images.
Writes results/sugarcrepe/<profile>/table6.{csv,png}, table6_metrics.json, table6_plot.csv and
per-example predictions (one CSV per model).
"""
from __future__ import annotations

from common.datasets.sugarcrepe import CATEGORIES, PreparedSet
from common.evaluate import best_device, engine_config, evaluate_selection
from common.figures import grouped_bars
from common.params import load_params, section
from common.paths import RESULTS, build_root
from common.results import write_accuracy_table


def main() -> None:
    params = load_params()
    profile = params["profile"]
    models = section(params, f"sugarcrepe.models.{profile}")
    prepared = PreparedSet.load(build_root() / profile / "sugarcrepe" / "manifest.json")
    items = prepared.items()
    out_dir = RESULTS / "sugarcrepe" / profile
    config = engine_config(params)
    results = evaluate_selection(models, items, config, out_dir / "predictions", device=best_device())
    context = {
        "profile": profile,
        "dataset": {k: v for k, v in prepared.info.items() if k in ("world_version", "counts", "n_images", "sha256", "config")},
        "engine": {"image_batch_size": config.image_batch_size, "text_batch_size": config.text_batch_size},
        "note": "mini profile: tiny CLIPs on the rendered mini world; not comparable to the paper's numbers"
        if profile == "mini" else "full profile: the paper's models on the released benchmark",
    }
    paths = write_accuracy_table(out_dir, "table6", results, CATEGORIES, context)
    title = f"SugarCrepe Table 6 ({profile} profile" + (": mini world, tiny CLIPs)" if profile == "mini" else ")")
    grouped_bars(paths["table"], CATEGORIES, out_dir / "table6.png", title)
    for name, path in paths.items():
        print(f"{name}: {path}")


if __name__ == "__main__":
    main()
