"""The CPU reproducibility profile (common/pipeline/reproducible.py): training gives the same bits whatever the instruction
set the process would otherwise dispatch to and whatever thread count it would otherwise use; without the profile
the same two settings give different bits (so the test can fail)."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from common.miniworld import build
from common.paths import ROOT

SNIPPET = """
import hashlib, sys
from pathlib import Path
from common.pipeline import reproducible
reproducible.reexec_pinned()
reproducible.fix_threads()
import torch
from common.training.family import train_clip
from common.training.trainer import TrainConfig
out = Path(sys.argv[2])
train_clip("mini-vit-xs", 96, TrainConfig(steps=4, batch_size=32, lr=2e-3, warmup_steps=2),
           Path(sys.argv[1]), out, progress=False)
print("capability", torch.backends.cpu.get_cpu_capability(), "threads", torch.get_num_threads())
print("sha256", hashlib.sha256(out.read_bytes()).hexdigest())
"""
OTHER_MACHINES = (
    {"ATEN_CPU_CAPABILITY": "default", "OMP_NUM_THREADS": "1"},  # generic kernels, one thread
    {"OMP_NUM_THREADS": "4"},                                   # the CPU's best kernels, more threads
)


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("world") / "train"
    build.build_train_set(build.TrainSetConfig(n_images=96, captions_per_image=2), out, progress=False)
    return out


def _train(world: Path, out: Path, env: dict[str, str]) -> tuple[str, str]:
    base = {k: v for k, v in os.environ.items() if k not in ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA",
                                                              "OMP_NUM_THREADS", "VLC_CPU_PROFILE")}
    done = subprocess.run([sys.executable, "-c", SNIPPET, str(world), str(out)], cwd=ROOT, env={**base, **env},
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if line.startswith(("sha256", "capability")))
    return lines["sha256"], lines["capability"]


@pytest.mark.slow
def test_training_is_bit_identical_across_instruction_sets_and_thread_counts(world, tmp_path):
    pinned = [_train(world, tmp_path / f"p{i}.safetensors", env) for i, env in enumerate(OTHER_MACHINES)]
    assert pinned[0][0] == pinned[1][0]
    assert all(cap.startswith("AVX2") for _, cap in pinned)  # the pins took effect (threads fixed at 2)
    free = [_train(world, tmp_path / f"f{i}.safetensors", {**env, "VLC_CPU_PROFILE": "off"})
            for i, env in enumerate(OTHER_MACHINES)]
    assert free[0][0] != free[1][0], "without the profile these settings should give other bits"


def test_reexec_is_a_no_op_when_pinned_or_off(monkeypatch):
    from common.pipeline import reproducible

    called = []
    monkeypatch.setattr(os, "execve", lambda *a: called.append(a))
    for key, value in reproducible.CPU_PINS.items():
        monkeypatch.setenv(key, value)
    reproducible.reexec_pinned()
    monkeypatch.delenv("MKL_CBWR")
    monkeypatch.setenv("VLC_CPU_PROFILE", "off")
    reproducible.reexec_pinned()
    assert called == [] and reproducible.describe() == {"cpu_profile": "off"}
    monkeypatch.delenv("VLC_CPU_PROFILE")
    reproducible.reexec_pinned()
    (executable, argv, env), = called
    assert executable == sys.executable and env["MKL_CBWR"] == "AVX2" and argv[0] == sys.executable
    assert hashlib.sha256(repr(reproducible.describe()).encode()).hexdigest()  # JSON-able, deterministic


LOGISTIC = """
import hashlib
import numpy as np
from common.pipeline.reproducible import logistic
z = np.random.default_rng(0).normal(0.0, 4.0, 200_000)
print(hashlib.sha256(logistic(z).tobytes()).hexdigest(), hashlib.sha256((1 / (1 + np.exp(-z))).tobytes()).hexdigest())
"""
NUMPY_WITHOUT_AVX512 = "X86_V4 AVX512_ICL AVX512_SPR AVX512F AVX512CD AVX512_SKX AVX512_CLX AVX512_CNL"
"""NumPy's names for its AVX-512 code paths (2.3+ first, then older releases'); unknown names are ignored."""


def _numpy_hashes(env: dict[str, str]) -> list[str]:
    base = {k: v for k, v in os.environ.items() if k != "NPY_DISABLE_CPU_FEATURES"}
    done = subprocess.run([sys.executable, "-c", LOGISTIC], cwd=ROOT, env={**base, **env}, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.split()


def test_logistic_has_the_same_bits_with_and_without_numpys_avx512_code():
    """BiVLC's mini TROHN-Img thresholds moved in their last digits between an AVX-512 and an AVX2 machine because
    ``np.exp`` runs SIMD code on the first; ``logistic`` computes with the C library's ``exp`` on both. (On a CPU
    without AVX-512 both runs take the same path, and only the first assertion has anything to check.)"""
    own, without = _numpy_hashes({}), _numpy_hashes({"NPY_DISABLE_CPU_FEATURES": NUMPY_WITHOUT_AVX512})
    assert own[0] == without[0]
    import numpy as np

    features = np._core._multiarray_umath.__cpu_features__ if hasattr(np, "_core") else {}
    if features.get("AVX512F"):
        assert own[1] != without[1], "np.exp should differ between its AVX-512 and C-library paths on this CPU"
