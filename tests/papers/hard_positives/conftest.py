"""Tiny sets of hard positives' stages, built once per session and shared by the tests of the modules that read them:
the mini benchmark and fine-tuning set (``sets_mini``, ``finetune_sets_mini``) and a COCO 2017 layout with the full
fine-tuning set built from it (``finetune_sets_full``)."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from tests.rehearsal.standins import COCO_LIKE_CAPTIONS, coco_captions, coco_images, write_coco_folder

ARCH = "mini-vit-xs"
COCO_CAPTIONS = list(COCO_LIKE_CAPTIONS)
"""Image k (COCO id k + 1) has captions k and (k + 5) mod 12 (``tests.rehearsal.standins.coco_captions``)."""


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
    """A COCO captions file and its images (random pixels) under ``root``; returns (captions file, image folder)
    (the rehearsal's COCO stand-in, as extracted folders)."""
    record = coco_captions(images) if annotations is None else {"images": coco_images(images),
                                                                "annotations": annotations}
    return write_coco_folder(root, record)


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
