"""BiVLC's key result redrawn from the mini profile: SugarCrepe, image-to-text (I2T), text-to-image (T2I) and group
scores of CLIP, NegCLIP and the COCO and TROHN-Img fine-tunes (Tables 2-3), beside the paper's models and humans.

The paper is about a gap: models are much worse at T2I than at I2T, humans are not (Finding 1), and BiVLC's group
score leaves models far below humans. The README shows it at a glance; the solid bars come from
``results/bivlc/mini/table2.csv`` (stage ``tables-mini``), the hatched ones from ``results/published/bivlc.csv``.

Writes ``results/bivlc/mini/key_figure.png`` and ``key_figure_plot.csv`` (every bar and its source).
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

from common.key_figure import PlotBar, PlotLine, published_bars, result_bars, write_bar_figure
from common.paths import PUBLISHED, RESULTS
from common.published import CellIndex, load_cells

MINI = RESULTS / "bivlc" / "mini"
MODELS = {"clip": "CLIP", "negclip": "NegCLIP", "clip-coco": "CLIP_COCO", "trohn-img": "CLIP_TROHN-Img"}
"""Rows of the mini Table 2 (``row``) and the names the figure gives them: the mini family's CLIP (mini/xs-32k),
ARO's mini NegCLIP of it, and its fine-tunes on the mini COCO with in-batch negatives and with TROHN-Img's."""
COLUMNS = {"sugarcrepe": "SugarCrepe", "I2T": "I2T", "T2I": "T2I", "group": "group"}
PUBLISHED_COLUMNS = {"SugarCrepe": "SugarCrepe", "BiVLC | I2T": "I2T", "BiVLC | T2I": "T2I", "BiVLC | Group": "group"}
PUBLISHED_MODELS = {"CLIP": "CLIP", "NegCLIP": "NegCLIP", "CLIPCOCO": "CLIP_COCO", "CLIPTROHN-Img": "CLIP_TROHN-Img"}
"""Table 3's rows (the fine-tunes are there; its CLIP, NegCLIP and CLIP_COCO rows repeat Table 2's)."""
MINI_PANEL = "mini profile: tiny CLIPs on the mini world's BiVLC"
PUBLISHED_PANEL = "published: ViT-B/32 CLIPs on BiVLC (Tables 2-3), humans (Table 2)"
TITLE = ("BiVLC, mini profile (left) beside the paper (right, hatched): image-to-text (I2T) vs text-to-image (T2I) "
         "retrieval\ngroup: both directions right for an instance; dashed: chance (the paper's Random row)")


def key_figure_bars(results: Path = MINI, published: Path = PUBLISHED) -> tuple[list[PlotBar], list[PlotLine]]:
    """The figure's bars (the mini Table 2's models, then the published ones and humans) and chance per metric."""
    cells = CellIndex(load_cells("bivlc", published))
    bars = [*result_bars(results / "table2.csv", MINI_PANEL, COLUMNS, MODELS),
            *published_bars(cells, "Table 3", PUBLISHED_PANEL, PUBLISHED_COLUMNS, PUBLISHED_MODELS),
            *published_bars(cells, "Table 2", PUBLISHED_PANEL, PUBLISHED_COLUMNS, {"Human": "Human"})]
    chance = {group: cells.cell("Table 2", "Random", column) for column, group in PUBLISHED_COLUMNS.items()}
    lines = [PlotLine(panel, group, value) for panel in (MINI_PANEL, PUBLISHED_PANEL)
             for group, value in chance.items()]
    return bars, lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=MINI, help="the mini results folder to read (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=MINI, help="where to write the figure (default: %(default)s)")
    args = parser.parse_args(argv)
    bars, lines = key_figure_bars(args.results)
    paths = write_bar_figure(bars, lines, args.out / "key_figure.png", args.out / "key_figure_plot.csv", TITLE,
                             "score (%)")
    print(f"BiVLC key figure: {paths['figure']} ({len(bars)} bars, plot {paths['plot']})")
    return 0


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
