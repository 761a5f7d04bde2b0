"""CoN-CLIP (Singh et al.), zero-shot classification with standard and negated prompts (Sec. 5.1, 5.2; Tables 4, 15,
16; Fig. 6) in the full profile: the paper's eight datasets, every obtainable model of ``conclip.full.models``.

Each class gets one prompt of each kind, the paper's: "this is a photo of a {c}" (standard) and "this is not a photo
of a {c}" (negated), as the authors' README shows them, jaisidhsingh/CoN-CLIP@503388ac README.md:49
"this is not a photo of a dog"; top-1 is the argmax class (the first among equals: the authors' zero-shot script is
not in the release, the paper's Sec. 5.2.1 says only "top-1 zero-shot classification accuracy"), and
Delta = top-1(standard) - top-1(negated) (Table 16 averages Delta over the eight datasets).

The datasets (registry group "conclip-zeroshot") are read by ``torchvision.datasets`` under
``<data root>/zeroshot/<dataset>/``, checked against the registry's md5s (torchvision's own pins lifted: ``unpinned``).
The paper names no split; each dataset uses CLIP_benchmark's default (``DATASETS``). CIFAR's arrays are written once
as PNG files (``export_pngs``), because the encoding engine keys images by file content.
"""
from __future__ import annotations

import os
import re
import shutil
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
from PIL import Image

from common.card.core import N_RESAMPLES, SEED, paired_difference
from common.errors import WorkspaceError
from common.evaluation.engine import Engine
from common.evaluation.evaluate import best_device, engine_config
from common.evaluation.outcomes import percent
from common.evaluation.scoring import classification
from common.evaluation.scoring.classification import ClassificationResult
from common.files.io import output_group, sha256_file, write_csv_atomic, write_json_atomic, write_output_group
from common.files.jsonl import read_json
from common.files.tasks import ClassificationSet
from common.paths import RESULTS, build_root, data_root as default_root
from common.pipeline.cli import DEVICE_HELP, print_written, stage_parser
from common.pipeline.params import own_section
from common.registry.errors import ChecksumError, FetchError
from common.registry.fetch import check_md5, fetch
from common.registry.sources import get_source
from common.zoo import ModelFactory, create_model as zoo_create
from common.zoo.available import each_model
from papers.conclip.columns import (
    classification_cells, classification_fields, classification_measure, model_label, top1)

DATA_FILES = ("papers/conclip/sources.toml", "papers/conclip/models.toml")
"""Read at run time (``common.pipeline.stage_deps``): the datasets' download entries and the models' zoo entries."""
PROMPTS: dict[str, str] = {"standard": "this is a photo of a {}", "negated": "this is not a photo of a {}"}
"""The paper's two prompts (Sec. 5.1), verbatim: no article agreement ("a apple pie"), no full stop."""
MARKER_SUFFIX = ".vlc-extracted.json"
"""Written beside (never inside) a folder extracted here: torchvision lists Caltech-101's category folders, so a file
inside would become a class."""

PAPER_VS_CODE: dict[str, str] = {
    "standard_prompt": "paper (Sec. 5.1.2): 'this is a photo of a {class}' (standard); the authors' README shows the "
                       "same prompt, "
                       'jaisidhsingh/CoN-CLIP@503388ac README.md:49 "this is a photo of a dog". '
                       "Their zero-shot script (Tables 4, 15, 16: class names, templates, splits) is not in the "
                       "release. Here: the paper's prompt, one per class, for every dataset.",
    "negated_prompt": "paper (Sec. 5.1.2): 'this is not a photo of a {class}' (negated); the README the same, "
                      'jaisidhsingh/CoN-CLIP@503388ac README.md:49 "this is not a photo of a dog". '
                      "Here: one prompt per class.",
    "datasets": "the README names the eight datasets, "
                'jaisidhsingh/CoN-CLIP@503388ac README.md:155 "We use 8 datasets: ImageNet-1k, CIFAR-100, CIFAR-10"'
                ", and leaves them to the reader: 'These datasets can be downloaded and prepared from their "
                "respective sources'.",
    "class_names": "not in the release: the authors' class names. Here: torchvision's names with '_' -> ' ' "
                   "(ImageNet: open_clip's IMAGENET_CLASSNAMES, OpenAI's curated names); every tokenizer of the zoo "
                   "lower-cases, so case does not matter.",
    "splits": "not in the release: the authors' splits (the paper names none). Here: CLIP_benchmark's default split "
              "of each dataset (zeroshot_context.json: datasets).",
    "top1": "not in the release: the authors' top-1 (the paper's Sec. 5.2.1: 'top-1 zero-shot classification "
            "accuracy'). Here: the argmax of the cosine, the first class among equals (ties are counted in "
            "by_dataset.csv); the audit's rows of Tables 4, 15 and 16 say 'rule unverified'.",
}


