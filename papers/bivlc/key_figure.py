"""BiVLC's key result redrawn from a profile's results: SugarCrepe, image-to-text (I2T), text-to-image (T2I) and group
scores of CLIP, NegCLIP and the COCO and TROHN-Img fine-tunes (Tables 2-3), beside the paper's models and humans.

The paper is about a gap: models are much worse at T2I than at I2T, humans are not (Finding 1), and BiVLC's group
score leaves models far below humans. The README shows it at a glance; the solid bars come from
``results/bivlc/<profile>/table2.csv`` (stage ``tables-mini`` or ``tables-full``), the hatched ones from
``results/published/bivlc.csv``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from common.paths import PUBLISHED
from common.reporting.key_figure import PlotBar, PlotLine, ProfileView, published_bars, result_bars, results_dir, run
from common.reporting.published import CellIndex, load_cells

PAPER = "bivlc"
MINI = results_dir(PAPER, "mini")
MODELS = {"clip": "CLIP", "negclip": "NegCLIP", "clip-coco": "CLIP_COCO", "trohn-img": "CLIP_TROHN-Img"}
"""Rows of the mini Table 2 (``row``) and the names the figure gives them: the mini family's CLIP (mini/xs-32k),
ARO's mini NegCLIP of it, and its fine-tunes on the mini COCO with in-batch negatives and with TROHN-Img's."""
FULL_MODELS = {**MODELS, "ft-clip-coco": "CLIP_COCO (trained here)", "ft-trohn-img": "CLIP_TROHN-Img (trained here)"}
"""Rows of the full Table 2 (``bivlc.full.models``): OpenAI's ViT-B/32, ARO's NegCLIP, the authors' released
fine-tunes, and this workspace's re-trainings of the two."""
COLUMNS = {"sugarcrepe": "SugarCrepe", "I2T": "I2T", "T2I": "T2I", "group": "group"}
PUBLISHED_COLUMNS = {"SugarCrepe": "SugarCrepe", "BiVLC | I2T": "I2T", "BiVLC | T2I": "T2I", "BiVLC | Group": "group"}
PUBLISHED_MODELS = {"CLIP": "CLIP", "NegCLIP": "NegCLIP", "CLIPCOCO": "CLIP_COCO", "CLIPTROHN-Img": "CLIP_TROHN-Img"}
"""Table 3's rows (the fine-tunes are there; its CLIP, NegCLIP and CLIP_COCO rows repeat Table 2's)."""
PUBLISHED_PANEL = "published: ViT-B/32 CLIPs on BiVLC (Tables 2-3), humans (Table 2)"
TITLE = ("BiVLC, {} profile (left) beside the paper (right, hatched): image-to-text (I2T) vs text-to-image (T2I) "
         "retrieval\ngroup: both directions right for an instance; dashed: chance (the paper's Random row)")
VIEWS = {
    "mini": ProfileView(MODELS, "mini profile: tiny CLIPs on the mini world's BiVLC", TITLE.format("mini")),
    "full": ProfileView(FULL_MODELS, "full profile: ViT-B/32 CLIPs on BiVLC's test split", TITLE.format("full"),
                        absent_rows=True)}


def key_figure_bars(results: Path = MINI, published: Path = PUBLISHED, profile: str = "mini"
                    ) -> tuple[list[PlotBar], list[PlotLine]]:
    """The figure's bars (the profile's Table 2 models, then the published ones and humans) and chance per metric."""
    view = VIEWS[profile]
    cells = CellIndex(load_cells(PAPER, published))
    bars = [*result_bars(results / "table2.csv", view.label, COLUMNS, view.models, absent_rows=view.absent_rows),
            *published_bars(cells, "Table 3", PUBLISHED_PANEL, PUBLISHED_COLUMNS, PUBLISHED_MODELS),
            *published_bars(cells, "Table 2", PUBLISHED_PANEL, PUBLISHED_COLUMNS, {"Human": "Human"})]
    chance = {group: cells.cell("Table 2", "Random", column) for column, group in PUBLISHED_COLUMNS.items()}
    lines = [PlotLine(panel, group, value) for panel in (view.label, PUBLISHED_PANEL)
             for group, value in chance.items()]
    return bars, lines


def main(argv: Sequence[str] | None = None) -> int:
    return run(argv, __spec__.name, __doc__, PAPER, "BiVLC", key_figure_bars, VIEWS, "score (%)")


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
