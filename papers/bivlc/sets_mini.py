"""BiVLC (Miranda et al.) in the mini profile: the bidirectional benchmark rendered from the world (stage
``mini-test-set``), and the instance drawing that the training set (``papers.bivlc.finetune_sets_mini``) shares.

BiVLC adds to each SugarCrepe example (image I0, caption C0, negative caption C1) a negative image I1 generated from
C1. Here I1 is C1's scene-graph edit rendered (``common.miniworld.edits``): true of C1 by construction, drawn in the
``negative_style`` (default "synthetic": flat colours, hard edges, no sensor noise), so the detectors of Table 5 have
a real cue, as SDXL's images give BiVLC's.

``set``: ``instances_per_category`` instances per SugarCrepe category (own random stream; held-out colour-shape pairs
may appear), ``images/pos_*.png`` (natural) and ``images/neg_*.png`` (the negative style), ``manifest.json``. BiVLC's
step 4 removes instances whose negative image also shows the original caption ("specially problematic for the Add
category, for which by definition, the generated image also follows the original caption"). In the world that is
every add_obj and add_att instance, by truth: they are kept, marked ``ambiguous``, scored apart (Table 4's Add column)
and left out of the main scores.
"""
from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

from common.errors import WorkspaceError
from common.files.io import atomic_path, output_group, write_json_atomic
from common.files.jsonl import read_json
from common.files.tasks import DatasetError, GroupItem
from common.miniworld import VERSION
from common.miniworld.build import stream
from common.miniworld.claims import Claim, sample_claim
from common.miniworld.edits import ADD_EDITS, negative_scene
from common.miniworld.negatives import EDIT_TYPES
from common.miniworld.render import NATURAL, STYLES, render
from common.miniworld.scene import Scene, contains_heldout, sample_scene
from common.paths import build_dir
from common.pipeline.cli import stage_parser
from common.pipeline.params import own_section

TEST_STREAM = "test-bivlc"
CATEGORIES: tuple[str, ...] = ("replace_obj", "replace_att", "replace_rel", "swap_obj", "swap_att", "add_obj",
                               "add_att")
"""SugarCrepe's seven categories (BiVLC's type and subtype), in the paper's column order."""
MAX_DRAWS = 200


class BivlcMiniError(WorkspaceError):
    """An input of the mini BiVLC runs that cannot be used as given (the message names the file)."""


@dataclass(frozen=True)
class Instance:
    """One BiVLC-style instance: the scene, its caption, the negative caption and the scene that shows it."""

    category: str
    scene: Scene
    claim: Claim
    negative_claim: Claim
    negative_scene: Scene

    @property
    def caption(self) -> str:
        return self.claim.text()

    @property
    def negative(self) -> str:
        return self.negative_claim.text()


def draw_instance(rng: random.Random, category: str, *, scene: Scene | None = None) -> Instance | None:
    """One instance of ``category`` (a new scene unless ``scene``), or None when this draw offers no such edit."""
    scene = scene or sample_scene(rng)
    claim = sample_claim(rng, scene)
    negative = EDIT_TYPES[category](scene, claim, rng)
    if negative is None:
        return None
    edited = negative_scene(scene, claim, negative, rng, allow_positive=category in ADD_EDITS)
    if edited is None:
        return None
    return Instance(category, scene, claim, negative, edited)


@dataclass(frozen=True)
class TestSetConfig:
    instances_per_category: int = 200
    image_size: int = 48
    negative_style: str = "synthetic"
    seed: int = 0

    def __post_init__(self):
        if self.negative_style not in STYLES:
            raise BivlcMiniError(f"negative_style {self.negative_style!r}: not one of {sorted(STYLES)}")


