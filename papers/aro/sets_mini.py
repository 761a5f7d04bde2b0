"""The mini profile's ARO: the four benchmarks' analogs rendered from the mini world, in the upstream file formats.

* VG-Relation analog: "X is R Y" against the same sentence with the two noun phrases swapped, which the scene makes
  false; balanced over the world's four relations, named by their canonical surface ("to the left of").
* VG-Attribution analog: "a A1 X and a A2 Y" against "a A2 X and a A1 Y": 28 colour pairs, balanced, each well over
  the 25 cases ARO's filter needs.
* COCO Karpathy test analog (retrieval and Order), in BLIP's JSON; zero-shot classification: ``shapes`` (7 classes:
  the CIFAR-10 analog) and ``colored-shapes`` (56: the CIFAR-100 analog).

Each part draws from its own stream, independent of the training scenes and of SugarCrepe's test set.
"""
from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Sequence

from common.files.io import output_group, write_json_atomic, write_text_atomic
from common.miniworld import VERSION, lexicon
from common.miniworld.build import stream
from common.miniworld.claims import claim_from_objects, sample_claim, satisfies
from common.miniworld.classification import ClassificationSetConfig, PngSceneWriter, build_classification
from common.miniworld.scene import sample_scene
from common.pipeline.cli import stage_parser
from common.pipeline.params import own_params
from papers.aro.data import MANIFEST_NAME, AroSet

RELATION_TEMPLATE = 1
"""``PATTERNS["relation"].templates[1]`` is ``"{n0} is {r0} {n1}"``: ARO's "the horse is eating the grass"."""
CLASSIFICATION_STREAM = "test-aro-classification"
"""ARO's own stream for the shared builder (``common.miniworld.classification``): its files stay as they were."""
MAX_CAPTION_TRIES = 20
"""Draws per image to find ``captions_per_image`` distinct captions before a repeat is accepted."""


@dataclass(frozen=True)
class MiniAroConfig:
    vg_relation_cases: int = 1200
    vg_attribution_cases: int = 1200
    test_images: int = 1000
    captions_per_image: int = 5
    classification_images: int = 700
    image_size: int = 48
    seed: int = 0


def build_vg(config: MiniAroConfig, writer: PngSceneWriter, kind: str) -> list[dict]:
    """VG-Relation's cases (``kind`` "relation": quotas over the world's relations) or VG-Attribution's
    ("attribution": over the colour pairs), each kind from its own stream."""
    relation = kind == "relation"
    rng = stream(config.seed, f"test-aro-vg-{kind}")
    colors = sorted(lexicon.COLORS)
    n_cases = config.vg_relation_cases if relation else config.vg_attribution_cases
    groups = lexicon.RELATIONS if relation else [f"{a}_{b}" for a in colors for b in colors if a < b]
    base, extra = divmod(n_cases, len(groups))
    left = {g: base + (i < extra) for i, g in enumerate(groups)}  # even quotas, the first groups get the remainder
    records: list[dict] = []
    while len(records) < n_cases:
        scene = sample_scene(rng, n_objects=rng.choice((2, 2, 3)))
        objects = scene.objects

        def key(i: int, j: int) -> str:
            return scene.relation(i, j) if relation else f"{objects[i].color}_{objects[j].color}"

        pairs = [(i, j) for i in range(len(objects)) for j in range(len(objects))
                 if (i != j if relation
                     else objects[i].color < objects[j].color and objects[i].shape != objects[j].shape)
                 and left[key(i, j)] > 0]
        rng.shuffle(pairs)
        for i, j in pairs:
            if relation:
                true = claim_from_objects(scene, [i, j], "relation", RELATION_TEMPLATE, rng.randrange(2**31),
                                          ("color",))
                # the two noun phrases exchanged, every word kept (the same lexical seed): ARO's relation swap
                false = replace(true, phrases=(true.phrases[1], true.phrases[0]))
            else:
                true = claim_from_objects(scene, [i, j], "pair", 0, rng.randrange(2**31), ("color",))
                a, b = true.phrases  # the colours exchanged: VG-Attribution's "A2 X and A1 Y"
                false = replace(true, phrases=(replace(a, color=b.color), replace(b, color=a.color)))
            if satisfies(scene, false):  # another object makes the swap true: not a valid case
                continue
            group = true.relations[0].predicate if relation else key(i, j)
            left[group] -= 1
            image = writer.add(f"{'rel' if relation else 'attr'}_{len(records):06d}", scene, rng.randrange(2**31),
                               set=f"vg_{kind}", true=asdict(true), false=asdict(false))
            records.append({"image_path": image.split("/", 1)[1], "bbox_x": 0, "bbox_y": 0,
                            "bbox_w": config.image_size, "bbox_h": config.image_size,
                            # a relation by its canonical surface ("left_of" -> "to the left of"), as ARO names it
                            **({"relation_name": lexicon.SURFACE[group][0]} if relation
                               else {"attributes": [objects[i].color, objects[j].color]}),
                            "true_caption": true.text(), "false_caption": false.text()})
            break
    return records


