"""Benchmark: training steps over image files, with the batches made in the loop (the reader as it was) and made
ahead of the step by the loader's worker processes (``common.training.loader``), side by side in one run, against
the bound ``max(decode, step)`` (``ratio``); docs/performance.md, "Training input, measured", describes the four
timings and shows runs. A step is the interval between two calls of the loss, averaged after ``--warmup`` steps. On
the CPU the model runs on ``--threads`` and the workers on the other cores, and each step adds ``--step-seconds``
of waiting (a GPU's step uses no CPU core; ``auto``: as long as the measured decoding).

    python -m common bench train                                 # CPU: mini-vit-xs, fixed-cost step
    python -m common bench train --device cuda --arch ViT-B-32 --batch 256 --precision fp16 --workers 15"""
from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from common.files.io import write_json_atomic
from common.pipeline.machine import usable_cores
from common.training.cost import arch_config, coco_sized_jpegs, per_step
from common.training.distributed import DistributedContext
from common.training.files import FileCaptionBatches, FileImages
from common.training.loader import LoaderConfig, step_batches
from common.training.loss_spec import loss_by_path
from common.training.model_init import FromScratch
from common.training.trainer import TrainConfig, train
from common.zoo.trained import tokenizer_for

WORDS = ("a dog on the grass", "two people riding bikes", "a red bus next to a building", "a plate of food",
         "a cat sleeping on a couch", "a man holding a surfboard", "a train at the station", "a kite in the sky")


class _Timed(nn.Module):
    """The loss, noting the time of each call (one per step) and then waiting ``wait`` seconds (the CPU's fixed
    step cost); its attributes are the loss's, so the trainer treats it as the loss."""

    def __init__(self, inner: nn.Module, stamps: list[float], wait: float):
        super().__init__()
        self.inner, self.stamps, self.wait = inner, stamps, wait

    def __getattr__(self, name: str):
        if name == "inner":  # not set yet (copying): no attribute, rather than asking itself again
            return super().__getattr__(name)
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.inner, name)

    def forward(self, *args):
        self.stamps.append(time.perf_counter())
        if self.wait:
            time.sleep(self.wait)
        return self.inner(*args)


@dataclass(frozen=True)
class Decoded:
    """Batches already made, one per step: the step's cost without the data's, on the very tensors the file
    source gives (same token lengths, same crops)."""

    batches: dict[int, dict]
    about: dict

    def batch(self, seed: int, step: int, size: int, rows: slice = slice(None)) -> dict:
        return {k: v[rows] for k, v in self.batches[step].items()}

    def describe(self) -> dict:
        return {**self.about, "name": "decoded in advance (timing only)"}


@dataclass(frozen=True)
class TrainBench:
    """One benchmark's settings (the command line's)."""

    arch: str
    loss: str
    batch: int
    precision: str
    workers: int
    prefetch: int
    images: int
    warmup: int
    steps: int
    step_seconds: float | None
    """The CPU's fixed step cost in seconds (None: as long as the measured decoding)."""
    device: str


def run_bench(bench: TrainBench, work: Path) -> dict:
    cfg = arch_config(bench.arch)
    if cfg is None:
        raise SystemExit(f"bench train: unknown architecture {bench.arch!r}")
    spec = loss_by_path(bench.loss)
    if getattr(spec.cls, "image_segments", 1) != 1:
        raise SystemExit(f"bench train: {bench.loss} needs {spec.cls.image_segments} images per sample; the bench's "
                         "files give one")
    texts = getattr(spec.cls, "text_segments", 1)
    size = cfg["vision_cfg"]["image_size"]
    size = size if isinstance(size, int) else size[0]
    paths = coco_sized_jpegs(work / "jpegs", bench.images)
    rng = np.random.default_rng(0)
    captions = [str(rng.choice(WORDS)) for _ in paths]
    extras = [[str(rng.choice(WORDS)) for _ in paths] for _ in range(texts - 1)]
    files = FileCaptionBatches(FileImages(tuple(paths), size, crop_scale=(0.9, 1.0)), np.arange(len(paths)),
                               captions, extras, tokenizer_for(bench.arch), name="bench")
    n_steps = bench.warmup + bench.steps + 1
    loader = LoaderConfig(workers=bench.workers, prefetch=bench.prefetch)
    cuda = bench.device.startswith("cuda")

    # decode alone: the loader's throughput with no model; its batches kept for the step alone
    stamps: list[float] = []
    decoded: dict[int, dict] = {}
    for step, batch in enumerate(step_batches(files, 0, bench.batch, slice(None), range(n_steps), loader,
                                              pin_memory=cuda)):
        stamps.append(time.perf_counter())
        decoded[step] = batch
    decode = per_step(stamps, bench.warmup)
    wait = 0.0 if cuda else (decode if bench.step_seconds is None else bench.step_seconds)

    world = DistributedContext.local(bench.device)
    config = TrainConfig(steps=n_steps, batch_size=bench.batch, lr=1e-6, warmup_steps=1, seed=0,
                         precision=bench.precision)

    def trained(source, name: str, workers: LoaderConfig) -> float:
        stamps: list[float] = []
        loss = spec.factory(cfg["embed_dim"])
        train(config, FromScratch(bench.arch), source, lambda world: _Timed(loss(world=world), stamps, wait),
              work / f"{name}.safetensors", world=world, resume=False, loader=workers)
        for f in work.glob(f"{name}.*"):
            f.unlink()
        return per_step(stamps, bench.warmup)

    step = trained(Decoded(decoded, files.describe()), "step", LoaderConfig())
    in_loop = trained(files, "in-loop", LoaderConfig())
    ahead = trained(files, "ahead", loader)
    bound = max(decode, step)
    return {"device": bench.device, "machine": torch.cuda.get_device_name() if cuda else "cpu",
            "torch": torch.__version__, "threads": torch.get_num_threads(), **asdict(bench),
            "fixed_step_cost": wait, "decode_seconds": decode, "step_seconds_alone": step,
            "in_loop_seconds": in_loop, "ahead_seconds": ahead, "bound_seconds": bound,
            "in_loop_ratio": in_loop / bound, "ahead_ratio": ahead / bound}


