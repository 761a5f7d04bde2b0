"""ARO's VG aggregation rules on per-group counts made here, and against the paper's own Table 2."""
from __future__ import annotations

import pytest

from common.evaluation.scoring.selection import GroupScore
from papers.aro.vg_rules import (
    ATTRIBUTION_RULE, NOTEBOOK_EXTRA, NOTEBOOK_RULE, NOTEBOOK_SYMMETRIC, PAPER_RULE, TABLE2_RULE, TABLE2_SPATIAL,
    TABLE2_VERBS, macro, relation_kind, relation_rules)

TABLE2_RELATIONS = frozenset(TABLE2_SPATIAL) | frozenset(TABLE2_VERBS)

# Table 2's CLIP column (per relation accuracy), as printed.
TABLE2_CLIP = {
    "above": 0.48, "at": 0.59, "behind": 0.56, "below": 0.56, "beneath": 0.80, "in": 0.63, "in front of": 0.54,
    "inside": 0.50, "on": 0.52, "on top of": 0.43, "to the left of": 0.49, "to the right of": 0.49, "under": 0.64,
    "carrying": 0.33, "covered by": 0.47, "covered in": 0.79, "covered with": 0.56, "covering": 0.39,
    "cutting": 0.75, "eating": 0.57, "feeding": 0.90, "grazing on": 0.10, "hanging on": 0.79, "holding": 0.58,
    "leaning on": 0.67, "looking at": 0.84, "lying in": 0.47, "lying on": 0.60, "parked on": 0.67,
    "reflected in": 0.64, "resting on": 0.38, "riding": 0.71, "sitting at": 0.62, "sitting in": 0.57,
    "sitting on": 0.58, "sitting on top of": 0.50, "standing by": 0.67, "standing in": 0.73, "standing on": 0.60,
    "surrounded by": 0.64, "using": 0.84, "walking in": 0.70, "walking on": 0.79, "watching": 0.45, "wearing": 0.47,
}


def score(n: int, accuracy: float) -> GroupScore:
    return GroupScore(n=n, correct=round(n * accuracy), ties=0)


def table2_groups() -> dict[str, GroupScore]:
    """Table 2's relations with its counts and CLIP accuracies, plus symmetric relations and the notebook extras."""
    counts = {**TABLE2_SPATIAL, **TABLE2_VERBS}
    groups = {r: GroupScore(counts[r], counts[r] * TABLE2_CLIP[r], 0) for r in counts}  # exact accuracies
    groups.update({"near": score(900, 0.5), "next to": score(700, 0.5), "with": score(30, 1.0)})
    groups.update({r: score(4, 1.0) for r in NOTEBOOK_EXTRA})
    return groups


def test_table2_lists_45_relations_13_spatial():
    assert len(TABLE2_SPATIAL) == 13 and len(TABLE2_VERBS) == 32 and len(TABLE2_RELATIONS) == 45
    assert sum(TABLE2_SPATIAL.values()) + sum(TABLE2_VERBS.values()) == 21917
    assert not (TABLE2_RELATIONS & NOTEBOOK_SYMMETRIC) and not (NOTEBOOK_EXTRA & NOTEBOOK_SYMMETRIC)
    assert len(NOTEBOOK_SYMMETRIC) == 157


def test_table2_rule_reproduces_table2_accuracy_rows():
    result = macro(table2_groups(), TABLE2_RULE, kinds=True)
    assert set(result.kept) == TABLE2_RELATIONS
    assert result.accuracy == pytest.approx(0.59, abs=0.005)  # Table 2, CLIP, "Accuracy"
    assert result.by_kind["spatial"] == pytest.approx(0.56, abs=0.005)
    assert result.by_kind["verb"] == pytest.approx(0.61, abs=0.005)
    assert result.dropped["near"] == "symmetric" and result.dropped["pulling"].startswith("too few cases (4 < 10)")
    assert result.n_cases == 21917


def test_paper_rule_drops_under_25_and_differs_from_table2():
    result = macro(table2_groups(), PAPER_RULE, kinds=True)
    assert all(TABLE2_RELATIONS.__contains__(r) and (TABLE2_SPATIAL.get(r) or TABLE2_VERBS.get(r)) >= 25
               for r in result.kept)
    assert len(result.kept) == 23 and "beneath" in result.dropped and "wearing" in result.kept
    assert result.accuracy == pytest.approx(0.566, abs=0.002)  # not the printed 0.59


def test_notebook_rule_keeps_the_three_extras():
    groups = table2_groups()
    notebook = macro(groups, NOTEBOOK_RULE, kinds=True)
    assert set(notebook.kept) == TABLE2_RELATIONS | NOTEBOOK_EXTRA
    assert "with" in notebook.dropped and "near" in notebook.dropped
    table2 = macro(groups, TABLE2_RULE, kinds=True)
    assert set(notebook.kept) - set(table2.kept) == NOTEBOOK_EXTRA and set(table2.kept) <= set(notebook.kept)
    assert notebook.accuracy > table2.accuracy  # the three extras are all correct here
    assert set(relation_rules(groups)) == {"paper", "table2", "notebook"}
    assert relation_kind("pulling") == "verb" and relation_kind("to the left of") == "spatial"


def test_attribution_keeps_pairs_with_25_or_more():
    groups = {"white_red": score(25, 0.8), "red_white": score(24, 0.0), "blue_green": score(100, 0.6)}
    result = macro(groups, ATTRIBUTION_RULE)
    assert result.kept == ("blue_green", "white_red") and list(result.dropped) == ["red_white"]
    assert result.accuracy == pytest.approx(0.7) and result.by_kind == {}
    assert len(result.kept) == 2 and result.n_cases == 125
