"""Benchmark: the engine against SugarCrepe's official per-example loop, side by side in one run.

Data: synthetic COCO-sized JPEGs (640x480) arranged like SugarCrepe (about 4.8 examples per image,
about 1.6 distinct captions per example). Model: an open_clip architecture with random weights
(timing only; nothing here is a result). Three timings, same process, same threads:

* reference: ``main_eval.py``'s loop: per example, open the image, encode it at batch 1, encode the
  positive and the negative caption at batch 1, compare.
* engine: ``Engine.image_to_text`` on a cold cache (hashing, caching and bookkeeping included).
* bound: encoding every unique image (decode + preprocess + encode) and every unique text once,
  at the best of several batch sizes, with nothing else.

It asserts the engine's decisions equal the reference's and ends with
``speedup=<reference/engine> bound_ratio=<engine/bound> identical=<true|false>``.
"""
from __future__ import annotations

import argparse
import random
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from common.engine import Engine, EngineConfig
from common.miniworld.claims import sample_claim
from common.miniworld.negatives import SUGARCREPE_TYPES
from common.miniworld.render import SYNTHETIC, render
from common.miniworld.scene import sample_scene
from common.tasks import ImageToTextItem
from common.zoo import ModelSpec, OpenClipModel, register_local_configs

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
    categories = list(SUGARCREPE_TYPES)
    for i in range(n_images):
        scene = sample_scene(rng)
        side = max(width, height)
        image = render(scene, side, SYNTHETIC, seed=i).crop(((side - width) // 2, (side - height) // 2,
                                                             (side + width) // 2, (side + height) // 2))
        pixels = np.asarray(image, dtype=np.int16) + np.random.default_rng(i).integers(-12, 13, (height, width, 3))
        path = root / f"{i:012d}.jpg"
        Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(path, quality=90)
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
            negative = SUGARCREPE_TYPES[category](scene, positive, rng)
            if negative is None or negative.text() in negatives:
                continue
            negatives.add(negative.text())
            items.append(ImageToTextItem(f"{category}/{len(items)}", category, path, (positive.text(), negative.text())))
    texts = list(dict.fromkeys(c for it in items for c in it.captions))
    return BenchData(items, images, texts)


@torch.no_grad()
def reference_loop(model: OpenClipModel, items: list[ImageToTextItem]) -> list[int]:
    """SugarCrepe's released ``main_eval.py`` decision loop, verbatim in logic (batch 1 throughout)."""
    net, tokenizer, transform = model.model, model.tokenizer, model.transform
    decisions = []
    for it in items:
        image = Image.open(it.image)
        pos_text = tokenizer(it.captions[0])
        pos_text_embedding = net.encode_text(pos_text, normalize=True)
        neg_text = tokenizer(it.captions[1])
        neg_text_embedding = net.encode_text(neg_text, normalize=True)
        image_embedding = net.encode_image(transform(image).unsqueeze(dim=0), normalize=True)
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


def random_model(arch: str) -> OpenClipModel:
    import open_clip

    register_local_configs()
    torch.manual_seed(0)
    net, _, transform = open_clip.create_model_and_transforms(arch, pretrained=None)
    spec = ModelSpec(name=f"bench/{arch}-random-weights", arch=arch, family="bench", label=arch)
    return OpenClipModel(spec, net, transform, open_clip.get_tokenizer(arch), "cpu")


def run(args: argparse.Namespace) -> int:
    torch.set_num_threads(args.threads) if args.threads else None
    with tempfile.TemporaryDirectory(prefix="vlc-bench-") as tmp:
        tmp_path = Path(tmp)
        data = make_data(tmp_path / "images", args.images, seed=args.seed)
        model = random_model(args.arch)
        n = len(data.items)
        print(f"model={args.arch} (random weights, timing only) threads={torch.get_num_threads()}")
        print(f"examples={n} images={len(data.images)} unique_texts={len(data.texts)} "
              f"examples_per_image={n / len(data.images):.2f}")

        encode_once(model, data.images[:2], data.texts[:8], 2, 8)  # warm-up: allocator, kernels
        bounds = {}
        for ib, tb in zip(args.image_batches, args.text_batches):
            bounds[(ib, tb)] = encode_once(model, data.images, data.texts, ib, tb)
        best_image = min(bounds.items(), key=lambda kv: kv[1][0])
        best_text = min(bounds.items(), key=lambda kv: kv[1][1])
        bound = best_image[1][0] + best_text[1][1]
        print(f"bound: images {best_image[1][0]:.2f}s (batch {best_image[0][0]}) + texts "
              f"{best_text[1][1]:.2f}s (batch {best_text[0][1]}) = {bound:.2f}s")

        engine = Engine(model, EngineConfig(image_batch_size=best_image[0][0], text_batch_size=best_text[0][1],
                                            progress=False), cache_root=tmp_path / "cache")
        start = time.perf_counter()
        result = engine.image_to_text(data.items)
        engine_seconds = time.perf_counter() - start
        print(f"engine (cold cache): {engine_seconds:.2f}s")
        start = time.perf_counter()
        Engine(model, EngineConfig(progress=False), cache_root=tmp_path / "cache").image_to_text(data.items)
        print(f"engine (warm cache, new process state): {time.perf_counter() - start:.2f}s")

        start = time.perf_counter()
        reference = reference_loop(model, data.items)
        reference_seconds = time.perf_counter() - start
        print(f"reference (official per-example loop): {reference_seconds:.2f}s")

        ours = [int(o.correct) for o in result.outcomes]
        differing = [i for i, (a, b) in enumerate(zip(ours, reference)) if a != b]
        if differing:
            margins = [abs(result.outcomes[i].scores[0] - result.outcomes[i].scores[1]) for i in differing]
            print(f"decisions differ on {len(differing)} of {n} examples (largest |margin| {max(margins):.3g})")
        print(f"accuracy engine={np.mean(ours):.4f} reference={np.mean(reference):.4f} ties={result.ties}")
        identical = not differing and len(ours) == len(reference)
        print(f"speedup={reference_seconds / engine_seconds:.2f} bound_ratio={engine_seconds / bound:.2f} "
              f"identical={'true' if identical else 'false'}")
        return 0 if identical else 1


def register_cli(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser("bench", help="engine vs the official per-example loop (speedup, bound ratio)")
    p.add_argument("--arch", default="ViT-B-32", help="open_clip architecture (random weights)")
    p.add_argument("--images", type=int, default=100, help="synthetic COCO-sized images (x4.8 examples)")
    p.add_argument("--image-batches", type=int, nargs="+", default=[16, 32, 64])
    p.add_argument("--text-batches", type=int, nargs="+", default=[64, 128, 256])
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=run)
