"""Benchmark: the engine against SugarCrepe's official per-example loop, side by side in one run.

Data: synthetic COCO-sized JPEGs arranged like SugarCrepe (about 4.8 examples per image, 1.6 distinct captions per
example); model: an open_clip architecture with random weights (timing only). Three timings, same process and threads:

* reference: the released evaluation's loop, ``RAIVNLab/sugar-crepe@0047054b main_eval.py:57-68`` "image =
  Image.open(image_path)" and ``RAIVNLab/sugar-crepe@0047054b main_eval.py:45-54`` "return 1 if pos_score.item() >
  neg_score.item() else 0": per example, open the image, encode it and both captions at batch 1, compare.
* engine: ``common.evaluation.scoring.selection.image_to_text`` on a cold cache, bookkeeping included.
* bound: on the CPU, encoding every unique image and text once at the best batch size, nothing else; on a GPU, the
  larger of decoding every image with all cores and encoding everything already decoded and tokenised.

It asserts the engine's decisions equal the reference's (on a GPU also counts those bf16 autocast changes) and ends
with ``speedup=<reference/engine> bound_ratio=<engine/bound> identical=<true|false>``.
"""
from __future__ import annotations

import argparse
import random
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from common.evaluation.engine import Engine, EngineConfig
from common.evaluation.scoring.selection import image_to_text
from common.files.tasks import ImageToTextItem
from common.miniworld.claims import sample_claim
from common.miniworld.negatives import EDIT_TYPES
from common.miniworld.scene import sample_scene
from common.training.cost import noisy_jpeg
from common.zoo import OpenClipModel, random_model

EXAMPLES_PER_IMAGE = (1, 6, 7, 8, 5, 2, 4, 9, 3, 10, 1, 1, 1, 6, 7, 8, 5)
"""Cycled per image; mean 4.88, close to SugarCrepe's 7,511 examples over 1,560 images (4.81)."""
POSITIVES_PER_EXAMPLE = 0.58
"""SugarCrepe has 4,345 distinct positive captions for 7,511 examples."""


@dataclass(frozen=True)
class BenchData:
    items: list[ImageToTextItem]
    images: list[Path]
    texts: list[str]


