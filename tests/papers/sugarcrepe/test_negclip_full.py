"""SugarCrepe Tables 5/10, full profile, on a tiny COCO layout written here: the ARO+CREPE set
(``aro_crepe_sets_full``), the training set (``negclip_sets_full``: test images dropped, bad rows named;
``negclip_rows`` reads it back), refinement with stand-in scorers (``negclip_refine_full``), 2-step runs of a
random ``mini-vit-xs`` on CPU (``negclip_train full``, as a plain process), and the tables (``negclip_tables
--profile full``)."""
from __future__ import annotations

import csv
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from common.benchmarks.caption_negatives import CATEGORIES
from common.files.tasks import DatasetError
from common.text.crepe_style import CREPE_KINDS
from common.training import ClipLoss, FromScratch
from common.training.checkpoint import portable_state, save_weights
from common.training.job import run_job
from papers.sugarcrepe import (
    aro_crepe_sets_full as acs, negclip_refine_full as rf, negclip_rows as rows_full, negclip_sets_full as sf,
    negclip_tables as nt, negclip_train as tf)
from papers.sugarcrepe.aro_crepe import load_template_set
from papers.sugarcrepe.losses import TextNegativeClipLoss
from papers.sugarcrepe.runs import ALL, FULL_RUNS, KINDS

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
PARAMS = {"base": "unused", "scratch_arch": ARCH, "image_size": 48, "seed": 0, "precision": "fp32",
          "checkpoint_every": 0,
          "finetune": {"lr": 1e-3, "epochs": 1, "batch_size": 4, "warmup_steps": 1, "weight_decay": 0.1},
          "scratch": {"lr": 2e-3, "epochs": 1, "batch_size": 4, "warmup_steps": 1, "weight_decay": 0.1}}
"""A ``params.yaml sugarcrepe.negclip_full`` section for a few-step test run."""


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
    from common.benchmarks.caption_negatives import write_manifest

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
    sf.build_train_set(coco["tsv"], coco["train"], coco["sugarcrepe"], out, seed=0)
    return out


def test_aro_crepe_set_has_the_sugarcrepe_positives_and_counts_what_got_no_negative(coco, tmp_path):
    manifest = acs.build_aro_crepe_set(coco["sugarcrepe"], tmp_path / "aro_crepe", seed=0)
    templates = load_template_set(tmp_path / "aro_crepe")
    items = templates.items()  # through the SugarCrepe loader: every image resolves
    assert {it.group for it in items} == set(CREPE_KINDS)
    positives = {p for p, _ in TEST_POSITIVES}
    assert {it.captions[0] for it in items} <= positives and manifest["n_positives"] == 3
    for kind in CREPE_KINDS:
        assert manifest["counts"][kind] + manifest["no_negative"][kind] == 3
    assert all(it.captions[0] != it.captions[1] for it in items)
    again = acs.build_aro_crepe_set(coco["sugarcrepe"], tmp_path / "again", seed=0)
    assert again == manifest
    for kind in CREPE_KINDS:
        assert (tmp_path / "again" / "data" / f"{kind}.json").read_bytes() == \
            (tmp_path / "aro_crepe" / "data" / f"{kind}.json").read_bytes()


def test_training_set_drops_test_images_and_keeps_rows_with_every_kind(train_set):
    manifest = json.loads((train_set / "manifest.json").read_text())
    counts = manifest["counts"]
    assert counts["tsv_rows"] == 10 and counts["rows_on_test_images"] == 2 and counts["test_images_dropped"] == 1
    rows = rows_full.load_rows(train_set)
    assert counts["rows"] == len(rows) and 0 < len(rows) <= 8
    assert all(r.image != "COCO_train2014_000000000003.jpg" for r in rows)
    for r in rows:
        assert set(r.negatives) == set(KINDS) and all(n.lower() != r.caption.lower() for n in r.negatives.values())


def test_a_tsv_row_naming_a_missing_image_is_named(coco, tmp_path):
    bad = _tsv(tmp_path / "bad.tsv", [(TRAIN_CAPTIONS[0], 1), (TRAIN_CAPTIONS[1], 42)])
    with pytest.raises(DatasetError, match=r"bad\.tsv: row 2 \(index 1\): image .*000000000042\.jpg.* not found"):
        sf.build_train_set(bad, coco["train"], coco["sugarcrepe"], tmp_path / "out")
    assert not (tmp_path / "out" / "rows.jsonl").exists()


