"""Assemble the mini world's data sets: training pairs and a SugarCrepe-format test set.

Train and test scenes come from independent random streams derived from one seed; training scenes
never contain the held-out (colour, shape) pairs. The test set is written in SugarCrepe's released
format (``<category>.json`` with filename/caption/negative_caption, plus an image folder), so the
same loader and engine evaluate the mini world and the real benchmark.
"""
from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator

import numpy as np
from tqdm import tqdm

from common.io import atomic_path, write_json_atomic, write_text_atomic
from common.miniworld import VERSION
from common.miniworld.claims import Claim, sample_claim
from common.miniworld.negatives import SUGARCREPE_TYPES
from common.miniworld.render import NATURAL, render
from common.miniworld.scene import Scene, contains_heldout, sample_scene


@dataclass(frozen=True)
class TrainSetConfig:
    n_images: int
    captions_per_image: int = 3
    image_size: int = 48
    seed: int = 0


@dataclass(frozen=True)
class SugarCrepeSetConfig:
    examples_per_category: int = 500
    image_size: int = 48
    seed: int = 0


def _stream(seed: int, name: str) -> random.Random:
    """An independent random stream per purpose, so train and test never share scenes by accident."""
    return random.Random(f"{VERSION}:{seed}:{name}")


def scene_to_json(scene: Scene) -> dict:
    return asdict(scene)


def build_train_set(config: TrainSetConfig, out_dir: Path, progress: bool = True) -> dict:
    """Render ``n_images`` training scenes with several true captions each.

    Writes ``images.npy`` (N, H, W, 3) uint8, ``captions.json`` (N lists of captions) and
    ``manifest.json``. Smaller training sets of the model family are prefixes of this one.
    """
    rng = _stream(config.seed, "train")
    images = np.empty((config.n_images, config.image_size, config.image_size, 3), dtype=np.uint8)
    captions: list[list[str]] = []
    for i in tqdm(range(config.n_images), desc="render train", disable=not progress, mininterval=2):
        scene = sample_scene(rng, allow_heldout=False)
        images[i] = np.asarray(render(scene, config.image_size, NATURAL, seed=rng.randrange(2**31)))
        captions.append([sample_claim(rng, scene).text() for _ in range(config.captions_per_image)])
    out_dir.mkdir(parents=True, exist_ok=True)
    with atomic_path(out_dir / "images.npy") as tmp:
        with open(tmp, "wb") as fh:
            np.save(fh, images)
    write_json_atomic(out_dir / "captions.json", captions, indent=None)
    manifest = {"world_version": VERSION, "kind": "train", "config": asdict(config),
                "n_images": config.n_images, "n_captions": sum(len(c) for c in captions)}
    write_json_atomic(out_dir / "manifest.json", manifest)
    return manifest


def _test_examples(config: SugarCrepeSetConfig) -> Iterator[tuple[int, Scene, Claim, dict[str, Claim]]]:
    rng = _stream(config.seed, "test-sugarcrepe")
    index = 0
    while True:
        scene = sample_scene(rng, allow_heldout=True)
        positive = sample_claim(rng, scene)
        negatives = {}
        for category, generator in SUGARCREPE_TYPES.items():
            negative = generator(scene, positive, rng)
            if negative is not None:
                negatives[category] = negative
        yield index, scene, positive, negatives
        index += 1


def build_sugarcrepe_set(config: SugarCrepeSetConfig, out_dir: Path, progress: bool = True) -> dict:
    """A SugarCrepe-format test set: ``examples_per_category`` examples of each of the 7 types.

    Images are shared across categories as in SugarCrepe (one positive caption per image, one hard
    negative per applicable type until each category's quota is filled).
    """
    quota = config.examples_per_category
    data: dict[str, dict[str, dict]] = {c: {} for c in SUGARCREPE_TYPES}
    images_dir = out_dir / "images"
    images_dir.mkdir(parents=True, exist_ok=True)
    scenes_lines = []
    bar = tqdm(total=quota * len(data), desc="build mini SugarCrepe", disable=not progress, mininterval=2)
    for index, scene, positive, negatives in _test_examples(config):
        wanted = {c: n for c, n in negatives.items() if len(data[c]) < quota}
        if not wanted:
            if all(len(v) >= quota for v in data.values()):
                break
            continue
        filename = f"mini_{index:06d}.png"
        with atomic_path(images_dir / filename) as tmp:
            render(scene, config.image_size, NATURAL, seed=index).save(tmp, format="PNG")
        for category, negative in wanted.items():
            data[category][str(len(data[category]))] = {
                "filename": filename, "caption": positive.text(), "negative_caption": negative.text(),
            }
            bar.update(1)
        scenes_lines.append(json.dumps({
            "filename": filename, "heldout_combination": contains_heldout(scene),
            "scene": scene_to_json(scene), "positive": asdict(positive),
            "negatives": {c: asdict(n) for c, n in wanted.items()},
        }))
    bar.close()
    data_dir = out_dir / "data"
    for category, examples in data.items():
        write_json_atomic(data_dir / f"{category}.json", examples, indent=1)
    write_text_atomic(out_dir / "scenes.jsonl", "\n".join(scenes_lines) + "\n")
    from common.datasets.sugarcrepe import write_manifest

    info = {
        "kind": "sugarcrepe", "profile": "mini", "world_version": VERSION, "config": asdict(config),
        "counts": {c: len(v) for c, v in data.items()}, "n_images": len(scenes_lines),
    }
    return write_manifest(out_dir, "data", "images", info).describe()
