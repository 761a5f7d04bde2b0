"""docs/usage.md shows what ``python -m common report`` prints: the example block after ``<!--report-example PAPER-->``
is the command's first lines today (paths relative), so a changed report or a moved result cannot leave a stale
example (issue 48)."""
from __future__ import annotations

import re
import subprocess
import sys

from common.paths import ROOT

EXAMPLE = re.compile(r"<!--report-example (?P<paper>\w+)-->\n```\n(?P<text>.*?)\n```", re.S)


def test_the_report_example_is_what_the_command_prints():
    examples = list(EXAMPLE.finditer((ROOT / "docs" / "usage.md").read_text(encoding="utf-8")))
    assert examples, "docs/usage.md has no <!--report-example PAPER--> block"
    for m in examples:
        done = subprocess.run([sys.executable, "-m", "common", "report", m["paper"]], cwd=ROOT, capture_output=True,
                              text=True, timeout=120, check=True)
        shown = m["text"].splitlines()
        printed = done.stdout.replace(f"{ROOT}/", "").splitlines()[:len(shown)]
        assert shown == printed, f"docs/usage.md's example of python -m common report {m['paper']} is stale"
