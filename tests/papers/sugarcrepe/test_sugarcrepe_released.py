"""SugarCrepe numbers recomputed from released artifacts (``papers.sugarcrepe.released``).

Unit tests run on fixtures written here (GPT-4V answer files, an open_clip-style results CSV) with
hand-computed expectations; the last tests run on the real released files through the downloader and the
shared mirror (skipped without it) and pin the values computed here. Verdicts are left to the audit.
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from common.audit.core import CLAIM_TABLE, AuditError, audit_rows
from common.benchmarks.caption_negatives import CATEGORIES
from papers.sugarcrepe import released as rs
from papers.sugarcrepe.released import (
    GPT4VScore, ModelRef, draw_figure5, figure5_correlations, figure5_recomputed, gpt4v_recomputed, gpt4v_scores,
    imagenet_top1, match_models, parse_choice, pearson_r, score_gpt4v_file, table2_recomputed)


# ---------------------------------------------------------------------------------------------------------
# GPT-4V answers
# ---------------------------------------------------------------------------------------------------------
def _example(answer: str, correct: bool | None = None) -> dict:
    rec = {"answer": {"free_form_answer": answer, "multiple_choice_answer": ""},
           "caption": "a dog on a sofa", "negative_caption": "a sofa on a dog", "filename": "000000000001.jpg"}
    if correct is not None:
        rec["correct"] = correct
    return rec


@pytest.fixture
def gpt4v_files(tmp_path) -> dict[tuple[str, str], Path]:
    # positive-first: the positive caption is option (1).
    pos = {
        "0": _example("(1)", True),                    # correct
        "1": _example("Output (1).", True),            # correct
        "2": _example("(2)", False),                   # wrong
        "3": _example("Neither (1) nor (2)", False),   # unparseable -> wrong
        "4": _example("I cannot tell from this image.", True),  # unparseable -> wrong (flag disagrees on purpose)
        "accuracy": 0.4,                               # a summary entry, not an example
    }
    # negative-first: the positive caption is option (2).
    neg = {
        "0": _example("(2)"),                          # correct
        "1": _example("(2) a dog on a sofa"),          # correct
        "2": _example("(1)"),                          # wrong
        "3": _example("Output (1) or (2)."),           # unparseable -> wrong
    }
    paths = {}
    for setting, data in (("positive-first", pos), ("negative-first", neg)):
        p = tmp_path / setting / "gpt4v-swap_obj.json"
        p.parent.mkdir()
        p.write_text(json.dumps(data), encoding="utf-8")
        paths[(setting, "swap_obj")] = p
    return paths


def test_parse_choice():
    assert parse_choice("(1)") == 1
    assert parse_choice("Output (2).") == 2
    assert parse_choice("The correct caption for this image is: (2) A grilled sandwich") == 2
    assert parse_choice("Neither (1) nor (2)") is None
    assert parse_choice("None of the captions describe the image.") is None
    assert parse_choice("") is None


def test_score_gpt4v_file_counts_unparseable_as_wrong(gpt4v_files):
    pos = score_gpt4v_file(gpt4v_files[("positive-first", "swap_obj")], "positive-first", "swap_obj")
    assert (pos.total, pos.correct, pos.unparseable) == (5, 2, 2)
    assert pos.accuracy == pytest.approx(0.4)
    assert pos.skipped == ("accuracy",)
    assert (pos.flags_checked, pos.flag_disagreements) == (5, 1)
    assert pos.ids == frozenset({"0", "1", "2", "3", "4"})
    neg = score_gpt4v_file(gpt4v_files[("negative-first", "swap_obj")], "negative-first", "swap_obj")
    assert (neg.total, neg.correct, neg.unparseable) == (4, 2, 1)
    assert neg.flags_checked == 0


def test_score_gpt4v_file_rejects_bad_input(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ValueError):
        score_gpt4v_file(bad, "positive-first", "swap_obj")
    with pytest.raises(ValueError):
        score_gpt4v_file(bad, "sideways", "swap_obj")


def test_score_gpt4v_file_refuses_a_repeated_id_and_a_bottomless_file(tmp_path):
    """JSON keeps the last of two equal keys: a repeated example id would silently drop an answer from the score."""
    twice = tmp_path / "gpt4v-swap_obj.json"
    record = '{"caption": "a", "negative_caption": "b", "gpt4v_answer": "A"}'
    twice.write_text(f'{{"7": {record}, "7": {record}}}', encoding="utf-8")
    with pytest.raises(AuditError, match=r"gpt4v-swap_obj.json: duplicate key '7'.*GPT-4V answers"):
        score_gpt4v_file(twice, "positive-first", "swap_obj")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with pytest.raises(AuditError, match=r"deep.json: nested too deeply"):
        score_gpt4v_file(deep, "positive-first", "swap_obj")


def test_gpt4v_recomputed_maps_table6_and_readme(gpt4v_files):
    scores = gpt4v_scores(gpt4v_files)
    recs = {r.key: r for r in gpt4v_recomputed(scores)}
    # Table 6 = 100 * mean(2/5, 2/4) = 45.0
    t6 = recs[("Table 6", "OpenAI | GPT-4V", "SWAP | Object")]
    assert t6.value == pytest.approx(45.0) and t6.unit == "percent" and t6.tolerance_rule == "exact"
    assert "unparseable" in t6.note
    assert recs[("GPT-4V readme", "positive-first", "swap_obj")].value == pytest.approx(0.4)
    assert recs[("GPT-4V readme", "positive-first", "swap_obj | correct")].value == 2
    assert recs[("GPT-4V readme", "negative-first", "swap_obj | total")].value == 4
    assert recs[("GPT-4V readme", "negative-first", "swap_obj")].unit == "fraction"
    assert ("Table 6", "OpenAI | GPT-4V", "Average") not in recs  # needs all seven categories
    assert all(r.profile == "released" and r.paper == "sugarcrepe" for r in recs.values())


def test_gpt4v_average_is_mean_of_category_means():
    scores = {}
    for i, c in enumerate(CATEGORIES):
        # positive-first i+1 of i+2, negative-first 1 of 1 -> category mean ((i+1)/(i+2) + 1) / 2
        scores[("positive-first", c)] = GPT4VScore("positive-first", c, i + 2, i + 1, 0, frozenset())
        scores[("negative-first", c)] = GPT4VScore("negative-first", c, 1, 1, 0, frozenset())
    recs = {r.key: r.value for r in gpt4v_recomputed(scores)}
    expected = 100 * sum(((i + 1) / (i + 2) + 1) / 2 for i in range(7)) / 7
    assert recs[("Table 6", "OpenAI | GPT-4V", "Average")] == pytest.approx(expected)
    assert recs[("Table 6", "OpenAI | GPT-4V", "REPLACE | Object")] == pytest.approx(75.0)


# ---------------------------------------------------------------------------------------------------------
# Figure 5
# ---------------------------------------------------------------------------------------------------------
@pytest.fixture
def results_csv(tmp_path) -> Path:
    p = tmp_path / "openclip_results.csv"
    p.write_text(
        "name,pretrained,params (M),ImageNet 1k,Caltech-101\n"
        "RN50-quickgelu,openai,102,0.1000,0.5\n"      # listed only under the -quickgelu name
        "ViT-B-32,openai,151,0.2000,0.5\n"
        "ViT-B-32-quickgelu,openai,151,0.2000,0.5\n"  # the same checkpoint's twin row
        "ViT-L-14,laion2b_x,428,0.3000,0.5\n"
        "ViT-H-14,tag_h,986,0.4000,0.5\n"
        "ViT-H-14,other_tag,986,0.9000,0.5\n",        # same arch, other tag: must not match
        encoding="utf-8",
    )
    return p


MODELS = [ModelRef("OpenAI | RN50", "RN50", "openai"), ModelRef("OpenAI | ViT-B-32", "ViT-B-32", "openai"),
          ModelRef("LAION | ViT-L-14", "ViT-L-14", "laion2b_x"), ModelRef("LAION | ViT-H-14", "ViT-H-14", "tag_h"),
          ModelRef("LAION | ViT-g-14", "ViT-g-14", "absent_tag")]
ROWS = [m.row for m in MODELS[:4]]
# Hand computation for y = (10, 20, 30, 50) against x = (0.1, 0.2, 0.3, 0.4):
#   dx = (-.15, -.05, .05, .15), dy = (-17.5, -7.5, 2.5, 22.5)
#   sum dx*dy = 2.625 + .375 + .125 + 3.375 = 6.5; sum dx^2 = .05; sum dy^2 = 875
#   r = 6.5 / sqrt(.05 * 875) = 6.5 / 6.614378... = 0.982708...
R_HAND = 6.5 / math.sqrt(0.05 * 875)


def _table6(ys_by_column: dict[str, list[float]]) -> dict[tuple[str, str], float]:
    out = {(row, col): y for col, ys in ys_by_column.items() for row, y in zip(ROWS, ys)}
    out[("LAION | ViT-g-14", "SWAP | Object")] = 99.0  # has a value but no ImageNet number: left out
    return out


def test_imagenet_top1_and_matching(results_csv):
    imagenet = imagenet_top1(results_csv)
    assert imagenet[("ViT-H-14", "tag_h")] == 0.4
    matches = match_models(imagenet, MODELS)
    how = {m.model.row: (m.csv_name, m.how, m.imagenet) for m in matches}
    assert how["OpenAI | RN50"] == ("RN50-quickgelu", "quickgelu alias", 0.1)
    assert how["OpenAI | ViT-B-32"] == ("ViT-B-32", "exact", 0.2)
    assert how["LAION | ViT-H-14"] == ("ViT-H-14", "exact", 0.4)
    assert how["LAION | ViT-g-14"] == (None, "missing", None)
    twins = {m.model.row: m.also_listed_as for m in matches}
    assert twins["OpenAI | ViT-B-32"] == ("ViT-B-32-quickgelu",)


def test_pearson_r_hand_computed():
    assert pearson_r([0.1, 0.2, 0.3, 0.4], [10, 20, 30, 50]) == pytest.approx(R_HAND, abs=1e-12)
    assert R_HAND == pytest.approx(0.982708, abs=1e-6)
    assert pearson_r([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert math.isnan(pearson_r([1, 2], [1, 2]))
    assert math.isnan(pearson_r([1, 1, 1], [1, 2, 3]))


def test_figure5_correlations_and_claims(results_csv, tmp_path):
    matches = match_models(imagenet_top1(results_csv), MODELS)
    up = [1.0, 2.0, 3.0, 4.0]
    table6 = _table6({
        "REPLACE | Object": up, "REPLACE | Attribute": up, "REPLACE | Relation": up,
        "SWAP | Object": [10, 20, 30, 50], "SWAP | Attribute": [10, 20, 30, 50],
        "ADD | Object": up, "ADD | Attribute": [4.0, 3.0, 2.0, 1.0],
    })
    rs_ = figure5_correlations(matches, table6)
    assert rs_["swap_obj"] == pytest.approx(R_HAND)
    assert rs_["replace_obj"] == pytest.approx(1.0)
    assert rs_["add_att"] == pytest.approx(-1.0)
    recs = {r.row: r for r in figure5_recomputed(matches, table6, "fixture")}
    assert recs["sec5.3_r_swap_obj"].value == pytest.approx(R_HAND)
    assert recs["sec5.3_r_add_att"].value == pytest.approx(-1.0)
    assert recs["sec5.3_r_others_gt_0.8"].value == pytest.approx(R_HAND)  # min over the other five (SWAP-Att)
    assert all(r.table == CLAIM_TABLE and r.column == "value" and r.tolerance_rule == "claim" for r in recs.values())
    assert "LAION | ViT-g-14" in recs["sec5.3_r_others_gt_0.8"].note  # the missing model is reported

    out = draw_figure5(tmp_path / "fig" / "figure5.png", matches, table6)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(os.listdir(out.parent)) == ["figure5.png"]  # atomic: no temporary file left behind


def test_table2_recomputed():
    counts = {c: i + 1 for i, c in enumerate(CATEGORIES)}
    recs = {r.key: r for r in table2_recomputed(counts, "fixture", {"swap_obj": "one example missing"})}
    assert recs[("Table 2", "# negative captions", "SWAP | Object")].value == 4
    assert "one example missing" in recs[("Table 2", "# negative captions", "SWAP | Object")].note
    assert recs[(CLAIM_TABLE, "sec4.2_total_examples", "value")].value == 28
    partial = table2_recomputed({"swap_obj": 3}, "fixture")
    assert [r.key[0] for r in partial] == ["Table 2"]  # no total without all seven categories


# ---------------------------------------------------------------------------------------------------------
# The released files (shared mirror, through the downloader)
# ---------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def released(released_env):
    recs = rs.recompute()
    matches, table6, _ = rs.figure5_inputs()
    scores = gpt4v_scores()
    return {r.key: r for r in recs}, matches, table6, scores


GPT4V_COUNTS = {  # (positive-first correct, negative-first correct, total)
    "replace_obj": (1578, 1604, 1652), "replace_att": (734, 740, 788), "replace_rel": (1240, 1298, 1406),
    "swap_obj": (211, 198, 246), "swap_att": (607, 593, 666), "add_obj": (1859, 1918, 2062),
    "add_att": (604, 666, 692),
}
UNPARSEABLE = {  # (positive-first, negative-first)
    "replace_obj": (19, 18), "replace_att": (11, 9), "replace_rel": (38, 26), "swap_obj": (5, 5),
    "swap_att": (15, 8), "add_obj": (58, 36), "add_att": (20, 11),
}


def test_released_gpt4v(released):
    recs, _, _, scores = released
    for c, (pos, neg, total) in GPT4V_COUNTS.items():
        sp, sn = scores[("positive-first", c)], scores[("negative-first", c)]
        assert (sp.correct, sn.correct, sp.total, sn.total) == (pos, neg, total, total), c
        assert (sp.unparseable, sn.unparseable) == UNPARSEABLE[c], c
        assert sp.flag_disagreements == sn.flag_disagreements == 0, c  # our parsing = the released `correct` flags
        value = recs[("Table 6", "OpenAI | GPT-4V", rs.COLUMNS[c])].value
        assert value == pytest.approx(100 * (pos + neg) / (2 * total), abs=1e-9), c
        assert recs[("GPT-4V readme", "positive-first", f"{c} | correct")].value == pos
    assert scores[("positive-first", "swap_obj")].skipped == ("accuracy",)
    table6 = [round(recs[("Table 6", "OpenAI | GPT-4V", rs.COLUMNS[c])].value, 4) for c in CATEGORIES]
    assert table6 == [96.3075, 93.5279, 90.2560, 83.1301, 90.0901, 91.5858, 91.7630]
    assert recs[("Table 6", "OpenAI | GPT-4V", "Average")].value == pytest.approx(90.9515, abs=1e-4)
    # The readme leaves negative-first replace_rel blank (not_reported): no recomputation is filed there,
    # the value (1298/1406) is in the note of the Table 6 cell.
    assert ("GPT-4V readme", "negative-first", "replace_rel") not in recs
    assert "1298/1406" in recs[("Table 6", "OpenAI | GPT-4V", "REPLACE | Relation")].note


def test_released_figure5(released):
    recs, matches, table6, _ = released
    assert len(matches) == 17 and all(m.imagenet is not None for m in matches)
    # the zoo's OpenAI archs carry "-quickgelu"; open_clip's CSV lists some OpenAI models under the plain name only
    assert {m.how for m in matches} == {"exact", "without -quickgelu"}
    assert all(m.how == "exact" for m in matches if not m.model.row.startswith("OpenAI"))
    by_row = {m.model.row: m for m in matches}
    assert by_row["DataComp | small: ViT-B-32"].imagenet == 0.0392
    assert by_row["LAION | xlm-roberta-large-ViT-H-14"].csv_pretrained == "frozen_laion5b_s13b_b90k"
    assert {r for r, m in by_row.items() if m.also_listed_as} == {"OpenAI | RN50", "OpenAI | RN101", "OpenAI | ViT-B-32"}
    rs_ = {c: round(r, 4) for c, r in figure5_correlations(matches, table6).items()}
    assert rs_ == {"replace_obj": 0.9696, "replace_att": 0.9391, "replace_rel": 0.8953, "swap_obj": 0.7758,
                   "swap_att": 0.8017, "add_obj": 0.8889, "add_att": 0.7598}
    assert recs[(CLAIM_TABLE, "sec5.3_r_swap_obj", "value")].value == pytest.approx(0.7758, abs=1e-4)
    assert recs[(CLAIM_TABLE, "sec5.3_r_add_att", "value")].value == pytest.approx(0.7598, abs=1e-4)
    assert recs[(CLAIM_TABLE, "sec5.3_r_others_gt_0.8", "value")].value == pytest.approx(0.8017, abs=1e-4)


def test_released_table2(released):
    recs = released[0]
    counts = {c: recs[("Table 2", "# negative captions", rs.COLUMNS[c])].value for c in CATEGORIES}
    assert counts == {"replace_obj": 1652, "replace_att": 788, "replace_rel": 1406, "swap_obj": 245,
                      "swap_att": 666, "add_obj": 2062, "add_att": 692}
    assert recs[(CLAIM_TABLE, "sec4.2_total_examples", "value")].value == 7511
    assert "'108'" in recs[("Table 2", "# negative captions", "SWAP | Object")].note


def test_released_recomputations_join_the_published_numbers(released):
    from common.reporting.published import load_cells, load_claims

    rows = audit_rows("sugarcrepe", load_cells("sugarcrepe"), load_claims("sugarcrepe"), list(released[0].values()))
    assert sum(r.source != "" for r in rows) == len(released[0])


def test_unfetchable_files_give_not_recomputed_rows():
    from common.registry.errors import DownloadError
    from common.reporting.published import load_cells, load_claims

    def no_files(key: str) -> Path:
        raise DownloadError(f"{key}: no mirror and no network here")

    recs = rs.recompute(fetcher=no_files)
    assert recs and all(math.isnan(r.value) for r in recs)
    assert all("could not be fetched" in r.note for r in recs)
    keys = {r.key for r in recs}
    assert ("Table 6", "OpenAI | GPT-4V", "Average") in keys
    assert (CLAIM_TABLE, "sec5.3_r_add_att", "value") in keys
    assert ("Table 2", "# negative captions", "SWAP | Object") in keys
    rows = audit_rows("sugarcrepe", load_cells("sugarcrepe"), load_claims("sugarcrepe"), recs)
    assert {r.verdict for r in rows if r.source} == {"not recomputed yet"}
