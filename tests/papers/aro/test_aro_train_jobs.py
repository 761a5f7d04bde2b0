"""The job builder (``papers.aro.train``, both profiles) hands the trainer what the old ``papers/aro/finetune.py run`` did:
the same ``TrainConfig``, init, batch source, loss, validation and provenance (keys in the same order), one job per lr.

The expected values restate the old code's logic (``_cmd_run`` and ``run_sweep`` of ``papers/aro/finetune.py`` at
commit fc79156) rather than calling the new code: the config from the section's settings at each lr with
``steps = args.steps or epochs * (units // batch_size)``; the provenance ``{method, steps_per_epoch, epochs,
profile, <data hashes>, <cpu profile>, validation_detail: None}``; ``FromZoo(base)``; ``HardNegativeClipLoss`` for
NegCLIP, ``ClipLoss`` for CLIP-FT; resume states every 50 steps."""
from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import common.pipeline.params
from common.paths import build_root
from common.training import ClipLoss, DistributedContext, FromZoo, HardNegativeClipLoss, TrainConfig
from common.training.job import describe_loss
from common.training.trainer import trainer_fields
from papers.aro import train
from papers.aro.finetune_sets_mini import FinetuneSetConfig, build_finetune_set
from papers.aro.validation import RetrievalValidator
from tests.papers.aro.test_aro_finetune import fake_negatives, write_tsv

CPU_PROFILE = {"cpu_profile": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2",
                               "threads": 2}}
MINI = {"base": "mini/xs-32k", "train_images": 12, "val_images": 4, "epochs": 5, "batch_size": 4,
        "lrs": [3.0e-4, 1.0e-3], "warmup_steps": 50, "weight_decay": 0.2, "nearest_images": 2, "seed": 0,
        "checkpoint_every": 50}
FULL = {"base": "openai/ViT-B-32", "lrs": [1.0e-5, 5.0e-6, 1.0e-6], "epochs": 5, "batch_size": 2, "warmup_steps": 50,
        "weight_decay": 0.2, "seed": 0, "checkpoint_every": 50}
LOSSES = {"negclip": HardNegativeClipLoss, "clip-ft": ClipLoss}
LR_TAGS = {3.0e-4: "lr3e-4", 1.0e-3: "lr1e-3", 1.0e-5: "lr1e-5", 5.0e-6: "lr5e-6", 1.0e-6: "lr1e-6"}


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def run_as_stage(monkeypatch, stage_name: str, dotted: str, section: dict, seen: list) -> None:
    """Run as ``dvc repro`` runs ``stage_name`` (``DVC_STAGE``), its parameters ``section`` at ``dotted``."""
    params: dict = {"profile": dotted.split(".")[1]}
    node = params
    *parents, last = dotted.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = section

    def stage_params(stage: str, **_) -> dict:
        seen.append(stage)
        assert stage == stage_name
        return params

    monkeypatch.setenv("DVC_STAGE", stage_name)
    monkeypatch.setattr(common.pipeline.params, "stage_params", stage_params)


@pytest.fixture(scope="module")
def mini_set(tmp_path_factory) -> tuple[Path, Path]:
    """A 12-image fine-tuning set (fake negatives) and neighbours among its eligible images (the next two)."""
    root = tmp_path_factory.mktemp("aro_jobs")
    build_finetune_set(FinetuneSetConfig(train_images=12, val_images=4, captions_per_image=3, image_size=48, seed=0),
                       root / "set", generate=fake_negatives)
    negatives = json.loads((root / "set" / "train" / "negatives.json").read_text())
    eligible = [i for i, image in enumerate(negatives) if any(image)]
    neighbours = np.array([[eligible[(eligible.index(i) + d) % len(eligible)] if i in eligible else eligible[0]
                            for d in (1, 2)] for i in range(len(negatives))], dtype=np.int64)
    (root / "neighbours").mkdir()
    np.save(root / "neighbours" / "neighbours.npy", neighbours)
    return root / "set", root / "neighbours"


MINI_RULES = {"optimizer": "adamw", "betas": [0.9, 0.98], "eps": 1e-6, "decay_rule": "clip",
              "schedule": "warmup_cosine", "clamp_logit_scale": True, "augmentation": "center_crop"}
