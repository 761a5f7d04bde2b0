"""``python -m common.training cost``: the step timing runs the real trainer on a fixed batch whose shape follows the
loss, the job syntax refuses what it cannot read, and decoding is timed on real JPEGs. Tiny architecture, CPU."""
from __future__ import annotations

import argparse
import json

import pytest
import torch

from common.training.__main__ import main as training_main
from common.training.cost import CostJob, FixedBatches, coco_sized_jpegs, time_decode, time_job


def test_fixed_batches_shape_rows_and_caption_lengths():
    batches = FixedBatches(batch_size=6, image_size=8, images_per_sample=2, texts_per_sample=3, context_length=40)
    whole = batches.batch(0, 0, 6)
    assert whole["images"].shape == (6, 2, 3, 8, 8) and whole["texts"].shape == (6, 3, 40)
    lengths = (whole["texts"] != 0).sum(-1) - 2  # SOT and EOT around the content
    assert int(lengths.min()) >= batches.min_tokens and int(lengths.max()) <= batches.max_tokens
    assert torch.equal(batches.batch(0, 5, 6, slice(2, 4))["texts"], whole["texts"][2:4])  # same batch every step
    assert len(batches.asked) == 2
    with pytest.raises(ValueError, match="holds a batch of 6"):
        batches.batch(0, 0, 4)


def test_job_syntax():
    job = CostJob.parse("name=det loss=papers.bivlc.losses:DetectorLoss,tower=image batch=400 precision=fp32")
    assert (job.name, job.batch_size, job.arch, job.loss) == ("det", 400, "ViT-B-32",
                                                             "papers.bivlc.losses:DetectorLoss,tower=image")
    for bad, message in (("name=x batch=2", "missing"), ("name=x loss=a:B batch=2 gpus=3", "unknown keys"),
                         ("name=x loss=a:B batch=two", "invalid literal"), ("name=x loss=a:B batch", "not KEY=VALUE")):
        with pytest.raises(argparse.ArgumentTypeError, match=message):
            CostJob.parse(bad)


def test_a_job_times_the_trainer_on_its_losses_layout(tmp_path):
    """ConCLIP's loss wants 2 image and 2 text segments per sample: the fixed batch has them, or train would refuse."""
    row = time_job(CostJob("conclip", "papers.conclip.losses:ConClipLoss", 4, arch="mini-vit-xs"), "cpu",
                   warmup=1, steps=2, work=tmp_path)
    assert row["seconds_per_step"] > 0 and row["samples_per_second"] > 0 and row["peak_memory_gib"] is None
    assert list(tmp_path.iterdir()) == []  # the timing run's weights are not left behind


def test_decode_timing_on_real_jpegs(tmp_path):
    paths = coco_sized_jpegs(tmp_path, 4)
    from PIL import Image

    with Image.open(paths[0]) as image:
        assert image.size == (640, 480) and image.format == "JPEG"
    row = time_decode(paths, batch_size=3, workers=2, repeats=1)
    assert row["images"] == 3 and row["images_per_second"] > 0


def test_cli_writes_the_report(tmp_path):
    out = tmp_path / "cost.json"
    assert training_main(["cost", "--device", "cpu", "--warmup", "1", "--steps", "1", "--out", str(out),
                          "--job", "name=clip loss=common.training.losses:ClipLoss batch=4 arch=mini-vit-xs"]) == 0
    report = json.loads(out.read_text())
    assert report["device"] == "cpu" and [j["name"] for j in report["jobs"]] == ["clip"] and report["decode"] == []
