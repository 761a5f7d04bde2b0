"""CoN-CLIP's key result redrawn from the mini profile: CC-Neg accuracy of CLIP, NegCLIP and CoN-CLIP (Table 3) and
their SugarCrepe accuracy per fold (the compositionality columns of Table 6), with the paper's numbers beside them.

The paper's claim is a contrast: CLIP near chance on a caption against its negation, CoN-CLIP near 100%, and
compositionality kept. The README shows it at a glance; the bars come from ``results/conclip/mini/table3.csv`` and
``sugarcrepe.csv`` (stage ``tables-mini``), the hatched ones from ``results/published/conclip.csv``.

Writes ``results/conclip/mini/key_figure.png`` and ``key_figure_plot.csv`` (every bar and its source).
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

from common.key_figure import PlotBar, PlotLine, published_bars, result_bars, write_bar_figure
from common.paths import PUBLISHED, RESULTS
from common.published import CellIndex, load_cells

MINI = RESULTS / "conclip" / "mini"
MODELS = {"clip": "CLIP", "negclip": "NegCLIP", "conclip": "CoN-CLIP"}
"""Rows of the mini tables (``row``) and the names the figure gives them: the mini family's CLIP (mini/xs-32k), ARO's
mini NegCLIP of it, and CoN-CLIP fine-tuned from it on the mini CC-Neg with L_conclip."""
CCNEG = "CC-Neg (Table 3)"
SUGARCREPE = "SugarCrepe by fold (Table 6's columns)"
PUBLISHED_TABLE3 = {"CLIP": "CLIP", "Neg-CLIP": "NegCLIP", "CoN-CLIP": "CoN-CLIP"}
FOLDS = {"sugarcrepe_replace": "Replace", "sugarcrepe_add": "Add", "sugarcrepe_swap": "Swap"}
PUBLISHED_FOLDS = {f"SugarCREPE R@1 | {fold}": fold for fold in FOLDS.values()}
TITLE = ("CoN-CLIP, mini profile: tiny CLIPs on the mini world (solid) beside the paper's ViT-B/32 numbers (hatched)\n"
         "CC-Neg: true caption vs its negation; SugarCrepe: true caption vs hard negative; dashed: chance")


def key_figure_bars(results: Path = MINI, published: Path = PUBLISHED) -> tuple[list[PlotBar], list[PlotLine]]:
    """The figure's bars (mini results, then the published ones of each panel) and its chance lines."""
    cells = CellIndex(load_cells("conclip", published))
    bars = [*result_bars(results / "table3.csv", CCNEG, {"ccneg": "CC-Neg accuracy"}, MODELS),
            *published_bars(cells, "Table 3", CCNEG, {"CC-Neg Accuracy": "CC-Neg accuracy"}, PUBLISHED_TABLE3),
            *result_bars(results / "sugarcrepe.csv", SUGARCREPE, FOLDS, MODELS),
            *published_bars(cells, "Table 6", SUGARCREPE, PUBLISHED_FOLDS, {"CC-Neg | L_conclip": "CoN-CLIP"})]
    lines = list(dict.fromkeys(PlotLine(bar.panel, bar.group, 50.0) for bar in bars))
    return bars, lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=MINI, help="the mini results folder to read (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=MINI, help="where to write the figure (default: %(default)s)")
    args = parser.parse_args(argv)
    bars, lines = key_figure_bars(args.results)
    paths = write_bar_figure(bars, lines, args.out / "key_figure.png", args.out / "key_figure_plot.csv", TITLE,
                             "accuracy (%)")
    print(f"CoN-CLIP key figure: {paths['figure']} ({len(bars)} bars, plot {paths['plot']})")
    return 0


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