"""The old optimiser (CLIP's AdamW, ``exclude_from_wd``, the clamp): the mini runs' recipe."""
NEGCLIP_RULES = {"optimizer": "adamw", "betas": [0.9, 0.98], "eps": 1e-6, "decay_rule": "open_clip_names",
                 "schedule": "warmup_cosine", "clamp_logit_scale": True, "augmentation": "random_resized_crop",
                 "crop_scale": [0.9, 1.0], "weight_decay": 0.2, "warmup_steps": 50, "epochs": 5, "batch_size": 256,
                 "precision": "fp16"}
"""NegCLIP's released recipe (``papers/aro/recipes.toml``: vinid/neg_clip's code, the authors' reproduce command in
ARO's README, the ARO paper's Appendix C.3): the full runs'."""


def recipe_entry(name: str, file: str, settings: dict, deviations: dict, paper_differs: dict | None = None) -> dict:
    """The job's (and the training record's) ``recipe``: the digest is the loaded table's, the rest written out
    (``paper_differs``: the settings where the paper states another value than the authors' code)."""
    from common.paths import ROOT
    from common.training.recipes import load_recipe

    return {"name": name, "file": file, "digest": load_recipe(ROOT / file, name).digest, "settings": settings,
            "deviations": deviations, **({"paper_differs": paper_differs} if paper_differs else {})}


def expected_job(name: str, config: TrainConfig, provenance: dict, data: dict, init: FromZoo, loss, module: str,
                 recipe: dict):
    return {"name": name, "config": config, "init": init.describe(), "data": data, "loss": describe_loss(loss),
            "module": module, "validated": True, "provenance": provenance, "recipe": recipe}


def check_sweep(sweep, expected: list[dict]) -> None:
    assert [job.name for job in sweep.jobs] == [e["name"] for e in expected]
    validators = {id(job.validate) for job in sweep.jobs}
    assert len(validators) == 1 and isinstance(sweep.jobs[0].validate, RetrievalValidator)  # one validation, shared
    assert len({id(job.batches) for job in sweep.jobs}) == 1
    for job, e in zip(sweep.jobs, expected):
        assert job.config == e["config"]
        assert list(job.provenance) == list(e["provenance"]) and dict(job.provenance) == e["provenance"]
        assert job.batches.describe() == e["data"]
        assert job.init == FromZoo(e["init"]["name"]) and job.init.describe() == e["init"]
        assert job.loss is LOSSES[job.provenance["method"]] and describe_loss(job.loss) == e["loss"]
        assert (job.module, job.config.checkpoint_every, job.resume) == (e["module"], 50, True)
        config = trainer_fields(e["config"])
        top = {k: v for k, v in e.items() if k != "recipe"}
        assert job.describe() == json.loads(json.dumps({**top, "config": {**config, "recipe": e["recipe"]}},
                                                       sort_keys=True, default=str))


@pytest.mark.parametrize("method", ["negclip", "clip-ft"])
@pytest.mark.parametrize("steps", [None, 3])
def test_mini_jobs_match_the_old_run(mini_set, monkeypatch, method, steps):
    set_dir, nbr_dir = mini_set
    seen: list = []
    run_as_stage(monkeypatch, f"papers/aro/dvc.yaml:finetune-mini@{method}", "aro.mini.finetune", MINI, seen)
    args = argparse.Namespace(profile="mini", run=method, set=str(set_dir), neighbours=str(nbr_dir), steps=steps)
    sweep = train.build(args, DistributedContext.local("cpu"), CPU_PROFILE)
    assert seen and sweep.name == f"aro-mini-{method}" and sweep.method == method

    # the old mini_table, counted from the files: units = images with a caption that has a negative
    captions = json.loads((set_dir / "train" / "captions.json").read_text())
    negatives = json.loads((set_dir / "train" / "negatives.json").read_text())
    kept = [[(c, n) for c, n in zip(caps, negs) if n] for caps, negs in zip(captions, negatives)]
    units = sum(1 for k in kept if k)
    data = {"name": f"aro-{method}", "units": units, "rows": sum(map(len, kept)), "images": units,
            "neighbours_per_unit": 2, "negatives": sum(len(n) for k in kept for _, n in k)}
    per_epoch = units // MINI["batch_size"]
    total = steps or MINI["epochs"] * per_epoch
    provenance = {"method": method, "steps_per_epoch": per_epoch, "epochs": total / per_epoch, "profile": "mini",
                  "finetune_manifest_sha256": sha256(set_dir / "manifest.json"),
                  "neighbours_sha256": sha256(nbr_dir / "neighbours.npy"), **CPU_PROFILE, "validation_detail": None}
    expected = [expected_job(f"aro-mini-{method}-{LR_TAGS[lr]}",
                             TrainConfig(steps=total, batch_size=4, lr=lr, weight_decay=0.2, warmup_steps=50, seed=0,
                                         precision="fp32", accum=1, checkpoint_every=50),
                             provenance, data, FromZoo("mini/xs-32k"), LOSSES[method], "papers.aro.train",
                             recipe_entry("mini", "common/training/recipes.toml", MINI_RULES, {}))
                for lr in MINI["lrs"]]
    check_sweep(sweep, expected)
    batches, validator = sweep.jobs[0].batches, sweep.jobs[0].validate
    assert batches.hard == (method == "negclip") and batches.tokens.memo  # the mini sweep memoises its tokens
    assert validator.captions == json.loads((set_dir / "val" / "captions.json").read_text())
    assert validator.images.pixels.shape == (4, 3, 48, 48)


