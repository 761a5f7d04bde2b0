"""Tiny sets of hard positives' stages, built once per session and shared by the tests of the modules that read them:
the mini benchmark and fine-tuning set (``sets_mini``, ``finetune_sets_mini``) and a COCO 2017 layout with the full
fine-tuning set built from it (``finetune_sets_full``)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import numpy as np
import pytest
from PIL import Image

ARCH = "mini-vit-xs"
COCO_CAPTIONS = [
    "A woman standing behind a fence looking at an elephant.",
    "A red fire hydrant on a city sidewalk.",
    "A large brown dog and a small white cat on the green grass.",
    "A young boy riding a red bike down the street.",
    "A black cat sleeping on a wooden chair.",
    "An old man holding a blue umbrella in the rain.",
    "A lamp to the left of a table.",
    "A tall man and a little girl walking on the beach.",
    "A dog and a cat on a sofa.",
    "Two adult bears play fight in the water.",
    "A small bird sitting on a thin branch.",
    "A white plate and a silver fork on a wooden table.",
]
"""Image k (COCO id k + 1) has captions k and (k + 5) mod 12."""


@pytest.fixture(scope="session")
def tokenize():
    from common.zoo.trained import tokenizer_for

    return tokenizer_for(ARCH)


@pytest.fixture(scope="session")
def test_set(tmp_path_factory) -> Path:
    """The mini benchmark, 8 examples per group."""
    from papers.hard_positives.sets_mini import TestSetConfig, build_test_set

    out = tmp_path_factory.mktemp("hp_test")
    build_test_set(TestSetConfig(examples_per_group=8), out)
    return out


@pytest.fixture(scope="session")
def finetune_set(tmp_path_factory) -> Path:
    """The mini fine-tuning set: 16 images, 2 captions each."""
    from papers.hard_positives.finetune_sets_mini import FinetuneSetConfig, build_finetune_set

    out = tmp_path_factory.mktemp("hp_finetune")
    build_finetune_set(FinetuneSetConfig(train_images=16, captions_per_image=2), out)
    return out


def write_coco(root: Path, annotations: list[dict] | None = None, images: int = 12) -> tuple[Path, Path]:
    """A COCO captions file and its images (random pixels) under ``root``; returns (captions file, image folder)."""
    image_dir = root / "train2017"
    image_dir.mkdir(parents=True, exist_ok=True)
    records = [{"id": k + 1, "file_name": f"{k + 1:012d}.jpg"} for k in range(images)]
    for k, r in enumerate(records):
        pixels = np.random.default_rng(k).integers(0, 256, (40, 56, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(image_dir / r["file_name"], quality=95)
    if annotations is None:
        annotations = [{"id": 100 + 2 * k + j, "image_id": k + 1,
                        "caption": COCO_CAPTIONS[(k + 5 * j) % len(COCO_CAPTIONS)] + ("\n" if j else "")}
                       for k in range(images) for j in range(2)]
    path = root / "captions_train2017.json"
    path.write_text(json.dumps({"images": records, "annotations": annotations}), encoding="utf-8")
    return path, image_dir


@pytest.fixture(scope="session")
def make_coco() -> Callable[..., tuple[Path, Path]]:
    return write_coco


@pytest.fixture(scope="session")
def coco(tmp_path_factory) -> tuple[Path, Path]:
    return write_coco(tmp_path_factory.mktemp("coco"))


@pytest.fixture(scope="session")
def train_set(coco, tmp_path_factory) -> Path:
    """The full fine-tuning set of the tiny COCO layout (seed 0)."""
    from papers.hard_positives.finetune_sets_full import build_set

    out = tmp_path_factory.mktemp("set")
    build_set(*coco, out, seed=0)
    return out
