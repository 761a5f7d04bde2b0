"""The Table 1-3 cells from scored triples, checked against counts worked out by hand."""
import math

import numpy as np
import pytest

from common.evaluation.outcomes import Outcome
from common.evaluation.scoring.selection import SelectionResult
from common.files.tasks import DatasetError
from papers.hard_positives import evaluation as ev


def _result(rows: list[tuple[str, tuple[float, float, float]]]) -> SelectionResult:
    result = SelectionResult("m", "fp", "image_to_text", ev.AUG.name)
    for i, (group, scores) in enumerate(rows):
        result.outcomes.append(Outcome(str(i), group, scores, *ev.AUG.decide(np.asarray(scores))))
    return result


# (c, c_p, c_n) scores: one of each of the five outcomes the authors' evaluator counts, in the attributes group
# (amitakamath/hard_positives@33addaae run_eval.py:99-116 "c > c' > c''", c' being c_n and c'' c_p there).
FIVE = [
    ("replace-attributes", (0.30, 0.29, 0.20)),  # c_n below both: Orig. and Aug. correct
    ("replace-attributes", (0.30, 0.10, 0.20)),  # c > c_n > c_p: Orig. correct, brittle
    ("replace-attributes", (0.10, 0.30, 0.20)),  # c_p > c_n > c: Orig. wrong, brittle
    ("replace-attributes", (0.10, 0.15, 0.20)),  # c_n above both
    ("replace-attributes", (0.30, 0.20, 0.20)),  # c_p ties c_n: Orig. correct, Aug. wrong, not brittle
]


def test_five_outcomes_give_the_papers_metrics():
    cells = ev.group_cells(_result(FIVE))["replace-attributes"]
    assert cells.n == 5
    assert (cells.negative_below_both, cells.original_only, cells.positive_only, cells.negative_above_both,
            cells.ties) == (1, 1, 1, 1, 1)
    assert cells.orig == pytest.approx(60.0)  # s(c) > s(c_n): rows 0, 1, 4
    assert cells.aug == pytest.approx(20.0)
    assert cells.brittleness == pytest.approx(40.0)
    assert cells.mean_original == pytest.approx(np.mean([0.3, 0.3, 0.1, 0.1, 0.3]))
    assert cells.mean_negative == pytest.approx(0.2)


def test_replace_column_is_the_mean_of_attributes_and_relations_not_pooled():
    rows = FIVE + [("replace-relations", (0.3, 0.3 - 0.01, 0.1))] + [("swap", (0.1, 0.3, 0.2))]
    row = ev.table_row(ev.group_cells(_result(rows)))
    assert row["replace_orig"] == pytest.approx((60.0 + 100.0) / 2)  # pooled would be 4/6
    assert row["replace_aug"] == pytest.approx((20.0 + 100.0) / 2)
    assert row["replace_drop"] == pytest.approx(row["replace_aug"] - row["replace_orig"])
    assert (row["swap_orig"], row["swap_aug"], row["swap_brittleness"]) == (0.0, 0.0, 100.0)
    assert row["replace_mean_negative"] == pytest.approx((0.2 + 0.1) / 2)
    assert set(ev.TABLE_FIELDS) == set(row)


def test_a_column_without_all_its_groups_is_left_out():
    row = ev.table_row(ev.group_cells(_result([("swap", (0.3, 0.2, 0.1))])))
    assert "replace_orig" not in row and row["swap_aug"] == 100.0 and not math.isnan(row["swap_drop"])


def test_triples_must_differ_and_name_their_origin():
    with pytest.raises(DatasetError, match="rows.json: record 3"):
        ev.triple_item("3", "swap", "img.png", "a cat", "a cat", "a dog", origin="rows.json: record 3")
    with pytest.raises(DatasetError, match="unknown group"):
        ev.triple_item("3", "replace", "img.png", "a cat", "a kitty", "a dog")
    item = ev.triple_item("3", "swap", "img.png", "a cat", "a kitty", "a dog")
    assert item.captions == ("a cat", "a kitty", "a dog")
