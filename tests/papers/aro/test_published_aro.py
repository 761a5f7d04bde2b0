"""Transcription checks for ARO (Yuksekgonul et al., ICLR 2023): results/published/aro*.csv.

The tables are checked against each other (the paper repeats several numbers), against arithmetic the
paper implies (macro averages, Recall@5 >= Recall@1, chance level), against the paper's own text
claims, and -- when the extracted paper text is available -- against the source lines themselves.
Where the paper disagrees with itself the disagreement is asserted explicitly, value for value.
The generic checks (files load, cell counts, recompute expressions, comparisons, verbatim quotes) run
for every paper in test_published_common.py; the fixtures come from published_support.py via conftest.py.
"""
from __future__ import annotations

import itertools
import math
import re
import statistics

import pytest

from common.reporting.published import evaluate_expression
from published_support import by_key, rounding_tolerance

PAPER = "aro"

MODELS_T2 = ["CLIP", "NegCLIP", "CLIP-FT", "XVLM", "BLIP", "Flava"]
RETRIEVAL_MODELS = ["BLIP", "CLIP", "Flava", "XVLM"]
METRICS = ["Text Recall@1", "Text Recall@5", "Image Recall@1", "Image Recall@5"]
TEXT_STRATEGIES = ["No Shuffling", "Shuffle only nouns and adj.", "Shuffle all words",
                   "Shuffle all but nouns and adj.", "Shuffle trigrams", "Shuffle within Trigrams"]
IMAGE_STRATEGIES = ["No Shuffling", "Shuffle Rows (4)", "Shuffle Columns (4)", "Shuffle Patches (9)"]
SPATIAL = ["above", "at", "behind", "below", "beneath", "in", "in front of", "inside", "on", "on top of",
           "to the left of", "to the right of", "under"]
VERBS = ["carrying", "covered by", "covered in", "covered with", "covering", "cutting", "eating", "feeding",
         "grazing on", "hanging on", "holding", "leaning on", "looking at", "lying in", "lying on", "parked on",
         "reflected in", "resting on", "riding", "sitting at", "sitting in", "sitting on", "sitting on top of",
         "standing by", "standing in", "standing on", "surrounded by", "using", "walking in", "walking on",
         "watching", "wearing"]

# Table 1 only lists caption perturbation examples (no numbers); figures carry no numbers in the text.
EXPECTED_COUNTS = {"Table 2": 336, "Table 3": 352, "Table 4": 224, "Table 5": 18, "Table 6": 33}
RECOMPUTE_COUNT = 23  # claims with a recompute expression

# Rounding: Table 2 prints 2 decimals, so a mean of printed values is within 0.005 of the mean of the
# true values, and the printed mean is itself within 0.005 of that: |printed - mean(printed)| <= 0.01.
MACRO_TOL = 0.01 + 1e-9
# One number printed with 3 decimals in one table and 2 decimals in another.
REPRINT_TOL = 0.005 + 1e-9


# ----------------------------------------------------------------------------------------- schema / coverage
def test_statuses(cells):
    not_reported = sorted((c.table, c.row, c.column) for c in cells if c.status == "not_reported")
    assert not_reported == [
        ("Table 2", "Accuracy", "# Samples"),
        ("Table 2", "Spatial Relationships | Accuracy", "# Samples"),
        ("Table 2", "Verbs | Accuracy", "# Samples"),
    ]
    assert not [c for c in cells if c.status == "unreadable"]


def test_table2_grid(cells):
    keys = {(c.row, c.column) for c in cells if c.table == "Table 2"}
    rows = ["Accuracy", "Spatial Relationships | Accuracy", "Verbs | Accuracy"]
    rows += [f"Spatial Relationships | {r}" for r in SPATIAL] + [f"Verbs | {r}" for r in VERBS]
    assert len(SPATIAL) == 13 and len(VERBS) == 32
    assert keys == set(itertools.product(rows, MODELS_T2 + ["# Samples"]))