def build_karpathy(config: MiniAroConfig, writer: PngSceneWriter) -> list[dict]:
    rng = stream(config.seed, "test-aro-karpathy")
    records = []
    for index in range(config.test_images):
        scene = sample_scene(rng, allow_heldout=True)
        captions: list[str] = []  # distinct unless MAX_CAPTION_TRIES draws per caption find none new
        tries = 0
        while len(captions) < config.captions_per_image:
            text = sample_claim(rng, scene).text()
            tries += 1
            if text not in captions or tries > MAX_CAPTION_TRIES * config.captions_per_image:
                captions.append(text)
        image = writer.add(f"test_{index:06d}", scene, rng.randrange(2**31), set="coco", captions=captions)
        records.append({"image": image, "caption": captions})
    return records


def build_mini_set(config: MiniAroConfig, out_dir: Path) -> dict:
    """Write every analog and ``manifest.json`` under ``out_dir`` (replaced as a group: a failure keeps the old)."""
    started = time.perf_counter()
    out_dir = Path(out_dir)
    with output_group(out_dir) as staging:
        vg_writer = PngSceneWriter(staging / "vg", "images", config.image_size)
        vg = {kind: build_vg(config, vg_writer, kind) for kind in ("relation", "attribution")}
        coco_writer = PngSceneWriter(staging / "coco", "images", config.image_size)
        karpathy = build_karpathy(config, coco_writer)
        cls_writer = PngSceneWriter(staging / "classification", "images", config.image_size)
        cls_config = ClassificationSetConfig(config.classification_images, config.image_size, config.seed,
                                             CLASSIFICATION_STREAM)
        classification = build_classification(cls_config, cls_writer)

        for kind, records in vg.items():
            write_json_atomic(staging / "vg" / f"visual_genome_{kind}.json", records, indent=1)
        write_json_atomic(staging / "coco" / "coco_karpathy_test.json", karpathy, indent=1)
        for name, data in classification.items():
            write_json_atomic(staging / "classification" / f"{name}.json", data, indent=1)
        write_text_atomic(staging / "scenes.jsonl",
                          "\n".join(vg_writer.scenes + coco_writer.scenes + cls_writer.scenes) + "\n")
        manifest = {
            "kind": "aro", "profile": "mini", "world_version": VERSION, "config": asdict(config),
            **{f"vg_{kind}": {"annotations": f"vg/visual_genome_{kind}.json", "image_root": "vg/images",
                              "crop_root": None} for kind in vg},
            "retrieval": {"coco": {"annotations": "coco/coco_karpathy_test.json", "image_root": "coco"}},
            "classification": {name: {"file": f"classification/{name}.json", "image_root": "classification"}
                               for name in classification},
            "scenes": "scenes.jsonl",
            "counts": {
                "vg_relation": dict(sorted(Counter(r["relation_name"] for r in vg["relation"]).items())),
                "vg_attribution": dict(sorted(Counter("_".join(r["attributes"])
                                                      for r in vg["attribution"]).items())),
                "coco_images": len(karpathy), "coco_captions": sum(len(r["caption"]) for r in karpathy),
                "coco_distinct_captions_per_image": round(
                    sum(len(set(r["caption"])) == len(r["caption"]) for r in karpathy) / len(karpathy), 4),
                "classification": {name: {"images": len(d["images"]), "classes": len(d["classes"])}
                                   for name, d in classification.items()},
            },
        }  # no wall time in it: the manifest is a DVC output, hashed, and must be the same bytes on every run
        write_json_atomic(staging / MANIFEST_NAME, manifest)
    return {**AroSet.load(out_dir / MANIFEST_NAME).describe(), "seconds": round(time.perf_counter() - started, 2)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = stage_parser(__spec__.name, __doc__)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    params = own_params()
    mini, world = params["aro"]["mini"], params["mini"]["world"]
    sizes = ("vg_relation_cases", "vg_attribution_cases", "test_images", "captions_per_image", "classification_images")
    described = build_mini_set(MiniAroConfig(**{k: mini[k] for k in sizes}, image_size=world["image_size"],
                                             seed=world["seed"]), args.out)
    print(json.dumps({k: described[k] for k in ("manifest", "counts", "seconds")}, indent=2))
    return 0


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
