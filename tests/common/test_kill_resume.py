"""Kill and resume, for real: a subprocess is SIGKILLed mid-run, rerun, and ends where an uninterrupted run ends.

- Encoding: the engine writes its embedding cache shard by shard; killed once a shard exists, the rerun encodes
  only the images the cache lacks, and its embeddings equal an uninterrupted run's bit for bit.
- Training: ``common.training.family.train_clip`` (what ``python -m common train <name>`` runs) writes a resume state under
  the cache root every N steps; killed once one exists, the rerun continues from it and writes the same bytes as
  an uninterrupted run, then deletes the state.

The children (``tests/kill_resume_child.py``) run one thread each, with ``VLC_CACHE`` pointing at the test's
folder; a child that finishes before it is killed fails the test (the sizes leave seconds of margin).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from common.errors import WorkspaceError

CHILD = Path(__file__).resolve().parent.parent / "kill_resume_child.py"
ROOT = CHILD.parent.parent


def _env(cache: Path) -> dict:
    env = {**os.environ, "VLC_CACHE": str(cache), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    env.pop("VLC_CHECKPOINT_EVERY", None)
    return env


def _run(cache: Path, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, str(CHILD), *map(str, args)], env=_env(cache), cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def _kill_when(cache: Path, ready, *args: str, timeout: float = 300) -> None:
    """Start the child, SIGKILL it as soon as ``ready()`` holds; fail if it ends first."""
    proc = subprocess.Popen([sys.executable, str(CHILD), *map(str, args)], env=_env(cache), cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + timeout
    try:
        while not ready():
            if proc.poll() is not None:
                pytest.fail(f"the child ended (rc {proc.returncode}) before it could be killed:\n{proc.stdout.read()}")
            if time.monotonic() > deadline:
                pytest.fail("the child never reached the point where it is killed")
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL


# ---- encoding --------------------------------------------------------------------------------------------------

N_IMAGES = 1600


@pytest.fixture(scope="module")
def image_dir(tmp_path_factory) -> Path:
    from PIL import Image

    out = tmp_path_factory.mktemp("kill_images")
    rng = np.random.default_rng(0)
    for i in range(N_IMAGES):
        Image.fromarray(rng.integers(0, 256, (128, 128, 3), dtype=np.uint8)).save(out / f"{i:05d}.png",
                                                                                   compress_level=0)
    return out


def _shards(cache: Path) -> list[Path]:
    return sorted(cache.glob("embeddings/*/images/shard-*.npz"))


@pytest.mark.slow
def test_a_killed_encoding_resumes_from_the_cache_with_identical_embeddings(image_dir, tmp_path):
    whole = _run(tmp_path / "whole", "encode", image_dir, tmp_path / "whole.npz")
    assert json.loads(whole.stdout.splitlines()[0]) == {"images_missing": N_IMAGES, "image_shards": 0}
    shards_whole = len(_shards(tmp_path / "whole"))
    assert shards_whole == N_IMAGES // 32

    cache = tmp_path / "killed"
    _kill_when(cache, lambda: len(_shards(cache)) >= 1, "encode", image_dir, tmp_path / "killed.npz")
    kept = len(_shards(cache))
    assert 1 <= kept < shards_whole and not (tmp_path / "killed.npz").exists()

    rerun = _run(cache, "encode", image_dir, tmp_path / "killed.npz")
    start = json.loads(rerun.stdout.splitlines()[0])
    # The rerun saw every shard the killed run finished (possibly one more written between the check and the
    # kill) and encoded only the rest.
    assert start["image_shards"] >= kept and start["images_missing"] == N_IMAGES - 32 * start["image_shards"]
    assert len(_shards(cache)) == shards_whole

    a, b = np.load(tmp_path / "whole.npz", allow_pickle=False), np.load(tmp_path / "killed.npz", allow_pickle=False)
    assert a["images"].tobytes() == b["images"].tobytes() and a["texts"].tobytes() == b["texts"].tobytes()


# ---- training --------------------------------------------------------------------------------------------------

STEPS, EVERY = 40, 5


@pytest.fixture(scope="module")
def train_set(tmp_path_factory) -> Path:
    from common.miniworld import build

    out = tmp_path_factory.mktemp("kill_world") / "train"
    build.build_train_set(build.TrainSetConfig(n_images=96, captions_per_image=2), out, progress=False)
    return out


def _states(cache: Path) -> list[Path]:
    return sorted(cache.glob("training/mini-m/*.resume.pt"))


@pytest.mark.slow
def test_a_killed_training_resumes_from_its_last_checkpoint_with_identical_weights(train_set, tmp_path):
    whole = tmp_path / "whole" / "m.safetensors"
    _run(tmp_path / "cache_whole", "train", train_set, whole, STEPS, EVERY)
    assert not (tmp_path / "cache_whole" / "training" / "mini-m").exists()  # deleted after success, folder included

    cache = tmp_path / "cache"
    out = tmp_path / "killed" / "m.safetensors"
    _kill_when(cache, lambda: bool(_states(cache)), "train", train_set, out, STEPS, EVERY)
    assert not out.exists() and len(_states(cache)) == 1  # the state lives outside the outputs (DVC deletes those)

    rerun = _run(cache, "train", train_set, out, STEPS, EVERY)
    assert "resuming from" in rerun.stdout
    assert out.read_bytes() == whole.read_bytes()
    assert out.with_suffix(".json").read_bytes() == whole.with_suffix(".json").read_bytes()
    assert not _states(cache)


def test_resume_states_are_keyed_by_the_run(train_set, tmp_path, monkeypatch):
    """Another recipe, data or process count gets another file, another resume interval the same one;
    VLC_CHECKPOINT_EVERY overrides the interval the run's config states."""
    from dataclasses import replace

    import open_clip

    from common.training import ClipLoss, FromScratch, MiniWorldBatches, TrainConfig, job as job_module

    batches = MiniWorldBatches.load(train_set, 96, open_clip.get_tokenizer("mini-vit-xs"))
    job = job_module.FinetuneJob("mini-m", FromScratch("mini-vit-xs"), batches, ClipLoss,
                                 TrainConfig(steps=4, batch_size=32), "common.training.family")
    first = job_module.resume_state_path(job)
    assert first.parent == Path(os.environ["VLC_CACHE"]) / "training" / "mini-m"
    assert job_module.resume_state_path(replace(job)) == first
    assert job_module.resume_state_path(job, world_size=2) != first
    assert job_module.resume_state_path(replace(job, config=TrainConfig(steps=5, batch_size=32))) != first
    assert job_module.resume_state_path(replace(job, provenance={"config": {"steps": 4}})) != first
    assert job_module.resume_state_path(replace(job, config=replace(job.config, checkpoint_every=7))) == first

    monkeypatch.delenv("VLC_CHECKPOINT_EVERY", raising=False)
    assert job_module.checkpoint_every(50) == 50
    monkeypatch.setenv("VLC_CHECKPOINT_EVERY", "0")
    assert job_module.checkpoint_every(50) == 0
    monkeypatch.setenv("VLC_CHECKPOINT_EVERY", "ten")
    with pytest.raises(WorkspaceError, match="VLC_CHECKPOINT_EVERY"):  # one `error:` line, exit 1
        job_module.checkpoint_every(50)