@pytest.mark.parametrize("table,sections,strategies", [
    ("Table 3", ["COCO Text Shuffle", "Flickr30k Text Shuffle"], TEXT_STRATEGIES),
    ("Table 4", ["COCO Image Shuffle", "Flickr30k Image Shuffle"], IMAGE_STRATEGIES),
])
def test_shuffle_table_grid(cells, table, sections, strategies):
    keys = {(c.row, c.column) for c in cells if c.table == table}
    expected = set()
    for sec, model, strat in itertools.product(sections, RETRIEVAL_MODELS, strategies):
        for m in METRICS:
            expected.add((f"{sec} | {model} | {strat}", m))
            if strat != "No Shuffling":  # the unshuffled evaluation is printed without ± std
                expected.add((f"{sec} | {model} | {strat}", f"{m} | std"))
    assert keys == expected


def test_table5_and_6_grid(cells):
    t5 = {(c.row, c.column) for c in cells if c.table == "Table 5"}
    exp5 = set()
    for ds in ("Flickr30k-PRC", "COCO-PRC"):
        for m in RETRIEVAL_MODELS:
            exp5 |= {(f"{ds} | {m}", "Accuracy"), (f"{ds} | {m}", "Accuracy | std")}
        exp5.add((f"{ds} | Chance-level", "Accuracy"))
    assert t5 == exp5
    t6 = {(c.row, c.column) for c in cells if c.table == "Table 6"}
    rows6 = [f"Compositional Tasks | {r}" for r in ("VG-Relation", "VG-Attribution", "Flickr30k-PRC", "COCO-PRC")]
    rows6 += [f"Downstream Tasks | {r}" for r in ("CIFAR10", "CIFAR100", "ImageNet", "Flickr30k Image R@1",
                                                  "Flickr30k Text R@1", "COCO Image R@1", "COCO Text R@1")]
    assert t6 == set(itertools.product(rows6, ["CLIP", "CLIP-FT", "NegCLIP"]))


# ----------------------------------------------------------------------------------------- formatting
def test_units_and_ranges(cells):
    for c in cells:
        if c.value is None:
            continue
        if c.column == "# Samples":
            assert c.unit == "count" and c.value == int(c.value) and c.value >= 1, c
        else:
            assert c.unit == "fraction", c
            assert 0.0 <= c.value <= 1.0, c
            if c.column.endswith("| std"):
                assert c.value < 0.05, c  # the printed stds are all small; a larger one is a column slip


def test_values_kept_as_printed(raw_rows):
    for r in raw_rows:
        if r["status"] != "ok":
            continue
        v, raw = r["value"], r["raw"]
        if r["table"] in ("Table 3", "Table 4") or (r["table"] == "Table 5" and "Chance" not in r["row"]):
            assert re.fullmatch(r"\d\.\d{3}", v), r  # three decimals, trailing zeros kept
        if r["table"] == "Table 6":
            assert re.fullmatch(r"\d\.\d{2}", v), r
        if raw:
            if "±" in raw:
                mean, std = raw.split("plus-or-minus")[0].split("±")
                assert v == (std if r["column"].endswith("| std") else mean), r
                # the three renderings of a ± cell must agree
                assert raw == f"{mean}±{std}plus-or-minus{mean}{std}{mean}\\pm {std}", r
            else:
                assert raw == v * 3, r  # the extraction triplicates plain numbers


# ----------------------------------------------------------------------------------------- redundancy
def _t2(index, row, model):
    return index.cell("Table 2", row, model)


@pytest.mark.parametrize("model", MODELS_T2)
def test_table2_group_accuracy_is_macro_mean(index, model):
    spatial = [_t2(index, f"Spatial Relationships | {r}", model) for r in SPATIAL]
    verbs = [_t2(index, f"Verbs | {r}", model) for r in VERBS]
    assert abs(_t2(index, "Spatial Relationships | Accuracy", model) - statistics.fmean(spatial)) <= MACRO_TOL
    assert abs(_t2(index, "Verbs | Accuracy", model) - statistics.fmean(verbs)) <= MACRO_TOL
    # the overall accuracy is the macro mean over all listed relations (not the mean of the two groups)
    assert abs(_t2(index, "Accuracy", model) - statistics.fmean(spatial + verbs)) <= MACRO_TOL