@pytest.mark.parametrize("method", ["negclip", "clip-ft"])
def test_full_jobs_match_the_old_run(tiny_release, monkeypatch, method):  # noqa: F811  (the fixture)
    tsv, images_dir = tiny_release
    seen: list = []
    run_as_stage(monkeypatch, f"papers/aro/dvc.yaml:finetune-full@{method}", "aro.full.finetune", FULL, seen)
    args = argparse.Namespace(profile="full", run=method, train_tsv=str(tsv), val_tsv=str(tsv), train_images=str(images_dir),
                              val_images=str(images_dir), steps=None)
    sweep = train.build(args, DistributedContext.local("cuda"), {})  # on GPUs the CPU profile is not recorded
    assert seen and sweep.name == f"aro-full-{method}"
    data = {"name": f"aro-{method}", "units": 6, "rows": 6, "images": 6, "neighbours_per_unit": 3, "negatives": 12}
    provenance = {"method": method, "steps_per_epoch": 3, "epochs": 5.0, "profile": "full",
                  "train_tsv_sha256": sha256(tsv), "val_tsv_sha256": sha256(tsv), "validation_detail": None}
    expected = [expected_job(f"aro-full-{method}-{LR_TAGS[lr]}",
                             TrainConfig(steps=15, batch_size=2, lr=lr, weight_decay=0.2, warmup_steps=50, seed=0,
                                         precision="fp32", accum=1, checkpoint_every=50,
                                         recipe=train.recipe()),
                             provenance, data, FromZoo("openai/ViT-B-32"), LOSSES[method], "papers.aro.train",
                             recipe_entry("negclip", "papers/aro/recipes.toml", NEGCLIP_RULES,
                                          {"batch_size": {"authors": 256, "run": 2},
                                           "precision": {"authors": "fp16", "run": "fp32"}},
                                          {"batch_size": {"code": 256, "paper": 1024,
                                                          "paper_source": "paper, Appendix C.3"}}))
                for lr in FULL["lrs"]]
    check_sweep(sweep, expected)
    batches, validator = sweep.jobs[0].batches, sweep.jobs[0].validate
    assert batches.hard == (method == "negclip") and not batches.tokens.memo
    assert batches.images.get(np.array([0])).shape == (1, 3, 224, 224)  # the params' image size (default 224)
    assert len(validator.captions) == 6 and validator.images.pixels.shape == (6, 3, 224, 224)


def test_full_jobs_crop_only_when_the_recipe_says_so(tiny_release, monkeypatch):  # noqa: F811  (the fixture)
    """The images crop at random with the recipe's scale under ``random_resized_crop`` (NegCLIP's), and not under a
    recipe that names the centre crop, whatever crop scale it holds (``Recipe.train_crop_scale``)."""
    from dataclasses import replace

    tsv, images_dir = tiny_release
    monkeypatch.setattr(train, "own_section", lambda dotted, stage=None: ({"profile": "full"}, FULL))
    args = argparse.Namespace(profile="full", run="negclip", train_tsv=str(tsv), val_tsv=str(tsv), train_images=str(images_dir),
                              val_images=str(images_dir), steps=None)
    negclip = train.recipe()
    sweep = train.build(args, DistributedContext.local("cuda"), {})
    assert sweep.jobs[0].batches.images.crop_scale == negclip.crop_scale == (0.9, 1.0)
    monkeypatch.setattr(train, "recipe", lambda: replace(negclip, augmentation="center_crop"))
    assert train.build(args, DistributedContext.local("cuda"), {}).jobs[0].batches.images.crop_scale is None


