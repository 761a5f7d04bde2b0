"""The Hard Positive Truth's key figure (papers/hard_positives/key_figure.py, the README's first figure) is drawn from
the committed mini results: original and augmented accuracy per split from table1.csv, the hatched bars from the
published Table 1."""
from __future__ import annotations

from key_figure_support import bar, cell, check_full, check_sources, drawn_full, redrawn_plot, write_full_table
from papers.hard_positives import key_figure as F


def test_key_figure_is_drawn_from_the_mini_results(tmp_path):
    plot = redrawn_plot(F, tmp_path)
    check_sources(plot, "hard_positives", {name: row for row, name in F.MODELS.items()},
                  {("Table 1", name): row for row, name in F.PUBLISHED_MODELS.items()})
    for split in F.SPLITS:
        panel = f"{split}, mini profile"
        for row, name in F.MODELS.items():
            assert bar(plot, panel, F.ORIGINAL, name) == cell(F.MINI / "table1.csv", row, f"{split.lower()}_orig")
            assert bar(plot, panel, F.AUGMENTED, name) == cell(F.MINI / "table1.csv", row, f"{split.lower()}_aug")
    assert bar(plot, "REPLACE, published", F.AUGMENTED, "DAC-LLM", published=True) == 48.9
    assert len(plot) == len(F.SPLITS) * 2 * (len(F.MODELS) + len(F.PUBLISHED_MODELS))


def test_full_key_figure_draws_the_rows_the_full_table_has(tmp_path):
    from papers.hard_positives.tables import TABLE1_FIELDS

    present = ["base", "base@fp32", "negclip", "negclip@quickgelu", "crepe-swap", "hn", "hp-hn"]  # no clip-ft
    table = write_full_table(tmp_path / "full" / "table1.csv", TABLE1_FIELDS, present)
    plot = drawn_full(F, tmp_path)
    check_full(plot, F, {"table1.csv": table})
    for split in F.SPLITS:
        panel = f"{split}, full profile"
        for row, name in F.FULL_MODELS.items():
            for test, column in ((F.ORIGINAL, f"{split.lower()}_orig"), (F.AUGMENTED, f"{split.lower()}_aug")):
                if row in present:
                    assert bar(plot, panel, test, name) == cell(table, row, column)
                else:
                    assert not [b for b in plot if b["panel"] == panel and b["series"] == name]
