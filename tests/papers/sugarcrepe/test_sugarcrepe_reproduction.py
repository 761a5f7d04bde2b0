"""A mini Table 6 run against the committed seed spread: within when |value - mean| <= 3 sd + one example."""
from __future__ import annotations

import csv

from common.benchmarks.caption_negatives import CATEGORIES
from papers.sugarcrepe.reproduction import SEEDS_CSV, read_spread, reproduction_rows


def _table(path, values: dict[str, float]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, ["model", *CATEGORIES, "average"])
        writer.writeheader()
        writer.writerow({"model": "mini/m", **{c: f"{values.get(c, 50.0):.2f}" for c in [*CATEGORIES, "average"]}})


def test_cells_inside_and_outside_the_band(tmp_path):
    spread = {("mini/m", g): {"mean": 50.0, "sd": 1.0, "min": 49.0, "max": 51.0, "n": 5} for g in [*CATEGORIES, "average"]}
    for g in ("swap_att", "add_att"):
        spread[("mini/m", g)] = {"mean": 50.0, "sd": 0.0, "min": 50.0, "max": 50.0, "n": 5}
    _table(tmp_path / "t.csv", {"replace_obj": 53.2, "replace_att": 53.21, "swap_att": 50.2, "add_att": 50.4})
    rows = {r["group"]: r for r in reproduction_rows(tmp_path / "t.csv", spread)}
    assert rows["replace_obj"]["within"] == "yes"      # 3.2 = 3 sd + one example: on the edge, inside
    assert rows["replace_att"]["within"] == "NO"       # just beyond
    assert rows["swap_att"]["within"] == "yes"         # sd 0: one example of slack
    assert rows["add_att"]["within"] == "NO"           # sd 0, two examples away
    assert len(rows) == len(CATEGORIES) + 1


def test_the_committed_run_is_within_its_own_spread():
    """The committed mini Table 6 is seed 0 of the committed spread: every cell must be inside."""
    spread = read_spread(SEEDS_CSV)
    rows = reproduction_rows(SEEDS_CSV.parent / "table6.csv", spread)
    assert rows and all(r["within"] == "yes" for r in rows), [r for r in rows if r["within"] != "yes"]
    assert all(s["n"] >= 3 for s in spread.values())
