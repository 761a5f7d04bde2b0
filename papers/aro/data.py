"""ARO's benchmarks (Yuksekgonul et al., ICLR 2023) read from the upstream file formats, as ``common.files.tasks``
records; the mini world writes the same files (``papers.aro.sets_mini``), so one loader reads both profiles
(``AroSet``).

* VG-Relation / VG-Attribution (``common.files.visual_genome.read_vg``): the upstream crops each image to its box
  before preprocessing (``mertyg/vision-language-models-are-bows@81fdd20d dataset_zoo/aro_datasets.py:57-60``
  "image = image.crop((test_case["); the engine only transforms the preprocessed tensor, so the full profile
  materialises each crop once as a PNG (``crop_relpath``). The candidates are ``(false, true)`` as upstream
  (``mertyg/vision-language-models-are-bows@81fdd20d dataset_zoo/aro_datasets.py:65`` "[false_caption, true_caption]"),
  scored by ``ARO_VG_RULE``.
* Karpathy test splits in BLIP's JSON (``[{"image", "caption": [captions]}]``): ``KarpathySet``.
* Zero-shot classification: a small JSON (``read_classification``); no upstream format exists for these.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from common.evaluation.scoring.selection import DecisionRule
from common.files.jsonl import read_json
from common.files.tasks import (
    ClassificationSet, DatasetError, ImageToTextItem, RetrievalSet, raise_problems, resolve_under)
from common.files.visual_genome import (
    VG_ATTRIBUTION, VG_KINDS, VG_RELATION, check_vg_image, crop_relpath, is_text, read_vg)

ARO_VG_RULE = DecisionRule("aro-vg", positives=(1,), negatives=(0,))
"""VG-Relation / VG-Attribution as the authors' code scores them: ``argmax([false, true]) == 1``
(``mertyg/vision-language-models-are-bows@81fdd20d dataset_zoo/aro_datasets.py:87-88``
"preds = np.argmax(np.squeeze(scores_i2t, axis=1), axis=-1) correct_mask = (preds == 1)"), so a tie (argmax returns
the first maximal index, the false caption) is wrong."""

MANIFEST_NAME = "manifest.json"
REMEDY = "run the stage that prepares the set (`dvc repro papers/aro`, stage mini-set or full-set)"


def _image_or_problem(image_root: Path, relative: str, origin: str, problems: list[str]) -> Path | None:
    """The image a record names, or None with the reason added to ``problems`` (so every bad record is reported)."""
    try:
        path = resolve_under(image_root, relative, origin)
    except DatasetError as exc:
        problems.append(str(exc))
        return None
    if not path.is_file():
        problems.append(f"{origin}: image {relative!r} not found under {image_root}")
        return None
    return path


def vg_items(path: Path, kind: str, image_root: Path, crop_root: Path | None = None) -> list[ImageToTextItem]:
    """A VG file's cases, captions ``(false, true)``, on the prepared crops (``crop_root``) or on whole images (right
    only when the box covers the image: checked)."""
    items: list[ImageToTextItem] = []
    problems: list[str] = []
    for r in read_vg(path, kind):
        try:
            source = resolve_under(image_root, r.image_path, r.origin)
            image = resolve_under(crop_root, crop_relpath(r), r.origin) if crop_root is not None else source
        except DatasetError as exc:
            problems.append(str(exc))
            continue
        problem = check_vg_image(r, image, crop_root is not None)
        if problem:
            problems.append(problem)
            continue
        items.append(ImageToTextItem(item_id=f"{kind}/{r.index}", group=r.group, image=image,
                                     captions=(r.false_caption, r.true_caption), origin=r.origin))
    raise_problems(problems, f"{kind} record(s)")
    return items


@dataclass(frozen=True)
class KarpathySet:
    """A Karpathy test split: image files and, per image, its captions in file order."""

    name: str
    images: tuple[Path, ...]
    captions: tuple[tuple[str, ...], ...]
    origin: str = ""

    @classmethod
    def load(cls, name: str, annotations: Path, image_root: Path) -> "KarpathySet":
        data = read_json(annotations, expect=list, remedy=REMEDY)
        if not data:
            raise DatasetError(f"{annotations}: expected a non-empty JSON list of {{'image', 'caption'}} records")
        images: list[Path] = []
        captions: list[tuple[str, ...]] = []
        problems: list[str] = []
        for index, record in enumerate(data):
            origin = f"{annotations}:{index}"
            if not isinstance(record, dict):
                problems.append(f"{origin}: expected an object, got {type(record).__name__}")
                continue
            caps = record.get("caption")
            if isinstance(caps, str):  # BLIP's train files hold one caption per record; test files a list
                caps = [caps]
            if not is_text(record.get("image")) or not (isinstance(caps, list) and caps and all(map(is_text, caps))):
                problems.append(f"{origin}: 'image' must be a non-empty string and 'caption' a non-empty list of "
                                "non-empty strings")
                continue
            path = _image_or_problem(image_root, record["image"], origin, problems)
            if path is not None:
                images.append(path)
                captions.append(tuple(caps))
        raise_problems(problems, f"{name} Karpathy record(s)")
        return cls(name, tuple(images), tuple(captions), str(annotations))

    def flat_captions(self) -> list[str]:
        """Every caption, image-major: the order of upstream's Order cases."""
        return [c for caps in self.captions for c in caps]

    def caption_image(self) -> tuple[int, ...]:
        """For each flat caption, the index of its image."""
        return tuple(i for i, caps in enumerate(self.captions) for _ in caps)

    def retrieval_set(self, name: str | None = None, captions: Sequence[str] | None = None) -> RetrievalSet:
        """The retrieval gallery; ``captions`` (image-major) replaces the texts, e.g. with shuffled ones."""
        flat = self.flat_captions()
        if captions is not None and len(captions) != len(flat):
            raise DatasetError(f"{self.origin or self.name}: {len(captions)} replacement captions for {len(flat)}")
        return RetrievalSet(name or self.name, self.images, tuple(flat if captions is None else captions),
                            self.caption_image())

    @property
    def n_captions(self) -> int:
        return sum(len(c) for c in self.captions)


