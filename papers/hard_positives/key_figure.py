"""The Hard Positive Truth's key result redrawn from a profile's results: accuracy on the original test (the caption c
against its hard negative c_n) and the augmented one (c and its hard positive c_p, each against c_n) on REPLACE and
SWAP, for CLIP before and after fine-tuning (Table 1), beside the paper's numbers.

Solid bars: the profile's ``table1.csv``; hatched: ``results/published/hard_positives.csv``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from common.paths import PUBLISHED
from common.reporting.key_figure import PlotBar, PlotLine, ProfileView, published_bars, result_bars, results_dir, run
from common.reporting.published import CellIndex, load_cells

PAPER = "hard_positives"
MINI = results_dir(PAPER, "mini")
MODELS = {"base": "CLIP", "clip-ft": "CLIP fine-tuned", "hn": "Our HN", "hp-hn": "Our HP+HN"}
FULL_MODELS = {"base": "CLIP", "negclip": "NegCLIP", "clip-ft": "CLIP fine-tuned", "hn": "Our HN",
               "hp-hn": "Our HP+HN"}
"""Rows of the full Table 1, each in the authors' configuration: ``hard_positives.full.models``' and the runs."""
PUBLISHED_MODELS = {"CLIP ViT-B/32": "CLIP", "NegCLIP": "NegCLIP", "DAC-LLM": "DAC-LLM", "Our HN": "Our HN",
                    "Our HP+HN": "Our HP+HN"}
ORIGINAL, AUGMENTED = "original test: c vs c_n", "augmented: c and c_p vs c_n"
SPLITS = ("REPLACE", "SWAP")
SECOND_LINE = "accuracy without and with hard positives c_p; dashed: chance (the paper's Random Chance row)"
VIEWS = {
    "mini": ProfileView(MODELS, "mini profile", "The Hard Positive Truth, mini profile (top: tiny CLIPs on the mini "
                        f"world) beside the paper (bottom, hatched: ViT-B/32 CLIPs, Table 1)\n{SECOND_LINE}"),
    "full": ProfileView(FULL_MODELS, "full profile", "The Hard Positive Truth, full profile (top: ViT-B/32 CLIPs on "
                        "the released REPLACE and SWAP) beside the paper (bottom, hatched: Table 1)\n" + SECOND_LINE,
                        absent_rows=True)}


def key_figure_bars(results: Path = MINI, published: Path = PUBLISHED, profile: str = "mini"
                    ) -> tuple[list[PlotBar], list[PlotLine]]:
    """The figure's bars (the profile's Table 1 per split, then the published one per split) and chance per test."""
    view = VIEWS[profile]
    cells = CellIndex(load_cells(PAPER, published))
    bars: list[PlotBar] = []
    for split in SPLITS:
        columns = {f"{split.lower()}_orig": ORIGINAL, f"{split.lower()}_aug": AUGMENTED}
        bars += result_bars(results / "table1.csv", f"{split}, {view.label}", columns, view.models,
                            absent_rows=view.absent_rows)
    for split in SPLITS:
        columns = {f"{split} | Orig. Test Acc.": ORIGINAL, f"{split} | Aug. Test Acc.": AUGMENTED}
        bars += published_bars(cells, "Table 1", f"{split}, published", columns, PUBLISHED_MODELS)
    lines = [PlotLine(f"{split}, {source}", test, cells.cell("Table 1", "Random Chance", f"{split} | {column}"))
             for source in (view.label, "published") for split in SPLITS
             for test, column in ((ORIGINAL, "Orig. Test Acc."), (AUGMENTED, "Aug. Test Acc."))]
    return bars, lines


def main(argv: Sequence[str] | None = None) -> int:
    return run(argv, __spec__.name, __doc__, PAPER, "Hard positives", key_figure_bars, VIEWS, "accuracy (%)")


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
