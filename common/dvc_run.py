"""This environment's DVC as a subprocess (``python -m dvc``): an unactivated venv has no ``dvc`` on PATH. Kept apart
from the modules that use it so that a stage importing it depends on this file only."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from common import paths


def run_dvc(*args: str, cwd: Path = paths.ROOT, capture: bool = True) -> subprocess.CompletedProcess:
    """``dvc <args>`` in ``cwd``, its output captured or, with ``capture=False``, shown as it runs."""
    return subprocess.run([sys.executable, "-m", "dvc", *args], cwd=cwd, capture_output=capture, text=True)
