"""What a fine-tune costs on this machine, measured through the shared trainer itself (docs/performance.md, "What a
full run costs"), side by side in one process:

* **step**: ``train`` on one fixed in-memory batch (``FixedBatches``) at the recipe's real global batch: the mean
  time between two asks for a batch (the trainer reads each step's loss back, a synchronisation) over the ``steps``
  after the warm-up, with the peak accelerator memory;
* **decode**: ``FileImages.get`` over COCO-sized (640x480) JPEGs rendered from the mini world, at each thread count.

Random weights and random pixels: timings only, never a result.

    python -m common.training cost --device cuda \\
        --job "name=negclip batch=256 precision=fp32 loss=common.training.losses:HardNegativeClipLoss" \\
        --decode-workers 8 16 --out cost.json"""
from __future__ import annotations

import argparse
import json
import random
import shlex
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from common.files.io import write_json_atomic
from common.miniworld.render import SYNTHETIC, render
from common.miniworld.scene import sample_scene
from common.training.data import Batch
from common.training.distributed import DistributedContext
from common.training.files import FileImages
from common.training.loss_spec import loss_by_path
from common.training.model_init import FromScratch
from common.training.trainer import TrainConfig, train
from common.zoo import register_local_configs


@dataclass
class FixedBatches:
    """One global batch generated once and returned at every step: the step's cost without the data's. ``texts`` hold
    ``n`` random ids uniform in [``min_tokens``, ``max_tokens``] (COCO captions are 8-30 BPE tokens; the text tower's
    cost follows the longest); ``asked`` holds the ``time.perf_counter()`` of every ``batch`` call."""

    batch_size: int
    image_size: int
    images_per_sample: int
    texts_per_sample: int
    context_length: int = 77
    min_tokens: int = 8
    max_tokens: int = 30
    vocab_size: int = 49408
    seed: int = 0

    def __post_init__(self):
        rng = np.random.default_rng(self.seed)
        b, k_img, k_txt, length = self.batch_size, self.images_per_sample, self.texts_per_sample, self.context_length
        images = rng.integers(0, 256, (b, k_img, 3, self.image_size, self.image_size), dtype=np.uint8)
        n = rng.integers(self.min_tokens, min(self.max_tokens, length - 2) + 1, (b, k_txt, 1))
        ids = rng.integers(1, self.vocab_size - 2, (b, k_txt, length))
        pos = np.arange(length)
        tokens = np.where(pos == 0, self.vocab_size - 2,
                          np.where(pos <= n, ids, np.where(pos == n + 1, self.vocab_size - 1, 0)))
        self._cached = {"images": torch.from_numpy(images), "texts": torch.from_numpy(tokens).long(),
                        "labels": torch.from_numpy(rng.integers(0, 2, b)).float()}
        self.asked: list[float] = []

    def batch(self, seed: int, step: int, size: int, rows: slice = slice(None)) -> Batch:
        if size != self.batch_size:
            raise ValueError(f"FixedBatches holds a batch of {self.batch_size}, asked for {size}")
        self.asked.append(time.perf_counter())
        return {k: v[rows] for k, v in self._cached.items()}

    def describe(self) -> dict:
        return {"name": "fixed random batch (timing only)", "batch_size": self.batch_size,
                "image_size": self.image_size, "images_per_sample": self.images_per_sample,
                "texts_per_sample": self.texts_per_sample, "tokens": [self.min_tokens, self.max_tokens]}


@dataclass(frozen=True)
class CostJob:
    """One recipe to time: its loss (``MODULE:CLASS[,KEY=VALUE...]``), global batch, precision and architecture."""

    name: str
    loss: str
    batch_size: int
    precision: str = "fp32"
    arch: str = "ViT-B-32"
    accum: int = 1

    @classmethod
    def parse(cls, text: str) -> "CostJob":
        """``"name=N loss=MODULE:CLASS[,K=V] batch=B [precision=P] [arch=A] [accum=K]"``."""
        fields = {}
        for token in shlex.split(text):
            key, eq, value = token.partition("=")
            if not eq:
                raise argparse.ArgumentTypeError(f"--job {text!r}: {token!r} is not KEY=VALUE")
            fields[key] = value
        missing = {"name", "loss", "batch"} - set(fields)
        unknown = set(fields) - {"name", "loss", "batch", "precision", "arch", "accum"}
        if missing or unknown:
            raise argparse.ArgumentTypeError(
                f"--job {text!r}: " + (f"missing {sorted(missing)}" if missing else f"unknown keys {sorted(unknown)}"))
        try:
            return cls(fields["name"], fields["loss"], int(fields["batch"]), fields.get("precision", "fp32"),
                       fields.get("arch", "ViT-B-32"), int(fields.get("accum", 1)))
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"--job {text!r}: {exc}") from None


def arch_config(arch: str) -> dict | None:
    """open_clip's config of ``arch`` (the zoo's local configs registered first); None when it has none."""
    open_clip = register_local_configs()
    return open_clip.get_model_config(arch)


def per_step(stamps: list[float], warmup: int) -> float:
    """Mean interval between the calls after the first ``warmup``."""
    if len(stamps) < warmup + 2:
        raise ValueError(f"need at least {warmup + 2} timestamps, have {len(stamps)}")
    return (stamps[-1] - stamps[warmup]) / (len(stamps) - 1 - warmup)