def run(args: argparse.Namespace) -> int:
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("bench train --device cuda: no CUDA device here")
    threads = args.threads or (1 if args.device == "cpu" else 0)
    if threads:
        torch.set_num_threads(threads)
    if args.workers is None:
        cores = usable_cores()
        args.workers = max(1, cores - threads) if args.device == "cpu" else max(1, cores - 1)
    arch = args.arch or ("ViT-B-32" if args.device == "cuda" else "mini-vit-xs")
    step_seconds = None if args.step_seconds == "auto" else float(args.step_seconds)
    bench = TrainBench(arch=arch, loss=args.loss, batch=args.batch, precision=args.precision,
                       workers=args.workers, prefetch=args.prefetch, images=args.images, warmup=args.warmup,
                       steps=args.steps, step_seconds=step_seconds, device=args.device)
    with tempfile.TemporaryDirectory(prefix="vlc-bench-train-") as tmp:
        r = run_bench(bench, Path(tmp))
    print(f"model={arch} (random weights, timing only) device={args.device} ({r['machine']}) "
          f"precision={args.precision} batch={args.batch} loss={args.loss} threads={r['threads']}")
    print(f"data: {args.images} COCO-sized JPEGs (640x480), decode + random crop + tokenise; "
          f"{args.warmup} warm-up steps, {args.steps} timed")
    cost = "" if args.device == "cuda" else f" (model {r['step_seconds_alone'] - r['fixed_step_cost']:.3f}s + " \
        f"fixed cost {r['fixed_step_cost']:.3f}s)"
    print(f"bound: max(decode {r['decode_seconds']:.3f}s/batch on {args.workers} workers, "
          f"model step alone {r['step_seconds_alone']:.3f}s{cost}) = {r['bound_seconds']:.3f}s")
    print(f"in the loop (decode before each step): {r['in_loop_seconds']:.3f}s/step")
    print(f"ahead ({args.workers} workers, prefetch {args.prefetch}): {r['ahead_seconds']:.3f}s/step")
    print(f"in_loop_ratio={r['in_loop_ratio']:.2f} ahead_ratio={r['ahead_ratio']:.2f} "
          f"speedup={r['in_loop_seconds'] / r['ahead_seconds']:.2f}")
    if args.out:
        write_json_atomic(args.out, r)
    return 0


def _step_seconds(text: str) -> str:
    if text != "auto":
        try:
            if float(text) < 0:
                raise ValueError
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: 'auto' or seconds >= 0") from None
    return text


def register_cli(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser("train", help="training steps with batches decoded in the loop vs ahead by workers "
                              "(ratios to the bound)", description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--arch", default=None, help="open_clip architecture, random weights (default: mini-vit-xs on "
                   "the CPU, ViT-B-32 on a GPU)")
    p.add_argument("--loss", default="common.training.losses:ClipLoss", help="MODULE:CLASS[,KEY=VALUE...]")
    p.add_argument("--batch", type=int, default=32, help="global batch (the recipes': 200-400)")
    p.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"])
    p.add_argument("--workers", type=int, default=None,
                   help="loader worker processes (default: the cores the training process leaves: cores - threads on "
                        "the CPU, cores - 1 on a GPU machine)")
    p.add_argument("--prefetch", type=int, default=2, help="batches each worker keeps ready")
    p.add_argument("--images", type=int, default=128, help="COCO-sized JPEGs written and read")
    p.add_argument("--warmup", type=int, default=3, help="steps left out of each mean (workers starting)")
    p.add_argument("--steps", type=int, default=12, help="steps timed")
    p.add_argument("--step-seconds", type=_step_seconds, default="auto",
                   help="CPU only: the fixed cost added to each model step ('auto': the measured decoding)")
    p.add_argument("--threads", type=int, default=0,
                   help="torch threads of the training process (0: one on the CPU, torch's default with a GPU)")
    p.add_argument("--out", type=Path, default=None, help="also write the measurements here as JSON")
    p.set_defaults(func=run)