def test_table2_sample_counts(index):
    counts = [index.cell("Table 2", f"Spatial Relationships | {r}", "# Samples") for r in SPATIAL]
    counts += [index.cell("Table 2", f"Verbs | {r}", "# Samples") for r in VERBS]
    assert sum(counts) == 21917
    # every "X to the left of Y" is also "Y to the right of X": the two counts are necessarily equal
    assert index.cell("Table 2", "Spatial Relationships | to the left of", "# Samples") == \
        index.cell("Table 2", "Spatial Relationships | to the right of", "# Samples") == 7741


@pytest.mark.parametrize("dataset", ["COCO", "Flickr30k"])
@pytest.mark.parametrize("model", RETRIEVAL_MODELS)
@pytest.mark.parametrize("metric", METRICS)
def test_unshuffled_rows_identical_in_tables_3_and_4(index, dataset, model, metric):
    a = index.cell("Table 3", f"{dataset} Text Shuffle | {model} | No Shuffling", metric)
    b = index.cell("Table 4", f"{dataset} Image Shuffle | {model} | No Shuffling", metric)
    assert a == b


@pytest.mark.parametrize("table", ["Table 3", "Table 4"])
def test_recall_at_5_not_below_recall_at_1(cells, index, table):
    rows = {c.row for c in cells if c.table == table}
    for row in rows:
        for side in ("Text", "Image"):
            assert index.cell(table, row, f"{side} Recall@5") >= index.cell(table, row, f"{side} Recall@1"), (row, side)


def test_shuffling_never_beats_no_shuffling_by_much(cells, index):
    # Paper, Sec. 3.1: perturbations cost (marginal) performance. Every shuffled mean is <= the unshuffled one.
    for c in cells:
        if c.table not in ("Table 3", "Table 4") or c.column.endswith("| std") or c.row.endswith("No Shuffling"):
            continue
        base_row = c.row.rsplit(" | ", 1)[0] + " | No Shuffling"
        assert c.value <= index.cell(c.table, base_row, c.column), c


@pytest.mark.parametrize("t6_row,t3_row,t3_col", [
    ("Downstream Tasks | Flickr30k Image R@1", "Flickr30k Text Shuffle | CLIP | No Shuffling", "Image Recall@1"),
    ("Downstream Tasks | Flickr30k Text R@1", "Flickr30k Text Shuffle | CLIP | No Shuffling", "Text Recall@1"),
    ("Downstream Tasks | COCO Image R@1", "COCO Text Shuffle | CLIP | No Shuffling", "Image Recall@1"),
    ("Downstream Tasks | COCO Text R@1", "COCO Text Shuffle | CLIP | No Shuffling", "Text Recall@1"),
])
def test_table6_clip_retrieval_matches_table3(index, t6_row, t3_row, t3_col):
    assert abs(index.cell("Table 6", t6_row, "CLIP") - index.cell("Table 3", t3_row, t3_col)) <= REPRINT_TOL


@pytest.mark.parametrize("ds", ["Flickr30k-PRC", "COCO-PRC"])
def test_table6_clip_prc_matches_table5(index, ds):
    # Flickr30k: Table 5 prints 0.595, Table 6 prints 0.59 -- consistent only if the unrounded value was
    # below 0.595; at the edge of the rounding tolerance but not a contradiction.
    assert abs(index.cell("Table 6", f"Compositional Tasks | {ds}", "CLIP")
               - index.cell("Table 5", f"{ds} | CLIP", "Accuracy")) <= REPRINT_TOL


def test_table5_chance_level(index):
    # one correct caption among the original + 4 perturbations (Table 1): 1/5
    for ds in ("Flickr30k-PRC", "COCO-PRC"):
        assert index.cell("Table 5", f"{ds} | Chance-level", "Accuracy") == pytest.approx(1 / 5)


