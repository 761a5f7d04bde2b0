"""The full profile's ARO: the released files fetched (or verified) and prepared into one ``manifest.json``.

VG-Relation / VG-Attribution with the GQA image subset (``papers/aro/sources.toml``), each (image, box) cropped once,
as upstream crops before preprocessing, to a PNG under ``<out>/crops``; the COCO and Flickr30k Karpathy test splits
(BLIP's JSON); the CIFAR-10/100 test sets (Table 6's zero-shot) from the *binary* tarballs (the python ones are
pickles, which this workspace never loads), as PNG files with CLIP's CIFAR prompt templates: the images, labels and
class order of the python release that torchvision (and so ARO's code) reads.

Interrupted, a rerun leaves the previous set or the new one, never a mix: ``manifest.json``, written last, is the
commit; the files it names are never overwritten (each CIFAR index is named by its content's sha256). Stage
``full-set``; ``--parts`` leaves some out (Flickr30k while its images are not at hand).
"""
from __future__ import annotations

import json
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
from PIL import Image

from common.files.io import atomic_path, sha256_bytes, sha256_file, write_bytes_atomic, write_json_atomic
from common.files.tasks import DatasetError
from common.files.visual_genome import crop_vg, vg_image_root
from common.pipeline.cli import stage_parser
from common.registry.fetch import check_md5, fetch
from papers.aro.data import MANIFEST_NAME, VG_ATTRIBUTION, VG_KINDS, VG_RELATION, AroSet, read_classification

DATA_FILES = ("papers/aro/sources.toml",)
"""Read at run time: the registry entries of ARO's VG annotations and CIFAR tarballs (the others are in the shared
common/registry/sources.toml)."""
VG_FILES = {VG_RELATION: "aro/visual_genome_relation.json", VG_ATTRIBUTION: "aro/visual_genome_attribution.json"}
VG_IMAGES = "aro/vgr_vga_images.zip"
KARPATHY = {
    "coco": ("coco/karpathy/coco_karpathy_test.json", "coco/val2014.zip"),
    "flickr30k": ("flickr30k/karpathy/flickr30k_test.json", "flickr30k/flickr30k-images"),
}
"""Per split: the annotation key and the image key. BLIP's paths are ``val2014/<file>`` relative to the extracted
``coco/val2014`` folder and ``flickr30k-images/<file>`` relative to ``flickr30k/``."""


@dataclass(frozen=True)
class CifarRelease:
    """Where one CIFAR binary tarball keeps its test records and class names."""

    key: str
    """Its registry entry, which states the md5 https://www.cs.toronto.edu/~kriz/cifar.html publishes."""
    test_member: str
    names_member: str
    label_bytes: int
    """Bytes before each record's 3,072 pixel bytes; the label is the last (CIFAR-100: coarse, then fine)."""


CIFAR = {
    "cifar10": CifarRelease("aro/cifar/cifar-10-binary.tar.gz", "cifar-10-batches-bin/test_batch.bin",
                            "cifar-10-batches-bin/batches.meta.txt", 1),
    "cifar100": CifarRelease("aro/cifar/cifar-100-binary.tar.gz", "cifar-100-binary/test.bin",
                             "cifar-100-binary/fine_label_names.txt", 2),
}
CIFAR_PIXELS = 3 * 32 * 32
CIFAR_TEMPLATES: tuple[str, ...] = (
    "a photo of a {}.", "a blurry photo of a {}.", "a black and white photo of a {}.", "a low contrast photo of a {}.",
    "a high contrast photo of a {}.", "a bad photo of a {}.", "a good photo of a {}.", "a photo of a small {}.",
    "a photo of a big {}.", "a photo of the {}.", "a blurry photo of the {}.", "a black and white photo of the {}.",
    "a low contrast photo of the {}.", "a high contrast photo of the {}.", "a bad photo of the {}.",
    "a good photo of the {}.", "a photo of the small {}.", "a photo of the big {}.",
)
"""CLIP's prompt templates for CIFAR-10/100 (Radford et al., 2021, the prompt-engineering notebook)."""
PARTS = ("vg", "coco", "flickr30k", "cifar")


