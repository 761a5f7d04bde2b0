"""CoN-CLIP's key result redrawn from a profile's results: CC-Neg accuracy of CLIP, NegCLIP and CoN-CLIP (Table 3) and
their SugarCrepe accuracy per fold (the compositionality columns of Table 6), with the paper's numbers beside them.

The paper's claim is a contrast: CLIP near chance on a caption against its negation, CoN-CLIP near 100%, and
compositionality kept. Stage ``key-figure`` (the README's stage table).
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from common.paths import PUBLISHED
from common.reporting.key_figure import PlotBar, PlotLine, ProfileView, published_bars, result_bars, results_dir, run
from common.reporting.published import CellIndex, load_cells

PAPER = "conclip"
MINI = results_dir(PAPER, "mini")
MODELS = {"clip": "CLIP", "negclip": "NegCLIP", "conclip": "CoN-CLIP"}
"""Rows of the mini tables and the figure's names: mini/xs-32k, ARO's mini NegCLIP of it, its L_conclip fine-tune."""
FULL_MODELS = {**MODELS, "ft-conclip": "CoN-CLIP (trained here)"}
"""Rows of the full tables (``conclip.full.models``; SugarCrepe's: ``conclip.full.sugarcrepe_rows``, no NegCLIP)."""
CCNEG = "CC-Neg (Table 3)"
SUGARCREPE = "SugarCrepe by fold (Table 6's columns)"
PUBLISHED_TABLE3 = {"CLIP": "CLIP", "Neg-CLIP": "NegCLIP", "CoN-CLIP": "CoN-CLIP"}
FOLDS = {"sugarcrepe_replace": "Replace", "sugarcrepe_add": "Add", "sugarcrepe_swap": "Swap"}
PUBLISHED_FOLDS = {f"SugarCREPE R@1 | {fold}": fold for fold in FOLDS.values()}
SECOND_LINE = "CC-Neg: true caption vs its negation; SugarCrepe: true caption vs hard negative; dashed: chance"
VIEWS = {
    "mini": ProfileView(MODELS, "mini profile", "CoN-CLIP, mini profile: tiny CLIPs on the mini world (solid) beside "
                        f"the paper's ViT-B/32 numbers (hatched)\n{SECOND_LINE}"),
    "full": ProfileView(FULL_MODELS, "full profile", "CoN-CLIP, full profile: ViT-B/32 CLIPs on CC-Neg's evaluation "
                        f"split and SugarCrepe (solid) beside the paper's numbers (hatched)\n{SECOND_LINE}",
                        absent_rows=True)}


def key_figure_bars(results: Path = MINI, published: Path = PUBLISHED, profile: str = "mini"
                    ) -> tuple[list[PlotBar], list[PlotLine]]:
    """The figure's bars (the profile's results, then the published ones of each panel) and its chance lines."""
    view = VIEWS[profile]
    cells = CellIndex(load_cells(PAPER, published))
    bars = [*result_bars(results / "table3.csv", CCNEG, {"ccneg": "CC-Neg accuracy"}, view.models,
                         absent_rows=view.absent_rows),
            *published_bars(cells, "Table 3", CCNEG, {"CC-Neg Accuracy": "CC-Neg accuracy"}, PUBLISHED_TABLE3),
            *result_bars(results / "sugarcrepe.csv", SUGARCREPE, FOLDS, view.models, absent_rows=view.absent_rows),
            *published_bars(cells, "Table 6", SUGARCREPE, PUBLISHED_FOLDS, {"CC-Neg | L_conclip": "CoN-CLIP"})]
    lines = list(dict.fromkeys(PlotLine(bar.panel, bar.group, 50.0) for bar in bars))
    return bars, lines


def main(argv: Sequence[str] | None = None) -> int:
    return run(argv, __spec__.name, __doc__, PAPER, "CoN-CLIP", key_figure_bars, VIEWS, "accuracy (%)")


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
