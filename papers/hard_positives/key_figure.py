"""The Hard Positive Truth's key result redrawn from the mini profile: accuracy on the original test (the caption c
against its hard negative c_n) and the augmented one (c and its hard positive c_p, each against c_n) on REPLACE and
SWAP, for CLIP before and after fine-tuning (Table 1), beside the paper's numbers.

The paper's claim: adding hard positives lowers every model's accuracy, hard-negative fine-tuning (the paper's HN,
NegCLIP, DAC-LLM) loses more, and fine-tuning with hard positives too (HP+HN) loses less. The README shows it at a
glance; the solid bars come from ``results/hard_positives/mini/table1.csv`` (stage ``table1-mini``), the hatched ones
from ``results/published/hard_positives.csv``.

Writes ``results/hard_positives/mini/key_figure.png`` and ``key_figure_plot.csv`` (every bar and its source).
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

from common.key_figure import PlotBar, PlotLine, published_bars, result_bars, write_bar_figure
from common.paths import PUBLISHED, RESULTS
from common.published import CellIndex, load_cells

MINI = RESULTS / "hard_positives" / "mini"
MODELS = {"base": "CLIP", "clip-ft": "CLIP fine-tuned", "hn": "Our HN", "hp-hn": "Our HP+HN"}
"""Rows of the mini Table 1 (``row``) and the names the figure gives them: the mini family's CLIP (mini/xs-32k) and
its fine-tunes on the mini COCO (no hard captions; hard negatives; hard positives and hard negatives)."""
PUBLISHED_MODELS = {"CLIP ViT-B/32": "CLIP", "NegCLIP": "NegCLIP", "DAC-LLM": "DAC-LLM", "Our HN": "Our HN",
                    "Our HP+HN": "Our HP+HN"}
ORIGINAL, AUGMENTED = "original test: c vs c_n", "augmented: c and c_p vs c_n"
SPLITS = ("REPLACE", "SWAP")
TITLE = ("The Hard Positive Truth, mini profile (top: tiny CLIPs on the mini world) beside the paper (bottom, hatched: "
         "ViT-B/32 CLIPs, Table 1)\naccuracy without and with hard positives c_p; dashed: chance (the paper's "
         "Random Chance row)")


def key_figure_bars(results: Path = MINI, published: Path = PUBLISHED) -> tuple[list[PlotBar], list[PlotLine]]:
    """The figure's bars (the mini Table 1 per split, then the published one per split) and chance per test."""
    cells = CellIndex(load_cells("hard_positives", published))
    bars: list[PlotBar] = []
    lines: list[PlotLine] = []
    for source, models in (("mini", MODELS), ("published", PUBLISHED_MODELS)):
        for split in SPLITS:
            panel = f"{split}, {'mini profile' if source == 'mini' else 'published'}"
            if source == "mini":
                key = split.lower()
                bars += result_bars(results / "table1.csv", panel, {f"{key}_orig": ORIGINAL, f"{key}_aug": AUGMENTED},
                                    models)
            else:
                columns = {f"{split} | Orig. Test Acc.": ORIGINAL, f"{split} | Aug. Test Acc.": AUGMENTED}
                bars += published_bars(cells, "Table 1", panel, columns, models)
            lines += [PlotLine(panel, test, cells.cell("Table 1", "Random Chance", f"{split} | {column}"))
                      for test, column in ((ORIGINAL, "Orig. Test Acc."), (AUGMENTED, "Aug. Test Acc."))]
    return bars, lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=MINI, help="the mini results folder to read (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=MINI, help="where to write the figure (default: %(default)s)")
    args = parser.parse_args(argv)
    bars, lines = key_figure_bars(args.results)
    paths = write_bar_figure(bars, lines, args.out / "key_figure.png", args.out / "key_figure_plot.csv", TITLE,
                             "accuracy (%)")
    print(f"Hard positives key figure: {paths['figure']} ({len(bars)} bars, plot {paths['plot']})")
    return 0


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