def read_classification(name: str, path: Path, image_root: Path) -> ClassificationSet:
    """``{"classes", "templates", "images": [{"image", "label"}]}``; an optional ``"prompts"`` (per class) overrides
    the templates where a plain ``format`` cannot write them (the article of "an orange star")."""
    data = read_json(path, expect=dict, remedy=REMEDY)
    classes, templates, records = data.get("classes"), data.get("templates"), data.get("images")
    if not (isinstance(classes, list) and classes and all(map(is_text, classes))):
        raise DatasetError(f"{path}: 'classes' must be a non-empty list of class names")
    if not (isinstance(templates, list) and templates and all(is_text(t) and "{}" in t for t in templates)):
        raise DatasetError(f"{path}: 'templates' must be a non-empty list of strings with a '{{}}' slot")
    if not (isinstance(records, list) and records):
        raise DatasetError(f"{path}: 'images' must be a non-empty list of {{'image', 'label'}} records")
    images: list[Path] = []
    labels: list[int] = []
    problems: list[str] = []
    for index, record in enumerate(records):
        origin = f"{path}:images[{index}]"
        label = record.get("label") if isinstance(record, dict) else None
        if not (isinstance(record, dict) and is_text(record.get("image")) and isinstance(label, int)
                and not isinstance(label, bool) and 0 <= label < len(classes)):
            problems.append(f"{origin}: needs 'image' (a string) and 'label' (an int in 0..{len(classes) - 1})")
            continue
        image = _image_or_problem(image_root, record["image"], origin, problems)
        if image is not None:
            images.append(image)
            labels.append(label)
    raise_problems(problems, f"{name} classification record(s)")
    prompts = data.get("prompts")
    if prompts is None:
        return ClassificationSet.from_templates(name, images, labels, classes, templates)
    if not (isinstance(prompts, list) and len(prompts) == len(classes)
            and all(isinstance(p, list) and p and all(map(is_text, p)) for p in prompts)):
        raise DatasetError(f"{path}: 'prompts' must hold, for each of the {len(classes)} classes, a non-empty list "
                           "of prompts")
    return ClassificationSet(name, tuple(images), tuple(labels), tuple(classes), tuple(map(tuple, prompts)))