def read_cifar_binary(tarball: Path, release: CifarRelease) -> tuple[list[str], "np.ndarray", list[int]]:
    """(class names, HxWxC uint8 test images, labels) from a CIFAR binary tarball: fixed-length records, no pickle."""
    with tarfile.open(tarball, "r:gz") as tf:
        def member(inner: str) -> bytes:
            fh = tf.extractfile(inner) if inner in tf.getnames() else None
            if fh is None:
                raise DatasetError(f"{tarball}: no member {inner!r} (not a CIFAR binary tarball?)")
            return fh.read()

        raw, names = member(release.test_member), member(release.names_member)
    record = release.label_bytes + CIFAR_PIXELS
    if not raw or len(raw) % record:
        raise DatasetError(f"{tarball}: {release.test_member} holds {len(raw)} bytes, not a whole number of "
                           f"{record}-byte records")
    rows = np.frombuffer(raw, dtype=np.uint8).reshape(-1, record)
    labels = [int(x) for x in rows[:, release.label_bytes - 1]]
    images = rows[:, release.label_bytes:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    classes = [line.strip().replace("_", " ") for line in names.decode("utf-8").splitlines() if line.strip()]
    if labels and max(labels) >= len(classes):
        index = labels.index(max(labels))
        raise DatasetError(f"{tarball}: record {index} of {release.test_member} has label {labels[index]}, but "
                           f"{release.names_member} names {len(classes)} classes")
    return classes, images, labels


def prepare_cifar(name: str, out_dir: Path) -> dict:
    """The CIFAR test set as PNG files plus the JSON that ``read_classification`` reads; the tarball's md5 checked."""
    release = CIFAR[name]
    tarball = fetch(release.key, progress=False)
    check_md5(release.key, tarball)
    classes, images, labels = read_cifar_binary(tarball, release)
    records = []
    for index, (pixels, label) in enumerate(zip(images, labels)):
        relpath = f"{name}/{index:05d}.png"
        target = out_dir / "classification" / relpath
        if not target.is_file():
            with atomic_path(target) as tmp:
                Image.fromarray(pixels).save(tmp, format="PNG")
        records.append({"image": relpath, "label": label})
    data = (json.dumps({"classes": classes, "templates": list(CIFAR_TEMPLATES), "images": records},
                       ensure_ascii=False) + "\n").encode("utf-8")
    relpath = f"classification/{name}.{sha256_bytes(data)[:16]}.json"  # never the file a previous manifest names
    if not (out_dir / relpath).is_file():
        write_bytes_atomic(out_dir / relpath, data)
    read_classification(name, out_dir / relpath, out_dir / "classification")  # every record resolves
    return {"file": relpath, "image_root": "classification"}


def prepare_full(out_dir: Path, parts: Sequence[str] = PARTS) -> AroSet:
    """Fetch (or verify) every part asked for, crop, check every record, and write ``manifest.json``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest: dict = {"kind": "aro", "profile": "full", "counts": {}, "sha256": {}}
    # Fetch (or verify) everything first, so a missing manual download fails before hours of cropping.
    if "vg" in parts:
        annotations = {kind: fetch(VG_FILES[kind], progress=False) for kind in VG_KINDS}
        image_root = vg_image_root(fetch(VG_IMAGES, progress=False))
    splits: dict[str, tuple[Path, Path]] = {}
    for name, (annotation_key, image_key) in KARPATHY.items():
        if name in parts:
            images = fetch(image_key, progress=False)
            splits[name] = (fetch(annotation_key, progress=False), images if name == "coco" else images.parent)
    cifar = {name: fetch(CIFAR[name].key, progress=False) for name in CIFAR} if "cifar" in parts else {}
    if "vg" in parts:
        manifest["counts"]["vg_crops"] = crop_vg(annotations, image_root, out_dir / "crops")
        for kind, path in annotations.items():
            manifest[kind] = {"annotations": str(path.resolve()), "image_root": str(image_root.resolve()),
                              "crop_root": "crops"}
            manifest["sha256"][kind] = sha256_file(path)
    for name, (annotation_file, split_root) in splits.items():
        manifest.setdefault("retrieval", {})[name] = {"annotations": str(annotation_file.resolve()),
                                                      "image_root": str(split_root.resolve())}
        manifest["sha256"][name] = sha256_file(annotation_file)
    if cifar:
        manifest["classification"] = {name: prepare_cifar(name, out_dir) for name in cifar}
    pending = out_dir / f".pending.{MANIFEST_NAME}"  # checked before it replaces the manifest
    write_json_atomic(pending, manifest)
    aro = AroSet.load(pending)
    counts = manifest["counts"]  # every record checked (images present) before the manifest is written
    for kind in VG_KINDS:
        if aro.has(kind):
            counts[kind] = len(aro.vg_relation_items() if kind == VG_RELATION else aro.vg_attribution_items())
    if aro.has("retrieval"):
        counts["retrieval"] = {n: {"images": len(s.images), "captions": s.n_captions}
                               for n, s in aro.retrieval_sets().items()}
    if aro.has("classification"):
        counts["classification"] = {n: {"images": len(s.images), "classes": len(s.class_names)}
                                    for n, s in aro.classification_sets().items()}
    write_json_atomic(out_dir / MANIFEST_NAME, manifest)
    pending.unlink()
    named = {entry["file"] for entry in (manifest.get("classification") or {}).values()}
    for old in (out_dir / "classification").glob("*.json"):  # earlier runs' CIFAR indexes the manifest no longer names
        if old.name.split(".")[0] in CIFAR and old.relative_to(out_dir).as_posix() not in named:
            old.unlink(missing_ok=True)
    return AroSet.load(out_dir / MANIFEST_NAME)


def main(argv: Sequence[str] | None = None) -> int:
    parser = stage_parser(__spec__.name, __doc__)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--parts", default=",".join(PARTS),
                        help=f"comma-separated subset of {','.join(PARTS)} (default: all)")
    args = parser.parse_args(argv)
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown or not parts:
        parser.error(f"--parts: unknown part(s) {unknown} (known: {', '.join(PARTS)})")
    described = prepare_full(args.out, parts).describe()
    print(json.dumps({k: described[k] for k in ("manifest", "counts")}, indent=2))
    return 0


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
