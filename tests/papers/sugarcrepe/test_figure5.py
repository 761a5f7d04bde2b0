"""SugarCrepe Figure 5 (papers/sugarcrepe/figure5.py) under both profiles, and the world's shared zero-shot
classification set the mini profile scores (common/miniworld/classification.py): the builder is deterministic and
balanced, the correlations and both intervals are right on synthetic tables with a known r, the outputs have their
shapes, a whole mini run on random tiny CLIPs checks its inputs against each other, and a whole full run on a
synthetic Table 6, predictions and open_clip results file matches models as the audit does, holds ImageNet fixed in
the bootstrap and builds no classification set."""
from __future__ import annotations

import csv
import hashlib
import json
import math
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from common.benchmarks.caption_negatives import CATEGORIES
from common.evaluation import stats
from common.evaluation.engine import EngineConfig
from common.files.io import write_bytes_atomic
from common.files.tasks import DatasetError
from common.miniworld import lexicon
from common.miniworld.classification import (
    COLORED_SHAPES, SHAPES, ClassificationSetConfig, ensure_classification_set, load_classification_sets,
    write_classification_set)
from papers.sugarcrepe import figure5 as F

N_CLASSES = len(lexicon.COLORS) * len(lexicon.SHAPES)
SET_CONFIG = ClassificationSetConfig(n_images=2 * N_CLASSES, image_size=48, seed=0)


