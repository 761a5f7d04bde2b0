"""SugarCrepe Tables 5/10, full profile, on a tiny COCO layout written here: the ARO+CREPE set, the training set
(test images dropped, bad rows named), refinement with stand-in scorers, 2-step runs of a random ``mini-vit-xs`` on
CPU (as a plain process), and the tables."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from common.training import FromScratch
from common.training.checkpoint import portable_state, save_weights
from papers.sugarcrepe import negclip_full as nf
from common.benchmarks.sugarcrepe import CATEGORIES
from papers.sugarcrepe.mini_templates import load_template_set

ARCH = "mini-vit-xs"
TRAIN_CAPTIONS = [
    "A woman standing behind a fence looking at an elephant.",
    "A red fire hydrant on a city sidewalk.",
    "Two adult bears play fight in the water.",
    "A man sitting in front of a laptop computer.",
    "A large brown dog and a small white cat on the green grass.",
    "A young boy riding a red bike down the street.",
    "A black cat sleeping on a wooden chair.",
    "An old man holding a blue umbrella in the rain.",
]
TEST_POSITIVES = [
    ("A teddy bear next to a stuffed fish.", "A teddy bear next to a stuffed dog."),
    ("A plate of food on a wooden table.", "A plate of food under a wooden table."),
    ("A small girl flying a yellow kite on the beach.", "A small kite flying a yellow girl on the beach."),
]
TEST_IDS = (3, 101, 102)
"""COCO ids of the SugarCrepe test images: id 3 is also a train2014 image (its two TSV rows must be dropped)."""
PARAMS = nf.FullRunParams(base="unused", scratch_arch=ARCH, image_size=48,
                          finetune=nf.Schedule(lr=1e-3, epochs=1, batch_size=4, warmup_steps=1, weight_decay=0.1),
                          scratch=nf.Schedule(lr=2e-3, epochs=1, batch_size=4, warmup_steps=1, weight_decay=0.1))


def _image(path: Path, seed: int, size=(64, 80)) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pixels = np.random.default_rng(seed).integers(0, 256, (*size, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(path, quality=95)


def _tsv(path: Path, rows: list[tuple[str, int]]) -> Path:
    lines = ["\ttitle\tfilepath\tneg_caption\tneg_image"]
    for n, (caption, coco_id) in enumerate(rows):
        lines.append(f"{n}\t{caption}\tcoco/train2014/COCO_train2014_{coco_id:012d}.jpg\t['{caption} x']\t[0]")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def coco(tmp_path_factory) -> dict[str, Path]:
    """train2014 images 1-8 (id 3 also a SugarCrepe test image), val2017 test images, the TSV, a SugarCrepe set."""
    from common.benchmarks.sugarcrepe import write_manifest

    root = tmp_path_factory.mktemp("coco")
    train = root / "coco" / "train2014" / "train2014"
    for coco_id in range(1, 9):
        _image(train / f"COCO_train2014_{coco_id:012d}.jpg", coco_id)
    val = root / "coco" / "val2017"
    for coco_id in TEST_IDS:
        _image(val / f"{coco_id:012d}.jpg", 100 + coco_id)
    rows = [(c, 1 + i) for i, c in enumerate(TRAIN_CAPTIONS)] + [
        ("A cat on a sofa next to a small dog.", 3), ("A green bus parked near a tall building.", 5)]
    tsv = _tsv(root / "train_neg_clip.tsv", rows)
    data = root / "sugarcrepe" / "data"
    data.mkdir(parents=True)
    for k, category in enumerate(CATEGORIES):
        records = {str(i): {"filename": f"{TEST_IDS[(i + k) % 3]:012d}.jpg", "caption": TEST_POSITIVES[(i + k) % 3][0],
                            "negative_caption": TEST_POSITIVES[(i + k) % 3][1]} for i in range(2)}
        (data / f"{category}.json").write_text(json.dumps(records))
    manifest = write_manifest(root / "sugarcrepe", "data", "../coco/val2017", {"kind": "sugarcrepe"}).path
    return {"root": root, "train": train, "tsv": tsv, "sugarcrepe": manifest}


@pytest.fixture(scope="module")
def train_set(coco, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("set")
    nf.build_train_set(coco["tsv"], coco["train"], coco["sugarcrepe"], out, seed=0)
    return out


def test_aro_crepe_set_has_the_sugarcrepe_positives_and_counts_what_got_no_negative(coco, tmp_path):
    manifest = nf.build_aro_crepe_set(coco["sugarcrepe"], tmp_path / "aro_crepe", seed=0)
    templates = load_template_set(tmp_path / "aro_crepe")
    items = templates.items()  # through the SugarCrepe loader: every image resolves
    assert {it.group for it in items} == set(nf.CREPE_KINDS)
    positives = {p for p, _ in TEST_POSITIVES}
    assert {it.captions[0] for it in items} <= positives and manifest["n_positives"] == 3
    for kind in nf.CREPE_KINDS:
        assert manifest["counts"][kind] + manifest["no_negative"][kind] == 3
    assert all(it.captions[0] != it.captions[1] for it in items)
    again = nf.build_aro_crepe_set(coco["sugarcrepe"], tmp_path / "again", seed=0)
    assert again == manifest
    for kind in nf.CREPE_KINDS:
        assert (tmp_path / "again" / "data" / f"{kind}.json").read_bytes() == \
            (tmp_path / "aro_crepe" / "data" / f"{kind}.json").read_bytes()


def test_training_set_drops_test_images_and_keeps_rows_with_every_kind(train_set):
    manifest = json.loads((train_set / "manifest.json").read_text())
    counts = manifest["counts"]
    assert counts["tsv_rows"] == 10 and counts["rows_on_test_images"] == 2 and counts["test_images_dropped"] == 1
    rows = nf.load_rows(train_set)
    assert counts["rows"] == len(rows) and 0 < len(rows) <= 8
    assert all(r.image != "COCO_train2014_000000000003.jpg" for r in rows)
    for r in rows:
        assert set(r.negatives) == set(nf.KINDS) and all(n.lower() != r.caption.lower() for n in r.negatives.values())


def test_a_tsv_row_naming_a_missing_image_is_named(coco, tmp_path):
    bad = _tsv(tmp_path / "bad.tsv", [(TRAIN_CAPTIONS[0], 1), (TRAIN_CAPTIONS[1], 42)])
    with pytest.raises(nf.DatasetError, match=r"bad\.tsv: row 2 \(index 1\): image .*000000000042\.jpg.* not found"):
        nf.build_train_set(bad, coco["train"], coco["sugarcrepe"], tmp_path / "out")
    assert not (tmp_path / "out" / "rows.jsonl").exists()


class LengthScorer:
    """Stand-in blind scorer: longer texts score lower (Vera and the grammar model need weights)."""

    def __init__(self, name: str, per_char: float):
        self.name, self.per_char, self.fingerprint = name, per_char, name

    def scores(self, texts):
        return np.array([1.0 / (1.0 + self.per_char * len(t)) for t in texts])


def test_refinement_keeps_rows_per_kind_and_refined_runs_train_on_them(train_set, tmp_path):
    scorers = {"vera": LengthScorer("vera", 0.01), "grammar": LengthScorer("grammar", 0.03)}
    record = nf.build_refined(train_set, tmp_path / "refined.json", scorers, bins=5, seed=0)
    rows = nf.load_rows(train_set)
    for kind in nf.KINDS:
        info = record["kinds"][kind]
        assert info["n_in"] == len(rows) and info["n_kept"] == len(info["kept"]) <= len(rows)
        assert sorted(info["kept"]) == info["kept"]
    kind = next(k for k in nf.KINDS if record["kinds"][k]["kept"])
    refined_rows = nf.run_rows(f"scratch-negclip-refined-{kind}", train_set, tmp_path / "refined.json")
    assert refined_rows == [rows[i] for i in record["kinds"][kind]["kept"]]
    assert nf.run_rows("clip-ft", train_set) == rows


def test_runs_share_captions_and_only_negclip_runs_see_negatives(train_set):
    rows = nf.load_rows(train_set)
    assert nf.run_negatives("clip-ft", rows, 0) is None
    assert nf.run_negatives("negclip-swap", rows, 0) == [r.negatives["swap"] for r in rows]
    mixed = nf.run_negatives("scratch-negclip-all", rows, 0)
    assert mixed == nf.run_negatives("scratch-negclip-all", rows, 0)
    assert all(m in r.negatives.values() for m, r in zip(mixed, rows))


def _train_all(train_set: Path, images: Path, models: Path) -> None:
    rows = nf.load_rows(train_set)
    init = FromScratch(ARCH)
    for run in nf.RUNS:  # the refined runs on every row: refinement has its own test
        nf.train_full_run(run, rows, PARAMS, images, models / f"{run}.safetensors", init=init, steps=2)
    for name in ("base", "released"):
        save_weights(models / f"{name}.safetensors", portable_state(init.build().model))


def test_two_step_runs_and_the_tables(coco, train_set, tmp_path):
    from common.engine import EngineConfig

    models = tmp_path / "models"
    _train_all(train_set, coco["train"], models)
    sidecar = json.loads((models / "negclip-replace.json").read_text())
    assert sidecar["hard_negative"] == "replace" and sidecar["scratch"] is False and sidecar["loss"]
    assert json.loads((models / "scratch-negclip-all.json").read_text())["hard_negative"] == nf.ALL

    nf.build_aro_crepe_set(coco["sugarcrepe"], tmp_path / "aro_crepe", seed=0)
    entries = nf.full_entries("base", ARCH, ARCH, models, released=None)
    entries[0] = nf.FullModelEntry("base", "pretrained", checkpoint=models / "base.safetensors", arch=ARCH)
    entries.insert(5, nf.FullModelEntry("released", "negclip", "released", "released",
                                        models / "released.safetensors", arch=ARCH))
    refined = {k: {"n_in": 8, "n_kept": 3} for k in nf.KINDS}
    out = tmp_path / "results"
    paths = nf.evaluate_full_tables(entries, coco["sugarcrepe"], tmp_path / "aro_crepe", out,
                                    EngineConfig(progress=False), context={"test": True}, refined=refined)
    with open(paths["table5"], newline="") as fh:
        rows = list(csv.DictReader(fh))
    mini_header = (Path(__file__).parents[3] / "results/sugarcrepe/mini/table5.csv").read_text().splitlines()[0]
    assert list(rows[0]) == ["model", "arch", *mini_header.split(",")[1:]]
    assert [r["training"] for r in rows] == ["pretrained", "clip-ft", "negclip", "negclip", "negclip", "negclip",
                                             "scratch-clip", *["scratch-negclip"] * 4]
    assert [r["hard_negative"] for r in rows][5:] == ["released", "N/A", "replace", "swap", "negate", "all"]
    by_model = {r["model"]: r for r in rows}
    for r in rows:
        baseline = by_model["sugarcrepe/full-scratch-clip" if r["training"].startswith("scratch")
                            else "sugarcrepe/full-clip-ft"]
        for c in nf.COLUMNS:
            assert 0 <= float(r[c]) <= 100 and r["arch"] == ARCH
            assert float(r[f"gain_{c}"]) == pytest.approx(float(r[c]) - float(baseline[c]), abs=0.011)
    metrics = json.loads(paths["metrics5"].read_text())
    assert {"gain_template_matching", "scratch_gain_template_matching", "released_gain_template_all",
            "scratch_all_gain_sugarcrepe_all"} <= set(metrics)
    with open(paths["table10"], newline="") as fh:
        rows10 = list(csv.DictReader(fh))
    mini_header10 = (Path(__file__).parents[3] / "results/sugarcrepe/mini/table10.csv").read_text().splitlines()[0]
    assert list(rows10[0]) == ["model", "arch", *mini_header10.split(",")[1:]]
    assert [(r["hard_negative"], r["negatives"], r["negatives_kept"]) for r in rows10] == [
        ("N/A", "N/A", ""), *((k, "template", "all") for k in nf.KINDS), *((k, "refined", "3/8") for k in nf.KINDS)]
    assert set(json.loads(paths["metrics10"].read_text())) == {
        "gain_sugarcrepe_template", "gain_sugarcrepe_refined", "gain_template_matching_template",
        "gain_template_matching_refined"}
    context = json.loads(paths["context"].read_text())
    assert context["models"]["sugarcrepe/full-scratch-clip"]["family"] == "scratch"
    assert paths["figure5"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_run_entry_works_as_a_plain_process(coco, train_set, tmp_path, monkeypatch):
    """``python -m papers.sugarcrepe.negclip_full run`` without torchrun: a local world, weights and sidecar."""
    import common.params
    import common.reproducible

    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.setattr(common.reproducible, "reexec_pinned", lambda: None)
    section = {"base": "unused", "scratch_arch": ARCH, "image_size": 48, "seed": 0, "precision": "fp32",
               "finetune": asdict_schedule(PARAMS.finetune), "scratch": asdict_schedule(PARAMS.scratch)}
    monkeypatch.setattr(common.params, "stage_params", lambda stage: {"sugarcrepe": {"negclip_full": section}})
    monkeypatch.setattr(nf, "default_init", lambda run, params: FromScratch(ARCH))
    out = tmp_path / "clip-ft.safetensors"
    assert nf.main(["run", "clip-ft", "--set", str(train_set), "--images", str(coco["train"]), "--out", str(out),
                    "--steps", "2"]) == 0
    record = json.loads(out.with_suffix(".json").read_text())
    assert out.is_file() and record["run"] == "clip-ft" and record["hard_negative"] is None


def asdict_schedule(schedule: nf.Schedule) -> dict:
    from dataclasses import asdict

    return asdict(schedule)
