"""Hard-positive triples scored as the paper scores them: the cells of Tables 1-3 from one scoring pass.

An example is one image and three captions in a fixed order, c, c_p and c_n (``ORIGINAL``, ``POSITIVE``,
``NEGATIVE``), scored once (``evaluate``); every metric, as the README's "What is reproduced, and how" defines it, is a
rule over those scores, as in the authors' evaluator (strict comparisons, ties reported;
``amitakamath/hard_positives@33addaae run_eval.py:79`` "orig_acc = sum([1 for v in orig_scores if v[0][0]<v[0][1]])"
for Orig., the counts below for the rest).

The five counts the authors' evaluator prints (``amitakamath/hard_positives@33addaae run_eval.py:99-116`` "print(len([1
for i in range(len(orig_scores)) if mod_scores[i][0][0] < mod_scores[i][0][1] and mod_scores[i][0][0] <
orig_scores[i][0][1]]))", c_n below both, then c > c_n > c_p, c_p > c_n > c, c_n above both and ties) are
``negative_position``'s codes (``POSITIONS``); Brittleness is ``0`` + ``1``.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Mapping, Sequence

import numpy as np

from common.evaluation.scoring.selection import (
    TIE, DecisionRule, SelectionResult, evaluate as evaluate_selection, negative_position_counts, rescore)
from common.files.tasks import DatasetError, Image, ImageToTextItem

ORIGINAL, POSITIVE, NEGATIVE = 0, 1, 2
"""Candidate positions of c, c_p and c_n in every item."""
GROUPS: tuple[str, ...] = ("replace-attributes", "replace-relations", "swap")
COLUMNS: dict[str, tuple[str, ...]] = {"replace": ("replace-attributes", "replace-relations"), "swap": ("swap",)}
"""Table 1's columns: each the unweighted mean of its groups (its caption says so for REPLACE), not a pooled rate."""

ORIG = DecisionRule("orig", positives=(ORIGINAL,), negatives=(NEGATIVE,))
AUG = DecisionRule("aug", positives=(ORIGINAL, POSITIVE), negatives=(NEGATIVE,))
POSITIONS = {"0,1": "negative_below_both", "0": "original_only", "1": "positive_only", "": "negative_above_both",
             TIE: "ties"}
"""``common.evaluation.scoring.selection.negative_position`` codes and the names the result files give them: c_n below
both (Aug. correct), c > c_n > c_p, c_p > c_n > c, c_n above both, a tie."""


def triple_item(item_id: str, group: str, image: Image, original: str, positive: str, negative: str,
                origin: str = "") -> ImageToTextItem:
    """One example as a selection item (c, c_p, c_n); refuses a hard positive or negative equal to c."""
    if group not in GROUPS:
        raise DatasetError(f"{origin or item_id}: unknown group {group!r} (one of {GROUPS})")
    if positive == original or negative == original or positive == negative:
        raise DatasetError(f"{origin or item_id}: c, c_p and c_n must differ: {original!r} / {positive!r} / "
                           f"{negative!r}")
    return ImageToTextItem(item_id, group, image, (original, positive, negative), origin)


def evaluate(engine, items: Sequence[ImageToTextItem]) -> SelectionResult:
    """Score every item once; the result's decisions are Aug. Test Acc.'s (the other cells are rules over it)."""
    bad = [it.origin or it.item_id for it in items if len(it.captions) != 3]
    if bad:
        raise DatasetError(f"{len(bad)} items are not (c, c_p, c_n) triples (first: {bad[0]})")
    return evaluate_selection(engine, items, AUG)


@dataclass(frozen=True)
class GroupCells:
    """One model on one group: accuracies in %, the five counts, the mean scores."""

    n: int
    orig: float
    aug: float
    brittleness: float
    negative_below_both: int
    original_only: int
    positive_only: int
    negative_above_both: int
    ties: int
    mean_original: float
    mean_positive: float
    mean_negative: float


def group_cells(result: SelectionResult) -> dict[str, GroupCells]:
    """Per group, every cell the paper reports, from one scored result."""
    orig = rescore(result, ORIG).by_group()
    counts = negative_position_counts(result, (ORIGINAL, POSITIVE), NEGATIVE)
    scores: dict[str, list[tuple[float, ...]]] = {}
    for o in result.outcomes:
        scores.setdefault(o.group, []).append(o.scores)
    out = {}
    for group, rows in scores.items():
        n = len(rows)
        c = {name: counts[group].get(code, 0) for code, name in POSITIONS.items()}
        means = np.asarray(rows, dtype=np.float64).mean(axis=0)
        out[group] = GroupCells(
            n=n, orig=100.0 * orig[group].correct / n, aug=100.0 * c["negative_below_both"] / n,
            brittleness=100.0 * (c["original_only"] + c["positive_only"]) / n, **c,
            mean_original=float(means[ORIGINAL]), mean_positive=float(means[POSITIVE]),
            mean_negative=float(means[NEGATIVE]))
    return out


def table_row(cells: Mapping[str, GroupCells]) -> dict[str, float]:
    """Tables 1-3's numbers for one model (a column whose groups were not scored left out)."""
    row: dict[str, float] = {}
    for column, groups in COLUMNS.items():
        if not all(g in cells for g in groups):
            continue
        means = ("mean_original", "mean_positive", "mean_negative") if column == "replace" else ()  # Table 2's
        for field in ("orig", "aug", "brittleness", *means):
            row[f"{column}_{field}"] = float(np.mean([getattr(cells[g], field) for g in groups]))
        row[f"{column}_drop"] = row[f"{column}_aug"] - row[f"{column}_orig"]
    return row


TABLE_FIELDS: tuple[str, ...] = (
    "replace_orig", "replace_aug", "replace_drop", "swap_orig", "swap_aug", "swap_drop",
    "replace_brittleness", "swap_brittleness",
    "replace_mean_original", "replace_mean_negative", "replace_mean_positive")
"""Column order of the tables' CSVs: Table 1's, then Table 2's (c, c_n, c_p as the paper orders them)."""


def group_rows(model: str, cells: Mapping[str, GroupCells]) -> list[dict]:
    """Long form for ``groups.csv``: one row per (model, group) with every cell and count."""
    return [{"model": model, "group": g, **asdict(cells[g])} for g in GROUPS if g in cells]