def make_data(root: Path, n_images: int, seed: int = 0, width: int = 640, height: int = 480) -> BenchData:
    """JPEGs of mini-world scenes at COCO size, with SugarCrepe-like caption sharing."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    items: list[ImageToTextItem] = []
    images = []
    categories = list(EDIT_TYPES)
    for i in range(n_images):
        scene = sample_scene(rng)
        path = noisy_jpeg(scene, root / f"{i:012d}.jpg", i, i, width, height)
        images.append(path)
        wanted = EXAMPLES_PER_IMAGE[i % len(EXAMPLES_PER_IMAGE)]
        # SugarCrepe: 0.58 distinct positive captions per example, a distinct negative for each.
        positives = [sample_claim(rng, scene) for _ in range(max(1, round(POSITIVES_PER_EXAMPLE * wanted)))]
        negatives: set[str] = set()
        for _ in range(200 * wanted):
            if len(negatives) == wanted:
                break
            positive = rng.choice(positives)
            category = rng.choice(categories)
            negative = EDIT_TYPES[category](scene, positive, rng)
            if negative is None or negative.text() in negatives:
                continue
            negatives.add(negative.text())
            items.append(ImageToTextItem(f"{category}/{len(items)}", category, path, (positive.text(), negative.text())))
    texts = list(dict.fromkeys(c for it in items for c in it.captions))
    return BenchData(items, images, texts)


@torch.no_grad()
def reference_loop(model: OpenClipModel, items: list[ImageToTextItem]) -> list[int]:
    """SugarCrepe's released decision, ``RAIVNLab/sugar-crepe@0047054b main_eval.py:46-54`` "def
    text_retrieval(pos_text, neg_text, image, model, tokenizer, transform, device):", verbatim in logic (batch 1
    throughout)."""
    net, tokenizer, transform, device = model.model, model.tokenizer, model.transform, model.device
    decisions = []
    for it in items:
        image = Image.open(it.image)
        pos_text = tokenizer(it.captions[0]).to(device)
        pos_text_embedding = net.encode_text(pos_text, normalize=True)
        neg_text = tokenizer(it.captions[1]).to(device)
        neg_text_embedding = net.encode_text(neg_text, normalize=True)
        image_embedding = net.encode_image(transform(image).unsqueeze(dim=0).to(device), normalize=True)
        pos_score = pos_text_embedding @ image_embedding.t()
        neg_score = neg_text_embedding @ image_embedding.t()
        decisions.append(1 if pos_score.item() > neg_score.item() else 0)
    return decisions


@torch.no_grad()
def encode_once(model: OpenClipModel, images: list[Path], texts: list[str], image_batch: int, text_batch: int) -> tuple[float, float]:
    """Seconds to encode every image (decode+preprocess+encode) and every text once, nothing else."""
    start = time.perf_counter()
    for s in range(0, len(images), image_batch):
        model.encode_images(torch.stack([model.load_image(p) for p in images[s: s + image_batch]]))
    image_seconds = time.perf_counter() - start
    tokens = model.tokenize(texts)
    order = torch.argsort((tokens != 0).sum(1), stable=True)
    start = time.perf_counter()
    for s in range(0, len(texts), text_batch):
        model.encode_tokens(tokens[order[s: s + text_batch]])
    return image_seconds, time.perf_counter() - start


class _Decode(torch.utils.data.Dataset):
    def __init__(self, model: OpenClipModel, images: list[Path]):
        self.model, self.images = model, images

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i: int) -> torch.Tensor:
        return self.model.load_image(self.images[i])


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


@torch.no_grad()
def gpu_bound(model: OpenClipModel, images: list[Path], texts: list[str], image_batch: int, text_batch: int,
              workers: int) -> tuple[float, float, float]:
    """(decode seconds with ``workers`` processes, image encode seconds, text encode seconds) on a GPU."""
    start = time.perf_counter()
    loader = torch.utils.data.DataLoader(_Decode(model, images), batch_size=EngineConfig().decode_batch_size,
                                         num_workers=workers)
    decoded = torch.cat(list(loader))
    decode_seconds = time.perf_counter() - start
    on_gpu = decoded.to(model.device)
    tokens = model.tokenize(texts)
    tokens = tokens[torch.argsort((tokens != 0).sum(1), stable=True)].to(model.device)
    _sync(model.device)
    start = time.perf_counter()
    for s in range(0, len(on_gpu), image_batch):
        model.model.encode_image(on_gpu[s: s + image_batch], normalize=True)
    _sync(model.device)
    image_seconds = time.perf_counter() - start
    start = time.perf_counter()
    for s in range(0, len(tokens), text_batch):
        model.encode_tokens(tokens[s: s + text_batch])
    _sync(model.device)
    return decode_seconds, image_seconds, time.perf_counter() - start


class WorklessModel:
    """``model`` with its work removed: every image "decodes" to one zero pixel and every encoder returns zero rows
    of the embedding's width. The engine run on it costs its overheads alone (hashing, lookups, tokenising,
    batching, cache writes, scoring), which on the CPU the model's time would otherwise drown (all its scores tie,
    which changes no cost)."""

    def __init__(self, model: OpenClipModel, width: int):
        self.name, self.fingerprint, self.device = model.name, f"{model.fingerprint}-workless", model.device
        self.tokenize, self.zeros = model.tokenize, torch.zeros(0, width)

    def load_image(self, path: Path) -> torch.Tensor:
        return self.zeros.new_zeros(3, 1, 1)

    def encode_images(self, batch: torch.Tensor) -> torch.Tensor:
        """One zero row per row of ``batch``, views of one matrix (allocating is work the engine does not do)."""
        if len(self.zeros) < len(batch):
            self.zeros = torch.zeros(len(batch), self.zeros.shape[1])
        return self.zeros[:len(batch)]

    encode_tokens = encode_images


def _timed(engine: Engine, items: list[ImageToTextItem]):
    """``image_to_text(engine, items)``, its seconds, and the engine's phases' (the rest counted as "score")."""
    start = time.perf_counter()
    result = image_to_text(engine, items)
    seconds = time.perf_counter() - start
    return result, seconds, {**engine.phase_seconds, "score": seconds - sum(engine.phase_seconds.values())}


def _seconds(phases: dict[str, float]) -> str:
    return ", ".join(f"{name} {seconds:.2f}s" for name, seconds in phases.items())


def run(args: argparse.Namespace) -> int:
    torch.set_num_threads(args.threads) if args.threads else None
    cuda = args.device == "cuda"
    if cuda and not torch.cuda.is_available():
        raise SystemExit("bench --device cuda: no CUDA device here")
    with tempfile.TemporaryDirectory(prefix="vlc-bench-") as tmp:
        tmp_path = Path(tmp)
        data = make_data(tmp_path / "images", args.images, seed=args.seed)
        model = random_model(args.arch, device=args.device)
        n = len(data.items)
        workers = EngineConfig().workers_for(args.device)
        print(f"model={args.arch} (random weights, timing only) device={args.device}"
              + (f" ({torch.cuda.get_device_name()})" if cuda else "")
              + f" threads={torch.get_num_threads()} decode_workers={workers}")
        print(f"examples={n} images={len(data.images)} unique_texts={len(data.texts)} "
              f"examples_per_image={n / len(data.images):.2f}")

        encode_once(model, data.images[:2], data.texts[:8], 2, 8)  # warm-up: allocator, kernels
        if cuda:
            image_batch, text_batch = args.image_batches[-1], args.text_batches[-1]
            gpu_bound(model, data.images[:image_batch], data.texts[:text_batch], image_batch, text_batch, 0)
            decode, image_enc, text_enc = gpu_bound(model, data.images, data.texts, image_batch, text_batch,
                                                    max(1, workers + 1))
            bound = max(decode, image_enc + text_enc)
            text_bound, image_bound = text_enc, None
            print(f"bound: max(decode {decode:.2f}s on {max(1, workers + 1)} processes, GPU encode images "
                  f"{image_enc:.2f}s + texts {text_enc:.2f}s) = {bound:.2f}s")
        else:
            timed = [(ib, tb, *encode_once(model, data.images, data.texts, ib, tb))
                     for ib, tb in zip(args.image_batches, args.text_batches)]
            image_batch, _, image_bound, _ = min(timed, key=lambda t: t[2])
            _, text_batch, _, text_bound = min(timed, key=lambda t: t[3])
            bound = image_bound + text_bound
            print(f"bound: images {image_bound:.2f}s (batch {image_batch}) + texts "
                  f"{text_bound:.2f}s (batch {text_batch}) = {bound:.2f}s")

        config = EngineConfig(image_batch_size=image_batch, text_batch_size=text_batch, progress=False)
        result, engine_seconds, phases = _timed(Engine(model, config, cache_root=tmp_path / "cache"), data.items)
        print(f"engine (cold cache): {engine_seconds:.2f}s ({_seconds(phases)})")
        # the engine's time beyond the bound's work, phase by phase: the phases that do none of it whole, the text
        # (and, on the CPU, the image) encoding beyond the bound's own (hashing rows, batching, cache writes); on a GPU
        # the images' phase overlaps decoding with encoding, so its excess over the bound is not split out
        parts = {name: phases.get(name, 0.0) for name in ("hash and look up", "start workers", "tokenise", "score")}
        parts["texts beyond the bound"] = phases.get("encode texts", 0.0) - text_bound
        if image_bound is not None:
            parts["images beyond the bound"] = phases.get("decode and encode images", 0.0) - image_bound
        print(f"overheads: {sum(parts.values()):.2f}s ({_seconds(parts)})")
        warm = _timed(Engine(model, config, cache_root=tmp_path / "cache"), data.items)[1]
        print(f"engine (warm cache, new process state): {warm:.2f}s")
        # the engine on WorklessModel(model), cold cache, the fastest of 3 runs (each in a fresh cache folder): the
        # overheads measured as their own times
        width = int(model.encode_tokens(model.tokenize(["a"])).shape[1])
        total, alone = min((_timed(Engine(WorklessModel(model, width), config, cache_root=tmp_path / f"workless-{r}"),
                                   data.items)[1:] for r in range(3)), key=lambda run: run[0])
        print(f"engine with the model's work removed (overheads alone, best of 3): {total:.2f}s ({_seconds(alone)})")
        ours = [int(o.correct) for o in result.outcomes]
        if cuda:
            bf16_config = replace(config, precision="bf16")
            image_to_text(Engine(model, bf16_config, cache_root=tmp_path / "warmup"), data.items[:8])  # bf16 kernels
            half, bf16_seconds, _ = _timed(Engine(model, bf16_config, cache_root=tmp_path / "cache"), data.items)
            flips = sum(int(o.correct) != d for o, d in zip(half.outcomes, ours))
            print(f"engine bf16 (cold cache): {bf16_seconds:.2f}s; decisions equal to fp32 on {n - flips}/{n} "
                  f"({100 * (n - flips) / n:.2f}%), accuracy bf16={np.mean([o.correct for o in half.outcomes]):.4f}")

        start = time.perf_counter()
        reference = reference_loop(model, data.items)
        _sync(args.device)
        reference_seconds = time.perf_counter() - start
        print(f"reference (official per-example loop): {reference_seconds:.2f}s")

        differing = [i for i, (a, b) in enumerate(zip(ours, reference)) if a != b]
        if differing:
            margins = [abs(result.outcomes[i].scores[0] - result.outcomes[i].scores[1]) for i in differing]
            print(f"decisions differ on {len(differing)} of {n} examples (largest |margin| {max(margins):.3g})")
        print(f"accuracy engine={np.mean(ours):.4f} reference={np.mean(reference):.4f} ties={result.ties}")
        identical = not differing and len(ours) == len(reference)
        print(f"speedup={reference_seconds / engine_seconds:.2f} bound_ratio={engine_seconds / bound:.2f} "
              f"identical={'true' if identical else 'false'}")
        return 0 if identical else 1
