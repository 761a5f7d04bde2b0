"""What "reproduced" means for a mini run on a CPU where the weights cannot be bit-identical: each cell of the new
Table 6 within the spread that retraining with another seed gives (``results/sugarcrepe/mini/table6_seeds.csv``,
measured by ``papers.sugarcrepe.seed_spread``)."""
from __future__ import annotations

import csv
from pathlib import Path

from common.benchmarks.caption_negatives import CATEGORIES
from common.paths import RESULTS

SEEDS_CSV = RESULTS / "sugarcrepe" / "mini" / "table6_seeds.csv"
DATA_FILES = ("results/sugarcrepe/mini/table6_seeds.csv",)
"""The committed seed spread every mini Table 6 run is checked against (``common.pipeline.stage_deps``)."""
ONE_EXAMPLE = 0.2
"""Points one example of 500 is worth in a mini category: the floor of the reproduction band."""
REPRODUCTION_FIELDS = ("model", "group", "value", "seed_mean", "seed_sd", "seed_min", "seed_max", "seeds", "band",
                       "within")


def reproduction_rows(table_csv, spread: dict) -> list[dict]:
    """Each mini cell against the seed spread: within when |value - mean| <= 3 sd + one example."""
    rows = []
    with open(table_csv, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            for group in [*CATEGORIES, "average"]:
                s = spread.get((row["model"], group))
                value = float(row[group])
                if s is None:
                    rows.append({"model": row["model"], "group": group, "value": f"{value:.2f}", "within": "no spread"})
                    continue
                band = 3 * s["sd"] + ONE_EXAMPLE
                rows.append({"model": row["model"], "group": group, "value": f"{value:.2f}",
                             "seed_mean": f"{s['mean']:.2f}", "seed_sd": f"{s['sd']:.2f}", "seed_min": f"{s['min']:.2f}",
                             "seed_max": f"{s['max']:.2f}", "seeds": s["n"], "band": f"{band:.2f}",
                             "within": "yes" if abs(value - s["mean"]) <= band + 1e-9 else "NO"})
    return rows


def read_spread(path: Path = SEEDS_CSV) -> dict[tuple[str, str], dict[str, float]]:
    """(model, group) -> {mean, sd, min, max, n} from ``table6_seeds.csv``."""
    with open(path, newline="", encoding="utf-8") as fh:
        out = {}
        for row in csv.DictReader(fh):
            n = sum(1 for k in row if k.startswith("seed_"))
            out[(row["model"], row["group"])] = {k: float(row[k]) for k in ("mean", "sd", "min", "max")} | {"n": n}
    return out
