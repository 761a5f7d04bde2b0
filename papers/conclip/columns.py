"""CoN-CLIP's table columns, row pieces and comparisons that both profiles build the same way, so the audit maps a
mini and a full run with one table of columns and the mini profile runs the full profile's arithmetic. A module of its
own (no scoring, no mini world) so that the full profile's stages do not depend on the tables stage's code.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from common.card.core import N_RESAMPLES, SEED, Measure, selection_measures
from common.errors import WorkspaceError
from common.evaluation.outcomes import percent
from common.zoo import get_spec
from papers.conclip.runs import RUNS

SUGARCREPE_CATEGORIES: tuple[str, ...] = ("replace_obj", "replace_att", "replace_rel", "add_obj", "add_att",
                                          "swap_obj", "swap_att")
"""In Tables 5, 13 and 14's column order."""
SUGARCREPE_FOLDS: dict[str, tuple[str, ...]] = {
    "replace": ("replace_obj", "replace_att", "replace_rel"), "add": ("add_obj", "add_att"),
    "swap": ("swap_obj", "swap_att")}
"""Table 6's SugarCrepe columns: each the plain mean of its categories (Table 6's rows are Table 14's so averaged,
e.g. L1's Replace 79.36 = mean(91.71, 80.58, 65.79))."""
MODEL_FIELDS = ("row", "model", "label", "run", "terms", "negatives")
SUGARCREPE_FIELDS = ("row", "model", "label", *SUGARCREPE_CATEGORIES, *(f"sugarcrepe_{f}" for f in SUGARCREPE_FOLDS))
TABLE6_FIELDS = (*MODEL_FIELDS, "sugarcrepe_replace", "sugarcrepe_add", "sugarcrepe_swap", "ccneg",
                 "classification_top1")
NOT_A_RUN = "N/A"
"""The run, terms and negatives of a model that is not one of ``RUNS`` (a pretrained or released model)."""


def model_label(name: str, model: object = None) -> str:
    """The zoo entry's label; a stand-in outside the zoo (tests) gives its own ``spec.label``, else its name."""
    try:
        return get_spec(name).label
    except (KeyError, OSError, WorkspaceError):
        return getattr(getattr(model, "spec", None), "label", name)


def model_cells(row: str, model: str, label: str, run: str | None) -> dict:
    """A row's identity: its id (the audit's key), zoo name, label and, for a fine-tune, its terms and negatives."""
    spec = RUNS[run] if run else None
    return {"row": row, "model": model, "label": label, "run": run or NOT_A_RUN,
            "terms": "+".join(spec.terms) if spec else NOT_A_RUN, "negatives": spec.negatives if spec else NOT_A_RUN}


def sugarcrepe_cells(accuracy_by_category: Mapping[str, float]) -> dict:
    """Each category's accuracy (a share) in points, then Table 6's folds: plain means of their categories' points."""
    cells = {c: percent(accuracy_by_category[c]) for c in SUGARCREPE_CATEGORIES}
    cells.update({f"sugarcrepe_{fold}": round(float(np.mean([cells[c] for c in cats])), 2)
                  for fold, cats in SUGARCREPE_FOLDS.items()})
    return cells


def table6_row(model: Mapping, sugarcrepe: Mapping, ccneg: float, classification_top1: float) -> dict:
    """Table 6's row of one run, in points."""
    folds = {f"sugarcrepe_{fold}": sugarcrepe[f"sugarcrepe_{fold}"] for fold in SUGARCREPE_FOLDS}
    return {**{k: model[k] for k in MODEL_FIELDS}, **folds, "ccneg": ccneg, "classification_top1": classification_top1}


def top1(result: Any) -> float:
    """Top-1: the argmax class (the first among equals) is the true one (the authors' count is not in the release)."""
    return float((result.predictions == result.labels).mean())


def classification_fields(sets: Sequence[str]) -> tuple[str, ...]:
    """``classification.csv``'s columns over these label sets (mini) or datasets (full)."""
    return ("row", "model", "label", *(f"{n}_{m}" for n in sets for m in ("top1", "negated_top1", "delta")),
            "classification_top1", "delta")


def classification_cells(results: Mapping[str, Mapping[str, Any]], sets: Sequence[str]) -> dict:
    """One model's zero-shot cells (the README's ``classification.csv``), in points (means of the unrounded shares)."""
    standard = [top1(results[n]["standard"]) for n in sets]
    negated = [top1(results[n]["negated"]) for n in sets]
    cells: dict = {}
    for n, a, b in zip(sets, standard, negated):
        cells.update({f"{n}_top1": percent(a), f"{n}_negated_top1": percent(b), f"{n}_delta": percent(a - b)})
    cells["classification_top1"] = percent(float(np.mean(standard)))
    cells["delta"] = percent(float(np.mean(standard)) - float(np.mean(negated)))
    return cells


def classification_measure(results: Mapping[str, Mapping[str, Any]], sets: Sequence[str]) -> Measure:
    """One model's standard-prompt outcomes over the sets, each a stratum (``classification_top1`` averages them)."""
    standard = {n: results[n]["standard"] for n in sets}
    return Measure("classification", "CoN-CLIP", "classification", "",
                   tuple(f"{n}/{i}" for n, r in standard.items() for i in range(len(r.labels))),
                   np.array([c for r in standard.values() for c in (r.predictions == r.labels)], float),
                   tuple(n for n, r in standard.items() for _ in range(len(r.labels))))


def sugarcrepe_measure(result: Any) -> Measure:
    """One model's SugarCrepe outcomes, its categories the strata (the macro average, as the card measures it)."""
    return selection_measures(result, "sugarcrepe", "CoN-CLIP", "", "")[-1]


def ccneg_difference(conclip: Sequence[Any], clip: Sequence[Any], n_resamples: int = N_RESAMPLES, seed: int = SEED):
    """CoN-CLIP minus CLIP on CC-Neg's items (in the same order), in points, with a 95% paired-bootstrap interval."""
    # deferred: loads scipy only when called
    from common.evaluation.stats import bootstrap_mean_ci

    if [o.item_id for o in conclip] != [o.item_id for o in clip]:
        raise ValueError("CoN-CLIP minus CLIP: the two hold different items (or in another order)")
    diff = 100.0 * (np.array([o.correct for o in conclip], float) - np.array([o.correct for o in clip], float))
    return bootstrap_mean_ci(diff, n_resamples=n_resamples, seed=seed)
