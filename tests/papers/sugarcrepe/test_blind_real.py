"""The real-text blind stage on files the test writes in each release's own layout (no mirror needed)."""
from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import numpy as np
import pytest

from common.benchmarks.caption_negatives import CATEGORIES
from common.files.tasks import DatasetError
from papers.sugarcrepe import blind_real

SHAPES = ["dog", "cat", "horse", "bench", "table", "clock", "kite", "boat"]
COLOURS = ["red", "blue", "green", "white", "black", "brown"]


def caption(rng: random.Random) -> str:
    return f"A {rng.choice(COLOURS)} {rng.choice(SHAPES)} next to a {rng.choice(COLOURS)} {rng.choice(SHAPES)}."


def write_release(root: Path, n: int = 30) -> tuple[dict[str, Path], Path]:
    rng = random.Random(0)
    files: dict[str, Path] = {}
    titles = []
    for folder, size in (("data", n), ("data_unrefined", 2 * n)):
        for category in CATEGORIES:
            records = {}
            for i in range(size):
                pos = caption(rng)
                neg = pos.replace(".", " and a kite.") if category.startswith("add") else caption(rng)
                records[str(i)] = {"filename": f"{i + 100 * CATEGORIES.index(category):012d}.jpg", "caption": pos,
                                   "negative_caption": neg}
            path = root / "sugarcrepe" / folder / f"{category}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(records))
            files[f"sugarcrepe/{folder}/{category}.json"] = path
    for kind, key in blind_real.VL_CHECKLIST.items():
        rows = [{"image_id": str(i), "true_caption": f"dog on {rng.choice(SHAPES)}",
                 "false_caption": f"dog out of {rng.choice(SHAPES)}", "image_path": f"data/VG_100K/{i}.jpg"}
                for i in range(40)]
        path = root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(rows))
        files[key] = path
    tsv = root / "valid_neg_clip.tsv"
    with open(tsv, "w", newline="") as fh:
        writer = csv.writer(fh, delimiter="\t")
        writer.writerow(["", "title", "filepath", "neg_caption", "neg_image"])
        for i in range(40):
            title = caption(rng)
            titles.append(title)
            words = title.split()
            words[1], words[4] = words[4], words[1]
            writer.writerow([i, title, f"coco/val2014/COCO_val2014_{i:012d}.jpg", repr([" ".join(words)]), "[1, 2]"])
    files[blind_real.NEGCLIP_KEY] = tsv
    order = root / "order_perturbed.csv"
    with open(order, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["index", "seed", "original", "original_normalised", *blind_real.ORDER_COLUMNS])
        for seed in (0, 1):
            for i, title in enumerate(titles):
                norm = title.lower().rstrip(".")
                perturbed = [" ".join(random.Random(f"{seed}{i}{k}").sample(norm.split(), len(norm.split())))
                             for k in range(4)]
                writer.writerow([i, seed, title, norm, *perturbed])
    return files, order


def test_stage_writes_every_table_and_refines_to_chance(tmp_path):
    files, order = write_release(tmp_path / "data")
    out = tmp_path / "out"
    result = blind_real.run(blind_real.Config(folds=3, bootstrap=50), out, fetch=files.__getitem__, order_csv=order)
    for name in ("blind_accuracy.csv", "refinement.csv", "table4.csv", "gap_histograms.csv", "summary.json",
                 "context.json", "blind_gaps.png", "blind_accuracy.png"):
        assert (out / name).is_file(), name
    rows = {(r["benchmark"], r["category"], r["scorer"]): r for r in result["accuracy"]}
    # ADD negatives carry an appended phrase: the classifier finds it, cross-fitted
    assert rows[("sugarcrepe-unrefined", "add_obj", "text-classifier")]["accuracy"] > 90
    for r in result["accuracy"]:
        assert r["ci_low"] <= r["accuracy"] <= r["ci_high"]
    assert rows[("aro-order", "5-way", "ngram-lm")]["n"] == 40  # seed 0 only, one 5-way choice per caption
    assert rows[("vl-checklist", "attribute", "ngram-lm")]["n"] == 40
    for r in result["refinement"]:
        assert r["n_kept"] <= r["n_unrefined"] == 60 and r["n_released_refined"] == 30
        if r["n_kept"]:  # the two scorers refinement used are at chance or below on what it kept
            assert r["m1_after"] <= 50 and r["m2_after"] <= 50
            assert (r["m1"], r["m2"]) == ("ngram-lm", "text-classifier")
    summary = json.loads((out / "summary.json").read_text())
    assert len(summary) <= 12 and all(isinstance(v, (int, float)) for v in summary.values())


