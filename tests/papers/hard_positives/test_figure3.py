"""Figure 3's examples are chosen by rule from three models' scores, with how many items of each kind there are."""
import numpy as np

from common.evaluation.scoring.selection import Outcome, SelectionResult
from papers.hard_positives import evaluation as ev, figure3


def _result(scores_by_item):
    result = SelectionResult("m", "fp", "image_to_text", ev.AUG.name)
    for item_id, scores in scores_by_item.items():
        result.outcomes.append(Outcome(item_id, "swap", scores, *ev.AUG.decide(np.asarray(scores))))
    return result


def test_the_first_item_of_each_kind_and_the_counts():
    items = [ev.triple_item(str(i), "swap", f"{i}.png", f"c{i}", f"p{i}", f"n{i}") for i in range(4)]
    # (c, c_p, c_n) per item and model
    clip = {"0": (.3, .3, .1), "1": (.3, .3, .1), "2": (.3, .1, .2), "3": (.3, .3, .1)}
    hn = {"0": (.3, .1, .2), "1": (.3, .1, .2), "2": (.3, .3, .1), "3": (.3, .3, .1)}
    hp_hn = {"0": (.3, .3, .1), "1": (.1, .3, .2), "2": (.3, .3, .1), "3": (.3, .3, .1)}
    rows, counts = figure3.select({"clip": _result(clip), "hn": _result(hn), "hp_hn": _result(hp_hn)}, items)
    by_kind = {(r["kind"], r["role"]): r for r in rows}
    top = by_kind[("hn_brittle_hp_hn_correct", "c_p")]
    assert top["item_id"] == "0" and top["caption"] == "p0" and top["score_hn"] == "0.1000"
    assert by_kind[("clip_correct_hn_wrong", "c")]["item_id"] == "0"
    assert len(rows) == 6  # two examples, three captions each
    n = {c["kind"]: c["n_of_kind"] for c in counts}
    assert n == {"hn_brittle_hp_hn_correct": 1, "clip_correct_hn_wrong": 2}  # items 0 and 1; 2 was wrong for CLIP
    assert all(c["n_items"] == 4 for c in counts)
