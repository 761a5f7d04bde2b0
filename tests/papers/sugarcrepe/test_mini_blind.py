"""The mini "ARO+CREPE" set (papers/sugarcrepe/mini_templates.py) and the mini blind attack (mini_blind.py), on a
small mini SugarCrepe set and training captions built here."""
from __future__ import annotations

import csv
import hashlib
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from common.benchmarks.caption_negatives import CATEGORIES, PreparedSet, read_category
from common.blind.crossfit import PairScores, TextPair
from common.files.tasks import DatasetError
from common.miniworld.build import stream
from common.miniworld.claims import sample_claim
from common.miniworld.scene import sample_scene
from common.miniworld.templates import TEMPLATE_KINDS
from papers.sugarcrepe import mini_blind
from papers.sugarcrepe.aro_crepe import load_template_set
from papers.sugarcrepe.mini_templates import build_template_set
from papers.sugarcrepe.sets_mini import MiniSetConfig, build_mini_set

CONFIG = MiniSetConfig(examples_per_category=40, image_size=24, seed=0)
BLIND = mini_blind.Config(folds=3, bootstrap=200, lm_train_images=1200)


def digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def sets(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("mini")
    build_mini_set(CONFIG, root / "sugarcrepe", progress=False)
    build_template_set(CONFIG, root / "sugarcrepe", root / "sugarcrepe_templates")
    rng = stream(0, "test-mini-blind-train")  # training captions: scenes of their own stream, 3 captions each
    captions = []
    for _ in range(BLIND.lm_train_images):
        scene = sample_scene(rng, allow_heldout=False)
        captions.append([sample_claim(rng, scene).text() for _ in range(3)])
    (root / "captions.json").write_text(json.dumps(captions))
    return {"root": root, "mini": root / "sugarcrepe", "templates": root / "sugarcrepe_templates",
            "captions": root / "captions.json"}


@pytest.fixture(scope="module")
def result(sets) -> dict:
    return mini_blind.run(BLIND, sets["root"] / "out", sets["mini"], sets["templates"], sets["captions"])


# ---- the template set ----------------------------------------------------------------------------------------------
def test_template_set_fixes_the_positives_and_images_of_the_mini_set(sets):
    mini = PreparedSet.load(sets["mini"] / "manifest.json")
    caption_of = {r["filename"]: r["caption"] for p in mini.files().values() for r in read_category(p).values()}
    template = load_template_set(sets["templates"])
    assert list(template.files) == list(TEMPLATE_KINDS)
    assert template.info["counts"] == {kind: CONFIG.examples_per_category for kind in TEMPLATE_KINDS}
    for kind, path in template.files.items():
        records = read_category(path)
        assert list(records) == [str(i) for i in range(CONFIG.examples_per_category)]
        for record in records.values():
            assert caption_of[record["filename"]] == record["caption"] != record["negative_caption"]
    items = template.items()  # the SugarCrepe loader: every image resolves in the mini set's folder
    assert len(items) == 4 * CONFIG.examples_per_category
    assert all(item.image.parent.resolve() == mini.image_root.resolve() and item.image.is_file() for item in items)
    manifest = (sets["templates"] / "manifest.json").read_text()
    assert str(sets["root"]) not in manifest and json.loads(manifest)["image_root"] == "../sugarcrepe/images"
    variants = [json.loads(line) for line in (sets["templates"] / "edits.jsonl").read_text().splitlines()]
    assert len(variants) == 4 * CONFIG.examples_per_category
    assert {v["variant"].split("_")[0] for v in variants} >= {"replace", "swap", "not", "there", "shuffle"}


def test_template_set_is_deterministic(sets, tmp_path):
    build_template_set(CONFIG, sets["mini"], sets["root"] / "again")
    assert digest(sets["root"] / "again") == digest(sets["templates"])


def test_template_set_refuses_a_mini_set_built_from_another_seed(sets, tmp_path):
    with pytest.raises(DatasetError, match="regenerates .* with seed 1: rebuild the mini set"):
        build_template_set(replace(CONFIG, seed=1), sets["mini"], tmp_path / "other")
    assert not (tmp_path / "other" / "manifest.json").exists()


def test_load_template_set_errors(tmp_path):
    with pytest.raises(DatasetError, match="no template set here"):
        load_template_set(tmp_path)
    (tmp_path / "manifest.json").write_text(json.dumps({"kind": "sugarcrepe", "data_dir": "data"}))
    with pytest.raises(DatasetError, match="not a sugarcrepe-templates manifest"):
        load_template_set(tmp_path)


# ---- the blind attack ----------------------------------------------------------------------------------------------
def test_stage_writes_its_outputs_and_templates_are_solved_blind(sets, result):
    out = sets["root"] / "out"
    for name in ("blind_accuracy.csv", "table4.csv", "blind_refinement.csv", "blind_metrics.json",
                 "blind_context.json", "blind_accuracy.png"):
        assert (out / name).is_file(), name
    rows = {(r["benchmark"], r["category"], r["scorer"]): r for r in result["accuracy"]}
    n = CONFIG.examples_per_category
    assert {(b, c) for b, c, _ in rows} == ({(mini_blind.TEMPLATES, k) for k in (*TEMPLATE_KINDS, "all (micro)")}
                                            | {(mini_blind.SUGARCREPE, c) for c in (*CATEGORIES, "all (micro)")})
    for row in rows.values():
        assert row["ci_low"] <= row["accuracy"] <= row["ci_high"]
        assert row["n"] == (n * (4 if row["benchmark"] == mini_blind.TEMPLATES else 7)
                            if row["category"] == "all (micro)" else n)
    for kind in ("negate", "shuffle", "swap"):
        assert rows[(mini_blind.TEMPLATES, kind, "ngram-lm")]["accuracy"] >= 75, kind
    for category in ("replace_rel", "swap_obj"):  # fluent, prior-free edits: the language model is near chance
        assert 25 <= rows[(mini_blind.SUGARCREPE, category, "ngram-lm")]["accuracy"] <= 75, category
    with open(out / "blind_accuracy.csv", newline="") as fh:
        assert len(list(csv.DictReader(fh))) == len(rows)


def test_metrics_are_few_flat_numbers_and_match_the_tables(sets, result):
    metrics = json.loads((sets["root"] / "out" / "blind_metrics.json").read_text())
    assert len(metrics) <= 8 and all(isinstance(v, (int, float)) for v in metrics.values())
    micro = {(r["benchmark"], r["scorer"]): r["accuracy"] for r in result["accuracy"] if r["category"] == "all (micro)"}
    assert metrics["aro_crepe_lm"] == micro[(mini_blind.TEMPLATES, "ngram-lm")]
    assert metrics["sugarcrepe_classifier"] == micro[(mini_blind.SUGARCREPE, "text-classifier")]
    negate = next(r for r in result["table4"] if r["aro_crepe_kind"] == "negate")
    assert metrics["table4_negate_sugarcrepe_more_fluent"] == negate["sugarcrepe_more_fluent_share"] > 80
    assert negate["mean_sugarcrepe"] > negate["mean_aro_crepe"]


def test_refinement_leaves_each_scorer_at_most_at_chance(result):
    for row in result["refinement"]:
        assert 0 <= row["n_kept"] <= row["n"]
        if row["n_kept"]:
            assert row["lm_after"] <= 50 and row["classifier_after"] <= 50  # ties count wrong
        else:
            assert row["lm_after"] == row["classifier_after"] == row["retrained_classifier_after"] == ""


def pair(benchmark: str, category: str, group: str) -> TextPair:
    return TextPair(benchmark, category, group, f"positive {group}", f"{benchmark} {category} {group}")


def test_table4_pairs_negatives_of_the_same_positive():
    T, S = mini_blind.TEMPLATES, mini_blind.SUGARCREPE
    pairs = [pair(T, "replace", "a"), pair(T, "replace", "b"), pair(T, "swap", "a"), pair(T, "negate", "a"),
             pair(S, "replace_obj", "a"), pair(S, "replace_att", "a"), pair(S, "replace_rel", "b"),
             pair(S, "replace_obj", "c"),  # no template negative of image c: in the means, in no pair
             pair(S, "swap_att", "a"), pair(S, "add_obj", "a")]
    negative = np.array([0.2, 0.6, 0.1, 0.0, 0.5, 0.2, 0.6, 0.9, 0.3, 0.4])
    scores = PairScores("lm", np.full(10, 0.5), negative)
    rows = {r["aro_crepe_kind"]: r for r in mini_blind.paired_table4(pairs, scores, T, S, mini_blind.by_image)}
    replace_row = rows["replace"]
    # pairs: (0.5 vs 0.2) win, (0.2 vs 0.2) tie, (0.6 vs 0.6) tie -> (1 + 0.5 + 0.5) / 3
    assert replace_row["n_pairs"] == 3 and replace_row["n_ties"] == 2
    assert replace_row["sugarcrepe_more_fluent_share"] == pytest.approx(100 * 2 / 3, abs=0.01)
    assert replace_row["mean_aro_crepe"] == 40.0 and replace_row["mean_sugarcrepe"] == pytest.approx(55.0)
    assert replace_row["sugarcrepe_categories"] == "replace_att+replace_obj+replace_rel"
    assert rows["swap"]["sugarcrepe_more_fluent_share"] == 100.0 and rows["negate"]["n_pairs"] == 1


def test_inputs_errors(sets, tmp_path):
    with pytest.raises(DatasetError, match="at least 5000 caption lists"):
        mini_blind.read_train_captions(sets["captions"], 5000)
    bad = tmp_path / "captions.json"
    bad.write_text(json.dumps([["A circle."], [""]]))
    with pytest.raises(DatasetError, match="image 1: expected a list of non-empty captions"):
        mini_blind.read_train_captions(bad, 2)
    with pytest.raises(DatasetError, match="missing"):
        mini_blind.read_train_captions(tmp_path / "absent.json", 2)
