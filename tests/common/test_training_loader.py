"""The trainer's input pipeline (``common.training.loader``): batches made by worker processes ahead of the step are
the tensors the training loop makes itself (same images, order and random crops, any number of workers, a rank's
rows, a start mid-run), a run trained with workers writes the same bytes as one without and resumes at the same
sample, the workers leave torch's global random stream alone, and a worker's unreadable image is the same one-line
error. Tiny JPEGs written here, the repo's ``mini-vit-xs``, CPU."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from common.errors import WorkspaceError
from common.training import ClipLoss, FromScratch, MiniWorldBatches, TrainConfig, train
from common.training.files import FileCaptionBatches, FileImages, ImageFileError
from common.training.job import FinetuneJob
from common.training.loader import WORKERS_ENV, LoaderConfig, step_batches
from common.zoo import register_local_configs
from training_support import Interrupted, KilledAt, one_thread

ARCH = "mini-vit-xs"
SIZE = 48  # mini-vit-xs's image size
WORDS = "red blue green small large cube ball cone left right of on under the a".split()


@pytest.fixture(scope="module")
def jpegs(tmp_path_factory) -> list[Path]:
    """10 JPEGs of assorted sizes and aspects (random crops take different boxes in each)."""
    root = tmp_path_factory.mktemp("jpegs")
    rng = np.random.default_rng(11)
    paths = []
    for i, (w, h) in enumerate([(64, 48), (48, 64), (80, 50), (50, 90), (64, 64), (120, 60), (49, 49), (70, 52),
                                (52, 70), (96, 72)]):
        path = root / f"{i:03d}.jpg"
        Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(path, quality=90)
        paths.append(path)
    return paths


def file_batches(paths, crop_scale=(0.5, 1.0)) -> FileCaptionBatches:
    import open_clip

    register_local_configs()
    rng = np.random.default_rng(5)
    rows = 14  # some images twice; batch 4 drops a tail of 2, so steps cross epoch boundaries
    captions = [" ".join(rng.choice(WORDS, size=rng.integers(2, 8))) for _ in range(rows)]
    return FileCaptionBatches(FileImages(tuple(paths), SIZE, workers=2, crop_scale=crop_scale),
                              np.arange(rows) % len(paths), captions, (), open_clip.get_tokenizer(ARCH))


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("start,rows", [(0, slice(None)), (5, slice(2, 4))])
def test_workers_make_the_loop_s_own_batches(jpegs, workers, start, rows):
    source = file_batches(jpegs)
    steps = range(start, 9)
    ours = list(step_batches(source, 3, 4, rows, steps, LoaderConfig(workers=workers, prefetch=2)))
    assert len(ours) == len(steps)
    for step, batch in zip(steps, ours):
        direct = source.batch(3, step, 4, rows)
        assert sorted(batch) == sorted(direct)
        for key in direct:
            assert batch[key].dtype == direct[key].dtype and torch.equal(batch[key], direct[key]), (step, key)
    # the crops are random (a different seed draws different pixels), so equality above is not trivial
    assert not torch.equal(source.batch(4, start, 4, rows)["images"], ours[0]["images"])


def test_the_loader_leaves_the_global_random_stream_alone(jpegs):
    torch.manual_seed(0)
    before = torch.get_rng_state()
    list(step_batches(file_batches(jpegs), 0, 4, slice(None), range(3), LoaderConfig(workers=2)))
    assert torch.equal(torch.get_rng_state(), before)


def test_training_with_workers_writes_the_same_bytes_and_resumes_at_the_same_sample(jpegs, tmp_path):
    source = file_batches(jpegs)
    config = TrainConfig(steps=6, batch_size=4, lr=2e-3, warmup_steps=2, seed=1, checkpoint_every=2)

    def run(out: Path, batches, workers: int):
        with one_thread():
            return train(config, FromScratch(ARCH), batches, ClipLoss, out / "m.safetensors",
                         loader=LoaderConfig(workers=workers))

    inline = run(tmp_path / "inline", source, 0)
    ahead = run(tmp_path / "ahead", source, 2)
    assert ahead.losses == inline.losses
    for name in ("m.safetensors", "m.json"):
        assert (tmp_path / "ahead" / name).read_bytes() == (tmp_path / "inline" / name).read_bytes(), name

    with pytest.raises(Interrupted, match="killed at step 3"):  # a worker dies making step 3's batch
        run(tmp_path / "cut", KilledAt(source, at=3), 2)
    assert (tmp_path / "cut" / "m.resume.pt").is_file()
    resumed = run(tmp_path / "cut", source, 1)
    assert resumed.resumed_from == 2 and resumed.losses == inline.losses
    assert (tmp_path / "cut" / "m.safetensors").read_bytes() == (tmp_path / "inline" / "m.safetensors").read_bytes()


def test_a_worker_s_unreadable_image_is_the_same_one_line_error(jpegs, tmp_path):
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"not a jpeg")
    source = file_batches([*jpegs[:-1], broken], crop_scale=None)
    with pytest.raises(ImageFileError) as caught:
        list(step_batches(source, 0, 14, slice(None), range(1), LoaderConfig(workers=2)))
    message = str(caught.value)
    assert message.startswith(f"{broken}: cannot read image") and "\n" not in message and "Traceback" not in message


def test_the_default_prepares_file_batches_ahead_and_in_memory_ones_in_the_loop(jpegs, tmp_path, monkeypatch):
    monkeypatch.delenv(WORKERS_ENV, raising=False)
    source = file_batches(jpegs)
    assert 1 <= LoaderConfig.for_source(source).workers <= 8
    assert LoaderConfig.for_source(source, processes_per_node=10_000).workers == 1
    np.save(tmp_path / "images.npy", np.zeros((2, SIZE, SIZE, 3), dtype=np.uint8))
    (tmp_path / "captions.json").write_text(json.dumps([["a"], ["b"]]))
    import open_clip

    in_memory = MiniWorldBatches.load(tmp_path, 2, open_clip.get_tokenizer(ARCH))
    assert LoaderConfig.for_source(in_memory).workers == 0
    monkeypatch.setenv(WORKERS_ENV, "3")
    assert LoaderConfig.for_source(in_memory).workers == 3
    for bad in ("two", "-1"):
        monkeypatch.setenv(WORKERS_ENV, bad)
        with pytest.raises(WorkspaceError, match=WORKERS_ENV):
            LoaderConfig.for_source(source)
    with pytest.raises(ValueError, match="prefetch"):
        LoaderConfig(workers=1, prefetch=0)


def test_a_job_s_loader_is_not_part_of_what_defines_the_run(jpegs):
    job = FinetuneJob("loader-key", FromScratch(ARCH), file_batches(jpegs), ClipLoss,
                      TrainConfig(steps=1, batch_size=4), module=__name__)
    with_workers = FinetuneJob("loader-key", job.init, job.batches, ClipLoss, job.config, module=__name__,
                               loader=LoaderConfig(workers=4))
    assert job.describe() == with_workers.describe()
