"""The benchmark (papers/sugarcrepe/bench.py): SugarCrepe's official per-example loop, reimplemented, decides exactly
as the engine does, and `python -m common bench eval` ends with its machine-readable line (timing is not asserted)."""
from __future__ import annotations

import re
import subprocess
import sys

from common.evaluation.engine import Engine, EngineConfig
from common.evaluation.scoring.selection import image_to_text
from common.paths import ROOT
from papers.sugarcrepe.bench import make_data, reference_loop


def test_engine_decisions_equal_the_official_loop(tiny_model, tmp_path):
    data = make_data(tmp_path / "images", n_images=8, width=96, height=72)
    result = image_to_text(Engine(tiny_model, EngineConfig(image_batch_size=3, text_batch_size=7, progress=False),
                                  cache_root=tmp_path / "cache"), data.items)
    reference = reference_loop(tiny_model, data.items)
    assert [int(o.correct) for o in result.outcomes] == reference
    assert 0 < sum(reference) < len(reference)  # both outcomes occur, so equality is not trivial


def test_bench_reports_speedup_bound_ratio_and_identity():
    out = subprocess.run(
        [sys.executable, "-m", "common", "bench", "eval", "--arch", "mini-vit-xs", "--images", "4",
         "--image-batches", "2", "--text-batches", "8"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    last = out.stdout.strip().splitlines()[-1]
    match = re.fullmatch(r"speedup=(\d+\.\d+) bound_ratio=(\d+\.\d+) identical=(true|false)", last)
    assert match, last
    assert match.group(3) == "true"
    assert "reference (official per-example loop)" in out.stdout
