"""Hard positives, the runs as jobs (``train``) in both profiles: what each trains on, its batches, its loss weights,
the job every run's command builds (field by field, as the old ``train_run`` and ``train_full_run`` gave them to the
trainer), the ``run`` command as a plain process, the stage each command finds, and what the jobs' code is. The full
profile's on the tiny COCO layout of ``conftest.py``: 2-step runs of a random ``mini-vit-xs`` on CPU."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from common.files.io import sha256_file
from common.files.tasks import DatasetError
from common.paths import ROOT
from common.training import FromScratch, FromZoo, TrainConfig
from common.training.distributed import DistributedContext
from common.training.job import code_files, describe_loss, run_job
from common.training.recipes import load_recipe
from common.training.rendered import caption_tokens, pixels
from papers.hard_positives import train as tm
from papers.hard_positives.finetune_rows import FinetuneSet, HardPositivesRowsError, TrainingRow, load_rows
from papers.hard_positives.losses import HardPositiveLoss
from papers.hard_positives.runs import RUNS
from training_support import full_section, mini_section

ARCH = "mini-vit-xs"
PARAMS = mini_section()
FULL_PARAMS = full_section(batch_size=2)
SECTION = {"base": "mini/xs-32k", "steps": 3, "batch_size": 4, "lr": 1.0e-3, "warmup_steps": 1, "weight_decay": 0.1,
           "seed": 0, "checkpoint_every": 50}
"""A stand-in for ``params.yaml hard_positives.mini`` (a batch the tiny set fills)."""
FULL_SECTION = {"base": "openai/ViT-B-32", "image_size": 224, "seed": 0, "precision": "bf16", "lr": 1.0e-6, "epochs": 5,
                "batch_size": 4, "warmup_steps": 50, "weight_decay": 0.2, "checkpoint_every": 500}
"""A stand-in for ``params.yaml hard_positives.full.finetune`` (a batch the tiny set fills)."""
BOTH = ["replace", "swap"]
OLD_RUNS = {
    "clip-ft": (0.0, 0.0, BOTH), "hn": (0.0, 1.0, BOTH), "hp-hn": (1.0, 1.0, BOTH), "hp-hn-swap": (1.0, 1.0, ["swap"]),
    "hp-hn-replace": (1.0, 1.0, ["replace"]), "ratio-0": (1.0, 0.0, BOTH), "ratio-0.25": (1.0, 0.25, BOTH),
    "ratio-0.5": (1.0, 0.5, BOTH), "ratio-0.75": (1.0, 0.75, BOTH)}
"""(hard-positive weight, hard-negative weight, types) of every run, as the old code trained them."""


def _stage_params(monkeypatch, stage: str, params: dict) -> None:
    import common.pipeline.params

    def stage_params(address, **_):
        assert address == f"papers/hard_positives/dvc.yaml:{stage}"
        return params

    monkeypatch.setattr(common.pipeline.params, "stage_params", stage_params)
    monkeypatch.setenv("DVC_STAGE", f"papers/hard_positives/dvc.yaml:{stage}")  # as `dvc repro` sets it


def _mini_stage(monkeypatch, run: str) -> None:
    _stage_params(monkeypatch, f"mini-finetune@{run}", {"hard_positives": {"mini": SECTION}})


def _full_stage(monkeypatch, run: str) -> None:
    _stage_params(monkeypatch, f"finetune-full@{run}", {"hard_positives": {"full": {"finetune": FULL_SECTION}}})


def test_a_one_type_run_trains_on_that_types_rows_only(finetune_set):
    data = FinetuneSet.load(finetune_set)
    for run, kind in (("hp-hn-swap", "swap"), ("hp-hn-replace", "replace")):
        sub = tm.run_data(run, data)
        assert {len(r) for r in sub.rows} == {len(data.rows[0])}
        assert all(r.type == kind for rows in sub.rows for r in rows)
        kept = {(i, r) for i, rows in enumerate(data.rows) for r in rows if r.type == kind}
        assert {r for rows in sub.rows for r in rows} == {r for _, r in kept}
        assert len(sub.images) == len({i for i, _ in kept})
    assert tm.run_data("hn", data) is data


# ---------------------------------------------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------------------------------------------
def test_batches_carry_caption_positive_and_negative_of_the_drawn_row(finetune_set, tokenize):
    data = FinetuneSet.load(finetune_set)
    batches = tm.batches_for(data, tokenize, "x")
    for step in range(6):
        batch = batches.batch(0, step, 4)
        assert batch["texts"].shape[:2] == (4, 3)
        idx, pick = batches.draws(0, step, 4)
        rows = [data.rows[i][j] for i, j in zip(idx, pick)]
        for k, name in enumerate(("caption", "positive", "negative")):
            assert torch.equal(batch["texts"][:, k], tokenize([getattr(r, name) for r in rows]))


def test_a_positive_that_tokenizes_like_its_caption_is_refused(finetune_set, tokenize):
    data = FinetuneSet.load(finetune_set)
    row = data.rows[2][1]
    data.rows[2][1] = TrainingRow(row.caption, row.type, row.caption.upper(), row.negative, "x", "y")
    with pytest.raises(DatasetError, match="image 2: caption 1: its hard positive tokenizes like the caption"):
        tm.batches_for(data, tokenize, "x")


@pytest.mark.parametrize("run", ["clip-ft", "hn", "ratio-0.25", "hp-hn-swap"])
def test_each_run_trains_with_its_weights(finetune_set, tokenize, tmp_path, monkeypatch, run):
    seen = []
    original = HardPositiveLoss.forward

    def spy(self, image_features, text_features, logit_scale, batch=None):
        seen.append((self.hard_positive_weight, self.hard_negative_weight, len(image_features), len(text_features)))
        return original(self, image_features, text_features, logit_scale, batch)

    monkeypatch.setattr(HardPositiveLoss, "forward", spy)
    job = tm.mini_job(run, FinetuneSet.load(finetune_set), PARAMS, init=FromScratch(ARCH), tokenize=tokenize)
    result = run_job(job, tmp_path / f"{run}.safetensors")
    spec = RUNS[run]
    assert seen == [(spec.hard_positive_weight, spec.hard_negative_weight, 4, 12)] * 2
    assert result.record["loss"] == {"name": "HardPositiveLoss", "hard_positive_weight": spec.hard_positive_weight,
                                     "hard_negative_weight": spec.hard_negative_weight}
    assert result.record["types"] == list(spec.types) and result.record["run"] == run
    expected_terms = {"contrastive_loss"} | ({"hard_positive_loss"} if spec.hard_positive_weight else set()) \
        | ({"hard_negative_loss"} if spec.hard_negative_weight else set())
    assert set(result.terms) == expected_terms


def test_runs_are_the_papers():
    assert [r for r in RUNS] == ["clip-ft", "hn", "hp-hn", "hp-hn-swap", "hp-hn-replace", "ratio-0", "ratio-0.25",
                                   "ratio-0.5", "ratio-0.75"]
    assert [RUNS[r].hard_negative_weight for r in ("ratio-0", "ratio-0.25", "ratio-0.5", "ratio-0.75", "hp-hn")] == [
        0.0, 0.25, 0.5, 0.75, 1.0]
    assert {RUNS[r].hard_positive_weight for r in RUNS if r.startswith("ratio")} == {1.0}
    assert (RUNS["hn"].hard_positive_weight, RUNS["clip-ft"].hard_negative_weight) == (0.0, 0.0)


# ---------------------------------------------------------------------------------------------------------------
# The jobs
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("run", list(OLD_RUNS))
def test_each_runs_job_is_what_the_old_train_run_gave_the_trainer(run, finetune_set, monkeypatch):
    """The old ``mini.py run`` called ``train(params.trainer_config(), FromZoo(base), batches, loss_for(spec), out,
    provenance=..., resume=True, checkpoint_every=50)``; its values, written out, against the job ``build`` makes."""
    _mini_stage(monkeypatch, run)
    cpu_profile = {"cpu_profile": {"MKL_CBWR": "AVX2"}, "threads": 1}
    job = tm.build(argparse.Namespace(profile="mini", run=run, set=finetune_set), DistributedContext.local("cpu"),
                   cpu_profile)
    positive, negative, types = OLD_RUNS[run]
    assert job.config == TrainConfig(steps=3, batch_size=4, lr=1e-3, warmup_steps=1, weight_decay=0.1, seed=0,
                                     checkpoint_every=50)
    assert job.init == FromZoo("mini/xs-32k")
    assert job.loss.func is HardPositiveLoss and describe_loss(job.loss) == {
        "class": "papers.hard_positives.losses.HardPositiveLoss",
        "keywords": {"hard_negative_weight": negative, "hard_positive_weight": positive}}
    assert list(job.provenance.items()) == [
        ("run", run), ("hard_positive_weight", positive), ("hard_negative_weight", negative), ("types", types),
        ("set_manifest_sha256", sha256_file(finetune_set / "manifest.json")),
        ("cpu_profile", {"MKL_CBWR": "AVX2"}), ("threads", 1)]
    rows = json.loads((finetune_set / "rows.json").read_text())
    kept = [i for i, image_rows in enumerate(rows) if any(r["type"] in types for r in image_rows)]
    assert job.batches.describe() == {"name": f"hard-positives-mini-{'-'.join(types)}", "n_images": len(kept),
                                      "captions_per_image": 2, "texts": ["caption", "hard_positive", "hard_negative"]}
    assert (job.name, job.module, job.validate, job.config.checkpoint_every, job.resume) == (
        f"hard-positives-mini-{run}", "papers.hard_positives.train", None, 50, True)


def test_a_runs_batches_hold_the_set_as_the_old_code_tokenized_it(finetune_set, tokenize):
    """Every row: [caption, hard positive, hard negative], tokenized per image and caption; the images' pixels."""
    import numpy as np

    rows = json.loads((finetune_set / "rows.json").read_text())
    job = tm.mini_job("hp-hn", FinetuneSet.load(finetune_set), PARAMS, init=FromScratch(ARCH), tokenize=tokenize)
    batches = job.batches
    assert torch.equal(batches.images, pixels(np.load(finetune_set / "images.npy")))
    for name, tensor in zip(("caption", "positive", "negative"), (batches.captions, *batches.extras)):
        assert torch.equal(tensor, caption_tokens(tokenize, [[r[name] for r in image] for image in rows])), name
    assert len(batches.extras) == 2