def test_full_negclip_step_is_the_authors_512_images_by_1024_texts(tmp_path, monkeypatch):
    """By default a full NegCLIP step is the authors' matrix, 512 images x 1,024 texts
    (``mertyg/vision-language-models-are-bows@81fdd20d README.md:85`` "would result in a matrix of size `512x1024` with
    negatives"), not the 2,048 x 4,096 of 1,024 samples: built as the stage builds it, from ``params.yaml``'s real
    ``aro.full.finetune`` (``train.build``), the batch source's first batch at the job's batch size and the
    trainer's layout for the loss (``_inputs``, ``flatten_segments``). CLIP-FT's step on the same rows is 256 x 256."""
    from common.training.trainer import _inputs, flatten_segments

    monkeypatch.setenv("DVC_STAGE", "papers/aro/dvc.yaml:finetune-full@negclip")  # as `dvc repro` sets it
    _, section = common.pipeline.params.own_section("aro.full.finetune")
    rows = int(section["batch_size"])  # a release of exactly one step's rows
    colours = ["red", "green", "blue", "yellow", "white", "black"]
    for k, colour in enumerate(colours):
        Image.new("RGB", (60, 50), colour).save(tmp_path / f"COCO_train2014_{k}.jpg")
    tsv = write_tsv(tmp_path / "train_neg_clip.tsv", [
        (f"a {colours[i % 6]} square number {i}.", f"coco/train2014/COCO_train2014_{i % 6}.jpg",
         [f"number {i} a {colours[i % 6]} square ."], [(i + 1) % rows, (i + 2) % rows, (i + 3) % rows])
        for i in range(rows)])
    shapes = {}
    for method in ("negclip", "clip-ft"):
        args = argparse.Namespace(profile="full", run=method, train_tsv=str(tsv), val_tsv=str(tsv), train_images=str(tmp_path),
                                  val_images=str(tmp_path), steps=None)
        job = train.build(args, DistributedContext.local("cuda"), {}).jobs[0]
        assert job.config.batch_size == section["batch_size"] and job.provenance["steps_per_epoch"] == 1
        images, texts = _inputs(job.batches.batch(job.config.seed, 0, job.config.batch_size), job.loss)
        shapes[method] = (len(flatten_segments(images)), len(flatten_segments(texts)))
    assert shapes == {"negclip": (512, 1024), "clip-ft": (256, 256)}


def test_weights_and_logs_where_they_were():
    """``--out`` defaults: the zoo's checkpoint of aro/mini-<method>, and build/full/aro/models/<method>."""
    for method in ("negclip", "clip-ft"):
        for profile in ("mini", "full"):
            assert train.weights_path(argparse.Namespace(profile=profile, run=method)) == (
                build_root() / profile / "aro" / "models" / f"{method}.safetensors")


@pytest.mark.parametrize("profile", ["mini", "full"])
def test_the_stages_params_read_as_before(profile):
    """The real stage's parameters (``params.yaml aro.<profile>.finetune``) through ``stage_params``: every setting
    a run's ``TrainConfig`` reads, at the values the removed ``FinetuneParams`` gave (its defaults: fp32, one
    micro-batch; resume states every 50 steps)."""
    params = common.pipeline.params.stage_params(f"papers/aro/dvc.yaml:finetune-{profile}@negclip")
    section = common.pipeline.params.section(params, f"aro.{profile}.finetune")
    config = TrainConfig.from_params(section, steps_per_epoch=10, lr=float(section["lrs"][0]))
    assert (config.steps, config.warmup_steps, config.weight_decay, config.checkpoint_every) == (50, 50, 0.2, 50)
    assert (config.batch_size, config.precision, config.accum) == (
        (128, "fp32", 1) if profile == "mini" else (256, "fp16", 1))
    assert section["base"] == ("mini/xs-32k" if profile == "mini" else "openai/ViT-B-32")


@pytest.mark.parametrize("profile", ["mini", "full"])
@pytest.mark.parametrize("method", ["negclip", "clip-ft"])
def test_one_module_runs_both_profiles_stages(profile, method):
    """Both profiles' stages run ``papers.aro.train``: the stage map tells them apart by the profile argument."""
    from common.pipeline.stage_map import stage_running

    assert stage_running("papers.aro.train", [profile, "run", method, "--device", "cpu"]) == (
        f"papers/aro/dvc.yaml:finetune-{profile}@{method}")