def test_outputs_are_byte_deterministic(tmp_path):
    files, order = write_release(tmp_path / "data", n=12)
    digests = []
    for run in ("a", "b"):
        blind_real.run(blind_real.Config(folds=2, bootstrap=20), tmp_path / run, fetch=files.__getitem__,
                       order_csv=order)
        digests.append({p.name: p.read_bytes() for p in (tmp_path / run).iterdir() if p.suffix in (".csv", ".json")})
    assert digests[0] == digests[1]


def test_bad_vl_checklist_record_names_file_and_record(tmp_path):
    files, order = write_release(tmp_path / "data", n=5)
    path = files[blind_real.VL_CHECKLIST["relation"]]
    rows = json.loads(path.read_text())
    rows[3]["false_caption"] = None
    path.write_text(json.dumps(rows))
    with pytest.raises(DatasetError, match=r"vl_checklist_relations\.json: record 3"):
        blind_real.load_pairs(files.__getitem__, order)


def test_order_row_of_an_unknown_caption_is_refused(tmp_path):
    files, order = write_release(tmp_path / "data", n=5)
    with open(order, "a", newline="") as fh:
        csv.writer(fh).writerow([999, 0, "x", "x", "a", "b", "c", "d"])
    with pytest.raises(DatasetError, match=r"order_perturbed\.csv: line \d+: index '999'"):
        blind_real.load_pairs(files.__getitem__, order)


def test_missing_order_file_says_which_stage_makes_it(tmp_path):
    files, _ = write_release(tmp_path / "data", n=5)
    with pytest.raises(DatasetError, match="real-text"):
        blind_real.load_pairs(files.__getitem__, tmp_path / "absent.csv")


def test_published_blind_numbers_are_found():
    published = blind_real.published_blind()
    assert published[(("Table 8", "VL-CheckList | Relation"), "Vera")] == pytest.approx(85.72)
    assert published[(("Table 6", "ADD | Attribute"), "Grammar")] == pytest.approx(50.0)
    assert np.isfinite(list(published.values())).all()


def test_released_scorers_path_uses_grammar_and_vera(tmp_path, monkeypatch):
    """The full profile's glue: the paper's two scorers (stand-ins of known behaviour here: no download)."""
    import common.blind.pretrained as pretrained

    class Stand:
        def __init__(self, name):
            self.name = name

        def scores(self, texts):  # "vera" prefers shorter texts, "grammar" texts ending in a period
            if self.name == "vera":
                return np.array([1 / (1 + len(t)) for t in texts])
            return np.array([0.9 if t.endswith(".") else 0.2 for t in texts])

    monkeypatch.setattr(pretrained, "load_text_scorer", lambda name, device="cpu": Stand(name))
    files, order = write_release(tmp_path / "data", n=10)
    result = blind_real.run(blind_real.Config(folds=2, bootstrap=20), tmp_path / "out", fetch=files.__getitem__,
                            order_csv=order, scorers="released")
    rows = {(r["benchmark"], r["category"], r["scorer"]): r for r in result["accuracy"]}
    assert rows[("sugarcrepe-unrefined", "add_obj", "vera")]["accuracy"] == 100.0  # ADD negatives are longer
    assert {r["scorer"] for r in result["table4"]} == {"grammar", "vera"}
    assert {(r["m1"], r["m2"]) for r in result["refinement"]} == {("grammar", "vera")}
    assert json.loads((tmp_path / "out" / "context.json").read_text())["scorer_set"] == "released"