class LengthScorer:
    """Stand-in blind scorer: longer texts score lower (Vera and the grammar model need weights)."""

    def __init__(self, name: str, per_char: float):
        self.name, self.per_char, self.fingerprint = name, per_char, name

    def scores(self, texts):
        return np.array([1.0 / (1.0 + self.per_char * len(t)) for t in texts])


def test_refinement_keeps_rows_per_kind_and_refined_runs_train_on_them(train_set, tmp_path):
    scorers = {"vera": LengthScorer("vera", 0.01), "grammar": LengthScorer("grammar", 0.03)}
    record = rf.build_refined(train_set, tmp_path / "refined.json", scorers, bins=5, seed=0)
    rows = rows_full.load_rows(train_set)
    for kind in KINDS:
        info = record["kinds"][kind]
        assert info["n_in"] == len(rows) and info["n_kept"] == len(info["kept"]) <= len(rows)
        assert sorted(info["kept"]) == info["kept"]
    kind = next(k for k in KINDS if record["kinds"][k]["kept"])
    refined_rows = rows_full.run_rows(f"scratch-negclip-refined-{kind}", train_set, tmp_path / "refined.json")
    assert refined_rows == [rows[i] for i in record["kinds"][kind]["kept"]]
    assert rows_full.run_rows("clip-ft", train_set) == rows


def test_runs_share_captions_and_only_negclip_runs_see_negatives(train_set):
    rows = rows_full.load_rows(train_set)
    assert rows_full.run_negatives("clip-ft", rows, 0) is None
    assert rows_full.run_negatives("negclip-swap", rows, 0) == [r.negatives["swap"] for r in rows]
    mixed = rows_full.run_negatives("scratch-negclip-all", rows, 0)
    assert mixed == rows_full.run_negatives("scratch-negclip-all", rows, 0)
    assert all(m in r.negatives.values() for m, r in zip(mixed, rows))


def _train_all(train_set: Path, images: Path, models: Path) -> None:
    rows = rows_full.load_rows(train_set)
    init = FromScratch(ARCH)
    for run in FULL_RUNS:  # the refined runs on every row: refinement has its own test
        run_job(tf.full_job(run, rows, PARAMS, images, init=init, steps=2), models / f"{run}.safetensors")
    for name in ("base", "released"):
        save_weights(models / f"{name}.safetensors", portable_state(init.build().model))


