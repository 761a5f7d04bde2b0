"""Hard positives, mini profile: Tables 1-3 (``tables``, ``--profile mini``) from a tiny benchmark and 2-step runs:
deterministic files, each column the mean of its groups, the summary's comparisons read from intervals."""
from __future__ import annotations

import csv
import json

import numpy as np
import pytest
import torch

from common.evaluation.scoring.selection import Outcome, SelectionResult
from common.training import FromScratch
from common.training.checkpoint import portable_state, save_weights
from common.training.job import run_job
from common.zoo.trained import served
from papers.hard_positives import evaluation as ev, tables as tb, train as tm
from papers.hard_positives.finetune_rows import FinetuneSet
from papers.hard_positives.runs import RUNS
from training_support import mini_section

ARCH = "mini-vit-xs"
BASE = "mini/xs-32k"


def test_tiny_end_to_end_writes_the_tables(test_set, finetune_set, tokenize, tmp_path):
    from common.evaluation.engine import EngineConfig

    params = mini_section()
    models = tmp_path / "models"
    base = FromScratch(ARCH)
    torch.manual_seed(0)
    save_weights(models / "base.safetensors", portable_state(base.build().model))
    data = FinetuneSet.load(finetune_set)
    for run in RUNS:
        job = tm.mini_job(run, data, params, init=base, tokenize=tokenize)
        run_job(job, models / f"{run}.safetensors")
    runs = tb.run_entries("hard_positives/mini", models)
    inputs = tb.mini_inputs(BASE, runs, test_set, context={"test": True})
    assert inputs.run_arch == ARCH and list(inputs.models) == ["base"]

    def create(name, device="cpu"):  # the zoo's base: the weights the runs started from
        return served(tb.ModelEntry(name, "base", None, models / "base.safetensors"), ARCH, device)

    out = tmp_path / "results"
    config = EngineConfig(progress=False)
    paths = tb.evaluate_tables(inputs, out, config, create=create)
    assert not (out / "predictions").exists()  # the full profile's files only
    first = {name: p.read_bytes() for name, p in paths.items()}
    tb.evaluate_tables(inputs, out, config, create=create)
    assert {name: p.read_bytes() for name, p in paths.items()} == first

    def read(name):
        with open(paths[name], newline="") as fh:
            return list(csv.DictReader(fh))

    table1, table2, table3, groups = read("table1"), read("table2"), read("table3"), read("groups")
    assert [r["model"] for r in table1] == [BASE, *(f"hard_positives/mini-{r}" for r in tb.TABLE1_RUNS)]
    assert [r["model"] for r in table3] == [BASE, *(f"hard_positives/mini-{r}" for r in tb.TABLE3_ROWS[1:])]
    assert table1[0]["label"] == f"CLIP ({BASE}, the mini family's ViT-B/32)"
    assert len(table2) == 10 and len(groups) == 30 and "row" not in groups[0]
    for r in table1:
        mine = [g for g in groups if g["model"] == r["model"]]
        attributes, relations = (next(g for g in mine if g["group"] == x) for x in ev.COLUMNS["replace"])
        for metric in tb.METRICS:
            expected = (float(attributes[metric]) + float(relations[metric])) / 2
            assert float(r[f"replace_{metric}"]) == pytest.approx(expected, abs=0.011)
        assert float(r["swap_drop"]) == pytest.approx(float(r["swap_aug"]) - float(r["swap_orig"]), abs=0.011)
        assert 0 <= float(r["swap_brittleness"]) <= 100
    summary = json.loads(paths["comparisons"].read_text())
    assert all(isinstance(v, (float, int, bool)) or v is None for v in summary.values())
    metrics = json.loads(paths["summary"].read_text())
    assert list(metrics) == list(tb.SUMMARY_KEYS) and all(metrics[k] == summary[k] for k in metrics)
    assert {"figure3", "figure3_counts"} <= set(paths)
    for column in ev.COLUMNS:
        assert summary[f"hn_minus_clip_{column}_brittleness_ci_low"] <= summary[f"hn_minus_clip_{column}_brittleness"]
        assert summary[f"hn_shows_paper_effect_{column}"] == (
            summary[f"hn_orig_higher_{column}"] and summary[f"hn_aug_lower_or_flat_{column}"]
            and summary[f"hn_brittleness_higher_{column}"])
    context = json.loads(paths["context"].read_text())
    assert context["n"] == {g: 8 for g in ev.GROUPS} and context["test"] is True
    assert len(context["models"]["hard_positives/mini-hn"]["checkpoint_sha256"]) == 64


