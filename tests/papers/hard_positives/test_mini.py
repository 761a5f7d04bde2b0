"""Hard positives, mini profile: the benchmark, the fine-tuning set, the runs' wiring, and a tiny end-to-end table."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from common.miniworld import scene as scene_module
from common.scoring.selection import Outcome, SelectionResult
from common.training import FromScratch
from common.training.checkpoint import portable_state, save_weights
from papers.hard_positives import evaluation as ev
from papers.hard_positives import mini as m
from papers.hard_positives import mini_tables as t
from papers.hard_positives import tables as tb
from papers.hard_positives.losses import HardPositiveLoss

ARCH = "mini-vit-xs"


@pytest.fixture(scope="module")
def tokenize():
    return m.tokenizer_for(ARCH)


@pytest.fixture(scope="module")
def test_set(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("hp_test")
    m.build_test_set(m.TestSetConfig(examples_per_group=8), out)
    return out


@pytest.fixture(scope="module")
def finetune_set(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("hp_finetune")
    m.build_finetune_set(m.FinetuneSetConfig(train_images=16, captions_per_image=2), out)
    return out


# ---------------------------------------------------------------------------------------------------------------
# The benchmark
# ---------------------------------------------------------------------------------------------------------------
def test_benchmark_is_deterministic_and_a_prefix_of_a_larger_one(test_set, tmp_path):
    m.build_test_set(m.TestSetConfig(examples_per_group=8), tmp_path / "again")
    for name in ("manifest.json", "scenes.jsonl"):
        assert (tmp_path / "again" / name).read_bytes() == (test_set / name).read_bytes()
    m.build_test_set(m.TestSetConfig(examples_per_group=12), tmp_path / "larger")
    small = json.loads((test_set / "manifest.json").read_text())["examples"]
    large = json.loads((tmp_path / "larger" / "manifest.json").read_text())["examples"]
    for group in ev.GROUPS:
        mine = [r for r in small if r["group"] == group]
        assert mine == [r for r in large if r["group"] == group][:8]
        first = mine[0]["filename"]
        assert (test_set / "images" / first).read_bytes() == (tmp_path / "larger" / "images" / first).read_bytes()


def test_benchmark_groups_pair_each_negative_with_its_positive(test_set):
    manifest = json.loads((test_set / "manifest.json").read_text())
    assert manifest["counts"] == {g: 8 for g in ev.GROUPS} and manifest["stream"] == "test-hard-positives"
    items = m.load_test_items(test_set)
    assert len(items) == 24 and {it.group for it in items} == set(ev.GROUPS)
    by_id = {r["id"]: r for r in manifest["examples"]}
    for it in items:
        record = by_id[it.item_id]
        c, c_p, c_n = it.captions
        assert it.image == test_set / "images" / record["filename"]
        if it.group == "swap":  # "A1 X and A2 Y": c_p "A2 Y and A1 X", c_n "A2 X and A1 Y"
            first, second = c[:-1].lower().removeprefix("there is ").split(" and ")
            assert c_p.lower().endswith(f"{second} and {first}.")
            content = [sorted(w for w in x.lower().split() if w not in ("a", "an")) for x in (c, c_n)]
            assert content[0] == content[1] and c_n != c  # the same words (but articles), other attachments
            assert record["negative_edit"] == "swap_att" and record["positive_variant"] == "reorder_pair"
        else:
            kind = "relation" if it.group == "replace-relations" else ("size", "color")
            assert record["positive_variant"].removeprefix("synonym_") in kind
            assert record["negative_edit"] == ("replace_rel" if it.group == "replace-relations" else "replace_att")
            assert len(c.split()) != len(c_p.split()) or sum(a != b for a, b in zip(c.split(), c_p.split())) == 1


def test_benchmark_scenes_record_their_claims(test_set):
    lines = [json.loads(line) for line in (test_set / "scenes.jsonl").read_text().splitlines()]
    manifest = json.loads((test_set / "manifest.json").read_text())
    assert len(lines) == manifest["n_images"] == len({r["filename"] for r in manifest["examples"]})
    assert all(set(line["examples"]) <= set(ev.GROUPS) and line["scene"]["objects"] for line in lines)


@pytest.mark.parametrize("edit, message", [
    (lambda ex: ex[3].pop("positive"), r"manifest.json: record 3: no 'positive'"),
    (lambda ex: ex[5].update(group="negate"), r"manifest.json: record 5: unknown group 'negate'"),
    (lambda ex: ex[2].update(filename="nowhere.png"), r"manifest.json: record 2: image .*nowhere.png is missing"),
    (lambda ex: ex[4].update(positive=ex[4]["caption"]), r"manifest.json: record 4: c, c_p and c_n must differ"),
    (lambda ex: ex[6].update(id=ex[0]["id"]), r"manifest.json: record 6: id .* repeats"),
])
def test_bad_benchmark_records_are_named(test_set, tmp_path, edit, message):
    broken = tmp_path / "broken"
    (broken / "images").mkdir(parents=True)
    for image in (test_set / "images").iterdir():
        (broken / "images" / image.name).write_bytes(image.read_bytes())
    manifest = json.loads((test_set / "manifest.json").read_text())
    edit(manifest["examples"])
    (broken / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(m.DatasetError, match=message):
        m.load_test_items(broken)


def test_a_missing_benchmark_says_which_stage_builds_it(tmp_path):
    with pytest.raises(m.HardPositivesMiniError, match="manifest.json: missing"):
        m.load_test_items(tmp_path)


# ---------------------------------------------------------------------------------------------------------------
# The fine-tuning set
# ---------------------------------------------------------------------------------------------------------------
def test_finetune_set_is_deterministic_and_every_row_has_a_positive_and_negative_of_its_type(finetune_set, tmp_path):
    m.build_finetune_set(m.FinetuneSetConfig(train_images=16, captions_per_image=2), tmp_path)
    for name in ("images.npy", "rows.json", "manifest.json"):
        assert (tmp_path / name).read_bytes() == (finetune_set / name).read_bytes(), name
    data = m.FinetuneSet.load(finetune_set)
    assert data.images.shape == (16, 48, 48, 3) and data.captions_per_image == 2
    rows = [r for image_rows in data.rows for r in image_rows]
    assert {r.type for r in rows} == set(m.TYPES)
    for r in rows:
        assert len({r.caption.lower(), r.positive.lower(), r.negative.lower()}) == 3
        assert r.negative_edit in m.NEGATIVE_EDITS[r.type]
        assert r.positive_variant.startswith("synonym_" if r.type == "replace" else "reorder_")
    counts = json.loads((finetune_set / "manifest.json").read_text())["counts"]
    assert counts["images"] == 16 and sum(counts["distinct_rows_by_type"].values()) == counts["distinct_rows"]
    assert counts["claims_without_a_type"] >= 0 and set(counts["claims_without_a_negative_by_type"]) == set(m.TYPES)


def test_training_scenes_hold_no_heldout_pair_and_no_benchmark_scene(monkeypatch, tmp_path):
    drawn: dict[str, list] = {"test": [], "train": []}
    phase = {"now": "test"}
    original = scene_module.sample_scene

    def spy(rng, n_objects=None, allow_heldout=True):
        scene = original(rng, n_objects, allow_heldout)
        drawn[phase["now"]].append((scene, allow_heldout))
        return scene

    monkeypatch.setattr(m, "sample_scene", spy)
    m.build_test_set(m.TestSetConfig(examples_per_group=10), tmp_path / "test")
    phase["now"] = "train"
    m.render_finetune_set(m.FinetuneSetConfig(train_images=30, captions_per_image=2))
    assert drawn["train"] and all(not allow for _, allow in drawn["train"])
    assert not any(scene_module.contains_heldout(s) for s, _ in drawn["train"])
    assert not {s for s, _ in drawn["train"]} & {s for s, _ in drawn["test"]}


def test_bad_rows_are_named(finetune_set, tmp_path):
    (tmp_path / "images.npy").write_bytes((finetune_set / "images.npy").read_bytes())
    rows = json.loads((finetune_set / "rows.json").read_text())
    rows[3][1]["type"] = "negate"
    (tmp_path / "rows.json").write_text(json.dumps(rows))
    with pytest.raises(m.DatasetError, match=r"rows.json: record 3: row 1: unknown type 'negate'"):
        m.FinetuneSet.load(tmp_path)
    del rows[3][1]["type"]
    rows[2][0]["positive"] = ""
    (tmp_path / "rows.json").write_text(json.dumps(rows))
    with pytest.raises(m.DatasetError, match=r"rows.json: record 2: row 0: no 'positive'"):
        m.FinetuneSet.load(tmp_path)


def test_a_one_type_run_trains_on_that_types_rows_only(finetune_set):
    data = m.FinetuneSet.load(finetune_set)
    for run, kind in (("hp-hn-swap", "swap"), ("hp-hn-replace", "replace")):
        sub = m.run_data(run, data)
        assert sub.captions_per_image == data.captions_per_image
        assert all(r.type == kind for rows in sub.rows for r in rows)
        kept = {(i, r) for i, rows in enumerate(data.rows) for r in rows if r.type == kind}
        assert {r for rows in sub.rows for r in rows} == {r for _, r in kept}
        assert len(sub.images) == len({i for i, _ in kept})
    assert m.run_data("hn", data) is data


# ---------------------------------------------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------------------------------------------
def test_batches_carry_caption_positive_and_negative_of_the_drawn_row(finetune_set, tokenize):
    data = m.FinetuneSet.load(finetune_set)
    batches = m.batches_for(data, tokenize, "x")
    for step in range(6):
        batch = batches.batch(0, step, 4)
        assert batch["texts"].shape[:2] == (4, 3)
        idx, pick = batches.draws(0, step, 4)
        rows = [data.rows[i][j] for i, j in zip(idx, pick)]
        for k, name in enumerate(("caption", "positive", "negative")):
            assert torch.equal(batch["texts"][:, k], tokenize([getattr(r, name) for r in rows]))


def test_a_positive_that_tokenizes_like_its_caption_is_refused(finetune_set, tokenize):
    data = m.FinetuneSet.load(finetune_set)
    row = data.rows[2][1]
    data.rows[2][1] = m.TrainingRow(row.caption, row.type, row.caption.upper(), row.negative, "x", "y")
    with pytest.raises(m.DatasetError, match="image 2: caption 1: its hard positive tokenizes like the caption"):
        m.batches_for(data, tokenize, "x")


@pytest.mark.parametrize("run", ["clip-ft", "hn", "ratio-0.25", "hp-hn-swap"])
def test_each_run_trains_with_its_weights(finetune_set, tokenize, tmp_path, monkeypatch, run):
    seen = []
    original = HardPositiveLoss.forward

    def spy(self, image_features, text_features, logit_scale, batch=None):
        seen.append((self.hard_positive_weight, self.hard_negative_weight, len(image_features), len(text_features)))
        return original(self, image_features, text_features, logit_scale, batch)

    monkeypatch.setattr(HardPositiveLoss, "forward", spy)
    params = m.RunParams(base="unused", steps=2, batch_size=4, lr=1e-3, warmup_steps=1)
    result = m.train_run(run, m.FinetuneSet.load(finetune_set), params, tmp_path / f"{run}.safetensors",
                         init=FromScratch(ARCH), tokenize=tokenize, checkpoint_every=0)
    spec = m.RUNS[run]
    assert seen == [(spec.hard_positive_weight, spec.hard_negative_weight, 4, 12)] * 2
    assert result.record["loss"] == {"name": "HardPositiveLoss", "hard_positive_weight": spec.hard_positive_weight,
                                     "hard_negative_weight": spec.hard_negative_weight}
    assert result.record["types"] == list(spec.types) and result.record["run"] == run
    expected_terms = {"contrastive_loss"} | ({"hard_positive_loss"} if spec.hard_positive_weight else set()) \
        | ({"hard_negative_loss"} if spec.hard_negative_weight else set())
    assert set(result.terms) == expected_terms


def test_runs_are_the_papers():
    assert [r for r in m.RUNS] == ["clip-ft", "hn", "hp-hn", "hp-hn-swap", "hp-hn-replace", "ratio-0", "ratio-0.25",
                                   "ratio-0.5", "ratio-0.75"]
    assert [m.RUNS[r].hard_negative_weight for r in ("ratio-0", "ratio-0.25", "ratio-0.5", "ratio-0.75", "hp-hn")] == [
        0.0, 0.25, 0.5, 0.75, 1.0]
    assert {m.RUNS[r].hard_positive_weight for r in m.RUNS if r.startswith("ratio")} == {1.0}
    assert (m.RUNS["hn"].hard_positive_weight, m.RUNS["clip-ft"].hard_negative_weight) == (0.0, 0.0)


# ---------------------------------------------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------------------------------------------
def test_tiny_end_to_end_writes_the_tables(test_set, finetune_set, tokenize, tmp_path):
    from common.engine import EngineConfig

    params = m.RunParams(base="unused", steps=2, batch_size=4, lr=1e-3, warmup_steps=1)
    models = tmp_path / "models"
    base = FromScratch(ARCH)
    torch.manual_seed(0)
    save_weights(models / "base.safetensors", portable_state(base.build().model))
    data = m.FinetuneSet.load(finetune_set)
    for run in m.RUNS:
        m.train_run(run, data, params, models / f"{run}.safetensors", init=base, tokenize=tokenize, checkpoint_every=0)
    entries = [t.ModelEntry("base", "base", None, models / "base.safetensors"), *t.entries_for("unused", models)[1:]]
    out = tmp_path / "results"
    config = EngineConfig(progress=False)
    paths = t.evaluate_tables(entries, ARCH, test_set, out, config, context={"test": True})
    first = {name: p.read_bytes() for name, p in paths.items()}
    t.evaluate_tables(entries, ARCH, test_set, out, config, context={"test": True})
    assert {name: p.read_bytes() for name, p in paths.items()} == first

    def read(name):
        with open(paths[name], newline="") as fh:
            return list(csv.DictReader(fh))

    table1, table2, table3, groups = read("table1"), read("table2"), read("table3"), read("groups")
    assert [r["model"] for r in table1] == ["base", *(f"hard_positives/mini-{r}" for r in tb.TABLE1_RUNS)]
    assert [r["model"] for r in table3] == ["base", *(f"hard_positives/mini-{r}" for r in tb.TABLE3_ROWS[1:])]
    assert len(table2) == 10 and len(groups) == 30
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
