"""Assemble the mini world's training set: rendered scenes with several true captions each; every set draws its
scenes from an independent random stream (``stream``; docs/mini-world.md, "Building sets").
"""
from __future__ import annotations

import argparse
import json
import random
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from common.files.io import output_group, write_json_atomic
from common.miniworld import VERSION
from common.miniworld.claims import sample_claim
from common.miniworld.render import NATURAL, render
from common.miniworld.scene import Scene, sample_scene
from common.pipeline.params import own_params


@dataclass(frozen=True)
class TrainSetConfig:
    n_images: int
    captions_per_image: int = 3
    image_size: int = 48
    seed: int = 0


def stream(seed: int, name: str) -> random.Random:
    """An independent random stream per purpose, so train and test never share scenes by accident."""
    return random.Random(f"{VERSION}:{seed}:{name}")


def scene_to_json(scene: Scene) -> dict:
    return asdict(scene)


def build_train_set(config: TrainSetConfig, out_dir: Path, progress: bool = True) -> dict:
    """Render ``n_images`` training scenes with several true captions each: ``images.npy`` (N, H, W, 3) uint8,
    ``captions.json`` (N lists of captions) and ``manifest.json``, one output group. Smaller training sets of the
    model family are prefixes of this one."""
    rng = stream(config.seed, "train")
    images = np.empty((config.n_images, config.image_size, config.image_size, 3), dtype=np.uint8)
    captions: list[list[str]] = []
    for i in tqdm(range(config.n_images), desc="render train", disable=not progress, mininterval=2):
        scene = sample_scene(rng, allow_heldout=False)
        images[i] = np.asarray(render(scene, config.image_size, NATURAL, seed=rng.randrange(2**31)))
        captions.append([sample_claim(rng, scene).text() for _ in range(config.captions_per_image)])
    manifest = {"world_version": VERSION, "kind": "train", "config": asdict(config),
                "n_images": config.n_images, "n_captions": sum(len(c) for c in captions)}
    out_dir = Path(out_dir)
    with output_group(out_dir.parent) as staging:
        staged = staging / out_dir.name
        staged.mkdir()
        with open(staged / "images.npy", "wb") as fh:
            np.save(fh, images)
        write_json_atomic(staged / "captions.json", captions, indent=None)
        write_json_atomic(staged / "manifest.json", manifest)
    return manifest


def _cmd_train_set(args) -> int:
    """``world train --out DIR``: the training set of the mini family (stage ``mini/world``)."""
    world = own_params(module=__spec__.name)["mini"]["world"]  # also run as `python -m common world train`
    manifest = build_train_set(TrainSetConfig(
        n_images=world["train_images"], captions_per_image=world["captions_per_image"],
        image_size=world["image_size"], seed=world["seed"]), Path(args.out))
    print(json.dumps(manifest, indent=2))
    return 0


def register_cli(world_sets) -> None:
    """Add ``train`` to ``python -m common world``."""
    p = world_sets.add_parser("train", help="the mini family's training set (params.yaml mini.world)")
    p.add_argument("--out", required=True)
    p.set_defaults(func=_cmd_train_set)


def main(argv=None) -> int:
    """``python -m common.miniworld.build train --out DIR``: the ``mini/world`` stage's command, the same as ``python -m
    common world train`` without importing every command of the workspace's CLI."""
    parser = argparse.ArgumentParser(prog="python -m common.miniworld.build")
    register_cli(parser.add_subparsers(dest="world_set", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
