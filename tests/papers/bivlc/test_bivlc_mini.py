"""BiVLC, mini profile: the rendered bidirectional benchmark (``sets_mini``), the TROHN analogs
(``finetune_sets_mini``), the runs' batches and model selection (``train``), the detectors (``detectors``),
and a tiny end-to-end table (``tables --profile mini``)."""
from __future__ import annotations

import csv
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from common.files.tasks import DatasetError
from common.miniworld.claims import satisfies
from common.training import FromCheckpoint, FromScratch
from common.training.checkpoint import portable_state, save_weights
from common.training.job import run_job
from common.zoo.trained import tokenizer_for
from papers.bivlc import detectors as dm, finetune_sets_mini as fsm, sets_mini as m, train as tm
from papers.bivlc.runs import DETECTOR_ENCODERS, DETECTOR_TOWERS, RUNS, recipe
from sugarcrepe_support import write_sugarcrepe_set
from training_support import mini_section

ARCH = "mini-vit-xs"


def detector_section(**changes) -> dict:
    """``params.yaml bivlc.mini.detector`` for a test: batches of 8 inputs, no warmup, no decay, no resume states."""
    return {"batch_size": 8, "lr": 1e-3, "seed": 0, "warmup_steps": 0, "weight_decay": 0.0, "checkpoint_every": 0,
            **changes}