def test_table6_vg_relation_vs_table2_overall(index):
    # CLIP agrees between the appendix tables.
    assert index.cell("Table 6", "Compositional Tasks | VG-Relation", "CLIP") == _t2(index, "Accuracy", "CLIP") == 0.59
    # KNOWN PUBLISHED INCONSISTENCY: Table 6 prints NegCLIP 0.81 and CLIP-FT 0.63 for VG-Relation, while
    # Table 2's overall accuracy row prints 0.8 and 0.64 (and the macro means of Table 2's relation rows
    # are 0.804 and 0.636, i.e. Table 2 is self-consistent). Both are 2-decimal roundings of what should be
    # the same number, so they should be equal.
    assert index.cell("Table 6", "Compositional Tasks | VG-Relation", "NegCLIP") == 0.81
    assert _t2(index, "Accuracy", "NegCLIP") == 0.8
    assert index.cell("Table 6", "Compositional Tasks | VG-Relation", "CLIP-FT") == 0.63
    assert _t2(index, "Accuracy", "CLIP-FT") == 0.64


def test_text_statements_about_tables(index):
    # Sec. 4: "in VG-Relations, NegCLIP becomes the best model, in comparison to all other models"
    others = [_t2(index, "Accuracy", m) for m in MODELS_T2 if m != "NegCLIP"]
    assert _t2(index, "Accuracy", "NegCLIP") > max(others)
    assert index.cell("Table 6", "Compositional Tasks | VG-Relation", "NegCLIP") > max(others)
    # Sec. 2.3: Flava is below chance on COCO and Flickr30k Order
    for ds in ("Flickr30k-PRC", "COCO-PRC"):
        assert index.cell("Table 5", f"{ds} | Flava", "Accuracy") < index.cell("Table 5", f"{ds} | Chance-level", "Accuracy")
    # Sec. 2.3: BLIP is much closer to chance on the order task than CLIP
    for ds in ("Flickr30k-PRC", "COCO-PRC"):
        assert index.cell("Table 5", f"{ds} | BLIP", "Accuracy") < index.cell("Table 5", f"{ds} | CLIP", "Accuracy")
    # Sec. 4: NegCLIP improves all four compositional tasks over CLIP
    for t in ("VG-Relation", "VG-Attribution", "Flickr30k-PRC", "COCO-PRC"):
        row = f"Compositional Tasks | {t}"
        assert index.cell("Table 6", row, "NegCLIP") > index.cell("Table 6", row, "CLIP")


# ----------------------------------------------------------------------------------------- claims
# Claims whose number does not match the paper's own tables. Values are the recomputations.
KNOWN_CLAIM_MISMATCHES = {
    # Sec. 2.1 / App. A: "48 relations", "23,937 test cases"; Table 2 ("full list of relations with the
    # count statistics") lists 45 relations totalling 21,917 samples.
    "vgr_relations_48": 45.0,
    "vgr_cases_23937_s21": 21917.0,
    "vgr_cases_23937_appA": 21917.0,
    # Sec. 2.3: Flava "below-chance for relations (25%)"; Table 2 overall Flava accuracy is 0.24.
    "flava_rel_25": 24.0,
    # Sec. 4: VG-Relation improves "from 63% to 81%" (CLIP -> NegCLIP); Table 6 CLIP is 0.59 (0.63 is CLIP-FT).
    "negclip_vgr_from_63": 59.0,
}


def test_claims_match_recomputation_except_known(claims, raw_claims, index):
    mismatches = {}
    for cl in claims:
        if not cl.recompute:
            continue
        got = evaluate_expression(cl.recompute, index)
        if abs(got - cl.value) > rounding_tolerance(raw_claims[cl.claim_id]["value"]):
            mismatches[cl.claim_id] = got
    assert mismatches == pytest.approx(KNOWN_CLAIM_MISMATCHES)


# The `comparison` column: claims that are bounds (">", ">=", "<", "<=") or approximate ("~"); all others "="
# (checked in test_published_common.py).
EXPECTED_COMPARISONS = {
    "abs_test_cases": ">",           # "with more than 50,000 test cases"
    "vg_images_100k": ">",           # "with over 100,000 images"
    "aro_size_50000_rw": "~",        # approximate total (the abstract says "more than 50,000")
    "min_obj_width_quarter": ">=",   # objects narrower than 1/4 of the image are discarded
    "min_obj_height_quarter": ">=",  # objects lower than 1/4 of the image are discarded
    "vga_min_attributes_1": ">=",    # "modified by at least 1 attribute"
    "neg_captions_5": "<=",          # "might have less then 5"
}