def folder_digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def built_set(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("classification")
    write_classification_set(SET_CONFIG, out)
    return out


# ---- the shared builder ----------------------------------------------------------------------------------------
def test_builder_is_deterministic(built_set, tmp_path):
    write_classification_set(SET_CONFIG, tmp_path)
    assert folder_digest(tmp_path) == folder_digest(built_set)
    other = tmp_path / "other-stream"
    write_classification_set(replace(SET_CONFIG, stream_name="another-stream"), other)
    assert (other / "images" / "cls_000000.png").read_bytes() != (built_set / "images" / "cls_000000.png").read_bytes()


def test_builder_balances_classes_and_labels_match_scenes(built_set):
    sets = load_classification_sets(built_set)
    colored, shapes = sets[COLORED_SHAPES], sets[SHAPES]
    assert len(colored.class_names) == N_CLASSES and shapes.class_names == lexicon.SHAPES
    assert Counter(colored.labels) == {c: 2 for c in range(N_CLASSES)}
    assert Counter(shapes.labels) == {s: 2 * len(lexicon.COLORS) for s in range(len(lexicon.SHAPES))}
    assert colored.images == shapes.images
    scenes = {json.loads(line)["image"]: json.loads(line)["scene"]
              for line in (built_set / "scenes.jsonl").read_text().splitlines()}
    for image, c_label, s_label in zip(colored.images, colored.labels, shapes.labels):
        (obj,) = scenes[f"images/{image.name}"]["objects"]  # one object per image
        assert colored.class_names[c_label] == f"{obj['color']} {obj['shape']}"
        assert shapes.class_names[s_label] == obj["shape"]
    assert colored.class_prompts[colored.class_names.index("orange star")][0] == "an orange star."
    manifest = json.loads((built_set / "manifest.json").read_text())
    assert manifest["counts"][COLORED_SHAPES] == {"images": 2 * N_CLASSES, "classes": N_CLASSES,
                                                   "min_images_per_class": 2}
    assert str(built_set) not in (built_set / "manifest.json").read_text()


def test_ensure_reuses_the_same_config_and_rebuilds_another(tmp_path):
    small = replace(SET_CONFIG, n_images=N_CLASSES)
    _, reused = ensure_classification_set(small, tmp_path)
    assert not reused
    sets, reused = ensure_classification_set(small, tmp_path)
    assert reused and len(sets[SHAPES].images) == N_CLASSES
    sets, reused = ensure_classification_set(replace(small, n_images=N_CLASSES + 3), tmp_path)
    assert not reused and len(sets[SHAPES].images) == N_CLASSES + 3


def test_missing_image_is_named(tmp_path):
    write_classification_set(replace(SET_CONFIG, n_images=N_CLASSES), tmp_path)
    (tmp_path / "images" / "cls_000007.png").unlink()
    with pytest.raises(DatasetError, match=r"shapes\.json: 1 image\(s\) not found .*cls_000007\.png"):
        load_classification_sets(tmp_path)


def test_writer_size_must_match_config(tmp_path):
    from common.miniworld.classification import PngSceneWriter, build_classification

    with pytest.raises(ValueError, match="32 px"):
        build_classification(SET_CONFIG, PngSceneWriter(tmp_path, "images", 32))


# ---- correlations on synthetic tables --------------------------------------------------------------------------
def correctness(percents: list[float], n: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Per model, ``n`` shuffled 0/1 outcomes whose mean is exactly that model's percent."""
    out = []
    for p in percents:
        k = round(p * n / 100)
        assert k * 100 == p * n, "pick percents that n examples can hit exactly"
        out.append(rng.permutation(np.arange(n) < k))
    return out


def synthetic_points(x: list[float], y: dict[str, list[float]], n: int = 200, seed: int = 0) -> list[F.ModelPoints]:
    """Four models whose ImageNet-analog top-1 is ``x`` and whose category accuracies are ``y``."""
    rng = np.random.default_rng(seed)
    xs = correctness(x, n, rng)
    ys = {c: correctness(y[c], n, rng) for c in CATEGORIES}
    points = []
    for i in range(len(x)):
        table = {c: y[c][i] for c in CATEGORIES}
        table[F.AVERAGE] = round(sum(table.values()) / len(CATEGORIES), 2)
        points.append(F.ModelPoints(f"m{i}", f"model {i}", {COLORED_SHAPES: xs[i], SHAPES: xs[i]},
                                    {c: ys[c][i] for c in CATEGORIES}, table))
    return points


X = [20.0, 40.0, 60.0, 80.0]
KNOWN = [50.0, 60.0, 55.0, 65.0]
"""Against X (steps 1, 2, 3, 4 of 20 points), y steps 1, 3, 2, 4: Pearson r = 0.8 exactly."""
PUBLISHED = {g: (0.5, 17) for g in F.GROUPS}


def test_known_r_and_fisher_interval_of_four_models():
    y = {c: KNOWN for c in CATEGORIES} | {"swap_obj": [65.0, 60.0, 55.0, 50.0], "add_att": [50.0, 55.0, 60.0, 65.0]}
    rows = {c.category: c for c in F.correlations(synthetic_points(X, y), PUBLISHED, n_resamples=200)}
    assert rows["replace_obj"].r == pytest.approx(0.8)
    assert rows["swap_obj"].r == pytest.approx(-1.0) and rows["add_att"].r == pytest.approx(1.0)
    # n = 4: atanh(r) +- 1.96 / sqrt(4 - 3)
    fisher = rows["replace_obj"].fisher
    assert (fisher.low, fisher.high) == pytest.approx((math.tanh(math.atanh(0.8) - 1.959964),
                                                       math.tanh(math.atanh(0.8) + 1.959964)), abs=1e-5)
    assert fisher.low < 0 < fisher.high  # four models cannot even tell r = 0.8 from no correlation
    assert rows["add_att"].fisher.low == rows["add_att"].fisher.high == pytest.approx(1.0)
    # the average column is the mean of the seven (5 x 0.8-pattern, one falling, one rising)
    avg = [p.table6[F.AVERAGE] for p in synthetic_points(X, y)]
    assert rows[F.AVERAGE].r == pytest.approx(stats.pearson_r(X, avg))
    assert rows["replace_obj"].published_r == 0.5 and rows["replace_obj"].n_models == 4


def test_bootstrap_is_seeded_narrows_with_more_examples_and_contains_r():
    y = {c: KNOWN for c in CATEGORIES}
    small, large = synthetic_points(X, y, n=100), synthetic_points(X, y, n=4000)
    estimates = {g: 0.8 for g in F.GROUPS}
    a = F.example_bootstrap(small, estimates, n_resamples=120, seed=1)
    b = F.example_bootstrap(small, estimates, n_resamples=120, seed=1)
    c = F.example_bootstrap(small, estimates, n_resamples=120, seed=2)
    assert a == b and a != c
    wide, narrow = a["replace_obj"], F.example_bootstrap(large, estimates, n_resamples=120, seed=1)["replace_obj"]
    assert narrow.high - narrow.low < wide.high - wide.low
    assert narrow.low <= 0.8 <= narrow.high and narrow.high - narrow.low < 0.2
    assert a["replace_obj"].method.startswith("percentile bootstrap") and a["replace_obj"].n_resamples == 120


def test_every_model_sees_the_same_resampled_examples():
    base = np.random.default_rng(0).random((1, 50)) < 0.5
    other = np.random.default_rng(1).random((1, 50)) < 0.5
    acc = F._resampled_accuracy(np.random.default_rng(3), np.concatenate([base, base, other]), 100)
    assert acc.shape == (100, 3)
    assert np.array_equal(acc[:, 0], acc[:, 1]) and not np.array_equal(acc[:, 0], acc[:, 2])


def test_resamples_without_an_r_are_dropped_and_counted():
    y = {c: KNOWN for c in CATEGORIES}
    points = synthetic_points(X, y, n=20)
    first = points[0].category_correct["replace_obj"]  # every model identical on replace_obj: no resample has an r
    same = [replace(p, category_correct={**p.category_correct, "replace_obj": first}) for p in points]
    boot = F.example_bootstrap(same, {g: 0.0 for g in F.GROUPS}, n_resamples=50)
    assert boot["replace_obj"].dropped == 50 and math.isnan(boot["replace_obj"].low)
    assert boot["replace_att"].dropped < 50


# ---- readers and outputs ---------------------------------------------------------------------------------------
def write_table6(path: Path, points: list[F.ModelPoints], fingerprints: dict[str, str], family: str = "mini") -> Path:
    fields = ["model", "family", "label", *F.GROUPS, "fingerprint"]
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fields)
        writer.writeheader()
        for p in points:
            writer.writerow({"model": p.model, "family": family, "label": p.label, "fingerprint": fingerprints[p.model],
                             **{g: f"{p.table6[g]:.2f}" for g in F.GROUPS}})
    return path


def write_predictions(folder: Path, point: F.ModelPoints) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = F.predictions_path(folder, point.model)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["item_id", "group", "correct", "tie"])
        for c in CATEGORIES:
            writer.writerows([f"{c}/{i}", c, int(v), 0] for i, v in enumerate(point.category_correct[c]))
    return path