@dataclass(frozen=True)
class AroSet:
    """A prepared ARO set (mini or full) from ``manifest.json``: ``vg_relation`` and ``vg_attribution`` as
    ``{annotations, image_root, crop_root | null}``, ``retrieval`` (per split) as ``{annotations, image_root}``,
    ``classification`` (per set) as ``{file, image_root}``; paths relative to the manifest's folder, or absolute. Each
    benchmark is optional (asking for a missing one raises); other keys are context."""

    path: Path
    info: dict

    @classmethod
    def load(cls, manifest: Path) -> "AroSet":
        manifest = Path(manifest)
        if manifest.is_dir():
            manifest = manifest / MANIFEST_NAME
        if not manifest.exists():
            raise DatasetError(f"{manifest}: no prepared ARO set here; run `dvc repro papers/aro` (stage mini-set "
                               "or full-set)")
        aro = cls(manifest, read_json(manifest, expect=dict, remedy=REMEDY))
        # a malformed manifest fails here, before any benchmark is read
        for kind in (k for k in VG_KINDS if k in aro.info):
            section = aro._section(kind)
            aro._path(section.get("annotations"), f"{kind}.annotations")
            aro._path(section.get("image_root"), f"{kind}.image_root")
            if section.get("crop_root") is not None:  # no crop root: the cases are whole images
                aro._path(section["crop_root"], f"{kind}.crop_root")
        for key, fields in (("retrieval", ("annotations", "image_root")), ("classification", ("file", "image_root"))):
            if key in aro.info:
                for name, entry in aro._section(key).items():
                    if not isinstance(entry, dict):
                        raise DatasetError(f"{aro.path}: {key}.{name} must be an object")
                    for f in fields:
                        aro._path(entry.get(f), f"{key}.{name}.{f}")
        return aro

    def _path(self, value: object, where: str) -> Path:
        if not is_text(value):
            raise DatasetError(f"{self.path}: {where} must be a path (a non-empty string)")
        p = Path(value)  # type: ignore[arg-type]
        return p if p.is_absolute() else self.path.parent / p

    def _section(self, key: str) -> dict:
        section = self.info.get(key)
        if section is None:
            raise DatasetError(f"{self.path}: this set has no {key!r} (the manifest lacks the key)")
        if not isinstance(section, dict):
            raise DatasetError(f"{self.path}: {key!r} must be an object, got {type(section).__name__}")
        return section

    def has(self, key: str) -> bool:
        return key in self.info

    def _vg_items(self, kind: str) -> list[ImageToTextItem]:
        section = self._section(kind)
        crop = section.get("crop_root")
        return vg_items(self._path(section.get("annotations"), f"{kind}.annotations"), kind,
                        self._path(section.get("image_root"), f"{kind}.image_root"),
                        None if crop is None else self._path(crop, f"{kind}.crop_root"))

    def vg_relation_items(self) -> list[ImageToTextItem]:
        """VG-Relation: group = relation name."""
        return self._vg_items(VG_RELATION)

    def vg_attribution_items(self) -> list[ImageToTextItem]:
        """VG-Attribution: group = ``"attr1_attr2"``."""
        return self._vg_items(VG_ATTRIBUTION)

    def retrieval_sets(self) -> dict[str, KarpathySet]:
        """Each Karpathy test split by name (``coco``, ``flickr30k``; the mini set has ``coco``)."""
        return {name: KarpathySet.load(name, self._path(e["annotations"], f"retrieval.{name}.annotations"),
                                       self._path(e["image_root"], f"retrieval.{name}.image_root"))
                for name, e in self._section("retrieval").items()}

    def classification_sets(self) -> dict[str, ClassificationSet]:
        return {name: read_classification(name, self._path(e["file"], f"classification.{name}.file"),
                                          self._path(e["image_root"], f"classification.{name}.image_root"))
                for name, e in self._section("classification").items()}

    def describe(self) -> dict:
        return {"manifest": str(self.path), **self.info}
