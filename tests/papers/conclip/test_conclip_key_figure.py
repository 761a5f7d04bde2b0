"""CoN-CLIP's key figure (papers/conclip/key_figure.py, the README's first figure) is drawn from the committed mini
results: CC-Neg from table3.csv, the SugarCrepe folds from sugarcrepe.csv, the hatched bars from the published
Tables 3 and 6."""
from __future__ import annotations

from key_figure_support import bar, cell, check_full, check_sources, drawn_full, redrawn_plot, write_full_table
from papers.conclip import key_figure as F


def test_key_figure_is_drawn_from_the_mini_results(tmp_path):
    plot = redrawn_plot(F, tmp_path)
    check_sources(plot, "conclip", {name: row for row, name in F.MODELS.items()},
                  {("Table 3", name): row for row, name in F.PUBLISHED_TABLE3.items()}
                  | {("Table 6", "CoN-CLIP"): "CC-Neg | L_conclip"})
    for row, name in F.MODELS.items():
        assert bar(plot, F.CCNEG, "CC-Neg accuracy", name) == cell(F.MINI / "table3.csv", row, "ccneg")
        for column, fold in F.FOLDS.items():
            assert bar(plot, F.SUGARCREPE, fold, name) == cell(F.MINI / "sugarcrepe.csv", row, column)
    assert bar(plot, F.CCNEG, "CC-Neg accuracy", "CoN-CLIP", published=True) == 99.70
    assert len(plot) == len(F.MODELS) * (1 + len(F.FOLDS)) + 3 + len(F.FOLDS)


def test_full_key_figure_draws_the_rows_the_full_tables_have(tmp_path):
    from papers.conclip.columns import SUGARCREPE_FIELDS
    from papers.conclip.tables import FILES

    table3 = write_full_table(tmp_path / "full" / "table3.csv", FILES["full"].table3_fields,
                              ["clip", "negclip", "blip", "conclip", "ft-conclip"])
    sugarcrepe = write_full_table(tmp_path / "full" / "sugarcrepe.csv", SUGARCREPE_FIELDS,
                                  ["clip", "conclip", "clip-l14"])  # conclip.full.sugarcrepe_rows has no NegCLIP
    plot = drawn_full(F, tmp_path)
    check_full(plot, F, {"table3.csv": table3, "sugarcrepe.csv": sugarcrepe})
    for row, name in F.FULL_MODELS.items():
        assert bar(plot, F.CCNEG, "CC-Neg accuracy", name) == cell(table3, row, "ccneg")
        for column, fold in F.FOLDS.items():
            drawn = [b for b in plot if (b["panel"], b["group"], b["series"]) == (F.SUGARCREPE, fold, name)
                     and not b["source"].startswith("published: ")]
            assert [float(b["value"]) for b in drawn] == ([cell(sugarcrepe, row, column)]
                                                          if row in ("clip", "conclip") else [])
