"""Figures drawn from result tables (PNG, for DVC image plots and the notebooks), and the one way to save one."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from common.files.io import atomic_path
from common.reporting.published import read_csv_rows


def pyplot() -> Any:
    """matplotlib's pyplot on the non-interactive Agg backend (stages and tests run headless)."""
    # deferred: loads matplotlib only when called
    import matplotlib

    matplotlib.use("Agg")
    # deferred: loads matplotlib only when called
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, out_png: str | Path, dpi: int = 110) -> Path:
    """Write ``fig`` as PNG atomically (a crash never leaves half an image) and close it."""
    out_png = Path(out_png)
    try:
        with atomic_path(out_png) as tmp:
            fig.savefig(tmp, format="png", dpi=dpi)
    finally:
        pyplot().close(fig)
    return out_png


def grouped_bars(table_csv: Path, groups: Sequence[str], out_png: Path, title: str, label_column: str = "label") -> Path:
    """One bar group per category, one bar per model (a results table drawn as the paper's figure)."""
    plt = pyplot()
    rows = [row for _, row in read_csv_rows(table_csv, whole=True)[1]]
    width = 0.8 / max(1, len(rows))
    fig, ax = plt.subplots(figsize=(1.3 * len(groups) + 2, 3.6))
    x = np.arange(len(groups))
    for k, row in enumerate(rows):
        ax.bar(x + k * width - 0.4 + width / 2, [float(row[g]) for g in groups], width, label=row[label_column])
    ax.axhline(50, color="grey", lw=0.8, ls="--", label="chance (K=2)")
    ax.set_xticks(x, [g.replace("_", "\n") for g in groups])
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 100)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, ncol=2, loc="lower right")
    fig.tight_layout()
    return save_figure(fig, out_png)
