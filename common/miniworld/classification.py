"""The mini world's zero-shot classification set: its "ImageNet analog" (docs/mini-world.md, "Classification")."""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

from common.files.io import atomic_path, output_group, write_json_atomic, write_text_atomic
from common.files.jsonl import read_json
from common.files.tasks import ClassificationSet, DatasetError, resolve_under
from common.miniworld import VERSION, lexicon
from common.miniworld.build import scene_to_json, stream
from common.miniworld.render import NATURAL, render
from common.miniworld.scene import Scene, place_objects, sample_background, weighted_choice

CLASS_TEMPLATES: tuple[str, ...] = ("{a} {}.", "there is {a} {}.", "a photo of {a} {}.", "a drawing of {a} {}.")
"""Prompt templates; ``{a}`` is the class name's indefinite article ("an orange star")."""
SHAPES = "shapes"
COLORED_SHAPES = "colored-shapes"
IMAGENET_ANALOG = COLORED_SHAPES
"""Many fine-grained classes (56, chance 1.8%), as ImageNet has; what a class is takes two concepts at once."""
DEFAULT_STREAM = "test-classification"
MANIFEST_NAME = "manifest.json"
KIND = "classification"


class SceneWriter(Protocol):
    """Where a builder's scenes go: ``add`` renders one and returns the image's path relative to the set's root."""

    size: int

    def add(self, name: str, scene: Scene, seed: int, **extra: object) -> str: ...


class PngSceneWriter:
    """Renders each scene to ``<root>/<folder>/<name>.png`` and remembers it (the lines of ``scenes.jsonl``)."""

    def __init__(self, root: Path, folder: str, size: int) -> None:
        self.root, self.folder, self.size = Path(root), folder, size
        self.scenes: list[str] = []

    def add(self, name: str, scene: Scene, seed: int, **extra: object) -> str:
        relpath = f"{self.folder}/{name}.png"
        with atomic_path(self.root / relpath) as tmp:
            render(scene, self.size, NATURAL, seed=seed).save(tmp, format="PNG")
        self.scenes.append(json.dumps({"image": relpath, "scene": scene_to_json(scene), **extra}))
        return relpath


@dataclass(frozen=True)
class ClassificationSetConfig:
    n_images: int
    image_size: int = 48
    seed: int = 0
    stream_name: str = DEFAULT_STREAM


def class_prompts(name: str, templates: tuple[str, ...] = CLASS_TEMPLATES) -> list[str]:
    article = lexicon.indefinite_article(name)
    return [t.replace("{a}", article).format(name) for t in templates]


def build_classification(config: ClassificationSetConfig, writer: SceneWriter) -> dict[str, dict]:
    """Render ``config.n_images`` one-object scenes through ``writer``; return both label sets over them.

    Image ``i`` shows pair ``i mod 56`` (shapes outer, colours inner), so classes are balanced by construction;
    size, position, background and render noise come from the stream, in this order (ARO's files depend on it).
    """
    if writer.size != config.image_size:
        raise ValueError(f"writer renders {writer.size} px images but the config asks for {config.image_size}")
    rng = stream(config.seed, config.stream_name)
    combos = [(c, s) for s in lexicon.SHAPES for c in lexicon.COLORS]
    color_shapes = [f"{c} {s}" for c, s in combos]
    images: list[tuple[str, str, str]] = []
    for index in range(config.n_images):
        color, shape = combos[index % len(combos)]
        size = weighted_choice(rng, lexicon.size_prior(shape))
        objects = place_objects(rng, [(shape, color, size)])
        assert objects is not None  # one object always fits
        scene = Scene(objects=objects, background=sample_background(rng))
        image = writer.add(f"cls_{index:06d}", scene, rng.randrange(2**31), set="classification")
        images.append((image, color, shape))

    sets = {}
    for set_name, classes, label_of in (
        (SHAPES, list(lexicon.SHAPES), lambda c, s: lexicon.SHAPES.index(s)),
        (COLORED_SHAPES, color_shapes, lambda c, s: color_shapes.index(f"{c} {s}")),
    ):
        sets[set_name] = {"classes": classes, "templates": list(CLASS_TEMPLATES),
                          "prompts": [class_prompts(c) for c in classes],
                          "images": [{"image": p, "label": label_of(c, s)} for p, c, s in images]}
    return sets


def write_classification_set(config: ClassificationSetConfig, out_dir: Path) -> dict:
    """Images, one JSON per label set, ``scenes.jsonl`` and ``manifest.json`` under ``out_dir``, replaced as a group
    (the manifest holds no time or path: the same bytes on every run)."""
    out_dir = Path(out_dir)
    with output_group(out_dir) as staging:
        writer = PngSceneWriter(staging, "images", config.image_size)
        sets = build_classification(config, writer)
        for name, data in sets.items():
            write_json_atomic(staging / f"{name}.json", data, indent=1)
        write_text_atomic(staging / "scenes.jsonl", "\n".join(writer.scenes) + "\n")
        manifest = {
            "kind": KIND, "world_version": VERSION, "config": asdict(config),
            "sets": {name: f"{name}.json" for name in sets},
            "counts": {name: {"images": len(d["images"]), "classes": len(d["classes"]),
                              "min_images_per_class": min(Counter(r["label"] for r in d["images"]).values())}
                       for name, d in sets.items()},
        }
        write_json_atomic(staging / MANIFEST_NAME, manifest)
    return manifest


def read_manifest(set_dir: Path) -> dict:
    path = Path(set_dir) / MANIFEST_NAME
    manifest = read_json(path, dict, "rerun the stage that writes the classification sets")
    if manifest.get("kind") != KIND or not isinstance(manifest.get("sets"), dict):
        raise DatasetError(f"{path}: not a classification set manifest (needs kind={KIND!r} and 'sets')")
    return manifest


def _read_set(name: str, path: Path, root: Path) -> ClassificationSet:
    data = read_json(path, dict, "rerun the stage that writes the classification sets")
    try:
        classes, prompts, records = data["classes"], data["prompts"], data["images"]
        images = [resolve_under(root, r["image"], f"{path}:images[{i}]") for i, r in enumerate(records)]
        labels = [r["label"] for r in records]
    except (KeyError, TypeError) as exc:
        raise DatasetError(f"{path}: needs 'classes', 'prompts' and 'images' of {{'image', 'label'}} ({exc!r})") \
            from exc
    missing = [str(p.relative_to(root)) for p in images if not p.is_file()]
    if missing:
        raise DatasetError(f"{path}: {len(missing)} image(s) not found under {root}, e.g. {missing[0]!r}")
    return ClassificationSet(name, tuple(images), tuple(labels), tuple(classes), tuple(map(tuple, prompts)))


def load_classification_sets(set_dir: Path) -> dict[str, ClassificationSet]:
    """The label sets of a folder written by ``write_classification_set``, images checked to exist."""
    set_dir = Path(set_dir)
    manifest = read_manifest(set_dir)
    return {name: _read_set(name, set_dir / file, set_dir) for name, file in manifest["sets"].items()}


def ensure_classification_set(
    config: ClassificationSetConfig, set_dir: Path
) -> tuple[dict[str, ClassificationSet], bool]:
    """The sets in ``set_dir`` when its manifest records this very config and world version, else built there; and
    whether they were reused."""
    set_dir = Path(set_dir)
    if (set_dir / MANIFEST_NAME).is_file():
        manifest = read_manifest(set_dir)
        if manifest.get("config") == asdict(config) and manifest.get("world_version") == VERSION:
            return load_classification_sets(set_dir), True
    write_classification_set(config, set_dir)
    return load_classification_sets(set_dir), False
