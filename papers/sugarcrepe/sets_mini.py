"""The mini profile's SugarCrepe: a test set rendered from the mini world, in the released format.

``<category>.json`` files and an image folder, so the loader and engine that score the real benchmark score this
one, plus ``scenes.jsonl`` (each image's scene graph, positive claim and negatives). Scenes come from the world's own
random stream for this set, independent of the training scenes; held-out (colour, shape) pairs may appear.
"""
from __future__ import annotations

import itertools
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator, Sequence

from tqdm import tqdm

from common.benchmarks.caption_negatives import PreparedSet, write_manifest
from common.files.io import atomic_path, output_group, write_json_atomic, write_text_atomic
from common.miniworld import VERSION
from common.miniworld.build import scene_to_json, stream
from common.miniworld.claims import Claim, sample_claim
from common.miniworld.negatives import EDIT_TYPES
from common.miniworld.render import NATURAL, render
from common.miniworld.scene import Scene, contains_heldout, sample_scene
from common.pipeline.cli import stage_parser
from common.pipeline.params import own_params


@dataclass(frozen=True)
class MiniSetConfig:
    examples_per_category: int = 500
    image_size: int = 48
    seed: int = 0


def iter_examples(config: MiniSetConfig) -> Iterator[tuple[int, Scene, Claim, dict[str, Claim]]]:
    rng = stream(config.seed, "test-sugarcrepe")
    for index in itertools.count():
        scene = sample_scene(rng, allow_heldout=True)
        positive = sample_claim(rng, scene)
        negatives = {c: n for c, generate in EDIT_TYPES.items() if (n := generate(scene, positive, rng)) is not None}
        yield index, scene, positive, negatives


def build_mini_set(config: MiniSetConfig, out_dir: Path, progress: bool = True) -> dict:
    """``examples_per_category`` examples of each of the 7 types, images shared across categories as in SugarCrepe
    (one positive caption per image, one hard negative per applicable type until each quota is filled)."""
    quota = config.examples_per_category
    data: dict[str, dict[str, dict]] = {c: {} for c in EDIT_TYPES}
    images_dir = out_dir / "images"
    images_dir.mkdir(parents=True, exist_ok=True)
    scenes_lines = []
    bar = tqdm(total=quota * len(data), desc="build mini SugarCrepe", disable=not progress, mininterval=2)
    for index, scene, positive, negatives in iter_examples(config):
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
    info = {
        "kind": "sugarcrepe", "profile": "mini", "world_version": VERSION,
        "config": asdict(config),
        "counts": {c: len(v) for c, v in data.items()}, "n_images": len(scenes_lines),
    }
    return write_manifest(out_dir, "data", "images", info).describe()


def config_from_params(params: dict) -> MiniSetConfig:
    world = params["mini"]["world"]
    return MiniSetConfig(examples_per_category=params["sugarcrepe"]["mini_examples_per_category"],
                         image_size=world["image_size"], seed=world["seed"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = stage_parser(__spec__.name, __doc__)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    config = config_from_params(own_params())
    # every file into a staging folder first, then all of them into --out at once: an interrupted run (SIGTERM
    # included) leaves the previous set or none, never images of two sets under one manifest
    with output_group(args.out) as staging:
        build_mini_set(config, staging, progress=True)
    print(json.dumps(PreparedSet.load(Path(args.out) / "manifest.json").describe(), indent=2))
    return 0


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