def test_readers_round_trip_and_name_bad_input(tmp_path):
    points = synthetic_points(X, {c: KNOWN for c in CATEGORIES}, n=20)
    table = F.read_table6(write_table6(tmp_path / "table6.csv", points, {p.model: "f" for p in points}))
    assert table["m1"].accuracy["replace_obj"] == 60.0 and table["m1"].label == "model 1"
    path = write_predictions(tmp_path / "predictions", points[1])
    ids, correct = F.read_correctness(path)
    assert ids["swap_att"] == tuple(f"swap_att/{i}" for i in range(20))
    assert all(np.array_equal(correct[c], points[1].category_correct[c]) for c in CATEGORIES)
    F.check_against_table(table["m1"], correct, path)
    with pytest.raises(F.Figure5InputError, match=r"m0\.csv.*replace_obj accuracy 50\.00 .* m1 says 60\.00"):
        F.check_against_table(table["m1"], F.read_correctness(write_predictions(tmp_path / "p0", points[0]))[1],
                              F.predictions_path(tmp_path / "p0", "m0"))
    path.write_text(path.read_text().replace("replace_obj/0,replace_obj,0", "replace_obj/0,replace_obj,yes")
                    .replace("replace_obj/0,replace_obj,1", "replace_obj/0,replace_obj,yes"))
    with pytest.raises(F.Figure5InputError, match=r"line 2 \(replace_obj/0\): correct is 'yes'"):
        F.read_correctness(path)
    (tmp_path / "bad.csv").write_text("model,label\nm0,x\n")
    with pytest.raises(F.Figure5InputError, match=r"bad\.csv:1: missing column\(s\) \['fingerprint', 'replace_obj'"):
        F.read_table6(tmp_path / "bad.csv")
    with pytest.raises(F.Figure5InputError, match=r"bad\.csv:1: missing column\(s\) \['item_id', 'group', 'correct'\]"):
        F.read_correctness(tmp_path / "bad.csv")


