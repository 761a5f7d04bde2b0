"""``python -m common bench train`` (``common/training/bench.py``): one run times decoding alone, the model step
alone, training with each step's batch decoded in the loop and training with the loader's workers, and prints both
ratios to the bound max(decode, step). Timing is not asserted (a shared machine), only that the four measurements are
there, consistent with the lines, and that the bound is their maximum."""
from __future__ import annotations

import json
import re

import pytest

from common.cli import main


def test_bench_train_prints_both_ratios(tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert main(["bench", "train", "--images", "8", "--batch", "4", "--warmup", "1", "--steps", "3", "--workers", "1",
                 "--step-seconds", "0.05", "--out", str(out)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    match = re.fullmatch(r"in_loop_ratio=(\d+\.\d+) ahead_ratio=(\d+\.\d+) speedup=(\d+\.\d+)", lines[-1])
    assert match, lines[-1]
    assert any(line.startswith("bound: max(decode ") for line in lines)
    r = json.loads(out.read_text())
    assert r["fixed_step_cost"] == 0.05 and r["workers"] == 1 and r["arch"] == "mini-vit-xs"
    assert r["bound_seconds"] == max(r["decode_seconds"], r["step_seconds_alone"])
    assert r["step_seconds_alone"] >= 0.05  # the fixed cost is part of every step
    assert abs(float(match.group(1)) - r["in_loop_ratio"]) <= 0.005
    assert abs(float(match.group(2)) - r["ahead_ratio"]) <= 0.005


def test_bench_train_refuses_a_bad_fixed_cost(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["bench", "train", "--step-seconds", "-1"])
    assert exited.value.code == 2
    assert "'auto' or seconds >= 0" in capsys.readouterr().err