class ZeroshotError(WorkspaceError):
    """Nothing to score: no model or dataset listed, an unknown dataset, or no model that loads."""


class ZeroshotDataError(WorkspaceError):
    """A dataset is not on disk, or not as torchvision reads it; the message names the folder and the fix."""


# --- The datasets ---
@dataclass(frozen=True)
class Download:
    """One registry entry a dataset needs. ``folder``: the top folder the archive holds, extracted beside the archive
    (at ``into``, relative to the archive's folder, when given); None for a plain file or a manual folder, used as
    fetched. ``inner``: a tarball inside a zip that holds ``folder`` (Caltech-101)."""

    key: str
    folder: str | None = None
    inner: str | None = None
    into: str | None = None


@dataclass(frozen=True)
class LoadedSet:
    name: str
    images: tuple[Path, ...]
    labels: tuple[int, ...]
    class_names: tuple[str, ...]


Loader = Callable[[str, Path, Path], LoadedSet]
"""(dataset name, its root ``<data root>/zeroshot/<name>``, folder for exported images) -> its split."""


@dataclass(frozen=True)
class ZeroshotDataset:
    name: str
    title: str
    """The paper's column (Tables 4, 15), as ``results/published/conclip.csv`` names it."""
    split: str
    why_split: str
    class_names: str
    expected_n: int
    """Images in the split as released (a different count is reported, not refused)."""
    downloads: tuple[Download, ...]
    load: Loader


def _words(name: str) -> str:
    return name.replace("_", " ")


def _read(name: str, root: Path, make: Callable[[Any], Any], errors: tuple[type[Exception], ...] = (RuntimeError,)):
    """``make(torchvision.datasets)``, a dataset under ``root``; its error (a file missing) names the folder and fix."""
    # deferred: loads torchvision only when called
    from torchvision import datasets

    try:
        return make(datasets)
    except errors as exc:
        raise ZeroshotDataError(f"{name}: torchvision cannot read the dataset under {root}: {exc}. Remove the folder "
                                f"and run again to fetch it (python -m common fetch conclip-zeroshot), or see its "
                                f"entry in papers/conclip/sources.toml") from exc


def export_pngs(arrays: np.ndarray, folder: Path, source_sha256: str) -> tuple[Path, ...]:
    """``arrays`` (N, H, W, 3) uint8 as ``folder/00000.png``..., once per source file; all or nothing."""
    folder = Path(folder)
    paths = tuple(folder / f"{i:05d}.png" for i in range(len(arrays)))
    wanted = {"source_sha256": source_sha256, "n": len(arrays)}
    manifest = folder / "manifest.json"
    if manifest.is_file() and read_json(manifest) == wanted:
        return paths
    with output_group(folder.parent) as staging:  # the folder is replaced as a whole
        (staging / folder.name).mkdir()
        for i, pixels in enumerate(arrays):
            Image.fromarray(np.ascontiguousarray(pixels)).save(staging / folder.name / paths[i].name, format="PNG")
        write_json_atomic(staging / folder.name / "manifest.json", wanted)
    return paths


def unpinned(cls: type) -> type:
    """A torchvision dataset class whose own md5 pins are lifted (``check_integrity`` then checks that the file
    exists): CIFAR's files are inside the archive ``extract`` checked, Flowers-102's .mat files ``prepare`` checks."""
    attrs: dict = {}
    if hasattr(cls, "train_list"):  # CIFAR10/100
        attrs = {"train_list": [[f, None] for f, _ in cls.train_list],
                 "test_list": [[f, None] for f, _ in cls.test_list], "meta": {**cls.meta, "md5": None}}
    if hasattr(cls, "_file_dict"):  # Flowers102
        attrs["_file_dict"] = {k: (f, None) for k, (f, _) in cls._file_dict.items()}
    if not attrs:
        raise ZeroshotError(f"torchvision's {cls.__name__} pins no md5 this module knows how to lift")
    return type(f"Unpinned{cls.__name__}", (cls,), attrs)