@pytest.fixture(scope="module")
def test_set(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bivlc") / "test"
    m.build_test_set(m.TestSetConfig(instances_per_category=3, seed=0), out)
    return out


@pytest.fixture(scope="module")
def train_set() -> fsm.TrainSet:
    data = fsm.render_train_set(fsm.TrainSetConfig(train_images=20, captions_per_image=2, val_fraction=0.25, seed=0))
    kept = [(i, j) for i in range(20) for j in range(2) if (i + j) % 3 != 0]  # a stand-in for the selection
    return replace(data, kept=kept)


def test_instances_are_true_by_construction():
    import random

    rng = random.Random(0)
    for category in m.CATEGORIES:
        found = None
        while found is None:
            found = m.draw_instance(rng, category)
        assert satisfies(found.scene, found.claim) and not satisfies(found.scene, found.negative_claim)
        assert satisfies(found.negative_scene, found.negative_claim)
        # the negative image shows the caption only for the add edits (BiVLC's ambiguous instances)
        assert satisfies(found.negative_scene, found.claim) == (category in ("add_obj", "add_att"))
        assert found.caption != found.negative


def test_test_set_counts_and_ambiguous_split(test_set):
    manifest = json.loads((test_set / "manifest.json").read_text())
    assert manifest["counts"] == {c: 3 for c in m.CATEGORIES}
    main, ambiguous = m.load_test_items(test_set)
    assert len(main) == 15 and len(ambiguous) == 6
    assert {it.group for it in ambiguous} == {"add_obj", "add_att"}
    for it in main + ambiguous:
        assert all(Path(p).is_file() for p in it.images)


def test_negative_images_are_drawn_in_the_synthetic_style(test_set):
    from PIL import Image

    main, _ = m.load_test_items(test_set)
    colours = [[len(np.unique(np.asarray(Image.open(p)).reshape(-1, 3), axis=0)) for p in it.images] for it in main]
    # natural renders carry sensor noise and antialiasing: many colours; synthetic ones a handful of flat colours
    assert all(natural > 5 * synthetic for natural, synthetic in colours)


def test_a_bad_record_names_the_file_and_record(test_set, tmp_path):
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(test_set, bad)
    manifest = json.loads((bad / "manifest.json").read_text())
    manifest["instances"][4]["negative_caption"] = manifest["instances"][4]["caption"]
    (bad / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(DatasetError, match=r"manifest.json: record 4: the negative caption"):
        m.load_test_items(bad)
    manifest["instances"][4]["category"] = "negate"
    (bad / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(DatasetError, match="record 4: category 'negate'"):
        m.load_test_items(bad)


def test_training_set_pairs_each_caption_with_a_negative_image(train_set):
    assert train_set.images.shape == (20, 48, 48, 3)
    assert train_set.negative_images.shape == (20, 2, 48, 48, 3)
    assert train_set.n_train == 15
    for i in range(20):
        for j in range(2):
            assert train_set.captions[i][j] != train_set.negatives[i][j]
            assert train_set.categories[i][j] in m.CATEGORIES
            assert not np.array_equal(train_set.images[i], train_set.negative_images[i, j])


def test_batches_of_each_run(train_set):
    tokenize = tokenizer_for(ARCH)
    coco = tm.mini_batches(train_set, "clip-coco", tokenize, slice(0, 15))
    text = tm.mini_batches(train_set, "trohn-text", tokenize, slice(0, 15))
    img = tm.mini_batches(train_set, "trohn-img", tokenize, slice(0, 15))
    b = coco.batch(0, 0, 4)
    assert b["images"].shape == (4, 1, 3, 48, 48) and b["texts"].shape[:2] == (4, 1)
    b = text.batch(0, 0, 4)
    assert b["images"].shape == (4, 1, 3, 48, 48) and b["texts"].shape[:2] == (4, 2)
    idx, pick = text.draws(0, 0, 4)
    assert torch.equal(b["texts"][:, 1], tokenize([train_set.negatives[i][j] for i, j in zip(idx, pick)]))
    b = img.batch(0, 0, 4)
    assert b["images"].shape == (4, 2, 3, 48, 48) and b["texts"].shape[:2] == (4, 2)
    pairs = [(i, j) for i, j in train_set.kept if i < 15]
    chosen = [pairs[k] for k in img.draws(0, 0, 4)[0]]
    expected = torch.stack([torch.from_numpy(train_set.negative_images[i, j]).permute(2, 0, 1) for i, j in chosen])
    assert torch.equal(b["images"][:, 1], expected)
    assert torch.equal(b["texts"][:, 1], tokenize([train_set.negatives[i][j] for i, j in chosen]))


def test_in_batch_accuracy_is_the_authors_rule_on_a_tiny_model(train_set):
    """The validation score of a run, against the authors' loop written out on the same model: per chunk of the
    run's batch (the last one smaller: 20 scenes' kept pairs do not fill chunks of 4), image->text and text->image
    argmax accuracy over [I; I_neg] x [c; c_neg], averaged, then the mean over chunks."""
    from common.training.model_init import normalizer

    tokenize = tokenizer_for(ARCH)
    built = FromScratch(ARCH).build()
    mean, std = normalizer(built.transform)
    batches = tm.mini_batches(train_set, "trohn-img", tokenize, slice(0, 20))
    n = len(batches.images)
    assert n % 4  # a partial last chunk
    score = tm.InBatchAccuracy(tm.mini_chunk(batches), n, 4, mean, std)(built.model.eval())
    scores = []
    with torch.no_grad():
        for start in range(0, n, 4):
            rows = slice(start, min(n, start + 4))
            imgs = torch.cat([batches.images[rows], batches.extra_images[0][rows]])
            txts = torch.cat([batches.captions[rows, 0], batches.extras[0][rows, 0]])
            feats_i = built.model.encode_image((imgs.float() / 255 - mean) / std, normalize=True)
            feats_t = built.model.encode_text(txts, normalize=True)
            logits_im = (feats_i @ feats_t.T).numpy()
            logits_text = logits_im.T[:len(feats_i)]
            acc_im = np.mean([np.argmax(logits_im[i]) == i for i in range(len(feats_i))])
            acc_text = np.mean([np.argmax(logits_text[i]) == i for i in range(len(feats_i))])
            scores.append((acc_im + acc_text) / 2)
    assert score == pytest.approx(float(np.mean(scores)), abs=1e-6)


def test_a_run_keeps_its_best_validation(train_set, tmp_path):
    job = tm.mini_job("trohn-img", train_set, mini_section(steps=4, batch_size=8, validations=2),
                      init=FromScratch(ARCH))
    result = run_job(job, tmp_path / "trohn-img.safetensors")
    assert [s for s, _ in result.validation] == [2, 4]
    assert result.best_weights.is_file() and result.best_score == max(v for _, v in result.validation)
    record = json.loads((tmp_path / "trohn-img.json").read_text())
    assert record["loss"]["name"] == "TrohnImgLoss" and record["samples_per_step"] == 4


def test_detector_heads_train_on_frozen_towers(train_set, tmp_path):
    from safetensors.torch import load_file

    base = FromScratch(ARCH)
    result = run_job(dm.mini_job("clip", "text", base, train_set, detector_section(lr=1e-2)),
                     tmp_path / "det.safetensors")
    batches = dm.mini_batches(train_set, "text", tokenizer_for(ARCH))
    assert len(result.losses) == 10 * batches.steps_per_epoch(8)
    assert sorted(load_file(str(tmp_path / "det.loss.safetensors"))) == ["head.bias", "head.weight"]
    before = portable_state(base.build().model)
    after = load_file(str(tmp_path / "det.safetensors"))
    assert all(torch.equal(before[k], after[k]) for k in before)  # the towers did not move
    labels = batches.labels
    assert int(labels.sum()) == len(labels) // 2


MINI_DATA = {"clip-coco": "coco", "trohn-text": "trohn-text", "trohn-img": "trohn-img"}
MINI_LOSS = {"clip-coco": "common.training.losses.ClipLoss", "trohn-text": "papers.bivlc.losses.TrohnTextLoss",
             "trohn-img": "papers.bivlc.losses.TrohnImgLoss"}


@pytest.mark.parametrize("run, texts_per_sample", [("clip-coco", 1), ("trohn-text", 2), ("trohn-img", 2)])
def test_each_run_is_the_job_the_former_train_run_built(train_set, run, texts_per_sample):
    """What ``papers.bivlc.mini.train_run`` handed the trainer before runs became jobs, written out: the config
    (``batch_size // texts per sample`` samples, ``steps // validations`` between validations), the provenance (run,
    samples per step, then the caller's keys, in that order), the batches (the training split's scenes, or its kept
    pairs for TROHN-Img), the loss; the resume and checkpoint settings."""
    from common.training import TrainConfig
    from common.training.job import describe_loss
    from common.training.rendered import CaptionBatches, PairedImageBatches, caption_tokens, pixels

    params = mini_section(steps=30, batch_size=8, warmup_steps=3, seed=5, checkpoint_every=50, validations=4)
    init = FromScratch(ARCH)
    job = tm.mini_job(run, train_set, params, init=init,
                      provenance={"set_manifest_sha256": "abc", "cpu_profile": {"threads": 1}})
    samples = 8 // texts_per_sample
    assert job.config == TrainConfig(steps=30, batch_size=samples, lr=1e-3, warmup_steps=3, weight_decay=0.1, seed=5,
                                     checkpoint_every=50, validate_every=7)
    assert list(job.provenance.items()) == [("run", run), ("samples_per_step", samples),
                                            ("set_manifest_sha256", "abc"), ("cpu_profile", {"threads": 1})]
    data = MINI_DATA[run]
    tokenize = tokenizer_for(ARCH)
    pairs = [(i, j) for i, j in train_set.kept if i < 15]
    if run == "trohn-img":
        rows, cols = np.array([i for i, _ in pairs]), np.array([j for _, j in pairs])
        expected = PairedImageBatches(
            pixels(train_set.images[rows]), caption_tokens(tokenize, [[train_set.captions[i][j]] for i, j in pairs]),
            [pixels(train_set.negative_images[rows, cols])],
            [caption_tokens(tokenize, [[train_set.negatives[i][j]] for i, j in pairs])], f"bivlc-mini-{data}",
            {"data": data, "texts": ["caption", "negative"], "images": ["image", "negative image"]})
        described = {"name": "bivlc-mini-trohn-img", "n_images": len(pairs), "captions_per_image": 1,
                     "data": data, "texts": ["caption", "negative"], "images": ["image", "negative image"]}
    else:
        extras = [caption_tokens(tokenize, train_set.negatives[:15])] if run == "trohn-text" else []
        texts = ["caption", "negative"][:texts_per_sample]
        expected = CaptionBatches(pixels(train_set.images[:15]), caption_tokens(tokenize, train_set.captions[:15]),
                                  extras, f"bivlc-mini-{data}", {"data": data, "texts": texts, "images": ["image"]})
        described = {"name": f"bivlc-mini-{data}", "n_images": 15, "captions_per_image": 2, "data": data,
                     "texts": texts, "images": ["image"]}
    assert list(job.batches.describe().items()) == list(described.items())
    assert type(job.batches) is type(expected)
    for step in (0, 1, 5):
        got, want = job.batches.batch(5, step, samples), expected.batch(5, step, samples)
        assert got.keys() == want.keys() and all(torch.equal(got[k], want[k]) for k in got)
    assert describe_loss(job.loss) == {"class": MINI_LOSS[run], "keywords": {}}
    assert job.init is init and job.module == "papers.bivlc.train" and job.name == f"bivlc-mini-{run}"
    assert job.config.checkpoint_every == 50 and job.resume
    val_rows = len([p for p in train_set.kept if p[0] >= 15]) if run == "trohn-img" else 5
    assert isinstance(job.validate, tm.InBatchAccuracy)
    assert (job.validate.rows, job.validate.samples) == (val_rows, samples)


def test_the_run_command_reads_the_stage_and_the_set(train_set, tmp_path, monkeypatch):
    """``run <run>``: the stage's section (its settings and ``validations``); the set's manifest's sha256, then the
    CPU profile, in the sidecar's provenance."""
    import argparse

    from common.files.io import sha256_file

    section = {"base": "mini/xs-32k", "steps": 10, "batch_size": 8, "lr": 1e-3, "warmup_steps": 1,
               "weight_decay": 0.1, "seed": 0, "validations": 2}
    monkeypatch.setattr(tm, "own_section", lambda dotted, stage=None: ({}, section))
    monkeypatch.setattr(fsm.TrainSet, "load", lambda root: train_set)
    (tmp_path / "manifest.json").write_text('{"kind": "bivlc-trohn"}')
    seen = {}
    monkeypatch.setattr(tm, "mini_job", lambda *args, **kwargs: seen.update(args=args, kwargs=kwargs) or "job")
    args = argparse.Namespace(profile="mini", run="trohn-text", set=tmp_path)
    assert tm.build(args, None, {"cpu_profile": "pinned"}) == "job"
    assert seen["args"] == ("trohn-text", train_set, section)
    assert list(seen["kwargs"]["provenance"].items()) == [
        ("set_manifest_sha256", sha256_file(tmp_path / "manifest.json")), ("cpu_profile", "pinned")]


@pytest.mark.parametrize("tower", ["image", "text"])
def test_each_detector_is_the_job_the_former_train_detector_built(train_set, tower):
    """What ``papers.bivlc.mini.train_detector`` handed the trainer: epochs of the tower's labelled inputs, no warmup,
    no weight decay, ``DetectorLoss`` bound to the tower and the embedding width, provenance (tower, encoder, set),
    no validation, no resume; and, as the authors
    (``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_img_classifier.py:20-31`` "x = self.image_encoder(x)";
    ``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_img_classifier.py:98`` "optimizer = Adam(model.parameters(),
    lr=0.001)"), Adam at a constant rate on the tower's raw output."""
    from common.training import TrainConfig
    from common.training.job import describe_loss

    job = dm.mini_job("trohn-img", tower, FromScratch(ARCH), train_set, detector_section(lr=0.1, seed=3),
                      provenance={"set_manifest_sha256": "abc"})
    pairs = [(i, j) for i, j in train_set.kept if i < 15]
    n = len({i for i, _ in pairs}) + len(pairs) if tower == "image" else 2 * len(pairs)
    steps = {"image": 1, "text": 10}[tower] * (n // 8)
    assert job.config == TrainConfig(steps=steps, batch_size=8, lr=0.1, warmup_steps=0, weight_decay=0.0, seed=3,
                                     recipe=recipe("detectors"))
    assert list(job.provenance.items()) == [("tower", tower), ("encoder", "trohn-img"), ("set_manifest_sha256", "abc")]
    assert job.batches.describe() == {"name": f"bivlc-mini-{tower}-detector", "key": f"{tower}s", "n": n,
                                      "positives": len(pairs)}
    assert describe_loss(job.loss) == {"class": "papers.bivlc.losses.DetectorLoss",
                                       "keywords": {"embed_dim": 64, "tower": tower, "raw_features": True}}
    assert job.validate is None and not job.resume and job.config.checkpoint_every == 0
    assert job.module == "papers.bivlc.detectors" and job.name == f"bivlc-mini-det-trohn-img-{tower}"


def _sugarcrepe(root: Path, test_set: Path) -> Path:
    """A SugarCrepe-format set over a few of the benchmark's positive images (captions from its records)."""
    records = json.loads((test_set / "manifest.json").read_text())["instances"][:4]
    return write_sugarcrepe_set(root, test_set / "images",
                                [(r["image"], r["caption"], r["negative_caption"]) for r in records])


def test_tiny_end_to_end_writes_the_tables(test_set, train_set, tmp_path):
    from common.evaluation.engine import EngineConfig
    from papers.bivlc import tables as t

    params = mini_section(validations=2)
    models, detectors = tmp_path / "models", tmp_path / "detectors"
    base = FromScratch(ARCH)
    torch.manual_seed(0)
    save_weights(models / "base.safetensors", portable_state(base.build().model))
    for run in RUNS:
        run_job(tm.mini_job(run, train_set, params, init=base),
                models / f"{run}.safetensors")
    for encoder in DETECTOR_ENCODERS:
        init = base if encoder == "clip" else FromCheckpoint(ARCH, models / f"{encoder}.best.safetensors")
        for tower in DETECTOR_TOWERS:
            run_job(dm.mini_job(encoder, tower, init, train_set, detector_section()),
                    detectors / f"{encoder}-{tower}.safetensors")
    entries = [t.ModelEntry("clip", "base", "CLIP", "pretrained", models / "base.safetensors"),
               t.ModelEntry("negclip", "negclip", "NegCLIP", "negclip", models / "base.safetensors"),
               *t.entries_for("unused", [], "unused", models)[2:]]
    out = tmp_path / "results"
    sugarcrepe, _ = t.load_sugarcrepe(_sugarcrepe(tmp_path / "sugarcrepe", test_set))
    inputs = t.mini_inputs(entries, ARCH, test_set, sugarcrepe, t.mini_detectors(entries, detectors), {"test": True})
    paths = t.evaluate_tables(inputs, out, EngineConfig(progress=False))

    def read(name):
        with open(paths[name], newline="") as fh:
            return list(csv.DictReader(fh))

    table2, table4, table5 = read("table2"), read("table4"), read("table5")
    assert [r["row"] for r in table2] == ["clip", "negclip", *RUNS]
    assert [r["row"] for r in table5] == ["clipdet", "trohn-img-det"]
    for r in table2:
        assert int(r["n"]) == 15  # the ambiguous add instances are not in the main scores
        assert float(r["group"]) <= min(float(r["I2T"]), float(r["T2I"]))
        assert float(r["I2T"]) <= min(float(r["Ipos2T"]), float(r["Ineg2T"]))
    # the same weights give the same scores under two row names
    assert {k: v for k, v in table2[0].items() if k not in ("row", "model", "label", "kind")} == \
        {k: v for k, v in table2[1].items() if k not in ("row", "model", "label", "kind")}
    # the per-type scores pool back to the main ones (replace: 9 instances, swap: 6)
    for r2, r4 in zip(table2, table4):
        pooled = (9 * float(r4["replace_group"]) + 6 * float(r4["swap_group"])) / 15
        assert float(r2["group"]) == pytest.approx(pooled, abs=0.02)
    summary = json.loads(Path(paths["summary"]).read_text())
    assert list(summary) == list(t.SUMMARY_KEYS) and len(summary) <= 12
    found = json.loads(Path(paths["comparisons"]).read_text())  # Finding 2: I2T minus group, a paired interval
    clip = table2[0]
    assert found["clip_i2t_minus_group"] == pytest.approx(float(clip["I2T"]) - float(clip["group"]), abs=0.02)
    low, high = found["clip_i2t_minus_group_ci_low"], found["clip_i2t_minus_group_ci_high"]
    assert low <= found["clip_i2t_minus_group"] <= high
