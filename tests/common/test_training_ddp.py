"""Two CPU processes (torchrun, gloo) with local batch B each against one process with batch 2B.

One torchrun launch runs ``_worker`` (this file as a script): for every loss, the gradient of one
step on the same global batch of 8 (DDP-averaged; for two losses also with 2 micro-batches under
``no_sync``), then the smoke entry ``python -m common.training smoke`` (3 AdamW steps for two
losses). The same worker runs in this process, without torchrun, as the reference. Same seed, so
the same initial weights and the same global batches.

Tolerances, and why they are not zero:
- gradients: every parameter tensor within 1e-5 of its norm (measured <= 2e-6). The batch is split
  differently: each rank encodes 4 samples instead of 8 (matrix products of another size round
  differently), trims caption padding to its own longest caption, and DDP adds the two ranks'
  partial gradients where one process sums over all 8 samples at once.
- loss per step within 1e-4 (measured <= 5e-7), parameters after 3 steps within lr = 1e-3
  (measured <= 8e-5), and at most 200 of the 3.4 M weights off by more than 1e-5 (measured <= 38).
  AdamW's first steps move a weight by about lr * g / (|g| + 1e-6) whatever the scale of g, so a
  gradient that is mathematically zero but rounding noise in floats (the attention's key bias:
  softmax ignores a shift shared by every key) turns that noise into a step of a fraction of lr.
  The gradient check is the exact statement; this one checks the loop around it (sharding by
  rows, schedule, clamp, optimiser, the torchrun entry point).
"""
from __future__ import annotations

import functools
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import torch

ARCH = "mini-vit-xs"
TRAINED = ["clip", "hard-negative-clip"]  # the loop around the gradient: two (shared) losses suffice
GLOBAL_BATCH, LR = 8, 1e-3


def _gradient_cases():
    from common.training import ClipLoss, HardNegativeClipLoss
    from papers.bivlc.losses import DetectorLoss, TrohnImgLoss, TrohnTextLoss
    from papers.conclip.losses import ConClipLoss

    return {
        "clip": ClipLoss, "hard-negative-clip": HardNegativeClipLoss, "conclip": ConClipLoss,
        "trohn-text": TrohnTextLoss, "trohn-img": TrohnImgLoss,
        "detector-image": functools.partial(DetectorLoss, 64, "image"),
    }


def _worker(out: Path) -> None:
    """Gradients of one step per loss (rank 0 saves them), then the smoke entry; shuts the group down."""
    from torch.nn.parallel import DistributedDataParallel

    from common.training import SyntheticBatches, Towers, init_from_env, train_step
    from common.training.__main__ import main
    from common.training.checkpoint import seed_everything
    from common.training.model_init import FromScratch, normalizer
    from common.training.trainer import freeze_parts

    world = init_from_env("cpu")
    local = GLOBAL_BATCH // world.world_size
    grads = {}
    for name, make in _gradient_cases().items():
        cls = getattr(make, "func", make)
        for accum in (1, 2) if name in TRAINED else (1,):
            seed_everything(0)
            built = FromScratch(ARCH).build()
            loss = make(world=world)
            freeze_parts(built.model, set(cls.frozen) | ({"image", "text"} - set(loss.towers)))
            core = Towers(built.model, loss, *normalizer(built.transform))
            net = DistributedDataParallel(core) if world.distributed else core
            source = SyntheticBatches(images_per_sample=cls.image_segments, texts_per_sample=cls.text_segments,
                                      labels=True)
            batch = source.batch(0, 0, GLOBAL_BATCH, slice(world.rank * local, (world.rank + 1) * local))
            train_step(net, core, batch, accum)
            grads[f"{name}/accum{accum}"] = {n: p.grad.clone() for n, p in core.named_parameters()
                                             if p.grad is not None}
    if world.is_main:
        torch.save(grads, out / "grads.pt")
    args = ["smoke", "--out", str(out), "--device", "cpu", "--steps", "3", "--batch-size", str(GLOBAL_BATCH),
            "--lr", str(LR)]
    main(args + [x for name in TRAINED for x in ("--loss", name)])  # reuses, then destroys, the group


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_processes_match_one_process(tmp_path, monkeypatch):
    root = Path(__file__).resolve().parents[2]
    two, one = tmp_path / "two", tmp_path / "one"
    two.mkdir()
    one.mkdir()
    env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1"}
    launch = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", "2",
         "--master_addr", "127.0.0.1", "--master_port", str(_free_port()), __file__, str(two)],
        cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert launch.returncode == 0, launch.stdout[-3000:] + launch.stderr[-3000:]
    assert "clip: world 2" in launch.stdout

    for var in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        monkeypatch.delenv(var, raising=False)
    _worker(one)

    grads_two, grads_one = torch.load(two / "grads.pt"), torch.load(one / "grads.pt")
    assert grads_two.keys() == grads_one.keys()
    for case, ref in grads_one.items():
        got = grads_two[case]
        assert got.keys() == ref.keys(), case
        for k in ref:
            err, norm = (got[k] - ref[k]).norm().item(), ref[k].norm().item()
            assert err <= 1e-5 * norm + 1e-9, (
                f"{case}: {k}: 2 processes' gradient off by {err:.2e} (norm {norm:.2e}); tolerance 1e-5 relative")

    from safetensors.torch import load_file

    for name in TRAINED:
        losses_two = json.loads((two / f"{name}.losses.json").read_text())
        losses_one = json.loads((one / f"{name}.losses.json").read_text())
        worst_loss = max(abs(a - b) for a, b in zip(losses_two, losses_one))
        assert len(losses_two) == 3 and worst_loss <= 1e-4, f"{name}: losses {losses_two} vs {losses_one}; tol 1e-4"
        w2, w1 = load_file(str(two / f"{name}.safetensors")), load_file(str(one / f"{name}.safetensors"))
        diffs = torch.cat([(w2[k] - w1[k]).abs().flatten() for k in w1])
        assert diffs.max().item() <= LR, f"{name}: a weight differs by {diffs.max().item():.2e} > lr {LR}"
        assert (diffs > 1e-5).sum().item() <= 200, (
            f"{name}: {(diffs > 1e-5).sum().item()} of {diffs.numel()} weights differ by > 1e-5 (tolerance 200)")
        assert json.loads((two / f"{name}.json").read_text())["world_size"] == 2


if __name__ == "__main__":
    _worker(Path(sys.argv[1]))