def _cifar(class_name: str) -> Loader:
    def load(name: str, root: Path, image_dir: Path) -> LoadedSet:
        ds = _read(name, root, lambda d: unpinned(getattr(d, class_name))(str(root), train=False, download=False))
        batch = root / ds.base_folder / ds.test_list[0][0]
        images = export_pngs(ds.data, image_dir / f"{name}-test", sha256_file(batch))
        return LoadedSet(name, images, tuple(int(y) for y in ds.targets), tuple(_words(c) for c in ds.classes))

    return load


def _caltech101(name: str, root: Path, image_dir: Path) -> LoadedSet:
    ds = _read(name, root, lambda d: d.Caltech101(str(root), target_type="category", download=False))
    # The file of item k, as Caltech101.__getitem__ builds it (categories, index and y are public attributes).
    images = tuple(Path(ds.root) / "101_ObjectCategories" / ds.categories[y] / f"image_{i:04d}.jpg"
                   for i, y in zip(ds.index, ds.y))
    return LoadedSet(name, images, tuple(int(y) for y in ds.y), tuple(_words(c) for c in ds.categories))


def _oxford_pets(name: str, root: Path, image_dir: Path) -> LoadedSet:
    ds = _read(name, root, lambda d: d.OxfordIIITPet(str(root), split="test", target_types="category", download=False))
    # OxfordIIITPet takes no loader and decodes in __getitem__; its file list is kept as _images/_labels.
    files, labels = getattr(ds, "_images", None), getattr(ds, "_labels", None)
    if files is None or labels is None or len(files) != len(ds):
        raise ZeroshotDataError(f"{name}: this torchvision version's OxfordIIITPet keeps no _images/_labels list; "
                                f"papers/conclip/zeroshot_full.py:_oxford_pets needs updating")
    return LoadedSet(name, tuple(Path(p) for p in files), tuple(int(y) for y in labels), tuple(ds.classes))


def _test_split(class_name: str, class_name_of: Callable[[str], str], lift: Callable[[type], type] = lambda c: c
                ) -> Loader:
    """A torchvision dataset whose ``loader`` lists its test split's files (``lift``: Flowers-102's ``unpinned``)."""
    def load(name: str, root: Path, image_dir: Path) -> LoadedSet:
        # ``loader=Path``: the file instead of its decoded image, the public way to list a split
        ds = _read(name, root, lambda d: lift(getattr(d, class_name))(str(root), split="test", download=False,
                                                                      loader=Path))
        pairs = [ds[i] for i in range(len(ds))]
        return LoadedSet(name, tuple(Path(p) for p, _ in pairs), tuple(int(y) for _, y in pairs),
                         tuple(class_name_of(c) for c in ds.classes))

    return load


IMAGENET_WNID = re.compile(r"n\d{8}")


def _imagenet(name: str, root: Path, image_dir: Path) -> LoadedSet:
    """``root/val/<wnid>/*.JPEG`` (torchvision's ImageNet(split="val") layout); classes in sorted-wnid order, the order
    of open_clip's IMAGENET_CLASSNAMES, the first names for fewer folders (a rehearsal's stand-in)."""
    # deferred: loads open_clip only when called
    from open_clip.zero_shot_metadata import IMAGENET_CLASSNAMES

    val = root / "val"
    ds = _read(name, val, lambda d: d.ImageFolder(str(val), loader=Path), (FileNotFoundError, RuntimeError))
    bad = [w for w in ds.classes if not IMAGENET_WNID.fullmatch(w)]
    if not 0 < len(ds.classes) <= len(IMAGENET_CLASSNAMES) or bad:
        raise ZeroshotDataError(f"{name}: {val} holds {len(ds.classes)} class folders ({bad[:3]} not WordNet ids); "
                                f"ImageNet-1k's val split needs the {len(IMAGENET_CLASSNAMES)} folders n????????/")
    return LoadedSet(name, tuple(Path(p) for p, _ in ds.samples), tuple(int(y) for y in ds.targets),
                     tuple(IMAGENET_CLASSNAMES[:len(ds.classes)]))


def _key(path: str) -> str:
    return f"conclip/zeroshot/{path}"


