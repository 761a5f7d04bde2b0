"""Hard positives, mini profile: the runs as jobs (``train_mini``): what each trains on, its batches, its loss weights,
the job every run's command builds (field by field, as the old ``train_run`` gave them to the trainer), the ``run``
command as a plain process, and what the jobs' code is."""
from __future__ import annotations

import argparse
import json

import pytest
import torch

from common.io import sha256_file
from common.tasks import DatasetError
from common.training import FromScratch, FromZoo, TrainConfig
from common.training.distributed import DistributedContext
from common.training.job import code_files, describe_loss, run_job
from common.training.rendered import caption_tokens, pixels
from papers.hard_positives import train_mini as tm
from papers.hard_positives.finetune_rows_mini import FinetuneSet, TrainingRow
from papers.hard_positives.losses import HardPositiveLoss
from papers.hard_positives.runs import RUNS
from training_support import mini_section

ARCH = "mini-vit-xs"
PARAMS = mini_section()
SECTION = {"base": "mini/xs-32k", "steps": 3, "batch_size": 4, "lr": 1.0e-3, "warmup_steps": 1, "weight_decay": 0.1,
           "seed": 0, "checkpoint_every": 50}
"""A stand-in for ``params.yaml hard_positives.mini`` (a batch the tiny set fills)."""
BOTH = ["replace", "swap"]
OLD_RUNS = {
    "clip-ft": (0.0, 0.0, BOTH), "hn": (0.0, 1.0, BOTH), "hp-hn": (1.0, 1.0, BOTH), "hp-hn-swap": (1.0, 1.0, ["swap"]),
    "hp-hn-replace": (1.0, 1.0, ["replace"]), "ratio-0": (1.0, 0.0, BOTH), "ratio-0.25": (1.0, 0.25, BOTH),
    "ratio-0.5": (1.0, 0.5, BOTH), "ratio-0.75": (1.0, 0.75, BOTH)}
"""(hard-positive weight, hard-negative weight, types) of every run, as the old code trained them."""


def _stage_params(monkeypatch, run: str) -> None:
    import common.params

    def stage_params(stage, **_):
        assert stage == f"papers/hard_positives/dvc.yaml:mini-finetune@{run}"
        return {"hard_positives": {"mini": SECTION}}

    monkeypatch.setattr(common.params, "stage_params", stage_params)
    monkeypatch.setenv("DVC_STAGE", f"papers/hard_positives/dvc.yaml:mini-finetune@{run}")  # as `dvc repro` sets it


def test_a_one_type_run_trains_on_that_types_rows_only(finetune_set):
    data = FinetuneSet.load(finetune_set)
    for run, kind in (("hp-hn-swap", "swap"), ("hp-hn-replace", "replace")):
        sub = tm.run_data(run, data)
        assert sub.captions_per_image == data.captions_per_image
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
    job = tm.job_for(run, FinetuneSet.load(finetune_set), PARAMS, init=FromScratch(ARCH), tokenize=tokenize)
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
    _stage_params(monkeypatch, run)
    cpu_profile = {"cpu_profile": {"MKL_CBWR": "AVX2"}, "threads": 1}
    job = tm.build(argparse.Namespace(run=run, set=finetune_set), DistributedContext.local("cpu"), cpu_profile)
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
        f"hard-positives-mini-{run}", "papers.hard_positives.train_mini", None, 50, True)


def test_a_runs_batches_hold_the_set_as_the_old_code_tokenized_it(finetune_set, tokenize):
    """Every row: [caption, hard positive, hard negative], tokenized per image and caption; the images' pixels."""
    import numpy as np

    rows = json.loads((finetune_set / "rows.json").read_text())
    job = tm.job_for("hp-hn", FinetuneSet.load(finetune_set), PARAMS, init=FromScratch(ARCH), tokenize=tokenize)
    batches = job.batches
    assert torch.equal(batches.images, pixels(np.load(finetune_set / "images.npy")))
    for name, tensor in zip(("caption", "positive", "negative"), (batches.captions, *batches.extras)):
        assert torch.equal(tensor, caption_tokens(tokenize, [[r[name] for r in image] for image in rows])), name
    assert len(batches.extras) == 2


def test_a_set_too_small_for_a_batch_is_refused(finetune_set, tokenize):
    with pytest.raises(tm.HardPositivesMiniError, match="hp-hn-swap: .* training images cannot fill a batch of 64"):
        tm.job_for("hp-hn-swap", FinetuneSet.load(finetune_set), {**PARAMS, "batch_size": 64},
                   init=FromScratch(ARCH), tokenize=tokenize)


def test_run_command_works_as_a_plain_process(finetune_set, tmp_path, monkeypatch):
    """``python -m papers.hard_positives.train_mini run`` (the stage's command): weights, sidecar and the log."""
    import common.reproducible
    from common.paths import build_dir

    _stage_params(monkeypatch, "hp-hn")
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.setattr(common.reproducible, "reexec_pinned", lambda: None)
    monkeypatch.setattr(tm, "FromZoo", lambda name: FromScratch(ARCH))
    out = tmp_path / "hp-hn.safetensors"
    assert tm.main(["run", "hp-hn", "--set", str(finetune_set), "--out", str(out), "--steps", "2"]) == 0
    record = json.loads(out.with_suffix(".json").read_text())
    assert record["run"] == "hp-hn" and record["trainer"]["steps"] == 2 and "cpu_profile" in record
    assert record["set_manifest_sha256"] == sha256_file(finetune_set / "manifest.json")
    log = json.loads((build_dir("mini", "hard_positives") / "logs" / "hp-hn.json").read_text())
    assert log["run"] == "hard-positives-mini-hp-hn" and log["final_loss"] == record["final_loss"]


def test_the_jobs_code_is_the_runs_and_not_the_sets_or_tables():
    """The resume state and the stage rerun on exactly this code: the batch source, the set's format, the runs and
    the loss; not the renderer of the set, the benchmark or the tables."""
    files = code_files(tm.MODULE)
    for path in ("common/training/rendered.py", "papers/hard_positives/finetune_rows_mini.py",
                 "papers/hard_positives/runs.py", "papers/hard_positives/losses.py",
                 "papers/hard_positives/train_mini.py"):
        assert path in files, path
    for path in ("papers/hard_positives/finetune_sets_mini.py", "papers/hard_positives/sets_mini.py",
                 "papers/hard_positives/evaluation.py", "papers/hard_positives/tables.py",
                 "common/miniworld/render.py"):
        assert path not in files, path
