"""Training of the tiny CLIPs: it learns, it is bit-reproducible, its record is portable, and moving it
onto the shared trainer left its weights unchanged.

The pipeline's "second run is a no-op" and "fresh clone gives the same table" both rest on these.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from common.miniworld import build
from common.training.family import train_clip
from common.training.trainer import TrainConfig
from training_support import one_thread, pinned_run


@pytest.fixture(scope="module")
def train_set(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("world") / "train"
    build.build_train_set(build.TrainSetConfig(n_images=96, captions_per_image=2), out, progress=False)
    return out


def _train(train_set: Path, out: Path, steps: int) -> dict:
    config = TrainConfig(steps=steps, batch_size=32, lr=2e-3, warmup_steps=2)
    return train_clip("mini-vit-xs", 96, config, train_set, out, progress=False)


def test_training_is_bit_identical_and_the_sidecar_is_portable(train_set, tmp_path, capsys):
    first = _train(train_set, tmp_path / "a" / "m.safetensors", steps=4)
    second = _train(train_set, tmp_path / "b" / "m.safetensors", steps=4)
    assert "training mini-vit-xs from random initialization on 96 mini-world pairs (4 steps of 32)" in (
        capsys.readouterr().out)
    assert (tmp_path / "a" / "m.safetensors").read_bytes() == (tmp_path / "b" / "m.safetensors").read_bytes()
    # The sidecar is a DVC output: it must not change between reruns or between clones.
    sidecar_a = (tmp_path / "a" / "m.json").read_bytes()
    assert sidecar_a == (tmp_path / "b" / "m.json").read_bytes()
    record = json.loads(sidecar_a)
    assert "train_seconds" not in record and "seconds" not in sidecar_a.decode()
    assert str(tmp_path) not in sidecar_a.decode() and str(train_set) not in sidecar_a.decode()
    assert not Path(record["train_set"]).is_absolute()
    assert record["samples_seen"] == 4 * 32 and record["config"]["arch"] == "mini-vit-xs"
    assert record["config"]["n_images"] == 96 and record["parameters"] > 0  # what the results table reads
    assert record["loss"] == {"name": "ClipLoss"} and record["init"] == {"kind": "scratch", "arch": "mini-vit-xs"}
    # What the bit-for-bit claim is conditioned on (docs/reproducibility.md): package versions and the CPU kind.
    environment = record["environment"]
    assert environment["versions"]["torch"] == torch.__version__.split("+")[0] or (
        environment["versions"]["torch"] == torch.__version__)
    assert {"python", "open_clip_torch", "numpy"} <= set(environment["versions"])
    assert environment["hardware"]["device"] == "cpu" and environment["hardware"]["torch_threads"] >= 1
    assert environment["hardware"]["cpu_vendor"] and not {"cpu", "cpu_count", "platform"} & set(environment["hardware"])
    # Wall time is still reported to the caller, with the sidecar's record.
    assert first["train_seconds"] >= 0 and second["final_loss"] == record["final_loss"]
    assert {k: v for k, v in first.items() if k != "train_seconds"} == record




ORIGINAL_LOOP_SHA256 = "112060517ddee7e08925ad66841635045f73acc5ca5aa86a6c7cfc1a187f6e6d"
"""sha256 of the weights the mini family's own loop (``common/training/family.py``, then ``common/train.py``,
before it called ``common.training.train``) wrote for ``mini-vit-xs`` on 96 images with ``TrainConfig(steps=5,
batch_size=32, lr=2e-3, warmup_steps=2, seed=0)`` on the ``train_set`` fixture (images.npy sha256 c3959251...), one
thread; its final loss was 3.526983690261841."""
PINNED_LOOP = """
import sys, torch
from pathlib import Path
from common.training.family import train_clip
from common.training.trainer import TrainConfig
torch.set_num_threads(1)
config = TrainConfig(steps=5, batch_size=32, lr=2e-3, warmup_steps=2, seed=0)
print(repr(train_clip("mini-vit-xs", 96, config, Path(sys.argv[1]), Path(sys.argv[2]), progress=False)["final_loss"]))
"""
"""The run pinned above, as ``training_support.pinned_run`` runs it under the CPU profile."""


def test_weights_are_the_trainers_and_those_of_the_loop_it_replaced(train_set, tmp_path):
    """``train_clip`` is ``common.training.train`` with FromScratch + MiniWorldBatches + ClipLoss (same
    bytes as calling it directly), and under the CPU profile those bytes are the pre-trainer loop's (pinned above):
    96 images in batches of 32, so step 4 starts a second epoch."""
    import open_clip

    from common.training import ClipLoss, FromScratch, MiniWorldBatches, train

    config = TrainConfig(steps=5, batch_size=32, lr=2e-3, warmup_steps=2, seed=0)
    with one_thread():
        record = train_clip("mini-vit-xs", 96, config, train_set, tmp_path / "clip.safetensors", progress=False)
        direct = train(config,
                       FromScratch("mini-vit-xs"), MiniWorldBatches.load(train_set, 96, open_clip.get_tokenizer(
                           "mini-vit-xs")), ClipLoss, tmp_path / "direct.safetensors")
    assert (tmp_path / "clip.safetensors").read_bytes() == (tmp_path / "direct.safetensors").read_bytes()
    assert record["final_loss"] == direct.final_loss
    pinned = pinned_run(PINNED_LOOP, train_set, tmp_path / "pinned.safetensors")
    assert pinned == (ORIGINAL_LOOP_SHA256, 3.526983690261841), pinned


def test_training_lowers_the_contrastive_loss(train_set, tmp_path):
    """Chance for a batch of 32 is ln(32) ~ 3.47; a few dozen steps on 96 images must get well below it."""
    record = _train(train_set, tmp_path / "m.safetensors", steps=200)
    assert record["final_loss"] < math.log(32) - 1.5, record["final_loss"]