def _result(rows: list[tuple[str, tuple[float, float, float]]], name: str = "m") -> SelectionResult:
    result = SelectionResult(name, "fp", "image_to_text", ev.AUG.name)
    for i, (group, scores) in enumerate(rows):
        result.outcomes.append(Outcome(f"{group}/{i}", group, scores, *ev.AUG.decide(np.asarray(scores))))
    return result


def test_paired_difference_is_the_columns_difference_weighted_by_group():
    """REPLACE is the mean of its two groups: a brittle item in a group of 2 weighs twice one in a group of 4."""
    calm, brittle = (0.3, 0.3, 0.1), (0.3, 0.1, 0.2)
    base = _result([("replace-attributes", calm)] * 2 + [("replace-relations", calm)] * 4)
    other = _result([("replace-attributes", brittle), ("replace-attributes", calm)]
                    + [("replace-relations", brittle)] + [("replace-relations", calm)] * 3)
    ci = tb.paired_difference(other, base, "replace", "brittleness", n_resamples=200)
    assert ci.estimate == pytest.approx((50.0 + 25.0) / 2)
    assert ci.low <= ci.estimate <= ci.high
    row = ev.table_row(ev.group_cells(other))
    assert row["replace_brittleness"] - ev.table_row(ev.group_cells(base))["replace_brittleness"] == pytest.approx(
        ci.estimate)
    drop = tb.paired_difference(other, other, "replace", "aug", n_resamples=200, b_metric="orig")  # one model
    assert drop.estimate == pytest.approx(-(50.0 + 25.0) / 2) and drop.low <= drop.estimate <= drop.high
    assert row["replace_aug"] - row["replace_orig"] == pytest.approx(drop.estimate)
    with pytest.raises(ValueError, match="different items"):
        tb.paired_difference(other, _result([("replace-attributes", calm)] * 6 + [("replace-relations", calm)] * 4),
                            "replace", "brittleness")


def test_summary_reads_the_papers_effect_from_intervals():
    """hn: Orig. up on every item of 40, Aug. flat, brittle on all of them; hp-hn: not brittle again; Table 3's runs:
    Orig. rising with the hard-negative weight, brittleness constant (no rank correlation: None)."""
    n = 40
    calm, brittle, wrong = (0.3, 0.3, 0.1), (0.3, 0.1, 0.2), (0.1, 0.1, 0.3)  # wrong: c_n above both

    def model(name, right):
        """``right`` of the ``n`` items per group calm (Orig. and Aug. correct), the rest ``wrong``."""
        items = [calm] * right + [wrong] * (n - right) if isinstance(right, int) else [right] * n
        return _result([(g, item) for g in ev.GROUPS for item in items], name)

    results = {"base": model("base", 0), "clip-ft": model("clip-ft", 0), "hn": model("hn", brittle),
               "hp-hn": model("hp-hn", n), "hp-hn-swap": model("hp-hn-swap", 0), "hp-hn-replace": model("x", 0),
               **{f"ratio-{w:g}": model(f"ratio-{w:g}", k * 10) for k, w in enumerate((0, 0.25, 0.5, 0.75))}}
    rows = [{"model": run, "run": run, **ev.table_row(ev.group_cells(r))} for run, r in results.items()]
    got = tb.summary(rows, results)
    for column in ev.COLUMNS:
        assert got[f"hn_minus_clip_{column}_orig"] == 100.0 and got[f"hn_minus_clip_{column}_aug"] == 0.0
        assert got[f"hn_minus_clip_{column}_brittleness"] == 100.0
        assert got[f"hn_minus_clip_{column}_orig_ci_low"] == 100.0  # every item moved: a degenerate interval
        assert got[f"hn_shows_paper_effect_{column}"] is True
        assert got[f"hp_hn_minus_hn_{column}_brittleness"] == -100.0 and got[f"hp_hn_reduces_brittleness_{column}"]
        assert got[f"ratio_spearman_{column}_orig"] == 1.0 and got[f"ratio_spearman_{column}_brittleness"] is None