def test_recomputed_claims_are_equalities(claims):
    # every claim recomputed from the tables is an equality, so the rounding check above is the right one
    assert all(c.comparison == "=" for c in claims if c.recompute)


def test_claim_ids_and_numbers(claims):
    ids = {c.claim_id for c in claims}
    assert len(claims) == 70
    assert {"vgr_relations_48", "abs_test_cases", "negclip_vgr_to_81", "ft_batch_1024", "prc_seeds_5"} <= ids
    assert all(c.value is not None for c in claims)


def test_claims_consistent_with_each_other(claims):
    v = {c.claim_id: c.value for c in claims}
    # repeated numbers agree
    assert v["vgr_cases_23937_s21"] == v["vgr_cases_23937_appA"] == 23937
    assert v["vga_cases_28748_s21"] == v["vga_cases_28748_appA"] == 28748
    assert v["winoground_400_s2"] == v["winoground_400_rw1"] == v["winoground_400_rw2"] == 400
    assert v["ft_batch_1024"] == v["ft_batch_1024_lim"] == 1024
    assert v["neg_image_k3"] == v["neg_images_3"] == 3
    assert v["retrieval_seeds_3"] == v["repro_seeds_3"] == v["t3_seeds_3"] == v["t4_seeds_3"] == v["t5_seeds_3"] == 3
    # "more than 50,000 test cases": relations + attributes alone exceed it
    assert v["vgr_cases_23937_s21"] + v["vga_cases_28748_s21"] > v["abs_test_cases"]
    # "two orders of magnitude larger" than Winoground's 400
    assert round(math.log10(v["aro_size_50000_rw"] / v["winoground_400_rw2"])) == v["aro_vs_winoground_orders"]
    # chance level of the order task: 1 / (1 + number of perturbations)
    assert 100 / (1 + v["prc_four_perturbations"]) == v["prc_chance_20"]
    # KNOWN PUBLISHED INCONSISTENCY: Sec. 2.3 says the order (PRC) experiment was repeated with 5 seeds;
    # the Table 5 caption (same experiment) says 3 seeds.
    assert v["prc_seeds_5"] == 5 and v["t5_seeds_3"] == 3


# ----------------------------------------------------------------------------------------- against the source text
def test_table2_lines_reconstruct(raw_rows, paper_text):
    keys = by_key(raw_rows)
    lines = set(paper_text.split("\n"))
    for row in ["Accuracy", "Spatial Relationships | Accuracy", "Verbs | Accuracy"]:
        line = "Accuracy " + " ".join(keys[("Table 2", row, m)]["value"] for m in MODELS_T2)
        assert line in lines, line
    for sec, rels in (("Spatial Relationships", SPATIAL), ("Verbs", VERBS)):
        for rel in rels:
            vals = [keys[("Table 2", f"{sec} | {rel}", m)]["value"] for m in MODELS_T2 + ["# Samples"]]
            line = f"{rel} " + " ".join(vals)
            assert line in lines, line


@pytest.mark.parametrize("table", ["Table 3", "Table 4"])
def test_shuffle_rows_reconstruct(raw_rows, paper_text, table):
    keys = by_key(raw_rows)
    rows = sorted({r["row"] for r in raw_rows if r["table"] == table})
    for row in rows:
        _section, model, strat = row.split(" | ")
        raws = [keys[(table, row, m)]["raw"] for m in METRICS]
        assert f"{strat} {model} " + " ".join(raws) in paper_text, row


def test_table5_and_6_lines_reconstruct(raw_rows, paper_text):
    lines = set(paper_text.split("\n"))
    keys = by_key(raw_rows)
    for r in raw_rows:
        if r["table"] == "Table 5" and r["column"] == "Accuracy":
            assert f"{r['row'].replace(' | ', ' ')} {r['raw']}" in lines, r
    for row in sorted({r["row"] for r in raw_rows if r["table"] == "Table 6"}):
        label = row.split(" | ", 1)[1]
        line = label + " " + " ".join(keys[("Table 6", row, m)]["raw"] for m in ("CLIP", "CLIP-FT", "NegCLIP"))
        assert line in lines, line
