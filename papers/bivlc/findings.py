"""BiVLC's findings as numbers with paired-bootstrap intervals: the ``comparisons.json`` of both profiles' tables
stages (``papers.bivlc.tables``, one module for both, calls ``compare``; one code, so a key means the same in
both).

* Finding 1 (T2I below I2T): the base row's I2T minus T2I, paired over instances, with its 95% interval, and whether
  T2I is below I2T for every pretrained row;
* Finding 2 (the group score is harder than I2T): the base row's I2T minus group, paired, with its interval;
* each further row's I2T, T2I, group and SugarCrepe;
* Sec. 5.3 (training with hard negative images): each TROHN-Img row minus the base row on T2I and group, paired,
  with its interval, and the share of the base row's I2T - T2I gap it closes;
* Finding 3's example: the rows best on SugarCrepe and on the group score, and whether TROHN-Text is the first
  and not the second;
* Table 5: each detector row's detection accuracies, I2T, T2I, group and SugarCrepe.

Paired differences are ``mean(a - b)`` in points over the instances both rows decided (0/1 each), with a 95%
percentile bootstrap over instances (``common.evaluation.stats.bootstrap_mean_ci``, 2,000 resamples, seed 0). A row the stage
did not score (a full-profile model left out) leaves its keys out; a column the stage did not compute (SugarCrepe
in a run without it) is null.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from common.evaluation.scoring.group import GroupResult

BASE = "clip"
"""The row every difference is taken against: CLIP ViT-B/32 (the mini family's stand-in in the mini profile)."""
TROHN_TEXT = "trohn-text"
GAIN_METRICS = ("T2I", "group")
DETECTOR_METRICS = ("text_detection", "image_detection", "I2T", "T2I", "group", "sugarcrepe")
N_RESAMPLES = 2000


def key_of(row: str) -> str:
    """A row id as a JSON key prefix (``trohn-img`` -> ``trohn_img``)."""
    return row.replace("-", "_")


def paired(a: np.ndarray, b: np.ndarray, seed: int = 0):
    """mean(a - b) in points with a 95% bootstrap interval over instances (a, b: 0/1 per instance, paired)."""
    # deferred: loads scipy only when called
    from common.evaluation.stats import bootstrap_mean_ci

    return bootstrap_mean_ci(100.0 * (np.asarray(a, float) - np.asarray(b, float)), n_resamples=N_RESAMPLES,
                             seed=seed)


def decisions(result: GroupResult, metric: str) -> np.ndarray:
    """One row's 0/1 decisions of ``metric`` per instance, in the result's order."""
    return np.array([o.decisions[metric] for o in result.outcomes], float)


def _number(value: Any) -> float | None:
    """A table cell as a number; an empty cell (a column the stage did not compute) is None."""
    return None if value is None or value == "" else value


def compare(rows: Mapping[str, Mapping], results: Mapping[str, GroupResult],
            detectors: Mapping[str, Mapping] | None = None, *, runs: Sequence[str], pretrained: Sequence[str],
            gains: Sequence[str] = ("trohn-img",), base: str = BASE) -> dict[str, Any]:
    """The findings (module docstring) from the tables' rows, their ``GroupResult`` and the detector rows, by row id;
    ``pretrained``: the rows Finding 1's "every pretrained" ranges over. Rows not in ``rows`` are skipped."""
    # deferred: loads scipy only when called
    from common.evaluation.stats import interval_fields

    out: dict[str, Any] = {}
    b = key_of(base)
    have_base = base in rows and base in results
    if have_base:
        clip = results[base]
        ranged = [rows[r] for r in pretrained if r in rows]
        out.update({f"{b}_i2t": rows[base]["I2T"], f"{b}_t2i": rows[base]["T2I"], f"{b}_group": rows[base]["group"],
                    **interval_fields(f"{b}_i2t_minus_t2i", paired(decisions(clip, "I2T"), decisions(clip, "T2I"))),
                    "t2i_below_i2t_for_every_pretrained": all(r["T2I"] < r["I2T"] for r in ranged) if ranged
                    else None})
        # Finding 2: the group score is harder
        out.update(interval_fields(f"{b}_i2t_minus_group", paired(decisions(clip, "I2T"), decisions(clip, "group"))))
    for run in [r for r in runs if r in rows]:
        key = key_of(run)
        out.update({f"{key}_i2t": rows[run]["I2T"], f"{key}_t2i": rows[run]["T2I"], f"{key}_group": rows[run]["group"],
                    f"{key}_sugarcrepe": _number(rows[run]["sugarcrepe"])})
    scored_gains = [g for g in gains if have_base and g in rows and g in results]
    for run in scored_gains:
        if [o.item_id for o in results[run].outcomes] != [o.item_id for o in results[base].outcomes]:
            raise ValueError("paired comparison of two rows scored on different instances")
        for metric in GAIN_METRICS:
            out.update(interval_fields(f"{key_of(run)}_minus_{b}_{metric.lower()}",
                                      paired(decisions(results[run], metric), decisions(results[base], metric))))
    for run in scored_gains:
        base_gap = rows[base]["I2T"] - rows[base]["T2I"]
        run_gap = rows[run]["I2T"] - rows[run]["T2I"]
        out[f"{key_of(run)}_gap_closed"] = round((base_gap - run_gap) / base_gap, 3) if base_gap > 0 else None
    with_sugarcrepe = [r for r in rows.values() if _number(r["sugarcrepe"]) is not None]
    best_sugarcrepe = max(with_sugarcrepe, key=lambda r: r["sugarcrepe"])["row"] if with_sugarcrepe else None
    best_group = max(rows.values(), key=lambda r: r["group"])["row"] if rows else None
    out.update({"best_sugarcrepe_row": best_sugarcrepe, "best_group_row": best_group,
                "trohn_text_best_sugarcrepe_not_best_group": None if best_sugarcrepe is None or TROHN_TEXT not in rows
                else best_sugarcrepe == TROHN_TEXT != best_group})
    for det_row, row in (detectors or {}).items():
        key = key_of(det_row)
        out.update({f"{key}_{k.lower()}": _number(row[k]) for k in DETECTOR_METRICS})
    return out
