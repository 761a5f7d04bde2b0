"""Hard positives, the full profile's runs as jobs (``train_full``) on the tiny COCO layout of ``conftest.py``: 2-step
runs of a random ``mini-vit-xs`` on CPU through the shared trainer (the type-only runs on their type's rows), the job
every run's command builds (field by field, as the old ``train_full_run`` gave them to the trainer), the ``run``
command as a plain process, and what the jobs' code is."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest

from common.io import sha256_file
from common.paths import ROOT
from common.training import FromScratch, FromZoo, TrainConfig
from common.training.distributed import DistributedContext
from common.training.job import code_files, describe_loss, run_job
from common.training.recipes import load_recipe
from papers.hard_positives import train_full as tf
from papers.hard_positives.finetune_rows_full import load_rows
from papers.hard_positives.losses import HardPositiveLoss
from papers.hard_positives.runs import RUNS
from training_support import full_section

ARCH = "mini-vit-xs"
PARAMS = full_section(batch_size=2)
SECTION = {"base": "openai/ViT-B-32", "image_size": 224, "seed": 0, "precision": "bf16", "lr": 1.0e-6, "epochs": 5,
           "batch_size": 4, "warmup_steps": 50, "weight_decay": 0.2, "checkpoint_every": 500}
"""A stand-in for ``params.yaml hard_positives.full.finetune`` (a batch the tiny set fills)."""
BOTH = ["replace", "swap"]
OLD_RUNS = {
    "clip-ft": (0.0, 0.0, BOTH), "hn": (0.0, 1.0, BOTH), "hp-hn": (1.0, 1.0, BOTH), "hp-hn-swap": (1.0, 1.0, ["swap"]),
    "hp-hn-replace": (1.0, 1.0, ["replace"]), "ratio-0": (1.0, 0.0, BOTH), "ratio-0.25": (1.0, 0.25, BOTH),
    "ratio-0.5": (1.0, 0.5, BOTH), "ratio-0.75": (1.0, 0.75, BOTH)}
"""(hard-positive weight, hard-negative weight, types) of every run, as the old code trained them."""


def _stage_params(monkeypatch, run: str) -> None:
    import common.params

    def stage_params(stage, **_):
        assert stage == f"papers/hard_positives/dvc.yaml:finetune-full@{run}"
        return {"hard_positives": {"full": {"finetune": SECTION}}}

    monkeypatch.setattr(common.params, "stage_params", stage_params)
    monkeypatch.setenv("DVC_STAGE", f"papers/hard_positives/dvc.yaml:finetune-full@{run}")  # as `dvc repro` sets it


def test_two_step_runs_train_on_their_types_rows(coco, train_set, tmp_path):
    rows = load_rows(train_set)
    init = FromScratch(ARCH)
    for run in ("hn", "hp-hn-swap"):
        job = tf.job_for(run, rows, PARAMS, coco[1], init=init, steps=2)
        result = run_job(job, tmp_path / f"{run}.safetensors")
        assert np.isfinite(result.final_loss)
        record = json.loads((tmp_path / f"{run}.json").read_text())
        assert record["hard_positive_weight"] == RUNS[run].hard_positive_weight
        assert record["types"] == list(RUNS[run].types)
    swap_rows = tf.run_rows("hp-hn-swap", rows)
    assert {r.type for r in swap_rows} == {"swap"} and len(swap_rows) < len(rows)
    assert len(tf.run_rows("hn", rows)) == len(rows)
    with pytest.raises(tf.HardPositivesFinetuneFullError, match="no rows of types"):
        tf.run_rows("hp-hn-replace", [r for r in rows if r.type == "swap"])


@pytest.mark.parametrize("steps", [None, 3])
@pytest.mark.parametrize("run", list(OLD_RUNS))
def test_each_runs_job_is_what_the_old_train_full_run_gave_the_trainer(run, steps, coco, train_set, monkeypatch):
    """The old ``finetune_full.py run`` trained ``FromZoo(base)`` on ``FileCaptionBatches`` of the run's rows with
    ``TrainConfig(steps or epochs x steps per epoch, ...)`` and its provenance followed by ``steps_per_epoch`` and
    ``epochs`` (``--steps`` included), checkpoints every 500 steps; its values, written out, against ``build``'s job."""
    _stage_params(monkeypatch, run)
    job = tf.build(argparse.Namespace(run=run, set=train_set, images=coco[1], steps=steps),
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
        f"hard-positives-full-{run}", "papers.hard_positives.train_full", None, 500, True)
    batches = job.batches
    assert batches.captions == [r["caption"] for r in picked]
    assert [list(e) for e in batches.extras] == [[r["positive"] for r in picked], [r["negative"] for r in picked]]
    files = list(dict.fromkeys(r["image"] for r in picked))
    assert list(batches.images.paths) == [coco[1] / name for name in files] and batches.images.size == 224
    assert batches.row_image.tolist() == [files.index(r["image"]) for r in picked]


def test_run_command_works_as_a_plain_process(coco, train_set, tmp_path, monkeypatch):
    """``python -m papers.hard_positives.train_full run`` without torchrun: a local world, weights, sidecar, log."""
    import common.reproducible
    from common.paths import build_dir

    _stage_params(monkeypatch, "hp-hn")
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.setattr(common.reproducible, "reexec_pinned", lambda: None)
    monkeypatch.setattr(tf, "FromZoo", lambda name: FromScratch(ARCH))
    monkeypatch.setitem(SECTION, "image_size", 48)
    monkeypatch.setitem(SECTION, "precision", "fp32")
    out = tmp_path / "hp-hn.safetensors"
    assert tf.main(["run", "hp-hn", "--set", str(train_set), "--images", str(coco[1]), "--out", str(out),
                    "--steps", "2"]) == 0
    record = json.loads(out.with_suffix(".json").read_text())
    assert out.is_file() and record["run"] == "hp-hn" and record["hard_negative_weight"] == 1.0
    assert record["trainer"]["steps"] == 2 and record["epochs"] == 2 / record["steps_per_epoch"]
    log = json.loads((build_dir("full", "hard_positives_ft") / "logs" / "hp-hn.json").read_text())
    assert log["run"] == "hard-positives-full-hp-hn" and log["world_size"] == 1


def test_the_jobs_code_is_the_runs_and_not_the_rules_that_made_the_rows():
    """The GPU runs rerun on the batch source, the rows' format, the runs and the loss; not on spaCy, WordNet or the
    CREPE-style negatives (the set's), nor on the tables."""
    files = code_files(tf.MODULE)
    for path in ("common/training/files.py", "papers/hard_positives/finetune_rows_full.py",
                 "papers/hard_positives/runs.py", "papers/hard_positives/losses.py",
                 "papers/hard_positives/train_full.py"):
        assert path in files, path
    for path in ("papers/hard_positives/finetune_sets_full.py", "papers/hard_positives/rules.py",
                 "papers/hard_positives/lexical.py", "common/crepe_style.py", "common/caption_text.py",
                 "papers/hard_positives/tables.py", "papers/hard_positives/evaluation.py"):
        assert path not in files, path


def test_both_profiles_pipelines_run_every_run():
    """The foreach lists of ``mini-finetune`` and ``finetune-full`` are ``RUNS``, in its order."""
    import yaml

    stages = yaml.safe_load((Path(__file__).parents[3] / "papers/hard_positives/dvc.yaml").read_text())["stages"]
    assert stages["mini-finetune"]["foreach"] == list(RUNS) == stages["finetune-full"]["foreach"]