def test_a_set_too_small_for_a_batch_is_refused(finetune_set, tokenize):
    with pytest.raises(HardPositivesRowsError, match="hp-hn-swap: .* training images cannot fill a batch of 64"):
        tm.mini_job("hp-hn-swap", FinetuneSet.load(finetune_set), {**PARAMS, "batch_size": 64},
                   init=FromScratch(ARCH), tokenize=tokenize)


def test_the_mini_run_command_works_as_a_plain_process(finetune_set, tmp_path, monkeypatch):
    """``python -m papers.hard_positives.train mini run`` (the stage's command): weights, sidecar and the log."""
    import common.pipeline.reproducible
    from common.paths import build_dir

    _mini_stage(monkeypatch, "hp-hn")
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.setattr(common.pipeline.reproducible, "reexec_pinned", lambda: None)
    monkeypatch.setattr(tm, "FromZoo", lambda name: FromScratch(ARCH))
    out = tmp_path / "hp-hn.safetensors"
    assert tm.main(["mini", "run", "hp-hn", "--set", str(finetune_set), "--out", str(out), "--steps", "2"]) == 0
    record = json.loads(out.with_suffix(".json").read_text())
    assert record["run"] == "hp-hn" and record["trainer"]["steps"] == 2 and "cpu_profile" in record
    assert record["set_manifest_sha256"] == sha256_file(finetune_set / "manifest.json")
    log = json.loads((build_dir("mini", "hard_positives") / "logs" / "hp-hn.json").read_text())
    assert log["run"] == "hard-positives-mini-hp-hn" and log["final_loss"] == record["final_loss"]



