"""Figure 3's analog in the mini profile: examples of c, c_p and c_n scored by CLIP, the HN model and the HP+HN model.

The paper's examples are hand-picked (DAC-LLM as its HN model); here, per group, the first benchmark item of each of
``KINDS``, with how many items of each kind there are beside them, so the examples are not the whole story.
``table1-mini`` writes them (``figure3.csv``: three rows per example, c, c_p, c_n with each model's score;
``figure3_counts.csv``).
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Mapping

from common.evaluation.scoring.selection import SelectionResult, negative_position
from papers.hard_positives import evaluation

MODELS: dict[str, str] = {"clip": "base", "hn": "hn", "hp_hn": "hp-hn"}
"""Figure 3's columns: our name -> the table row (``base`` = the mini CLIP)."""
KINDS: dict[str, str] = {
    "hn_brittle_hp_hn_correct": "HN puts c above c_n but c_p below it; HP+HN ranks all three correctly (Fig. 3 top)",
    "clip_correct_hn_wrong": "CLIP ranks all three correctly; after HN fine-tuning c_n is above c or c_p "
                             "(Fig. 3 bottom)",
}
ROLES = ("c", "c_p", "c_n")
FIELDS = ("group", "kind", "item_id", "image", "role", "caption", *(f"score_{m}" for m in MODELS))
COUNT_FIELDS = ("group", "kind", "n_items", "n_of_kind", "description")


def _kind_of(scores: Mapping[str, tuple[float, ...]]) -> list[str]:
    """Which of ``KINDS`` one item is, from each model's (c, c_p, c_n) scores."""
    position = {m: negative_position(s, (evaluation.ORIGINAL, evaluation.POSITIVE), evaluation.NEGATIVE)
                for m, s in scores.items()}
    holds = {"hn_brittle_hp_hn_correct": position["hn"] == "0" and position["hp_hn"] == "0,1",
             "clip_correct_hn_wrong": position["clip"] == "0,1" and position["hn"] != "0,1"}
    return [kind for kind, held in holds.items() if held]


def select(results: Mapping[str, SelectionResult], items) -> tuple[list[dict], list[dict]]:
    """(example rows, counts): per group and kind, the first item of the kind, and how many there are."""
    by_id = {m: {o.item_id: o.scores for o in r.outcomes} for m, r in results.items()}
    first: dict[tuple[str, str], object] = {}
    counts, totals = Counter(), Counter()
    for item in items:
        totals[item.group] += 1
        for kind in _kind_of({m: by_id[m][item.item_id] for m in MODELS}):
            counts[(item.group, kind)] += 1
            first.setdefault((item.group, kind), item)
    rows = []
    for (group, kind), item in sorted(first.items(), key=lambda kv: (evaluation.GROUPS.index(kv[0][0]), kv[0][1])):
        for k, role in enumerate(ROLES):
            rows.append({"group": group, "kind": kind, "item_id": item.item_id, "image": Path(item.image).name,
                         "role": role, "caption": item.captions[k],
                         **{f"score_{m}": f"{by_id[m][item.item_id][k]:.4f}" for m in MODELS}})
    count_rows = [{"group": g, "kind": kind, "n_items": totals[g], "n_of_kind": counts.get((g, kind), 0),
                   "description": text} for g in evaluation.GROUPS if g in totals for kind, text in KINDS.items()]
    return rows, count_rows