def build_test_set(config: TestSetConfig, out_dir: Path) -> dict:
    """``images/{pos,neg}_*.png`` and ``manifest.json`` (the instances, with counts), written as one output group."""
    rng = stream(config.seed, TEST_STREAM)
    style = STYLES[config.negative_style]
    records, failed = [], Counter()
    with output_group(Path(out_dir)) as staging:
        for round_ in range(config.instances_per_category):
            for category in CATEGORIES:
                for _ in range(MAX_DRAWS):
                    found = draw_instance(rng, category)
                    if found is not None:
                        break
                    failed[category] += 1
                else:  # pragma: no cover - the world always offers every edit within a few draws
                    raise BivlcMiniError(f"{category}: no instance in {MAX_DRAWS} draws")
                index = len(records)
                names = (f"pos_{index:06d}.png", f"neg_{index:06d}.png")
                for name, scene, how in zip(names, (found.scene, found.negative_scene), (NATURAL, style)):
                    with atomic_path(staging / "images" / name) as tmp:
                        render(scene, config.image_size, how, seed=index).save(tmp, format="PNG")
                records.append({"id": f"{category}/{round_}", "category": category, "type": category.split("_")[0],
                                "caption": found.caption, "negative_caption": found.negative,
                                "image": names[0], "negative_image": names[1],
                                "ambiguous": category in ADD_EDITS,
                                "heldout_combination": contains_heldout(found.scene)})
        manifest = {"kind": "bivlc-instances", "profile": "mini", "world_version": VERSION, "stream": TEST_STREAM,
                    "config": asdict(config),
                    "counts": dict(Counter(r["category"] for r in records)),
                    "ambiguous": sum(r["ambiguous"] for r in records),
                    "draws_without_instance": dict(sorted(failed.items())),
                    "ambiguous_rule": "add_obj / add_att: the negative scene also shows the caption (BiVLC's step 4 "
                                      "would remove them); scored apart",
                    "instances": records}
        write_json_atomic(staging / "manifest.json", manifest, indent=1)
    return {k: v for k, v in manifest.items() if k != "instances"}


TEST_FIELDS = ("id", "category", "caption", "negative_caption", "image", "negative_image")


def load_test_items(root: Path) -> tuple[list[GroupItem], list[GroupItem]]:
    """(main items, ambiguous items) as ``GroupItem``s grouped by category; a bad record is a ``DatasetError``
    naming the file and the record."""
    root = Path(root)
    path = root / "manifest.json"
    manifest = read_json(path, dict, remedy="run the mini-test-set stage (`python -m papers.bivlc.sets_mini set`)")
    records = manifest.get("instances")
    if not isinstance(records, list) or not records:
        raise DatasetError(f"{path}: no 'instances' list (rebuild the test set: the mini-test-set stage)")
    main, ambiguous, seen = [], [], set()
    for n, record in enumerate(records):
        where = f"{path}: record {n}"
        if not isinstance(record, dict) or any(not isinstance(record.get(f), str) or not record[f]
                                               for f in TEST_FIELDS):
            raise DatasetError(f"{where}: needs non-empty {list(TEST_FIELDS)}")
        if record["category"] not in CATEGORIES:
            raise DatasetError(f"{where}: category {record['category']!r} is not one of {list(CATEGORIES)}")
        if record["caption"] == record["negative_caption"] or record["image"] == record["negative_image"]:
            raise DatasetError(f"{where}: the negative caption or image repeats the positive")
        if record["id"] in seen:
            raise DatasetError(f"{where}: id {record['id']!r} repeats an earlier record")
        seen.add(record["id"])
        images = tuple(root / "images" / record[f] for f in ("image", "negative_image"))
        for image in images:
            if not image.is_file():
                raise DatasetError(f"{where}: image {image} is missing")
        item = GroupItem(record["id"], record["category"], images, (record["caption"], record["negative_caption"]),
                         where)
        (ambiguous if record.get("ambiguous") else main).append(item)
    return main, ambiguous


def main(argv: Sequence[str] | None = None) -> int:
    parser = stage_parser(__spec__.name, __doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("set", help="render the bidirectional benchmark (two images, two captions per instance)")
    p.add_argument("--out", default=None, help="default: build/mini/bivlc/test")
    args = parser.parse_args(argv)
    params, section = own_section("bivlc.mini")
    config = TestSetConfig(section["test_instances_per_category"], params["mini"]["world"]["image_size"],
                           section["negative_style"], section["seed"])
    print(json.dumps(build_test_set(config, Path(args.out or build_dir("mini", "bivlc") / "test")), indent=2))
    return 0


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
