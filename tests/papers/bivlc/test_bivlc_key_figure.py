"""BiVLC's key figure (papers/bivlc/key_figure.py, the README's first figure) is drawn from the committed mini
results: SugarCrepe, I2T, T2I and group from table2.csv, the hatched bars from the published Tables 2-3."""
from __future__ import annotations

from key_figure_support import bar, cell, check_full, check_sources, drawn_full, redrawn_plot, write_full_table
from papers.bivlc import key_figure as F


def test_key_figure_is_drawn_from_the_mini_results(tmp_path):
    plot = redrawn_plot(F, tmp_path)
    check_sources(plot, "bivlc", {name: row for row, name in F.MODELS.items()},
                  {("Table 3", name): row for row, name in F.PUBLISHED_MODELS.items()} | {("Table 2", "Human"): "Human"})
    for row, name in F.MODELS.items():
        for column, group in F.COLUMNS.items():
            assert bar(plot, F.VIEWS["mini"].label, group, name) == cell(F.MINI / "table2.csv", row, column)
    assert bar(plot, F.PUBLISHED_PANEL, "T2I", "Human", published=True) == 93.00
    assert len(plot) == len(F.COLUMNS) * (2 * len(F.MODELS) + 1)


def test_full_key_figure_draws_the_rows_the_full_table_has(tmp_path):
    from papers.bivlc.tables import TABLE2_FIELDS

    present = ["clip", "negclip", "clip-coco", "ft-trohn-img", "trohn-text"]  # no trohn-img, no ft-clip-coco
    table = write_full_table(tmp_path / "full" / "table2.csv", TABLE2_FIELDS, present)
    plot = drawn_full(F, tmp_path)
    check_full(plot, F, {"table2.csv": table})
    panel = F.VIEWS["full"].label
    for row, name in F.FULL_MODELS.items():
        for column, group in F.COLUMNS.items():
            if row in present:
                assert bar(plot, panel, group, name) == cell(table, row, column)
            else:
                assert not [b for b in plot if b["panel"] == panel and b["series"] == name]
    assert {b["panel"] for b in plot} == {panel, F.PUBLISHED_PANEL}
