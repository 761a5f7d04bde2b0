"""This environment's DVC as a subprocess (``python -m dvc``): an unactivated venv has no ``dvc`` on PATH. Kept apart
from the modules that use it so that a stage importing it depends on this file only."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Mapping

from common import paths


def run_dvc(*args: str, cwd: Path = paths.ROOT, capture: bool = True, env: Mapping[str, str] | None = None,
            timeout: float | None = None) -> subprocess.CompletedProcess:
    """``dvc <args>`` in ``cwd``, its output captured or, with ``capture=False``, shown as it runs; ``env``: the
    environment (default this process's), ``timeout`` in seconds (default none)."""
    return subprocess.run([sys.executable, "-m", "dvc", *args], cwd=cwd, capture_output=capture, text=True,
                          env=None if env is None else dict(env), timeout=timeout)
