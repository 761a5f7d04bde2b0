"""Kamath et al. (hard positives), the mini profile's benchmark: (image; c, c_p, c_n) rendered from the mini world.

Stage ``mini-test-set`` (the README's mini profile section): ``examples_per_group`` of replace-attributes,
replace-relations and swap (VG-Attribution: "A1 X and A2 Y", c_n "A2 X and A1 Y", c_p "A2 Y and A1 X"), held-out
colour-shape pairs allowed (unseen combinations), hard positives true by construction (``common.miniworld.positives``).
"""
from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

from common.files.io import atomic_path, output_group, sha256_file, write_json_atomic, write_text_atomic
from common.files.jsonl import read_json
from common.files.tasks import DatasetError, ImageToTextItem
from common.miniworld import VERSION
from common.miniworld.build import scene_to_json, stream
from common.miniworld.claims import Claim, sample_claim
from common.miniworld.negatives import replace_att, replace_rel, swap_att
from common.miniworld.positives import HardPositive, positive_for_negative, swap_positive
from common.miniworld.render import NATURAL, render
from common.miniworld.scene import Scene, contains_heldout, sample_scene
from common.paths import build_dir
from common.pipeline.cli import stage_parser
from common.pipeline.params import own_section
from papers.hard_positives import evaluation

TEST_STREAM = "test-hard-positives"
TEST_FIELDS = ("id", "group", "filename", "caption", "positive", "negative")


@dataclass(frozen=True)
class TestSetConfig:
    examples_per_group: int = 500
    image_size: int = 48
    seed: int = 0


@dataclass(frozen=True)
class TestExample:
    """One benchmark row before it has an image file: c, c_p, c_n and how c_p and c_n were made."""

    group: str
    claim: Claim
    positive: HardPositive
    negative: Claim
    negative_edit: str


def _scene_examples(scene: Scene, rng: random.Random) -> dict[str, TestExample]:
    """One candidate example per group for a scene (a group is missing when its edit does not apply). Every group is
    drawn for every scene, whatever is still needed, so a smaller set is a prefix of a larger one."""
    out: dict[str, TestExample] = {}
    for group, edit in (("replace-attributes", replace_att), ("replace-relations", replace_rel), ("swap", swap_att)):
        swap = group == "swap"
        if swap and len(scene.objects) < 2:  # VG-Attribution: "the A1 X and the A2 Y"
            continue
        claim = sample_claim(rng, scene, pattern="pair" if swap else None)
        negative = edit(scene, claim, rng)
        if negative is not None:
            positive = swap_positive(scene, claim, rng) if swap else positive_for_negative(scene, claim, negative, rng)
            if positive is not None:
                out[group] = TestExample(group, claim, positive, negative, edit.__name__)
    return out


def build_test_set(config: TestSetConfig, out_dir: Path) -> dict:
    """``images/*.png`` (an image serves one example per group), ``manifest.json`` and ``scenes.jsonl``."""
    out_dir = Path(out_dir)
    with output_group(out_dir.parent) as staging:
        target = staging / out_dir.name
        rng = stream(config.seed, TEST_STREAM)
        quota = config.examples_per_group
        counts = {g: 0 for g in evaluation.GROUPS}
        records: list[dict] = []
        scene_lines: list[str] = []
        images_dir = target / "images"
        images_dir.mkdir(parents=True, exist_ok=True)
        scenes_drawn = 0
        while min(counts.values()) < quota:
            index, scenes_drawn = scenes_drawn, scenes_drawn + 1
            scene = sample_scene(rng, allow_heldout=True)
            wanted = {g: e for g, e in _scene_examples(scene, rng).items() if counts[g] < quota}
            if not wanted:
                continue
            filename = f"hp_{index:06d}.png"
            with atomic_path(images_dir / filename) as tmp:
                render(scene, config.image_size, NATURAL, seed=index).save(tmp, format="PNG")
            heldout = contains_heldout(scene)
            for group, e in wanted.items():
                records.append({
                    "id": f"{group}/{counts[group]}", "group": group, "filename": filename, "caption": e.claim.text(),
                    "positive": e.positive.text, "negative": e.negative.text(), "negative_edit": e.negative_edit,
                    "positive_variant": e.positive.variant, "heldout_combination": heldout})
                counts[group] += 1
            scene_lines.append(json.dumps({
                "filename": filename, "scene": scene_to_json(scene),
                "examples": {g: {"claim": asdict(e.claim), "positive_claim": asdict(e.positive.claim),
                                 "negative_claim": asdict(e.negative)} for g, e in wanted.items()}}))
        scenes = write_text_atomic(target / "scenes.jsonl", "\n".join(scene_lines) + "\n")
        manifest = {
            "kind": "hard-positives-test", "profile": "mini", "world_version": VERSION, "stream": TEST_STREAM,
            "config": asdict(config), "counts": counts, "n_images": len(scene_lines), "scenes_drawn": scenes_drawn,
            "positive_variants": dict(sorted(Counter(r["positive_variant"] for r in records).items())),
            "heldout_examples": sum(r["heldout_combination"] for r in records),
            "scenes_sha256": sha256_file(scenes), "examples": records,
        }
        write_json_atomic(target / "manifest.json", manifest, indent=1)
    return {k: v for k, v in manifest.items() if k != "examples"}


def load_test_items(root: Path) -> list[ImageToTextItem]:
    """The benchmark as (c, c_p, c_n) items; a bad record is a ``DatasetError`` naming the file and the record."""
    root = Path(root)
    path = root / "manifest.json"
    manifest = read_json(path, dict, remedy="run the mini-test-set stage (python -m papers.hard_positives.sets_mini)")
    examples = manifest.get("examples")
    if not isinstance(examples, list) or not examples:
        raise DatasetError(f"{path}: no 'examples' list (rebuild the test set: the mini-test-set stage)")
    items, seen = [], set()
    for k, record in enumerate(examples):
        where = f"{path}: record {k}"
        if not isinstance(record, dict):
            raise DatasetError(f"{where}: not an object")
        for name in TEST_FIELDS:
            if not isinstance(record.get(name), str) or not record[name]:
                raise DatasetError(f"{where}: no {name!r}")
        if record["id"] in seen:
            raise DatasetError(f"{where}: id {record['id']!r} repeats an earlier record")
        seen.add(record["id"])
        image = root / "images" / record["filename"]
        if not image.is_file():
            raise DatasetError(f"{where}: image {image} is missing")
        items.append(evaluation.triple_item(record["id"], record["group"], image, record["caption"],
                                            record["positive"], record["negative"], origin=where))
    return items


def main(argv: Sequence[str] | None = None) -> int:
    parser = stage_parser(__spec__.name, "Render the hard-positive benchmark (replace-attributes, "
                                                  "replace-relations, swap) from the mini world")
    parser.add_argument("--out", type=Path, default=None, help="default: build/mini/hard_positives/test")
    args = parser.parse_args(argv)
    params, section = own_section("hard_positives.mini")
    config = TestSetConfig(examples_per_group=section["test_examples_per_group"],
                           image_size=params["mini"]["world"]["image_size"], seed=section["seed"])
    print(json.dumps(build_test_set(config, args.out or build_dir("mini", "hard_positives") / "test"), indent=2))
    return 0


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
