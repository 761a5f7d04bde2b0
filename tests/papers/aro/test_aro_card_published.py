"""ARO's published rows on the card (issue 48): its tables put a model in each column (Tables 2 and 6) or in each
row of a dataset's block (Table 5); the card reads them a row per model, keyed by the card's own numbers, and shows
them beside the card's numbers, like-for-like only under the full profile."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from common.card.core import Measure, estimate
from common.card.published import MODEL, PublishedCells, PublishedColumns, published_rows
from common.card.report import published_markdown
from papers.aro.card import published

KEYS = {"aro/vg_relation", "aro/vg_relation_micro", "aro/vg_attribution", "aro/order_coco", "aro/order_flickr30k"}


def _by_source(keys=KEYS) -> dict[str, dict[str, dict[str, float]]]:
    out: dict[str, dict[str, dict[str, float]]] = {}
    for row in published_rows(published(), keys):
        assert row["paper"] == "aro" and row["row"] not in out.get(row["source"], {})  # one row per model
        out.setdefault(row["source"], {})[row["row"]] = row["values"]
    return out


def test_each_table_becomes_a_row_per_model_in_percent():
    rows = _by_source()
    assert list(rows) == ["ARO Table 2", "ARO Table 5", "ARO Table 6"]
    # Table 2's Accuracy row, a column per model; the empty "# Samples" cell is no model
    assert rows["ARO Table 2"] == {"CLIP": {"aro/vg_relation": 59.0}, "NegCLIP": {"aro/vg_relation": 80.0},
                                   "CLIP-FT": {"aro/vg_relation": 64.0}, "XVLM": {"aro/vg_relation": 73.0},
                                   "BLIP": {"aro/vg_relation": 59.0}, "Flava": {"aro/vg_relation": 24.0}}
    # Table 5: "COCO-PRC | CLIP", column Accuracy (its "Accuracy | std" column is not a card number)
    assert rows["ARO Table 5"]["CLIP"] == {"aro/order_flickr30k": 59.5, "aro/order_coco": 46.0}
    assert rows["ARO Table 5"]["Flava"] == {"aro/order_flickr30k": 12.9, "aro/order_coco": 3.9}
    assert set(rows["ARO Table 5"]) == {"BLIP", "CLIP", "Flava", "XVLM", "Chance-level"}
    # Table 6's compositional rows for its three models (its downstream rows are not card numbers)
    assert rows["ARO Table 6"]["NegCLIP"] == {"aro/vg_relation": 81.0, "aro/vg_attribution": 71.0,
                                              "aro/order_flickr30k": 91.0, "aro/order_coco": 86.0}
    assert set(rows["ARO Table 6"]) == {"CLIP", "CLIP-FT", "NegCLIP"}


def test_only_the_numbers_the_card_computed_are_read():
    rows = _by_source({"aro/order_coco"})
    assert list(rows) == ["ARO Table 5", "ARO Table 6"]
    assert all(set(values) == {"aro/order_coco"} for table in rows.values() for values in table.values())
    assert published_rows(published(), {"sugarcrepe/average"}) == []


def test_a_column_per_number_and_a_column_per_model_read_alike():
    """SugarCrepe's layout (a row per model) through ``PublishedColumns`` and through ``PublishedCells``: the same
    rows; the model pattern takes the name literally ("OpenAI | ViT-B-32" holds regex characters)."""
    columns = PublishedColumns("sugarcrepe", "Table 6", "t", {"sugarcrepe/swap_obj": "SWAP | Object"})
    cells = PublishedCells("sugarcrepe", "Table 6", "t", {"sugarcrepe/swap_obj": (MODEL, "SWAP | Object")})
    by_columns = published_rows([columns], {"sugarcrepe/swap_obj"})
    assert by_columns == published_rows([cells], {"sugarcrepe/swap_obj"}) and len(by_columns) > 10
    assert "OpenAI | ViT-B-32" in {r["row"] for r in by_columns}
    literal = PublishedCells("sugarcrepe", "Table 6", "t", {"sugarcrepe/swap_obj": (MODEL, "SWAP . Object")})
    assert published_rows([literal], {"sugarcrepe/swap_obj"}) == []


def _card(profile: str):
    measures = [Measure(key, "ARO", metric, "rule", ("a", "b", "c", "d"), np.array([1.0, 1.0, 0.0, 1.0]))
                for key, metric in (("aro/vg_relation", "VG-Relation (macro)"), ("aro/order_coco", "COCO-Order"))]
    return SimpleNamespace(model=SimpleNamespace(spec_text="openai/ViT-B-32"), profile=profile, measures=measures,
                           estimates={m.key: estimate(m, n_resamples=10) for m in measures},
                           provenance={"rehearsal": False},
                           published=published_rows(published(), {m.key for m in measures}))


def test_the_card_shows_them_beside_its_numbers_like_for_like_under_the_full_profile():
    text = "\n".join(published_markdown(_card("full")))
    assert "\n\nLike-for-like: " in text
    assert "ARO Table 2 (results/published/aro.csv):" in text and "ARO Table 5 (results/published/aro.csv):" in text
    assert "| **openai/ViT-B-32** (this card, full profile) | 75.0 | 75.0 |" in text  # Table 6: both numbers
    assert "| XVLM (published) | 73.0 |" in text and "| Flava (published) | 3.9 |" in text
    assert "| NegCLIP (published) | 81.0 | 86.0 |" in text
    assert "\n\nNot comparable: " in "\n".join(published_markdown(_card("mini")))