def time_job(job: CostJob, device: str, warmup: int, steps: int, work: Path) -> dict:
    """Steady-state seconds per step and peak memory of ``job`` through ``common.training.train``."""
    cfg = arch_config(job.arch)
    if cfg is None:
        raise ValueError(f"job {job.name}: unknown architecture {job.arch!r}")
    spec = loss_by_path(job.loss)
    batches = FixedBatches(job.batch_size, cfg["vision_cfg"]["image_size"], getattr(spec.cls, "image_segments", 1),
                           getattr(spec.cls, "text_segments", 1), cfg["text_cfg"].get("context_length", 77))
    world = DistributedContext.local(device)
    cuda = device.startswith("cuda")
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    config = TrainConfig(steps=warmup + steps + 1, batch_size=job.batch_size, lr=1e-6, warmup_steps=1, seed=0,
                         precision=job.precision, accum=job.accum)
    train(config, FromScratch(job.arch), batches, spec.factory(cfg["embed_dim"]), work / f"{job.name}.safetensors",
          world=world, resume=False)
    peak = torch.cuda.max_memory_allocated() / 2**30 if cuda else None
    for f in work.glob(f"{job.name}.*"):
        f.unlink()
    seconds = per_step(batches.asked, warmup)
    return {**asdict(job), "device": device, "warmup_steps": warmup, "timed_steps": steps,
            "seconds_per_step": round(seconds, 4), "samples_per_second": round(job.batch_size / seconds, 1),
            "peak_memory_gib": None if peak is None else round(peak, 2)}


def noisy_jpeg(scene, path: Path, seed: int, noise_seed, width: int = 640, height: int = 480) -> Path:
    """``scene`` rendered (the centre of a square) as a JPEG (quality 90) with sensor-like noise: at the default size,
    COCO's size and file weight."""
    side = max(width, height)
    image = render(scene, side, SYNTHETIC, seed=seed).crop(((side - width) // 2, (side - height) // 2,
                                                           (side + width) // 2, (side + height) // 2))
    noise = np.random.default_rng(noise_seed).integers(-12, 13, (height, width, 3))
    Image.fromarray(np.clip(np.asarray(image, dtype=np.int16) + noise, 0, 255).astype(np.uint8)).save(path, quality=90)
    return path


def coco_sized_jpegs(root: Path, n: int, seed: int = 0) -> list[Path]:
    """``n`` 640x480 ``noisy_jpeg`` files of mini-world scenes."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    return [noisy_jpeg(sample_scene(rng), root / f"{i:012d}.jpg", i, [seed, i]) for i in range(n)]


def time_decode(paths: list[Path], batch_size: int, workers: int, image_size: int = 224, repeats: int = 2) -> dict:
    """Images per second of ``FileImages.get`` (decode, resize, crop) on batches of ``batch_size``, best of ``repeats``."""
    images = FileImages(tuple(paths), image_size, workers)
    index = np.arange(len(paths))
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for s in range(0, len(paths) - batch_size + 1, batch_size):
            images.get(index[s: s + batch_size])
        best = min(best, time.perf_counter() - start)
    done = (len(paths) // batch_size) * batch_size
    return {"workers": workers, "batch_size": batch_size, "images": done, "seconds": round(best, 3),
            "images_per_second": round(done / best, 1)}


def run(args: argparse.Namespace) -> int:
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("cost --device cuda: no CUDA device here")
    machine = torch.cuda.get_device_name() if device.startswith("cuda") else "cpu"
    report: dict = {"device": device, "machine": machine, "torch": torch.__version__, "jobs": [], "decode": []}

    def save() -> None:
        if args.out:
            write_json_atomic(args.out, report)

    print(f"cost: device={device} ({machine}) torch={torch.__version__}; random weights and pixels, timing only",
          flush=True)
    with tempfile.TemporaryDirectory(prefix="vlc-cost-") as tmp:
        work = Path(tmp)
        for job in args.jobs:
            row = time_job(job, device, args.warmup, args.steps, work)
            report["jobs"].append(row)
            save()
            memory = "" if row["peak_memory_gib"] is None else f", peak {row['peak_memory_gib']:.1f} GiB"
            print(f"step {job.name}: {job.arch} {job.precision} batch {job.batch_size}: "
                  f"{row['seconds_per_step']:.3f} s/step ({row['samples_per_second']:.0f} samples/s){memory}",
                  flush=True)
        if args.decode_images:
            paths = coco_sized_jpegs(work / "jpegs", args.decode_images)
            for workers in args.decode_workers:
                row = time_decode(paths, args.decode_batch, workers)
                report["decode"].append(row)
                save()
                print(f"decode: {workers} threads, batches of {row['batch_size']}: {row['images_per_second']:.0f} "
                      f"images/s ({row['batch_size'] / row['images_per_second']:.3f} s per batch)", flush=True)
    print(json.dumps(report))
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("cost", help="seconds per training step and image decoding speed, measured here",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--job", dest="jobs", action="append", type=CostJob.parse, default=[],
                   metavar='"name=N loss=MODULE:CLASS[,K=V] batch=B [precision=P] [arch=A] [accum=K]"')
    p.add_argument("--warmup", type=int, default=2, help="steps of the shorter run (kernel choice, allocator)")
    p.add_argument("--steps", type=int, default=8, help="steps timed: the longer run has warmup + steps")
    p.add_argument("--decode-images", type=int, default=0, help="COCO-sized JPEGs to decode (0: no decode timing)")
    p.add_argument("--decode-batch", type=int, default=256)
    p.add_argument("--decode-workers", type=int, nargs="+", default=[8])
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    p.add_argument("--out", type=Path, default=None, help="write the measurements here as JSON")
    p.set_defaults(func=run)