TEST_SPLIT = "the dataset's official test split (CLIP_benchmark's default split, 'test')"
DATASETS: dict[str, ZeroshotDataset] = {d.name: d for d in (
    ZeroshotDataset(
        "imagenet", "ImageNet-1k", "val", "ILSVRC-2012 validation set: its test labels were never released; "
        "CLIP_benchmark's imagenet1k 'test' is this val split (the authors' split is not in the release)",
        "open_clip.zero_shot_metadata.IMAGENET_CLASSNAMES (OpenAI's curated names; 'missile' and 'sunglasses' appear "
        "twice, so those two class pairs get the same prompt and tie exactly: top-1 takes the first)",
        50_000, (Download(_key("imagenet/val")),), _imagenet),
    ZeroshotDataset(
        "caltech101", "Caltech-101", "all", "no official split: CLIP_benchmark's caltech101 (torchvision's) uses every "
        "image of the 101 categories (BACKGROUND_Google excluded by torchvision)",
        "torchvision's category folders with '_' -> ' ' ('Faces_easy' -> 'Faces easy'); the authors' names are not "
        "in the release", 8_677,
        (Download(_key("caltech101/caltech-101.zip"), "101_ObjectCategories",
                  inner="caltech-101/101_ObjectCategories.tar.gz", into="caltech101/101_ObjectCategories"),),
        _caltech101),
    ZeroshotDataset(
        "flowers102", "Flowers-102", "test", TEST_SPLIT, "torchvision's Flowers102.classes (CLIP's names)", 6_149,
        (Download(_key("flowers102/flowers-102/102flowers.tgz"), "jpg"),
         Download(_key("flowers102/flowers-102/imagelabels.mat")),
         Download(_key("flowers102/flowers-102/setid.mat"))), _test_split("Flowers102", str, unpinned)),
    ZeroshotDataset(
        "cifar100", "CIFAR-100", "test", TEST_SPLIT, "torchvision's fine label names with '_' -> ' '", 10_000,
        (Download(_key("cifar100/cifar-100-python.tar.gz"), "cifar-100-python"),),
        _cifar("CIFAR100")),
    ZeroshotDataset(
        "food101", "Food-101", "test", TEST_SPLIT, "torchvision's Food101.classes with '_' -> ' ' (as CLIP_benchmark)",
        25_250, (Download(_key("food101/food-101.tar.gz"), "food-101"),),
        _test_split("Food101", _words)),
    ZeroshotDataset(
        "stanford_cars", "Stanford Cars", "test", TEST_SPLIT,
        "torchvision's StanfordCars.classes (devkit cars_meta.mat)",
        8_041, (Download(_key("stanford_cars/stanford_cars")),), _test_split("StanfordCars", str)),
    ZeroshotDataset(
        "oxford_pets", "Oxford Pets", "test", TEST_SPLIT, "torchvision's OxfordIIITPet.classes ('American Bulldog')",
        3_669,
        (Download(_key("oxford_pets/oxford-iiit-pet/images.tar.gz"), "images"),
         Download(_key("oxford_pets/oxford-iiit-pet/annotations.tar.gz"),
                  "annotations")), _oxford_pets),
    ZeroshotDataset(
        "cifar10", "CIFAR-10", "test", TEST_SPLIT, "torchvision's CIFAR10.classes", 10_000,
        (Download(_key("cifar10/cifar-10-python.tar.gz"), "cifar-10-batches-py"),),
        _cifar("CIFAR10")),
)}
"""The paper's eight datasets, in Table 4's column order."""


def dataset_root(name: str, data_root: Path | None = None) -> Path:
    return Path(data_root if data_root is not None else default_root()) / "zeroshot" / name


def _marker(target: Path) -> Path:
    return target.with_name(target.name + MARKER_SUFFIX)


