"""The scoring engine: same decisions as the official per-example loop, ties, cache, resume."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from common.bench import make_data, reference_loop
from common.engine import Engine, EngineConfig, decide
from common.tasks import DatasetError, ImageToTextItem, TextToImageItem


class CountingModel:
    """Wraps a model, counting what it encodes; can fail after N image batches (an interruption)."""

    def __init__(self, inner, fail_after_image_batches: int | None = None):
        self.inner = inner
        self.name, self.fingerprint = inner.name, inner.fingerprint
        self.images_encoded = 0
        self.texts_encoded = 0
        self.image_batches = 0
        self.fail_after = fail_after_image_batches

    def load_image(self, path: Path) -> torch.Tensor:
        return self.inner.load_image(path)

    def tokenize(self, texts):
        return self.inner.tokenize(texts)

    def encode_images(self, pixels):
        if self.fail_after is not None and self.image_batches >= self.fail_after:
            raise KeyboardInterrupt("simulated interruption")
        self.image_batches += 1
        self.images_encoded += len(pixels)
        return self.inner.encode_images(pixels)

    def encode_tokens(self, tokens):
        self.texts_encoded += len(tokens)
        return self.inner.encode_tokens(tokens)


@pytest.fixture(scope="module")
def bench_data(tmp_path_factory):
    return make_data(tmp_path_factory.mktemp("bench") / "images", n_images=8, width=96, height=72)


def test_decisions_equal_the_official_loop(tiny_model, bench_data, tmp_path):
    result = Engine(tiny_model, EngineConfig(image_batch_size=3, text_batch_size=7, progress=False),
                    cache_root=tmp_path).image_to_text(bench_data.items)
    reference = reference_loop(tiny_model, bench_data.items)
    assert [int(o.correct) for o in result.outcomes] == reference
    # the data exercise both outcomes, so equality is not trivially all-0 or all-1
    assert 0 < sum(reference) < len(reference)


def test_each_unique_image_and_text_is_encoded_once(tiny_model, bench_data, tmp_path):
    model = CountingModel(tiny_model)
    Engine(model, EngineConfig(progress=False), cache_root=tmp_path).image_to_text(bench_data.items)
    assert model.images_encoded == len(bench_data.images)
    assert model.texts_encoded == len(bench_data.texts)
    assert len(bench_data.items) > len(bench_data.images)  # images are shared across examples


def test_cache_is_reused_and_bit_identical(tiny_model, bench_data, tmp_path):
    first = Engine(tiny_model, EngineConfig(progress=False), cache_root=tmp_path).image_to_text(bench_data.items)
    model = CountingModel(tiny_model)
    second = Engine(model, EngineConfig(progress=False), cache_root=tmp_path).image_to_text(bench_data.items)
    assert model.images_encoded == 0 and model.texts_encoded == 0
    assert [o.scores for o in first.outcomes] == [o.scores for o in second.outcomes]


def test_interrupted_run_resumes_from_cache(tiny_model, bench_data, tmp_path):
    config = EngineConfig(image_batch_size=2, shard_size=2, progress=False)
    interrupted = CountingModel(tiny_model, fail_after_image_batches=2)
    with pytest.raises(KeyboardInterrupt):
        Engine(interrupted, config, cache_root=tmp_path).image_to_text(bench_data.items)
    assert interrupted.images_encoded == 4
    resumed = CountingModel(tiny_model)
    Engine(resumed, config, cache_root=tmp_path).image_to_text(bench_data.items)
    assert resumed.images_encoded == len(bench_data.images) - 4


def _image(path: Path, color) -> Path:
    Image.new("RGB", (48, 48), color).save(path)
    return path


def test_ties_count_as_wrong_and_are_counted(tiny_model, tmp_path):
    img = _image(tmp_path / "a.png", (200, 30, 30))
    items = [
        # identical captions: an exact tie
        ImageToTextItem("t/0", "t", img, ("a red circle.", "a red circle.")),
        # the tokenizer lowercases and drops the case difference: same tokens, an exact tie too
        ImageToTextItem("t/1", "t", img, ("A RED CIRCLE.", "a red circle.")),
        ImageToTextItem("u/0", "u", img, ("a red circle.", "a blue square above a green star.")),
    ]
    result = Engine(tiny_model, EngineConfig(progress=False), cache_root=tmp_path / "c").image_to_text(items)
    assert [o.tie for o in result.outcomes] == [True, True, False]
    assert [o.correct for o in result.outcomes][:2] == [False, False]
    groups = result.by_group()
    assert groups["t"].ties == 2 and groups["t"].correct == 0 and groups["t"].n == 2
    assert result.ties == 2
    assert reference_loop(tiny_model, items)[:2] == [0, 0]


def test_decide_rule():
    assert decide(np.array([0.3, 0.2, 0.1])) == (True, False)
    assert decide(np.array([0.3, 0.3])) == (False, True)
    assert decide(np.array([0.2, 0.3, 0.1])) == (False, False)


def test_text_to_image_choice(tiny_model, tmp_path):
    red, blue = _image(tmp_path / "red.png", (220, 40, 40)), _image(tmp_path / "blue.png", (40, 80, 220))
    items = [TextToImageItem("x/0", "x", "a caption", (red, blue)), TextToImageItem("x/1", "x", "a caption", (blue, red))]
    result = Engine(tiny_model, EngineConfig(progress=False), cache_root=tmp_path / "c").text_to_image(items)
    # the same two images in swapped order: exactly one of the two items can be correct (or both tie)
    a, b = result.outcomes
    assert a.scores == tuple(reversed(b.scores))
    assert (a.correct, b.correct) in ((True, False), (False, True)) or (a.tie and b.tie)


def test_missing_and_unreadable_images_name_file_and_example(tiny_model, tmp_path):
    missing = tmp_path / "missing.jpg"
    with pytest.raises(DatasetError, match=r"missing\.jpg.*ex/7"):
        Engine(tiny_model, EngineConfig(progress=False), cache_root=tmp_path / "c").image_to_text(
            [ImageToTextItem("ex/7", "g", missing, ("a", "b"), origin="ex/7")])
    corrupt = tmp_path / "corrupt.jpg"
    corrupt.write_bytes(b"not a jpeg at all")
    with pytest.raises(DatasetError, match=r"corrupt\.jpg.*file\.json#3"):
        Engine(tiny_model, EngineConfig(progress=False), cache_root=tmp_path / "c").image_to_text(
            [ImageToTextItem("ex/3", "g", corrupt, ("a", "b"), origin="file.json#3")])