def test_aro_crepe_is_built_on_sugarcrepes_positives_and_table4_pairs_them(tmp_path):
    """The paper's ARO+CREPE: the older benchmarks' negative kinds on SugarCrepe's own positives, so that Table 4
    compares two negatives of one positive; the language model does not fit on those positives twice."""
    files, order = write_release(tmp_path / "data")
    pairs = blind_real.load_pairs(files.__getitem__, order)
    sugarcrepe = {(p.group, p.positive) for p in pairs if p.benchmark == "sugarcrepe"}
    aro_crepe = [p for p in pairs if p.benchmark == blind_real.ARO_CREPE]
    assert {p.category for p in aro_crepe} == {"replace", "swap", "negate", "shuffle"}
    assert {(p.group, p.positive) for p in aro_crepe} <= sugarcrepe
    assert all(p.negative != p.positive for p in aro_crepe)
    for kind in ("replace", "swap", "negate"):  # at most one negative per positive and kind
        keys = [(p.group, p.positive) for p in aro_crepe if p.category == kind]
        assert len(keys) == len(set(keys)) > 0
    seen = []
    fit = blind_real.fit_lm(0)

    class Spy:
        def fit(self, texts):
            seen.extend(texts)
            return self

    import papers.sugarcrepe.blind_real as module
    original, module.NgramFluency = module.NgramFluency, lambda seed: Spy()
    try:
        fit(pairs)
    finally:
        module.NgramFluency = original
    assert len(seen) == sum(p.benchmark != blind_real.ARO_CREPE for p in pairs)

    result = blind_real.run(blind_real.Config(folds=3, bootstrap=50), tmp_path / "out", fetch=files.__getitem__,
                            order_csv=order)
    rows = {r["type"]: r for r in result["table4"]}
    assert set(rows) == {"REPLACE", "SWAP", "NEGATE / ADD"} and {r["scorer"] for r in result["table4"]} == {"ngram-lm"}
    assert all(r["n_pairs"] > 0 and 0 <= r["sugarcrepe_more_fluent_share"] <= 100 for r in rows.values())
    assert any(r["benchmark"] == "aro-crepe" and r["category"] == "negate" for r in result["accuracy"])


def test_a_rehearsals_cap_keeps_the_first_pairs_of_every_benchmark_and_category(tmp_path, monkeypatch):
    """``full_inputs.cap`` (blind-released in a rehearsal): the first ``cap`` pairs per (benchmark, category), ARO+CREPE
    made from the capped SugarCrepe positives; the released scorers' stage then runs on those and says so."""
    import common.blind.pretrained as pretrained

    files, order = write_release(tmp_path / "data", n=10)
    full = blind_real.load_pairs(files.__getitem__, order)
    pairs = blind_real.load_pairs(files.__getitem__, order, cap=3)
    groups = {(p.benchmark, p.category) for p in full}
    assert {(p.benchmark, p.category) for p in pairs} == groups
    for group in groups:
        assert [p for p in pairs if (p.benchmark, p.category) == group] == \
            [p for p in full if (p.benchmark, p.category) == group][:3]
    positives = {(p.group, p.positive) for p in pairs if p.benchmark == "sugarcrepe"}
    assert {(p.group, p.positive) for p in pairs if p.benchmark == blind_real.ARO_CREPE} <= positives

    class Stand:
        def scores(self, texts):
            return np.array([1 / (1 + len(t)) for t in texts])

    monkeypatch.setattr(pretrained, "load_text_scorer", lambda name, device="cpu": Stand())
    result = blind_real.run(blind_real.Config(folds=2, bootstrap=20), tmp_path / "out", fetch=files.__getitem__,
                            order_csv=order, scorers="released", cap=3)
    assert {r["n"] for r in result["accuracy"] if (r["benchmark"], r["category"]) in groups} == {3}
    assert json.loads((tmp_path / "out" / "context.json").read_text())["cap_per_group"] == 3
