"""Training of the tiny CLIPs: it learns, it is bit-reproducible, and its record is portable.

The pipeline's "second run is a no-op" and "fresh clone gives the same table" both rest on these.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from common.miniworld import build
from common.train import TrainConfig, train_clip


@pytest.fixture(scope="module")
def train_set(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("world") / "train"
    build.build_train_set(build.TrainSetConfig(n_images=96, captions_per_image=2), out, progress=False)
    return out


def _train(train_set: Path, out: Path, steps: int) -> dict:
    config = TrainConfig(arch="mini-vit-xs", n_images=96, steps=steps, batch_size=32, lr=2e-3, warmup_steps=2)
    return train_clip(config, train_set, out, progress=False)


def test_training_is_bit_identical_and_the_sidecar_is_portable(train_set, tmp_path):
    first = _train(train_set, tmp_path / "a" / "m.safetensors", steps=4)
    second = _train(train_set, tmp_path / "b" / "m.safetensors", steps=4)
    assert (tmp_path / "a" / "m.safetensors").read_bytes() == (tmp_path / "b" / "m.safetensors").read_bytes()
    # The sidecar is a DVC output: it must not change between reruns or between clones.
    sidecar_a = (tmp_path / "a" / "m.json").read_bytes()
    assert sidecar_a == (tmp_path / "b" / "m.json").read_bytes()
    record = json.loads(sidecar_a)
    assert "train_seconds" not in record
    assert not Path(record["train_set"]).is_absolute()
    assert record["samples_seen"] == 4 * 32 and record["config"]["arch"] == "mini-vit-xs"
    # Wall time is still reported to the caller.
    assert first["train_seconds"] >= 0 and second["final_loss"] == record["final_loss"]


def test_training_lowers_the_contrastive_loss(train_set, tmp_path):
    """Chance for a batch of 32 is ln(32) ~ 3.47; a few dozen steps on 96 images must get well below it."""
    record = _train(train_set, tmp_path / "m.safetensors", steps=200)
    assert record["final_loss"] < math.log(32) - 1.5, record["final_loss"]