def test_two_step_full_runs_train_on_their_types_rows(coco, train_set, tmp_path):
    rows = load_rows(train_set)
    init = FromScratch(ARCH)
    for run in ("hn", "hp-hn-swap"):
        job = tm.full_job(run, rows, FULL_PARAMS, coco[1], init=init, steps=2)
        result = run_job(job, tmp_path / f"{run}.safetensors")
        assert np.isfinite(result.final_loss)
        record = json.loads((tmp_path / f"{run}.json").read_text())
        assert record["hard_positive_weight"] == RUNS[run].hard_positive_weight
        assert record["types"] == list(RUNS[run].types)
    swap_rows = tm.run_rows("hp-hn-swap", rows)
    assert {r.type for r in swap_rows} == {"swap"} and len(swap_rows) < len(rows)
    assert len(tm.run_rows("hn", rows)) == len(rows)
    with pytest.raises(HardPositivesRowsError, match="no rows of types"):
        tm.run_rows("hp-hn-replace", [r for r in rows if r.type == "swap"])


@pytest.mark.parametrize("steps", [None, 3])
@pytest.mark.parametrize("run", list(OLD_RUNS))
def test_each_full_runs_job_is_what_the_old_train_full_run_gave_the_trainer(run, steps, coco, train_set, monkeypatch):
    """The old ``finetune_full.py run`` trained ``FromZoo(base)`` on ``FileCaptionBatches`` of the run's rows with
    ``TrainConfig(steps or epochs x steps per epoch, ...)`` and its provenance followed by ``steps_per_epoch`` and
    ``epochs`` (``--steps`` included), checkpoints every 500 steps; its values, written out, against ``build``'s job."""
    _full_stage(monkeypatch, run)
    job = tm.build(argparse.Namespace(profile="full", run=run, set=train_set, images=coco[1], steps=steps),
                   DistributedContext.local("cpu"), {"cpu_profile": {"MKL_CBWR": "AVX2"}})
    positive, negative, types = OLD_RUNS[run]
    rows = [json.loads(line) for line in (train_set / "rows.jsonl").read_text().splitlines()]
    picked = [r for r in rows if r["type"] in types]
    per_epoch = len(picked) // 4
    total = steps or 5 * per_epoch
    recipe = load_recipe(ROOT / "papers" / "hard_positives" / "recipes.toml", "finetune")
    assert job.config == TrainConfig(steps=total, batch_size=4, lr=1e-6, warmup_steps=50, weight_decay=0.2, seed=0,
                                     precision="bf16", checkpoint_every=500, recipe=recipe)
    # NegCLIP's released recipe (no training code of the authors'): its decay rule and its training crop
    assert (recipe.decay_rule, recipe.augmentation) == ("open_clip_names", "random_resized_crop")
    assert job.batches.images.crop_scale == (0.9, 1.0)
    assert job.describe()["config"]["recipe"]["deviations"] == {"precision": {"authors": "fp16", "run": "bf16"}}
    assert job.init == FromZoo("openai/ViT-B-32")
    assert job.loss.func is HardPositiveLoss and describe_loss(job.loss) == {
        "class": "papers.hard_positives.losses.HardPositiveLoss",
        "keywords": {"hard_negative_weight": negative, "hard_positive_weight": positive}}
    assert list(job.provenance.items()) == [
        ("run", run), ("hard_positive_weight", positive), ("hard_negative_weight", negative), ("types", types),
        ("profile", "full"), ("set_manifest_sha256", sha256_file(train_set / "manifest.json")),
        ("cpu_profile", {"MKL_CBWR": "AVX2"}), ("steps_per_epoch", per_epoch), ("epochs", total / per_epoch)]
    assert job.batches.describe() == {"name": f"hard-positives-full-{'-'.join(types)}", "rows": len(picked),
                                      "images": len({r["image"] for r in picked}),
                                      "texts": ["caption", "hard_positive", "hard_negative"]}
    assert (job.name, job.module, job.validate, job.config.checkpoint_every, job.resume) == (
        f"hard-positives-full-{run}", "papers.hard_positives.train", None, 500, True)
    batches = job.batches
    assert batches.captions == [r["caption"] for r in picked]
    assert [list(e) for e in batches.extras] == [[r["positive"] for r in picked], [r["negative"] for r in picked]]
    files = list(dict.fromkeys(r["image"] for r in picked))
    assert list(batches.images.paths) == [coco[1] / name for name in files] and batches.images.size == 224
    assert batches.row_image.tolist() == [files.index(r["image"]) for r in picked]


