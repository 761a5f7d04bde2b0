"""BiVLC, mini profile: the rendered bidirectional benchmark, the TROHN analogs, the runs' batches and model
selection, the detectors, and a tiny end-to-end table."""
from __future__ import annotations

import csv
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from common.miniworld.claims import satisfies
from common.tasks import DatasetError
from common.training import FromScratch
from common.training.checkpoint import portable_state, save_weights
from papers.bivlc import mini as m
from sugarcrepe_support import write_sugarcrepe_set

ARCH = "mini-vit-xs"


@pytest.fixture(scope="module")
def test_set(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bivlc") / "test"
    m.build_test_set(m.TestSetConfig(instances_per_category=3, seed=0), out)
    return out


@pytest.fixture(scope="module")
def train_set() -> m.TrainSet:
    data = m.render_train_set(m.TrainSetConfig(train_images=20, captions_per_image=2, val_fraction=0.25, seed=0))
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
    tokenize = m.tokenizer_for(ARCH)
    coco = m.batches_for(train_set, "clip-coco", tokenize, slice(0, 15))
    text = m.batches_for(train_set, "trohn-text", tokenize, slice(0, 15))
    img = m.batches_for(train_set, "trohn-img", tokenize, slice(0, 15))
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


def test_in_batch_accuracy_matches_a_brute_force_count(train_set):
    from common.training.model_init import normalizer

    tokenize = m.tokenizer_for(ARCH)
    built = FromScratch(ARCH).build()
    mean, std = normalizer(built.transform)
    batches = m.batches_for(train_set, "trohn-img", tokenize, slice(0, 20))
    score = m.InBatchAccuracy(batches, 4, mean, std)(built.model.eval())
    correct = total = 0
    with torch.no_grad():
        for start in range(0, len(batches.images) - 3, 4):
            imgs = torch.cat([batches.images[start:start + 4], batches.extra_images[0][start:start + 4]])
            txts = torch.cat([batches.captions[start:start + 4, 0], batches.extras[0][start:start + 4, 0]])
            feats_i = built.model.encode_image((imgs.float() / 255 - mean) / std, normalize=True)
            feats_t = built.model.encode_text(txts, normalize=True)
            for k in range(8):
                sims = feats_i[k] @ feats_t.T
                others = torch.cat([sims[:k], sims[k + 1:]])
                correct += int(sims[k] > others.max())
                total += 1
    assert score == pytest.approx(correct / total, abs=1e-6)


def test_a_run_keeps_its_best_validation(train_set, tmp_path):
    params = m.RunParams(base="unused", steps=4, batch_size=8, lr=1e-3, warmup_steps=1)
    result = m.train_run("trohn-img", train_set, params, 2, tmp_path / "trohn-img.safetensors",
                         init=FromScratch(ARCH), checkpoint_every=0)
    assert [s for s, _ in result.validation] == [2, 4]
    assert result.best_weights.is_file() and result.best_score == max(v for _, v in result.validation)
    record = json.loads((tmp_path / "trohn-img.json").read_text())
    assert record["loss"]["name"] == "TrohnImgLoss" and record["samples_per_step"] == 4


def test_detector_heads_train_on_frozen_towers(train_set, tmp_path):
    from safetensors.torch import load_file

    base = FromScratch(ARCH)
    params = m.DetectorParams(batch_size=8, lr=1e-2)
    result = m.train_detector(base, "text", train_set, params, tmp_path / "det.safetensors")
    batches = m.detector_batches(train_set, "text", m.tokenizer_for(ARCH))
    assert len(result.losses) == 10 * batches.steps_per_epoch(8)
    assert sorted(load_file(str(tmp_path / "det.loss.safetensors"))) == ["head.bias", "head.weight"]
    before = portable_state(base.build().model)
    after = load_file(str(tmp_path / "det.safetensors"))
    assert all(torch.equal(before[k], after[k]) for k in before)  # the towers did not move
    labels = batches.labels
    assert int(labels.sum()) == len(labels) // 2


def _sugarcrepe(root: Path, test_set: Path) -> Path:
    """A SugarCrepe-format set over a few of the benchmark's positive images (captions from its records)."""
    records = json.loads((test_set / "manifest.json").read_text())["instances"][:4]
    return write_sugarcrepe_set(root, test_set / "images",
                                [(r["image"], r["caption"], r["negative_caption"]) for r in records])


def test_tiny_end_to_end_writes_the_tables(test_set, train_set, tmp_path):
    from common.engine import EngineConfig
    from papers.bivlc import mini_tables as t

    params = m.RunParams(base="unused", steps=2, batch_size=4, lr=1e-3, warmup_steps=1)
    models, detectors = tmp_path / "models", tmp_path / "detectors"
    base = FromScratch(ARCH)
    torch.manual_seed(0)
    save_weights(models / "base.safetensors", portable_state(base.build().model))
    for run in m.RUNS:
        m.train_run(run, train_set, params, 2, models / f"{run}.safetensors", init=base, checkpoint_every=0)
    for encoder in m.DETECTOR_ENCODERS:
        init = base if encoder == "clip" else m.FromCheckpoint(ARCH, models / f"{encoder}.best.safetensors")
        for tower in m.TOWERS:
            m.train_detector(init, tower, train_set, m.DetectorParams(batch_size=8),
                             detectors / f"{encoder}-{tower}.safetensors")
    entries = [t.ModelEntry("clip", "base", "CLIP", "pretrained", models / "base.safetensors"),
               t.ModelEntry("negclip", "negclip", "NegCLIP", "negclip", models / "base.safetensors"),
               *t.entries_for("unused", [], "unused", models)[2:]]
    out = tmp_path / "results"
    paths = t.evaluate_tables(entries, {e.row: ARCH for e in entries}, test_set,
                              _sugarcrepe(tmp_path / "sugarcrepe", test_set), detectors, out,
                              EngineConfig(progress=False), context={"test": True})

    def read(name):
        with open(paths[name], newline="") as fh:
            return list(csv.DictReader(fh))

    table2, table4, table5 = read("table2"), read("table4"), read("table5")
    assert [r["row"] for r in table2] == ["clip", "negclip", *m.RUNS]
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