def test_the_drop_comparisons_are_computed_from_the_items():
    """The scorecard's drop keys from a hand-made case. Per item, Aug. minus Orig. is -1 for a brittle item
    (c > c_n > c_p), 0 for a calm one (both above c_n). base: attributes [brittle, calm], relations [brittle, calm x3],
    swap [brittle, calm x4]: drops -50, -25 (REPLACE -37.5) and -20, mean -28.75 (the Abstract's 12.9 is the same
    mean of Table 1's two drops). hn: attributes [brittle x2], relations [brittle x2, calm x2], swap [brittle x5]:
    REPLACE -75, SWAP -100, so hn's drop minus the base's is -37.5 (REPLACE) and -80 (SWAP)."""
    from common.evaluation.stats import bootstrap_mean_ci

    calm, brittle = (0.3, 0.3, 0.1), (0.3, 0.1, 0.2)

    def model(name, attributes, relations, swap):
        return _result([("replace-attributes", x) for x in attributes] + [("replace-relations", x) for x in relations]
                       + [("swap", x) for x in swap], name)

    base = model("base", [brittle, calm], [brittle, calm, calm, calm], [brittle] + [calm] * 4)
    hn = model("hn", [brittle, brittle], [brittle, brittle, calm, calm], [brittle] * 5)
    results = {run: base for run in RUNS} | {"base": base, "hn": hn}
    rows = [{"model": run, "run": run, **ev.table_row(ev.group_cells(r))} for run, r in results.items()]
    got = tb.summary(rows, results)
    assert (got["hn_minus_clip_drop_replace"], got["hn_minus_clip_drop_swap"]) == (-37.5, -80.0)
    assert got["clip_drop_mean"] == -28.75
    assert (got["clip_aug_minus_orig_replace"] + got["clip_aug_minus_orig_swap"]) / 2 == got["clip_drop_mean"]
    # the intervals: the paired bootstrap of the existing keys (2,000 resamples, seed 0, 2 decimals) over the
    # per-item differences of drops, each item weighted by (items in the column) / (groups x items in its group)
    replace = np.array([0.0, -1.0, 0.0, -1.0, 0.0, 0.0]) * 100 * np.array([1.5, 1.5, 0.75, 0.75, 0.75, 0.75])
    swap = np.array([0.0, -1.0, -1.0, -1.0, -1.0]) * 100
    for column, values in (("replace", replace), ("swap", swap)):
        ci = bootstrap_mean_ci(values, n_resamples=2000, seed=0)
        assert ci.estimate == pytest.approx(got[f"hn_minus_clip_drop_{column}"])
        assert (got[f"hn_minus_clip_drop_{column}_ci_low"], got[f"hn_minus_clip_drop_{column}_ci_high"]) == (
            round(ci.low, 2), round(ci.high, 2))
        assert got[f"hn_minus_clip_drop_{column}_ci_low"] < got[f"hn_minus_clip_drop_{column}"] < got[
            f"hn_minus_clip_drop_{column}_ci_high"]
    # clip_drop_mean: in each of 2,000 iterations REPLACE's and SWAP's items resampled independently, from one
    # generator seeded 0 (REPLACE first, so its resamples are clip_aug_minus_orig_replace's), the two means averaged
    base_replace = np.array([-1.0, 0.0, -1.0, 0.0, 0.0, 0.0]) * 100 * np.array([1.5, 1.5, 0.75, 0.75, 0.75, 0.75])
    base_swap = np.array([-1.0, 0.0, 0.0, 0.0, 0.0]) * 100
    rng = np.random.default_rng(0)
    picks_replace, picks_swap = rng.integers(0, 6, (2000, 6)), rng.integers(0, 5, (2000, 5))
    means = (base_replace[picks_replace].mean(axis=1) + base_swap[picks_swap].mean(axis=1)) / 2
    low, high = np.percentile(means, [2.5, 97.5])
    assert (got["clip_drop_mean_ci_low"], got["clip_drop_mean_ci_high"]) == (round(low, 2), round(high, 2))
    replace_only = np.percentile(base_replace[picks_replace].mean(axis=1), [2.5, 97.5])
    assert (got["clip_aug_minus_orig_replace_ci_low"], got["clip_aug_minus_orig_replace_ci_high"]) == tuple(
        round(x, 2) for x in replace_only)
    ci = tb.mean_drop(base)
    assert ci.estimate == pytest.approx(-28.75) and ci.low < ci.estimate < ci.high
    constant = tb.mean_drop(model("calm", [calm] * 2, [calm] * 4, [calm] * 5))  # nothing drops: no resampling
    assert (constant.estimate, constant.low, constant.high) == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="different items"):
        tb.paired_difference(hn, model("other", [calm], [calm] * 4, [calm] * 5), "replace", "drop")