def test_outputs_have_their_shapes_and_same_bytes_twice(tmp_path):
    y = {c: KNOWN for c in CATEGORIES}
    points = synthetic_points(X, y)
    rows = F.correlations(points, PUBLISHED, n_resamples=100)
    first = F.write_outputs(tmp_path / "a", points, rows, {"note": "test"})
    second = F.write_outputs(tmp_path / "b", points, rows, {"note": "test"})
    assert folder_digest(tmp_path / "a") == folder_digest(tmp_path / "b")
    with open(first["figure5"], newline="") as fh:
        table = list(csv.DictReader(fh))
    assert [r["category"] for r in table] == list(F.GROUPS) and list(table[0]) == F.FIGURE5_FIELDS
    assert table[0]["r"] == "0.8000" and table[0]["published_r"] == "0.5000" and table[0]["n_models"] == "4"
    with open(first["points"], newline="") as fh:
        pts = list(csv.DictReader(fh))
    assert [p["model"] for p in pts] == ["m0", "m1", "m2", "m3"]
    assert [p["imagenet_analog_top1"] for p in pts] == ["20.00", "40.00", "60.00", "80.00"]
    metrics = json.loads(first["metrics"].read_text())
    assert list(metrics) == list(F.GROUPS) and all(isinstance(v, float) for v in metrics.values())
    assert metrics["replace_obj"] == 0.8
    assert first["figure"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and second["figure"].is_file()


# ---- a whole run on random tiny CLIPs --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def random_models():
    from common.zoo import random_model

    return {f"mini/m{i}": random_model("mini-vit-xs", seed=i) for i in range(4)}


def test_run_scores_checks_and_writes(tmp_path, monkeypatch, random_models):
    monkeypatch.setattr(F, "create_model", lambda name, device="cpu": random_models[name])
    drawn = []  # the figure itself is checked above; here only that it gets the scored points
    monkeypatch.setattr(F, "draw", lambda pts, rows, out, view: drawn.append([p.model for p in pts]) or
                        write_bytes_atomic(out, b"figure"))
    names = list(random_models)
    y = {c: KNOWN for c in CATEGORIES}
    points = [replace(p, model=name) for p, name in zip(synthetic_points(X, y, n=20), names)]
    table = write_table6(tmp_path / "table6.csv", points, {n: m.fingerprint for n, m in random_models.items()})
    for p in points:
        write_predictions(tmp_path / "predictions", p)
    config = F.Figure5Config(classification_images=N_CLASSES, n_resamples=50)
    engine = EngineConfig(image_batch_size=64, num_workers=0)
    written = F.run_mini(names, config, engine, tmp_path / "set", tmp_path / "out", table, tmp_path / "predictions",
                    published=(PUBLISHED, "test"))
    assert sorted(p.name for p in written.values()) == ["figure5.csv", "figure5.png", "figure5_context.json",
                                                        "figure5_metrics.json", "figure5_points.csv"]
    assert drawn == [names]
    context = json.loads(written["context"].read_text())
    assert context["models"] == {n: m.fingerprint for n, m in random_models.items()}
    assert str(tmp_path) not in written["context"].read_text()
    shuffled = F.predictions_path(tmp_path / "predictions", names[2])
    header, first, second, *rest = shuffled.read_text().splitlines(keepends=True)
    in_step = shuffled.read_text()
    shuffled.write_text("".join([header, second, first, *rest]))  # same accuracies, examples out of step
    with pytest.raises(F.Figure5InputError, match=r"mini__m2\.csv: its examples differ from those of .*mini__m0\.csv"):
        F.run_mini(names, config, engine, tmp_path / "set", tmp_path / "out", table, tmp_path / "predictions",
              published=(PUBLISHED, "test"))
    shuffled.write_text(in_step)
    write_table6(table, points, {n: "stale" for n in names})
    with pytest.raises(F.Figure5InputError, match=r"table6\.csv: mini/m0 was scored with weights stale"):
        F.run_mini(names, config, engine, tmp_path / "set", tmp_path / "out", table, tmp_path / "predictions",
              published=(PUBLISHED, "test"))


# ---- the full profile: open_clip's published ImageNet-1k top-1 against this run's Table 6 ----------------------
FULL_MODELS = {  # zoo name -> its row in open_clip's results (name, pretrained tag)
    "openai/RN50": ("RN50-quickgelu", "openai"),  # exact
    "openai/RN50x4": ("RN50x4", "openai"),  # the zoo's RN50x4-quickgelu, listed without the suffix
    "laion/ViT-H-14": ("ViT-H-14", "laion2b_s32b_b79k"),
    "datacomp/small-ViT-B-32": ("ViT-B-32", "datacomp_s_s13m_b4k"),
}
NOT_IN_CSV = "datacomp/medium-ViT-B-32"
NOT_PLOTTED = "mini/xs-2k"  # no open_clip pretrained tag: Figure 5 plots pretrained CLIPs only
SOURCE = {"key": "test/openclip_results.csv"}


def write_imagenet(path: Path, top1: dict[str, float]) -> Path:
    """open_clip's results CSV for the models in ``top1`` (percent), plus a row no model matches."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["name", "pretrained", "ImageNet 1k", "Average perf. on 38 datasets"])
        for model, value in top1.items():
            writer.writerow([*FULL_MODELS[model], f"{value / 100:.4f}", "0.5"])
        writer.writerow(["ViT-B-32", "laion2b_s34b_b79k", "0.6656", "0.5"])
    return path


@pytest.fixture()
def full_inputs(tmp_path) -> tuple[list[str], Path, Path, Path, list[F.ModelPoints]]:
    """(models, table6.csv, predictions folder, imagenet csv, the points they encode) for the four FULL_MODELS,
    ImageNet top-1 X and category accuracies KNOWN (r = 0.8), plus the two models that cannot be plotted."""
    y = {c: KNOWN for c in CATEGORIES}
    names = list(FULL_MODELS)
    points = [replace(p, model=name, label=name.split("/")[1]) for p, name in zip(synthetic_points(X, y, n=40), names)]
    extra = [replace(points[0], model=NOT_IN_CSV), replace(points[0], model=NOT_PLOTTED)]
    table = write_table6(tmp_path / "table6.csv", points + extra, {p.model: "f" + p.model for p in points + extra},
                         family="OpenAI")
    for p in points + extra:
        write_predictions(tmp_path / "predictions", p)
    imagenet = write_imagenet(tmp_path / "openclip_results.csv", dict(zip(names, X)))
    return [*names[:2], NOT_IN_CSV, *names[2:], NOT_PLOTTED], table, tmp_path / "predictions", imagenet, points


def test_models_are_matched_as_the_audit_matches_them(full_inputs):
    models, _, _, imagenet, _ = full_inputs
    matches, left_out = F.pick_imagenet(models, F.read_imagenet(imagenet))
    assert list(matches) == list(FULL_MODELS)  # in the models' order
    assert {m: (x.csv_name, x.csv_pretrained) for m, x in matches.items()} == FULL_MODELS
    assert matches["openai/RN50"].how == "exact" and matches["openai/RN50x4"].how == "without -quickgelu"
    assert matches["laion/ViT-H-14"].imagenet == pytest.approx(0.6)
    assert set(left_out) == {NOT_IN_CSV, NOT_PLOTTED}
    assert "datacomp_m_s128m_b4k" in left_out[NOT_IN_CSV] and "pretrained" in left_out[NOT_PLOTTED]


def test_full_bootstrap_holds_imagenet_fixed():
    y = {c: KNOWN for c in CATEGORIES}
    points = [replace(p, classification_correct={}, published_top1={F.IMAGENET_1K: x})
              for p, x in zip(synthetic_points(X, y, n=4000), X)]
    boot = F.example_bootstrap(points, {g: 0.8 for g in F.GROUPS}, F.IMAGENET_1K, n_resamples=200)
    assert boot["replace_obj"].method.endswith("(x fixed: no per-image outcomes)")
    ci = boot["replace_obj"]
    assert ci.low <= 0.8 <= ci.high and ci.high - ci.low < 0.2
    # x fixed at the published values, y from the seed's first draw (no draw for the images)
    assert CATEGORIES[0] == "replace_obj"
    y0 = F._resampled_accuracy(np.random.default_rng(F.SEED), np.stack([p.category_correct["replace_obj"]
                                                                          for p in points]), 200)
    expected = np.percentile([stats.pearson_r(X, row) for row in y0], [2.5, 97.5])
    assert (boot["replace_obj"].low, boot["replace_obj"].high) == pytest.approx(tuple(expected))
    # the same draws without the images' resampling: a narrower interval than when x is resampled too
    with_images = F.example_bootstrap(synthetic_points(X, y, n=200), {g: 0.8 for g in F.GROUPS}, n_resamples=200)
    fixed = F.example_bootstrap([replace(p, classification_correct={}, published_top1={F.IMAGENET_1K: x})
                                 for p, x in zip(synthetic_points(X, y, n=200), X)],
                                {g: 0.8 for g in F.GROUPS}, F.IMAGENET_1K, n_resamples=200)
    assert fixed["replace_obj"].high - fixed["replace_obj"].low < with_images["replace_obj"].high - \
        with_images["replace_obj"].low
    mixed = synthetic_points(X, y, n=20)
    mixed[0] = replace(mixed[0], classification_correct={}, published_top1={COLORED_SHAPES: 20.0})
    with pytest.raises(ValueError, match="some models have per-image outcomes"):
        F.example_bootstrap(mixed, {g: 0.8 for g in F.GROUPS}, COLORED_SHAPES, n_resamples=10)


def test_full_run_correlates_writes_and_builds_no_classification_set(full_inputs, tmp_path, monkeypatch):
    models, table, predictions, imagenet, points = full_inputs
    monkeypatch.setattr(F, "ensure_classification_set", lambda *a, **k: pytest.fail("built a classification set"))
    monkeypatch.setattr(F, "create_model", lambda *a, **k: pytest.fail("loaded a model"))
    written = F.run_full(models, F.Figure5Config(n_resamples=100), tmp_path / "out", imagenet, SOURCE, table,
                         predictions, published=(PUBLISHED, "test"))
    assert sorted(p.name for p in written.values()) == ["figure5.csv", "figure5.png", "figure5_context.json",
                                                        "figure5_metrics.json", "figure5_points.csv"]
    assert not (tmp_path / "out" / "classification").exists()
    with open(written["figure5"], newline="") as fh:
        table5 = {r["category"]: r for r in csv.DictReader(fh)}
    assert list(next(iter(table5.values()))) == [f for f in F.FIGURE5_FIELDS if f != "r_shapes"]
    assert table5["replace_obj"]["r"] == "0.8000" and table5["replace_obj"]["n_models"] == "4"
    assert float(table5["replace_obj"]["bootstrap_low"]) <= 0.8 <= float(table5["replace_obj"]["bootstrap_high"])
    # Fisher over n = 4 models, as in the mini profile
    assert float(table5["replace_obj"]["fisher_low"]) == pytest.approx(math.tanh(math.atanh(0.8) - 1.959964), abs=1e-4)
    with open(written["points"], newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == ["model", "label", "imagenet_top1", *F.GROUPS]
    assert [(r["model"], r["imagenet_top1"]) for r in rows] == [(m, f"{x:.2f}") for m, x in zip(FULL_MODELS, X)]
    context = json.loads(written["context"].read_text())
    assert context["profile"] == "full" and context["imagenet"]["key"] == SOURCE["key"]
    assert context["models"]["openai/RN50x4"] == {"fingerprint": "fopenai/RN50x4", "openclip": "RN50x4/openai",
                                                  "match": "without -quickgelu", "imagenet_top1": 40.0}
    assert set(context["left_out"]) == {NOT_IN_CSV, NOT_PLOTTED}
    assert "n = 4: atanh(r) +- 1.96" in context["intervals"]["fisher"] and str(tmp_path) not in json.dumps(context)
    assert json.loads(written["metrics"].read_text())["replace_obj"] == 0.8


def test_full_run_names_bad_inputs(full_inputs, tmp_path):
    models, table, predictions, imagenet, points = full_inputs
    config = F.Figure5Config(n_resamples=10)

    def run(models=models, table=table, imagenet=imagenet):
        return F.run_full(models, config, tmp_path / "out", imagenet, SOURCE, table, predictions,
                          published=(PUBLISHED, "test"))

    with pytest.raises(F.Figure5InputError, match=r"openclip_results\.csv: only 2 of the models .* needs 3"):
        run(models=[*list(FULL_MODELS)[:2], NOT_IN_CSV])
    write_table6(table, points[1:], {p.model: "f" for p in points})
    with pytest.raises(F.Figure5InputError, match=r"table6\.csv: no row for openai/RN50: rerun the table6 stage"):
        run()
    (tmp_path / "bad.csv").write_text("name,pretrained\nRN50,openai\n")
    with pytest.raises(F.Figure5InputError, match=r"bad\.csv: cannot read ImageNet-1k top-1: .*missing column"):
        run(imagenet=tmp_path / "bad.csv")


def test_main_follows_the_profile(monkeypatch, tmp_path):
    """Under full, main fetches open_clip's results and runs the full path; the mini-only options are refused."""
    params = {"profile": "full", "sugarcrepe": {"models": {"full": list(FULL_MODELS), "mini": ["mini/xs-2k"]},
                                                "figure5": {"n_resamples": 7}}}
    monkeypatch.setattr(F, "own_params", lambda stage=None: params)
    monkeypatch.setattr(F, "imagenet_results", lambda: (tmp_path / "results.csv", SOURCE))
    monkeypatch.setattr(F, "published_correlations", lambda models, fetcher=None: (PUBLISHED, f"{len(models)} models"))
    monkeypatch.setattr(F, "run_mini", lambda *a, **k: pytest.fail("ran the mini path"))
    calls = []
    monkeypatch.setattr(F, "run_full", lambda *a, **k: calls.append((a, k)) or {})
    assert F.main(["--seed", "3"]) == 0
    (models, config, out_dir, imagenet_csv, source), kwargs = calls[0]
    assert models == list(FULL_MODELS) and out_dir == F.RESULTS / "sugarcrepe" / "full"
    assert (config.n_resamples, config.bootstrap_seed) == (7, 3) and imagenet_csv == tmp_path / "results.csv"
    assert kwargs["published"] == (PUBLISHED, "4 models")
    with pytest.raises(SystemExit):
        F.main(["--classification-images", "56"])