def test_two_step_runs_and_the_tables(coco, train_set, tmp_path):
    from common.evaluation.engine import EngineConfig

    models = tmp_path / "models"
    _train_all(train_set, coco["train"], models)
    sidecar = json.loads((models / "negclip-replace.json").read_text())
    assert sidecar["hard_negative"] == "replace" and sidecar["scratch"] is False and sidecar["loss"]
    assert json.loads((models / "scratch-negclip-all.json").read_text())["hard_negative"] == ALL

    acs.build_aro_crepe_set(coco["sugarcrepe"], tmp_path / "aro_crepe", seed=0)
    full = nt.PROFILES["full"]
    entries = nt.model_entries(replace(full, released=None), "base", ARCH, models, ARCH)
    entries[0] = nt.ModelEntry("base", "pretrained", checkpoint=models / "base.safetensors", arch=ARCH)
    entries.insert(5, nt.ModelEntry("released", "negclip", "released", "released", models / "released.safetensors",
                                    arch=ARCH))
    refined = {k: {"n_in": 8, "n_kept": 3} for k in KINDS}
    out = tmp_path / "results"
    paths = nt.evaluate_tables(full, entries, coco["sugarcrepe"], tmp_path / "aro_crepe", out,
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
        for c in nt.COLUMNS:
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
        ("N/A", "N/A", ""), *((k, "template", "all") for k in KINDS), *((k, "refined", "3/8") for k in KINDS)]
    assert set(json.loads(paths["metrics10"].read_text())) == {
        "gain_sugarcrepe_template", "gain_sugarcrepe_refined", "gain_template_matching_template",
        "gain_template_matching_refined"}
    context = json.loads(paths["context"].read_text())
    assert context["models"]["sugarcrepe/full-scratch-clip"]["family"] == "scratch"
    assert paths["figure5"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_run_entry_works_as_a_plain_process(coco, train_set, tmp_path, monkeypatch):
    """``python -m papers.sugarcrepe.negclip_train full run`` without torchrun: a local world, weights and sidecar."""
    import common.pipeline.params
    import common.pipeline.reproducible

    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.setattr(common.pipeline.reproducible, "reexec_pinned", lambda: None)
    monkeypatch.setattr(common.pipeline.params, "stage_params", lambda stage, **_: {"sugarcrepe": {"negclip_full": PARAMS}})
    monkeypatch.setenv("DVC_STAGE", "papers/sugarcrepe/dvc.yaml:negclip-full@clip-ft")  # as `dvc repro` sets it
    monkeypatch.setattr(tf, "FromZoo", lambda name: FromScratch(ARCH))
    out = tmp_path / "clip-ft.safetensors"
    assert tf.main(["full", "run", "clip-ft", "--set", str(train_set), "--images", str(coco["train"]),
                    "--out", str(out), "--steps", "2"]) == 0
    record = json.loads(out.with_suffix(".json").read_text())
    assert out.is_file() and record["run"] == "clip-ft" and record["hard_negative"] is None


def test_an_empty_rows_file_is_refused(tmp_path):
    """``read_rows``' "no rows" check (the old ``load_rows`` returned [] and a run failed later, far from the file)."""
    (tmp_path / "rows.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"rows\.jsonl: no rows"):
        rows_full.load_rows(tmp_path)


def test_a_row_without_every_kind_names_its_line(train_set, tmp_path):
    lines = (train_set / "rows.jsonl").read_text(encoding="utf-8").splitlines()
    broken = json.loads(lines[1])
    del broken["negatives"]["swap"]
    (tmp_path / "rows.jsonl").write_text("\n".join([lines[0], json.dumps(broken)]) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"rows\.jsonl: line 2: needs one non-empty negative of each kind"):
        rows_full.load_rows(tmp_path)
    with pytest.raises(Exception, match=r"rows\.jsonl: missing; no training set here"):
        rows_full.load_rows(tmp_path / "absent")


CPU_PROFILE = {"cpu_profile": "stand-in", "threads": 1}
"""Stands in for ``common.pipeline.reproducible.describe()`` (the launcher passes it to the builder on the CPU; {} on GPUs)."""
KEPT = [0, 2, 3, 5]
"""The rows the test's ``refined.json`` keeps, every kind alike."""


@pytest.mark.parametrize("steps", [None, 3])
@pytest.mark.parametrize("run", list(FULL_RUNS))
def test_each_run_is_the_job_the_old_entry_point_trained(coco, train_set, tmp_path, monkeypatch, run, steps):
    """The expected values are the old ``negclip_full._cmd_run`` / ``train_full_run``'s, written out: the run's
    schedule as steps (epochs x steps per epoch, or ``--steps``), ``FromZoo(base)`` or ``FromScratch(scratch_arch)``,
    the file-backed batch source named per run, ``ClipLoss`` or ``TextNegativeClipLoss``, checkpoints every 500
    steps with resume, no validation, and the sidecar's provenance in the old order: run, hard_negative, scratch,
    refined, steps_per_epoch, epochs, profile, the set manifest's sha256, then the CPU profile."""
    import argparse
    import hashlib
    from dataclasses import asdict

    import common.pipeline.params

    section = {"base": "openai/ViT-B-32", "scratch_arch": "RN50", "image_size": 224, "seed": 0, "precision": "bf16",
               "checkpoint_every": 500, "finetune": {"lr": 1e-6, "epochs": 5, "batch_size": 2, "warmup_steps": 50, "weight_decay": 0.2},
               "scratch": {"lr": 5e-4, "epochs": 20, "batch_size": 2, "warmup_steps": 500, "weight_decay": 0.1}}
    stages = []
    monkeypatch.setattr(common.pipeline.params, "stage_params", lambda stage, **_: stages.append(stage) or
                        {"sugarcrepe": {"negclip_full": section}})
    monkeypatch.setenv("DVC_STAGE", f"papers/sugarcrepe/dvc.yaml:negclip-full{'-refined' if '-refined-' in run else ''}"
                                    f"@{run}")  # as `dvc repro` sets it
    refined_path = tmp_path / "refined.json"
    refined_path.write_text(json.dumps({"kinds": {k: {"n_in": 8, "n_kept": 4, "kept": KEPT} for k in KINDS}}))
    args = argparse.Namespace(run=run, set=str(train_set), refined=str(refined_path), images=str(coco["train"]),
                              steps=steps)
    job = tf.build_full(args, None, CPU_PROFILE)

    scratch, refined = run.startswith("scratch-"), "-refined-" in run
    kind = None if run in ("clip-ft", "scratch-clip") else run.rsplit("-", 1)[1]
    rows = rows_full.load_rows(train_set)
    n_rows = len(KEPT) if refined else len(rows)
    per_epoch = n_rows // 2
    total = steps or (20 if scratch else 5) * per_epoch
    assert stages == [f"papers/sugarcrepe/dvc.yaml:negclip-full{'-refined' if refined else ''}@{run}"]
    config = asdict(job.config)
    recipe = config.pop("recipe")
    assert config == {
        "steps": total, "batch_size": 2, "lr": 5e-4 if scratch else 1e-6, "weight_decay": 0.1 if scratch else 0.2,
        "warmup_steps": 500 if scratch else 50, "accum": 1, "seed": 0, "precision": "bf16", "checkpoint_every": 500,
        "validate_every": 0, "freeze": ()}
    # the run family's recipe: OpenCLIP's code with the paper's numbers (the SugarCrepe paper, Appendix A.3: "number
    # of warmup steps is 1000, batch size is 256, learning rate is 1e-4, weight decay is 0.1, number of epochs is 30");
    # betas and eps by architecture, mlfoundations/open_clip@a09d519f src/training/params.py:5-11
    # "def get_default_params(model_name):" (ViT 0.98 / 1e-6, RN50 0.999 / 1e-8)
    assert recipe["name"] == ("scratch" if scratch else "finetune")
    assert (recipe["betas"], recipe["eps"], recipe["decay_rule"], recipe["crop_scale"]) == (
        ((0.9, 0.999), 1e-8) if scratch else ((0.9, 0.98), 1e-6)) + ("open_clip_names", (0.9, 1.0))
    assert (recipe["lr"], recipe["epochs"], recipe["batch_size"], recipe["warmup_steps"], recipe["weight_decay"]) == (
        1e-4, 30, 256, 1000, 0.1)
    assert job.batches.images.crop_scale == (0.9, 1.0)
    assert job.init.describe() == ({"kind": "scratch", "arch": "RN50"} if scratch else
                                   {"kind": "zoo", "name": "openai/ViT-B-32", "arch": "ViT-B-32-quickgelu",
                                    "weights": "openai"})
    images = {r.image for r in ([rows[i] for i in KEPT] if refined else rows)}
    assert job.batches.describe() == {"name": f"sugarcrepe-full-{run}", "rows": n_rows, "images": len(images),
                                      "negatives": kind is not None}
    assert job.loss is (ClipLoss if kind is None else TextNegativeClipLoss)
    sha = hashlib.sha256((train_set / "manifest.json").read_bytes()).hexdigest()
    assert list(job.provenance.items()) == [
        ("run", run), ("hard_negative", kind), ("scratch", scratch), ("refined", refined),
        ("steps_per_epoch", per_epoch), ("epochs", total / per_epoch), ("profile", "full"),
        ("set_manifest_sha256", sha), *CPU_PROFILE.items()]
    assert (job.config.checkpoint_every, job.resume, job.validate) == (500, True, None)
    assert (job.name, job.module) == (f"sugarcrepe-full-{run}", "papers.sugarcrepe.negclip_train")


def test_the_training_module_imports_no_table_set_or_blind_code():
    """The GPU runs must not rerun when the tables, the set builders or the blind scorers (refinement) change."""
    from common.pipeline.import_closure import closure

    assert tf.MODULE == tf.__name__
    files = set(closure([tf.MODULE]).files)
    assert "papers/sugarcrepe/negclip_rows.py" in files
    assert not [f for f in files if f.startswith("common/blind/") or "tables" in f or "sets" in f or "refine" in f
                or f.startswith(("common/evaluation/engine", "common/evaluation/scoring/", "common/text/crepe_style", "common/benchmarks/"))], \
        sorted(files)