def extract(archive: Path, download: Download, target: Path) -> None:
    """``archive``'s ``folder`` at ``target``, once its registry md5 holds (tarfile's "data" filter refuses absolute
    names, '..', links out of it and device files), the archive recorded beside it; nothing appears on failure."""
    try:
        check_md5(download.key, archive)
    except ChecksumError as exc:
        raise ZeroshotDataError(str(exc)) from exc
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".extract", dir=target.parent))
    try:
        try:
            if download.inner is not None:
                with zipfile.ZipFile(archive) as zf:
                    if download.inner not in zf.namelist():
                        raise ZeroshotDataError(f"{download.key}: {archive} holds no {download.inner}")
                    with zf.open(download.inner) as inner, tarfile.open(fileobj=inner, mode="r|*") as tar:
                        tar.extractall(staging, filter="data")
            else:
                with tarfile.open(archive, mode="r:*") as tar:
                    tar.extractall(staging, filter="data")
        except (tarfile.TarError, zipfile.BadZipFile, EOFError) as exc:
            raise ZeroshotDataError(f"{download.key}: cannot extract {archive}: {exc}") from exc
        top = staging / str(download.folder)
        if not top.is_dir():
            raise ZeroshotDataError(f"{download.key}: {archive} holds no top folder {download.folder!r} "
                                    f"(found {sorted(p.name for p in staging.iterdir())[:5]})")
        os.replace(top, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    write_json_atomic(_marker(target), {"key": download.key, "archive": archive.name,
                                        "archive_sha256": sha256_file(archive),
                                        "archive_md5": get_source(download.key).md5})


def prepare(spec: ZeroshotDataset, data_root: Path | None = None) -> dict[str, dict]:
    """Make every file of ``spec`` present and return where each came from. An extracted folder in place is used as it
    is (no re-hash of a multi-GB archive per run); a plain file is checked against its registry md5 every run."""
    provenance = {}
    for download in spec.downloads:
        source = get_source(download.key)
        try:
            if download.folder is None:
                path = fetch(source, data_root=data_root)
                if path.is_file():
                    check_md5(source, path)
                provenance[download.key] = {"path": str(path)}
                continue
            target = source.dest_path(data_root).parent / (download.into or download.folder)
            if not target.is_dir():
                extract(fetch(source, data_root=data_root), download, target)
        except FetchError as exc:
            raise ZeroshotDataError(f"{spec.title} ({spec.name}): {exc}\nOr leave {spec.name!r} out of "
                                    f"conclip.full.zeroshot_datasets (params.yaml) or --datasets.") from exc
        marker = _marker(target)
        provenance[download.key] = {"path": str(target), **(read_json(marker) if marker.is_file()
                                                            else {"extracted": "found in place"})}
    return provenance


def load_dataset(name: str, data_root: Path | None = None, image_dir: Path | None = None,
                 classes: Mapping[str, int] | None = None) -> tuple[LoadedSet, dict[str, dict]]:
    """The split of one of ``DATASETS``, checked (images present, ``classes``' count), and its files' sources."""
    spec = DATASETS[name]
    provenance = prepare(spec, data_root)
    root = dataset_root(name, data_root)
    loaded = spec.load(name, root, Path(image_dir or build_root() / "full" / "conclip" / "zeroshot"))
    if classes and name in classes and len(loaded.class_names) != classes[name]:
        raise ZeroshotDataError(f"{name}: {root} holds {len(loaded.class_names)} classes; params.yaml "
                                f"conclip.full.zeroshot_classes states {classes[name]} for {spec.title}")
    missing = [p for p in loaded.images if not p.is_file()]
    if missing:
        raise ZeroshotDataError(f"{name}: {len(missing)} of {len(loaded.images)} image files listed by torchvision are "
                                f"missing, e.g. {missing[0]}")
    if not loaded.images:
        raise ZeroshotDataError(f"{name}: no image in its {spec.split} split under {dataset_root(name, data_root)}")
    return loaded, provenance


def prompt_sets(loaded: LoadedSet) -> dict[str, ClassificationSet]:
    return {kind: ClassificationSet.from_templates(f"{loaded.name}-{kind}", loaded.images, loaded.labels,
                                                   loaded.class_names, (template,))
            for kind, template in PROMPTS.items()}


# --- Scoring ---
@dataclass(frozen=True)
class ScoredModel:
    row: str
    model: str
    label: str
    fingerprint: str
    results: dict[str, dict[str, ClassificationResult]]
    """Per dataset, per prompt kind ('standard', 'negated')."""


def score_models(models: Mapping[str, str], sets: Mapping[str, Mapping[str, ClassificationSet]],
                 engine_config=None, device: str = "cpu", create: ModelFactory = zoo_create,
                 skip_unavailable: bool = False) -> tuple[list[ScoredModel], dict[str, str]]:
    scored, skipped = [], {}
    for row, name, model in each_model(models, skipped, create=create, device=device,
                                       skip_unavailable=skip_unavailable, what="zero-shot row"):
        engine = Engine(model, engine_config)
        results = {dataset: {kind: classification.evaluate(engine, s) for kind, s in kinds.items()}
                   for dataset, kinds in sets.items()}
        scored.append(ScoredModel(row, name, model_label(name, model), engine.identity[1], results))
        del engine, model
    return scored, skipped


# --- Tables ---
BY_DATASET_FIELDS = ("row", "model", "label", "dataset", "split", "n", "n_classes", "standard", "negated", "delta",
                     "standard_ties", "negated_ties")


def by_dataset_rows(scored: Sequence[ScoredModel], datasets: Sequence[str]) -> list[dict]:
    """One row per model and dataset, in points; ties: images whose true class ties another (top-1 takes the first)."""
    rows = []
    for s in scored:
        for name in datasets:
            standard, negated = s.results[name]["standard"], s.results[name]["negated"]
            rows.append({"row": s.row, "model": s.model, "label": s.label, "dataset": name,
                         "split": DATASETS[name].split, "n": len(standard.labels),
                         "n_classes": len(standard.class_names),
                         "standard": percent(top1(standard)), "negated": percent(top1(negated)),
                         "delta": percent(top1(standard) - top1(negated)), "standard_ties": standard.ties,
                         "negated_ties": negated.ties})
    return rows


SUMMARY_LIMIT = 12
COMPARISONS_FILE = "zeroshot_comparisons.json"
COMPARED_ROWS = ("conclip", "clip")


def comparisons(scored: Sequence[ScoredModel], datasets: Sequence[str]) -> tuple[dict[str, float], str | None]:
    """CoN-CLIP minus CLIP on the mean standard-prompt top-1 (points) with a paired 95% interval resampled within
    each dataset, as the mini profile's, and None; or nothing and why, when a row was not scored."""
    by_row = {s.row: s for s in scored}
    lacking = [row for row in COMPARED_ROWS if row not in by_row]
    if lacking:
        return {}, f"row(s) {lacking} not scored"
    d = paired_difference(*(classification_measure(by_row[row].results, datasets) for row in COMPARED_ROWS))
    return {"conclip_minus_clip_classification": round(d.value, 2),
            "conclip_minus_clip_classification_ci_low": round(d.low, 2),
            "conclip_minus_clip_classification_ci_high": round(d.high, 2)}, None


def summary(rows: Sequence[Mapping], n_datasets: int) -> dict[str, float]:
    """The DVC metrics: each row's mean Delta (Table 16), the number of datasets, then mean top-1s while room."""
    keys = [r["row"].replace("-", "_") for r in rows]
    return dict([*((f"{k}_delta", r["delta"]) for k, r in zip(keys, rows)), ("n_datasets", n_datasets),
                 *((f"{k}_top1", r["classification_top1"]) for k, r in zip(keys, rows))][:SUMMARY_LIMIT])


def published_columns(datasets: Sequence[str] = tuple(DATASETS)) -> dict[str, str]:
    """``classification.csv`` column -> the paper's column in ``results/published/conclip.csv`` (Tables 4, 15)."""
    return {f"{n}_top1": DATASETS[n].title for n in datasets}


def evaluate_zeroshot(models: Mapping[str, str], datasets: Sequence[str], out_dir: Path, engine_config=None,
                      device: str = "cpu", create: ModelFactory = zoo_create, skip_unavailable: bool = False,
                      data_root: Path | None = None, image_dir: Path | None = None,
                      context: Mapping | None = None,
                      classes: Mapping[str, int] | None = None) -> dict[str, Path]:
    """Every model on every dataset with both prompts (datasets read first), written as one output group."""
    names = list(datasets)
    if not names:
        raise ZeroshotError("no dataset to score (conclip.full.zeroshot_datasets or --datasets is empty)")
    unknown = [n for n in names if n not in DATASETS]
    if unknown:
        raise ZeroshotError(f"unknown zero-shot dataset(s) {unknown}; known: {list(DATASETS)}")
    if len(set(names)) != len(names):
        raise ZeroshotError(f"a dataset is listed twice in {names}")
    if not models:
        raise ZeroshotError("conclip.full.models is empty: no model to score")
    # Hand-fetched datasets (registry method "manual") first: a missing one stops the run before any multi-GB download.
    manual = {n for n in names if any(get_source(d.key).method == "manual" for d in DATASETS[n].downloads)}
    read = {n: load_dataset(n, data_root, image_dir, classes) for n in sorted(names, key=lambda n: n not in manual)}
    loaded, provenance = {n: read[n][0] for n in names}, {n: read[n][1] for n in names}
    sets = {n: prompt_sets(loaded[n]) for n in names}
    scored, skipped = score_models(models, sets, engine_config, device, create, skip_unavailable)
    if not scored:
        raise ZeroshotError(f"no model of conclip.full.models could be loaded: {skipped}")
    n = {name: len(loaded[name].images) for name in names}
    full_context = {
        **dict(context or {}), "profile": "full",
        "prompts": dict(PROMPTS),
        "rule": "top-1 = argmax class over one prompt per class (the first among equals; the authors' script is "
                "not in the release); "
                "Delta = top-1(standard) - top-1(negated), in points; the means are over the datasets listed here",
        "datasets": {name: {"title": DATASETS[name].title, "split": DATASETS[name].split,
                            "why_split": DATASETS[name].why_split, "n": n[name],
                            "n_expected": DATASETS[name].expected_n, "n_classes": len(loaded[name].class_names),
                            "class_names": DATASETS[name].class_names, "root": str(dataset_root(name, data_root)),
                            "files": provenance[name]} for name in names},
        "datasets_missing_from_paper": [d for d in DATASETS if d not in names],
        "paper_vs_code": dict(PAPER_VS_CODE),
        "published_columns": published_columns(names),
        "models": {s.row: {"model": s.model, "label": s.label, "fingerprint": s.fingerprint} for s in scored},
        "skipped": skipped,
    }
    compared, why_not = comparisons(scored, names)
    full_context["comparisons"] = {
        "file": COMPARISONS_FILE, "rows": list(COMPARED_ROWS), "left_out": why_not,
        "how": f"row conclip minus row clip, mean standard-prompt top-1 over the datasets listed here, in points; 95% "
               f"percentile bootstrap, {N_RESAMPLES} resamples, seed {SEED}, paired over images, resampled within "
               f"each dataset"}
    off = {name: (n[name], DATASETS[name].expected_n) for name in names if n[name] != DATASETS[name].expected_n}
    if off:
        print(f"note: split sizes differ from the released ones (found, expected): {off}", file=sys.stderr)
    # one row per model (Tables 4, 15: <d>_top1; Table 16: delta), the cells of the mini profile's classification.csv
    wide = [{"row": s.row, "model": s.model, "label": s.label, **classification_cells(s.results, names)}
            for s in scored]
    return write_output_group(out_dir, lambda staging: {
        "classification": write_csv_atomic(staging / "classification.csv", wide, classification_fields(names)),
        "by_dataset": write_csv_atomic(staging / "by_dataset.csv", by_dataset_rows(scored, names), BY_DATASET_FIELDS),
        "summary": write_json_atomic(staging / "zeroshot_summary.json", summary(wide, len(names))),
        "context": write_json_atomic(staging / "zeroshot_context.json", full_context),
        "comparisons": write_json_atomic(staging / COMPARISONS_FILE, compared),
    })


def main(argv: Sequence[str] | None = None) -> int:
    parser = stage_parser(__spec__.name, __doc__, out="default: results/conclip/full", device=DEVICE_HELP)
    parser.add_argument("--datasets", nargs="+", default=None, choices=list(DATASETS),
                        help="default: conclip.full.zeroshot_datasets")
    parser.add_argument("--data-root", default=None, help="default: the data root (VLC_DATA, else data/)")
    parser.add_argument("--images", default=None,
                        help="where CIFAR's images are written as PNG (default: build/full/conclip/zeroshot)")
    args = parser.parse_args(argv)
    params, section = own_section("conclip.full")
    datasets = list(args.datasets) if args.datasets else list(section["zeroshot_datasets"])
    device = args.device or best_device()
    context = {"device": device, "engine": params.get("engine", {}),
               "datasets_from": "--datasets" if args.datasets else "conclip.full.zeroshot_datasets"}
    paths = evaluate_zeroshot(dict(section["models"]), datasets,
                              Path(args.out or RESULTS / "conclip" / "full"), engine_config(params),
                              device, create=zoo_create, skip_unavailable=bool(section["skip_unavailable"]),
                              data_root=Path(args.data_root) if args.data_root else None,
                              image_dir=Path(args.images) if args.images else None, context=context,
                              classes=dict(section["zeroshot_classes"]))
    return print_written(paths, "classification")


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
