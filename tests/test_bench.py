"""The benchmark runs end to end and ends with its machine-readable line (timing is not asserted)."""
from __future__ import annotations

import re
import subprocess
import sys

from common.paths import ROOT


def test_bench_reports_speedup_bound_ratio_and_identity():
    out = subprocess.run(
        [sys.executable, "-m", "common", "bench", "--arch", "mini-vit-xs", "--images", "4",
         "--image-batches", "2", "--text-batches", "8"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    last = out.stdout.strip().splitlines()[-1]
    match = re.fullmatch(r"speedup=(\d+\.\d+) bound_ratio=(\d+\.\d+) identical=(true|false)", last)
    assert match, last
    assert match.group(3) == "true"
    assert "reference (official per-example loop)" in out.stdout