def test_the_full_run_command_works_as_a_plain_process(coco, train_set, tmp_path, monkeypatch):
    """``python -m papers.hard_positives.train full run`` without torchrun: a local world, weights, sidecar, log."""
    import common.pipeline.reproducible
    from common.paths import build_dir

    _full_stage(monkeypatch, "hp-hn")
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.setattr(common.pipeline.reproducible, "reexec_pinned", lambda: None)
    monkeypatch.setattr(tm, "FromZoo", lambda name: FromScratch(ARCH))
    monkeypatch.setitem(FULL_SECTION, "image_size", 48)
    monkeypatch.setitem(FULL_SECTION, "precision", "fp32")
    out = tmp_path / "hp-hn.safetensors"
    assert tm.main(["full", "run", "hp-hn", "--set", str(train_set), "--images", str(coco[1]), "--out", str(out),
                    "--steps", "2"]) == 0
    record = json.loads(out.with_suffix(".json").read_text())
    assert out.is_file() and record["run"] == "hp-hn" and record["hard_negative_weight"] == 1.0
    assert record["trainer"]["steps"] == 2 and record["epochs"] == 2 / record["steps_per_epoch"]
    log = json.loads((build_dir("full", "hard_positives_ft") / "logs" / "hp-hn.json").read_text())
    assert log["run"] == "hard-positives-full-hp-hn" and log["world_size"] == 1


def test_the_jobs_code_is_the_runs_and_not_the_sets_or_tables():
    """The resume states and the stages rerun on exactly this code: the batch sources, the sets' format, the runs and
    the loss; not the code that makes the sets (the renderer; spaCy, WordNet, the CREPE-style negatives), the
    benchmark or the tables."""
    files = code_files(tm.MODULE)
    for path in ("common/training/rendered.py", "common/training/files.py", "papers/hard_positives/finetune_rows.py",
                 "papers/hard_positives/runs.py", "papers/hard_positives/losses.py", "papers/hard_positives/train.py"):
        assert path in files, path
    for path in ("papers/hard_positives/finetune_sets_mini.py", "papers/hard_positives/sets_mini.py",
                 "papers/hard_positives/finetune_sets_full.py", "papers/hard_positives/rules.py",
                 "papers/hard_positives/lexical.py", "common/text/crepe_style.py", "common/text/caption_text.py",
                 "papers/hard_positives/evaluation.py", "papers/hard_positives/tables.py",
                 "common/miniworld/render.py"):
        assert path not in files, path


@pytest.mark.parametrize("profile, stage", [("mini", "mini-finetune"), ("full", "finetune-full")])
def test_each_profiles_command_finds_its_own_stage(profile, stage):
    """One module behind both stages: the profile argument tells them apart (the stage map, without DVC_STAGE)."""
    from common.pipeline.stage_map import stage_running

    for run in ("clip-ft", "ratio-0.5"):
        assert stage_running(tm.MODULE, [profile, "run", run, "--steps", "2"]) == \
            f"papers/hard_positives/dvc.yaml:{stage}@{run}"


def test_both_profiles_pipelines_run_every_run():
    """The foreach lists of ``mini-finetune`` and ``finetune-full`` are ``RUNS``, in its order."""
    import yaml

    stages = yaml.safe_load((Path(__file__).parents[3] / "papers/hard_positives/dvc.yaml").read_text())["stages"]
    assert stages["mini-finetune"]["foreach"] == list(RUNS) == stages["finetune-full"]["foreach"]
