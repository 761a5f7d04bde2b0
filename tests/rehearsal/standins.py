"""Stand-ins for the full profile's inputs, in their upstream formats, written where the downloader puts the real ones.

A stand-in is written at its registry entry's ``dest`` under the rehearsal's own data root (``place``, ``place_zip``);
the downloader then treats it as the real thing (trust on first use of its sha256, a zip extracted), and the stages
read it through their ordinary code. A source whose sha256 the registry pins can never have a stand-in
(``StandInError``): the rehearsal reads the real file, from ``VLC_MIRROR``, and stands in for the images it names.

Writers of sources several papers read live here; a paper's own sources are written by its
``tests/rehearsal/papers/<paper>.py``.
"""
from __future__ import annotations

import csv
import datetime as dt
import io
import json
import math
import shutil
import tarfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from common import plugins
from common.benchmarks.caption_negatives import CATEGORIES, read_category, released_file_key
from common.errors import WorkspaceError
from common.files.io import atomic_path, write_json_atomic
from common.paths import ROOT
from common.registry.fetch import md5_file
from common.registry.markers import SNAPSHOT_MARKER
from common.registry.sources import REGISTRY_PATH, get_source, load_registry
from common.text.released_text import read_negclip_tsv

STANDIN_IMAGE_SIZE = (32, 24)
"""Width, height of a stand-in image unless a box needs more (every model resizes to its own input size)."""


class StandInError(WorkspaceError):
    """A stand-in that must not be written: a pinned source, or a name outside its archive's layout."""


# ------------------------------------------------------------------------------------------------------------------
# Bytes
# ------------------------------------------------------------------------------------------------------------------
def image_bytes(seed: int, size: tuple[int, int] = STANDIN_IMAGE_SIZE, fmt: str = "JPEG") -> bytes:
    """A small image of random pixels (``seed``-determined), encoded as ``fmt``."""
    # deferred: loads PIL only when called
    from PIL import Image

    pixels = np.random.default_rng(seed).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format=fmt, **({"quality": 95} if fmt == "JPEG" else {}))
    return out.getvalue()


def name_seed(name: str) -> int:
    """A stable seed for the stand-in image of a file name."""
    return zlib.crc32(name.encode("utf-8"))


def zip_bytes(members: Mapping[str, bytes]) -> bytes:
    """A zip archive holding ``members`` (archive name -> bytes), stored, in sorted order."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        for name in sorted(members):
            if PurePosixPath(name).is_absolute() or ".." in PurePosixPath(name).parts:
                raise StandInError(f"archive member {name!r} would escape its archive")
            archive.writestr(zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0)), members[name])
    return out.getvalue()


def tar_gz(members: Mapping[str, bytes]) -> bytes:
    """A gzipped tarball of regular files (archive name -> bytes), its folders implied, fixed times, sorted."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name in sorted(members):
            if PurePosixPath(name).is_absolute() or ".." in PurePosixPath(name).parts:
                raise StandInError(f"archive member {name!r} would escape its archive")
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(members[name]), 1_704_067_200, 0o644
            tar.addfile(info, io.BytesIO(members[name]))
    return out.getvalue()


# ------------------------------------------------------------------------------------------------------------------
# Where a stand-in goes
# ------------------------------------------------------------------------------------------------------------------
def standin_dest(key: str, data_root: Path) -> Path:
    """Where the registry entry ``key`` is fetched to under ``data_root``; ``StandInError`` for a pinned source."""
    source = get_source(key)
    if source.sha256 is not None:
        raise StandInError(f"{key}: the registry pins its sha256 ({source.sha256}): no stand-in can satisfy it; a "
                           "rehearsal reads the real file (VLC_MIRROR) and writes stand-ins only for what it names")
    return source.dest_path(Path(data_root))


def place(key: str, data_root: Path, data: bytes) -> Path:
    """Write ``data`` as the stand-in of ``key`` (an unpinned source) at its destination."""
    dest = standin_dest(key, data_root)
    with atomic_path(dest) as tmp:
        tmp.write_bytes(data)
    return dest


def state_md5s(workspace: Path, data_root: Path) -> list[str]:
    """In the copy at ``workspace``, every registry entry that states its publisher's md5 states its stand-in's
    instead, so the stages check stand-ins as they check real files, never asking whether they are rehearsed.
    Returns the keys restated."""
    restated: list[str] = []
    for reg_path in plugins.registry_files(REGISTRY_PATH.name, REGISTRY_PATH):
        copy = Path(workspace) / reg_path.relative_to(ROOT)
        text = copy.read_text(encoding="utf-8")
        for source in load_registry(copy).values():
            path = source.dest_path(Path(data_root))
            if source.md5 is None or not path.is_file() or (found := md5_file(path)) == source.md5:
                continue
            line = f'md5 = "{source.md5}"'
            if text.count(line) != 1:
                raise StandInError(f"{copy}: {source.key}: its line {line!r} is not in the file exactly once")
            text = text.replace(line, f'md5 = "{found}"')
            restated.append(source.key)
        copy.write_text(text, encoding="utf-8")
        load_registry(copy)  # still a valid registry file
    return restated


def place_folder(key: str, data_root: Path, files: Mapping[str, bytes]) -> Path:
    """The stand-in of ``key``, a folder (a manual source), holding ``files`` (path in it -> bytes)."""
    folder = standin_dest(key, data_root)
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return folder


def place_json(key: str, data_root: Path, value: object) -> Path:
    return place(key, data_root, json.dumps(value, ensure_ascii=False).encode("utf-8"))


def place_zip(key: str, data_root: Path, members: Mapping[str, bytes]) -> Path:
    """The stand-in zip of ``key`` holding ``members`` and those of the stand-in already there (several papers share
    an archive: ARO's images, Visual Genome's); a member written twice must have the same bytes."""
    if get_source(key).archive != "zip":
        raise StandInError(f"{key}: not a zip source in the registry")
    dest = standin_dest(key, data_root)
    merged = dict(members)
    if dest.is_file():
        with zipfile.ZipFile(dest) as archive:
            for name in archive.namelist():
                before = archive.read(name)
                if merged.setdefault(name, before) != before:
                    raise StandInError(f"{key}: member {name!r} written twice with different bytes")
    return place(key, data_root, zip_bytes(merged))


# ------------------------------------------------------------------------------------------------------------------
# COCO 2017 (group coco-train2017)
# ------------------------------------------------------------------------------------------------------------------
COCO_LIKE_CAPTIONS = (
    "A woman standing behind a fence looking at an elephant.",
    "A red fire hydrant on a city sidewalk.",
    "A large brown dog and a small white cat on the green grass.",
    "A young boy riding a red bike down the street.",
    "A black cat sleeping on a wooden chair.",
    "An old man holding a blue umbrella in the rain.",
    "A lamp to the left of a table.",
    "A tall man and a little girl walking on the beach.",
    "A dog and a cat on a sofa.",
    "Two adult bears play fight in the water.",
    "A small bird sitting on a thin branch.",
    "A white plate and a silver fork on a wooden table.",
)
"""COCO-style captions (written here; no COCO train caption is mirrored) that the CREPE-style generators and the
hard-positive rules can edit: REPLACE words, "and" and spatial relations to SWAP."""
COCO_CAPTIONS_FILE = "annotations/captions_train2017.json"
COCO_TRAIN_IMAGES = "train2017"


def coco_file_name(image_id: int) -> str:
    return f"{image_id:012d}.jpg"


def coco_images(images: int) -> list[dict]:
    """COCO ``images`` records: ids 1..``images``, file names as COCO's."""
    return [{"id": k + 1, "file_name": coco_file_name(k + 1)} for k in range(images)]


def coco_captions(images: int = 12, captions: Sequence[str] = COCO_LIKE_CAPTIONS, per_image: int = 2) -> dict:
    """A COCO captions record (``{"images", "annotations"}``): image k (id k + 1) has captions k, k + 5, k + 10, ...
    (mod the list), the second and later ending with a newline as some of COCO's do (whitespace is collapsed)."""
    annotations = [{"id": 100 + per_image * k + j, "image_id": k + 1,
                    "caption": captions[(k + 5 * j) % len(captions)] + ("\n" if j else "")}
                   for k in range(images) for j in range(per_image)]
    return {"images": coco_images(images), "annotations": annotations}


def coco_image_bytes(image_id: int) -> bytes:
    """The stand-in of COCO image ``image_id``: 56 x 40 random pixels."""
    return image_bytes(image_id - 1, (56, 40))


def write_coco_folder(root: Path, record: dict) -> tuple[Path, Path]:
    """A captions file and its images as extracted folders; returns (captions file, image folder)."""
    image_dir = Path(root) / COCO_TRAIN_IMAGES
    image_dir.mkdir(parents=True, exist_ok=True)
    for image in record["images"]:
        (image_dir / image["file_name"]).write_bytes(coco_image_bytes(image["id"]))
    path = Path(root) / "captions_train2017.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    return path, image_dir


def coco_train2017(data_root: Path, record: dict) -> list[str]:
    """COCO 2017's annotation and train image zips holding ``record`` and its images; returns their keys."""
    keys = ["coco/annotations_trainval2017.zip", "coco/train2017.zip"]
    place_zip(keys[0], data_root, {COCO_CAPTIONS_FILE: json.dumps(record).encode("utf-8")})
    place_zip(keys[1], data_root, {f"{COCO_TRAIN_IMAGES}/{image['file_name']}": coco_image_bytes(image["id"])
                                   for image in record["images"]})
    return keys


# ------------------------------------------------------------------------------------------------------------------
# COCO's image zips, as images.cocodataset.org/zips/<split>.zip (val2017: SugarCrepe's JSON names them; train2014 and
# val2014: NegCLIP's TSVs)
# ------------------------------------------------------------------------------------------------------------------
COCO_2014_SPLITS = ("train2014", "val2014")


def coco_val2017(data_root: Path, file_names: Iterable[str]) -> str:
    """COCO val2017's image zip holding a stand-in for every file named (and those of earlier calls); returns its
    registry key."""
    return _coco_zip(data_root, "val2017", file_names, "", ".jpg", STANDIN_IMAGE_SIZE)


def coco2014_file_name(split: str, image_id: int) -> str:
    """COCO 2014's file name of an image (``COCO_val2014_000000391895.jpg``)."""
    if split not in COCO_2014_SPLITS:
        raise StandInError(f"COCO 2014 split {split!r}: one of {COCO_2014_SPLITS}")
    return f"COCO_{split}_{image_id:012d}.jpg"


def coco2014_images(data_root: Path, split: str, file_names: Iterable[str]) -> str:
    """COCO 2014's image zip of ``split`` holding a stand-in for every file named (and those of earlier calls);
    returns its registry key."""
    if split not in COCO_2014_SPLITS:
        raise StandInError(f"COCO 2014 split {split!r}: one of {COCO_2014_SPLITS}")
    return _coco_zip(data_root, split, file_names, f"COCO_{split}_", "", (40, 32))


def _coco_zip(data_root: Path, split: str, file_names: Iterable[str], prefix: str, suffix: str,
              size: tuple[int, int]) -> str:
    members = {}
    for name in file_names:
        if PurePosixPath(name).name != name or not (name.startswith(prefix) and name.endswith(suffix)):
            raise StandInError(f"{name!r} is not a COCO {split} file name ({prefix}<id:012d>.jpg)")
        members[f"{split}/{name}"] = image_bytes(name_seed(name), size)
    place_zip(f"coco/{split}.zip", data_root, members)
    return f"coco/{split}.zip"


# ------------------------------------------------------------------------------------------------------------------
# Visual Genome's images (group visual-genome) and ARO's image zip (aro/vgr_vga_images.zip)
# ------------------------------------------------------------------------------------------------------------------
def visual_genome_images(data_root: Path, image_paths: Iterable[str]) -> list[str]:
    """Visual Genome's two image zips holding a stand-in for every ``[data/]VG_100K[_2]/<file>`` named (as
    VL-CheckList-based files name them); returns their registry keys."""
    # deferred: loads PIL, torch only when called
    from common.files.visual_genome import VG_IMAGE_SOURCES

    members: dict[str, set[str]] = {folder: set() for folder in VG_IMAGE_SOURCES}
    for image_path in image_paths:
        parts = PurePosixPath(image_path).parts
        if len(parts) < 2 or parts[-2] not in members or parts[:-2] not in ((), ("data",)):
            raise StandInError(f"image path {image_path!r} is not [data/]<folder>/<file> with <folder> one of "
                               f"{sorted(members)}")
        members[parts[-2]].add(f"{parts[-2]}/{parts[-1]}")
    for folder, files in members.items():
        place_zip(VG_IMAGE_SOURCES[folder], data_root, {name: image_bytes(name_seed(name)) for name in files})
    return list(VG_IMAGE_SOURCES.values())


ARO_IMAGES = "aro/vgr_vga_images.zip"


def aro_images(data_root: Path, sizes: Mapping[str, tuple[int, int]]) -> str:
    """ARO's image zip (``images/<image_path>``) holding a stand-in of each named size (large enough for every box
    of the records that name it); returns its registry key."""
    place_zip(ARO_IMAGES, data_root, {f"images/{name}": image_bytes(name_seed(name), size)
                                      for name, size in sizes.items()})
    return ARO_IMAGES


def vg_record(image: str, box: Sequence[float], caption: str, negative: str, **fields: Any) -> dict:
    """A record of ARO's VG-Relation or VG-Attribution file; ``fields``: the relation's, or the attribute pair."""
    return {"image_id": PurePosixPath(image).stem, "image_path": image, "bbox_x": box[0], "bbox_y": box[1],
            "bbox_w": box[2], "bbox_h": box[3], "true_caption": caption, "false_caption": negative, **fields}


def vg_files(data_root: Path, files: Mapping[str, Sequence[Mapping]]) -> None:
    """Files of ``vg_record``s at their registry keys, and ARO's image zip holding their images."""
    for key, records in files.items():
        place_json(key, data_root, records)
    aro_images(data_root, box_sizes(record for records in files.values() for record in records))


def box_sizes(records: Iterable[Mapping]) -> dict[str, tuple[int, int]]:
    """Per ``image_path`` of VG-Relation/Attribution-style records, the smallest image holding every box (at least
    ``STANDIN_IMAGE_SIZE``)."""
    sizes: dict[str, tuple[int, int]] = {}
    for r in records:
        w, h = sizes.get(r["image_path"], STANDIN_IMAGE_SIZE)
        sizes[r["image_path"]] = (max(w, math.ceil(r["bbox_x"] + r["bbox_w"]) + 1),
                                  max(h, math.ceil(r["bbox_y"] + r["bbox_h"]) + 1))
    return sizes


# ------------------------------------------------------------------------------------------------------------------
# Karpathy splits as BLIP releases them and the Flickr30k images (a manual source: a folder)
# ------------------------------------------------------------------------------------------------------------------
FLICKR30K_IMAGES = "flickr30k/flickr30k-images"


def karpathy_split(key: str, data_root: Path, records: Mapping[str, Sequence[str]]) -> Path:
    """BLIP's Karpathy test/val file: one ``{"image": <path>, "caption": [captions]}`` per image."""
    return place_json(key, data_root, [{"image": image, "caption": list(captions)}
                                       for image, captions in records.items()])


def flickr30k_images(data_root: Path, file_names: Iterable[str]) -> Path:
    """The Flickr30k images folder (a manual source: the images lie directly in it) with a stand-in per name."""
    files = {}
    for name in file_names:
        if PurePosixPath(name).name != name:
            raise StandInError(f"{name!r}: Flickr30k's images lie directly in {FLICKR30K_IMAGES}")
        files[name] = image_bytes(name_seed(name), (40, 32))
    return place_folder(FLICKR30K_IMAGES, data_root, files)


# ------------------------------------------------------------------------------------------------------------------
# NegCLIP's TSVs: valid is pinned (real, from the mirror), train is not (a stand-in in the same format)
# ------------------------------------------------------------------------------------------------------------------
NEGCLIP_TRAIN = "aro/negclip/train_neg_clip.tsv"
NEGCLIP_VALID = "aro/negclip/valid_neg_clip.tsv"
NEGCLIP_COLUMNS = ("", "title", "filepath", "neg_caption", "neg_image")
"""As released (pandas' ``to_csv(sep="\\t")``): an unnamed index column, the caption, ``coco/<split>/<file>``, the
negative captions and the nearest-image rows as Python list literals."""


def negclip_tsv_bytes(rows: Sequence[tuple[str, str, Sequence[str], Sequence[int]]]) -> bytes:
    """NegCLIP's TSV of ``rows`` (caption, filepath, negative captions, neighbour row indices), indexed 0, 1, ..."""
    out = io.StringIO()
    writer = csv.writer(out, delimiter="\t", lineterminator="\n")
    writer.writerow(NEGCLIP_COLUMNS)
    for index, (caption, filepath, negatives, neighbours) in enumerate(rows):
        writer.writerow([index, caption, filepath, repr(list(negatives)), repr([int(n) for n in neighbours])])
    return out.getvalue().encode("utf-8")


NEGCLIP_TRAIN_ROWS = 24
"""Released validation rows (one image each) that become the stand-in training TSV's rows: enough that SugarCrepe's
Algorithm 1 keeps a batch of every negative kind it generates from them (``negclip-full-refine``), while the fine-tunes
on them stop after ``ceil(cap / batch)`` steps (``max_steps``, ``tests.rehearsal.params.fine_tune_steps``)."""


def negclip_train_rows(valid: Sequence[Any], twin_of: str,
                       rows: int = NEGCLIP_TRAIN_ROWS) -> list[tuple[str, str, list[str], list[int]]]:
    """The first ``rows`` released validation rows (real captions and negatives) moved to train2014 stand-in files,
    then the first row again on the train2014 twin of ``twin_of`` (a COCO val2017 file name: the real TSV holds
    SugarCrepe test images, which ``negclip-full-set`` must drop). Each row's neighbours are the next three rows."""
    files: dict[str, str] = {}
    chosen: list[tuple[str, str, list[str]]] = []
    for row in valid:
        if row.filepath not in files:
            if len(files) == rows:
                break
            files[row.filepath] = coco2014_file_name("train2014", 1 + len(files))
        chosen.append((row.title, f"coco/train2014/{files[row.filepath]}", list(row.negatives)))
    twin = coco2014_file_name("train2014", int(PurePosixPath(twin_of).stem))
    chosen.append((chosen[0][0], f"coco/train2014/{twin}", chosen[0][2]))
    n = len(chosen)
    return [(caption, file, negatives, [(i + k) % n for k in (1, 2, 3)])
            for i, (caption, file, negatives) in enumerate(chosen)]


def negclip_train_tsv(data_root: Path, fetch: Callable[[str], Path]) -> list[str]:
    """The stand-in of NegCLIP's ``train_neg_clip.tsv`` and its images, from the pinned validation TSV and
    SugarCrepe's first test image (both real, ``fetch``ed): one writer, so ARO and SugarCrepe write the same bytes,
    whichever prepares last. Returns the registry keys."""
    valid = read_negclip_tsv(fetch(NEGCLIP_VALID))
    first_test = next(iter(read_category(fetch(released_file_key(CATEGORIES[0]))).values()))["filename"]
    train = place(NEGCLIP_TRAIN, data_root, negclip_tsv_bytes(negclip_train_rows(valid, first_test)))
    return [NEGCLIP_TRAIN, *negclip_tsv_images(data_root, train)]


def negclip_tsv_files(path: Path) -> list[str]:
    """The ``filepath`` column of a NegCLIP TSV (``coco/<split>/<file>``), each file once, in order."""
    with open(path, newline="", encoding="utf-8") as fh:
        return list(dict.fromkeys(row["filepath"] for row in csv.DictReader(fh, delimiter="\t")))


def negclip_tsv_images(data_root: Path, path: Path) -> list[str]:
    """COCO 2014 image zips holding a stand-in for every image a NegCLIP TSV names; returns their registry keys."""
    by_split: dict[str, list[str]] = {}
    for filepath in negclip_tsv_files(path):
        parts = PurePosixPath(filepath).parts
        if len(parts) < 2 or parts[-2] not in COCO_2014_SPLITS:
            raise StandInError(f"{path}: filepath {filepath!r} is not coco/<train2014|val2014>/<file>")
        by_split.setdefault(parts[-2], []).append(parts[-1])
    return [coco2014_images(data_root, split, names) for split, names in by_split.items()]


# ------------------------------------------------------------------------------------------------------------------
# CIFAR-10 / CIFAR-100 binary tarballs (aro/cifar/cifar-{10,100}-binary.tar.gz, group aro-cifar)
# ------------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CifarBinaryLayout:
    """One binary tarball's members, as https://www.cs.toronto.edu/~kriz/cifar.html ships them."""

    folder: str
    train: tuple[str, ...]
    test: str
    names: tuple[str, ...]
    """Label-name files, one name a line: one per label byte (CIFAR-100: coarse, then fine)."""
    label_bytes: int


CIFAR_BINARY = {
    "cifar-10": CifarBinaryLayout("cifar-10-batches-bin", tuple(f"data_batch_{k}.bin" for k in range(1, 6)),
                                  "test_batch.bin", ("batches.meta.txt",), 1),
    "cifar-100": CifarBinaryLayout("cifar-100-binary", ("train.bin",), "test.bin",
                                   ("coarse_label_names.txt", "fine_label_names.txt"), 2),
}
CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
CIFAR100_COARSE = ("aquatic_mammals", "fish", "flowers", "food_containers")
CIFAR100_FINE = ("apple", "aquarium_fish", "baby", "bear")
"""The first of CIFAR-100's 20 coarse and 100 fine label names (a stand-in keeps a few classes: every class is a
prompt set each model encodes)."""


def cifar_binary_tarball(key: str, data_root: Path, variant: str, labels: Sequence[int],
                         names: Sequence[Sequence[str]], seed: int = 0) -> Path:
    """A CIFAR binary tarball in the released layout: fixed-length records (label byte(s), then 3 x 1,024 pixel
    bytes), ``labels`` in the test batch, two records per train batch, ``names`` one list per label-name file."""
    layout = CIFAR_BINARY[variant]
    if len(names) != len(layout.names):
        raise StandInError(f"{variant}: {len(layout.names)} label-name lists ({', '.join(layout.names)}), got "
                           f"{len(names)}")
    fine = len(names[-1])
    rng = np.random.default_rng(seed)

    def records(values: Sequence[int]) -> bytes:
        out = bytearray()
        for label in values:
            if not 0 <= label < fine:
                raise StandInError(f"{variant}: label {label} outside the {fine} names given")
            out += bytes([label % len(names[0])] * (layout.label_bytes - 1) + [label])
            out += rng.integers(0, 256, 3 * 32 * 32, dtype=np.uint8).tobytes()
        return bytes(out)

    members = {f"{layout.folder}/{batch}": records([k % fine for k in range(2)]) for batch in layout.train}
    members[f"{layout.folder}/{layout.test}"] = records(labels)
    for file, values in zip(layout.names, names):
        members[f"{layout.folder}/{file}"] = ("\n".join(values) + "\n\n").encode("utf-8")
    return place(key, data_root, tar_gz(members))


# ------------------------------------------------------------------------------------------------------------------
# Hugging Face snapshots (methods hf_dataset, hf_model) and the downloader's snapshot marker
# ------------------------------------------------------------------------------------------------------------------
def snapshot_folder(data_root: Path, key: str) -> Path:
    """Where the downloader keeps the Hugging Face snapshot of registry entry ``key`` under ``data_root``."""
    source = get_source(key)
    if source.method not in ("hf_model", "hf_dataset"):
        raise StandInError(f"{key}: not a Hugging Face snapshot in the registry (method {source.method})")
    return source.dest_path(Path(data_root))


def mark_snapshot(data_root: Path, key: str) -> Path:
    """The downloader's snapshot marker in ``key``'s folder, so a fetch returns it offline as a real snapshot."""
    source = get_source(key)
    marker = snapshot_folder(data_root, key) / SNAPSHOT_MARKER
    write_json_atomic(marker, {"repo_id": source.repo_id, "repo_type": source.repo_type, "revision": source.revision,
                               "allow_patterns": list(source.allow_patterns),
                               "completed": dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc).isoformat()})
    return marker


HF_IMAGE = "image"
"""A column kind of ``hf_dataset_snapshot``: a ``datasets.Image`` feature, stored as a struct {bytes, path}."""
HF_STRING = "string"


def hf_image(data: bytes, path: str | None = None) -> dict:
    """An ``Image`` cell as ``datasets`` writes one into parquet: the encoded bytes and the source file's name."""
    return {"bytes": data, "path": path}


def hf_dataset_snapshot(key: str, data_root: Path, splits: Mapping[str, Sequence[Mapping]],
                        columns: Mapping[str, str], shards: int = 1) -> Path:
    """The Hugging Face dataset snapshot of ``key`` under ``data_root``, replacing one already there: per split,
    ``shards`` parquet files as the hub holds them, ``columns`` (name -> ``HF_IMAGE`` or ``HF_STRING``) with the
    schema metadata ``datasets`` writes, then the downloader's marker; returns the folder."""
    # deferred: loads pyarrow only when called
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = get_source(key)
    if source.method != "hf_dataset":
        raise StandInError(f"{key}: not a Hugging Face dataset in the registry (method {source.method})")
    unknown = {name: kind for name, kind in columns.items() if kind not in (HF_IMAGE, HF_STRING)}
    if unknown:
        raise StandInError(f"{key}: column kinds must be {HF_IMAGE!r} or {HF_STRING!r}, got {unknown}")
    image = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    features = {name: {"_type": "Image"} if kind == HF_IMAGE else {"dtype": "string", "_type": "Value"}
                for name, kind in columns.items()}
    schema = pa.schema([(name, image if kind == HF_IMAGE else pa.string()) for name, kind in columns.items()],
                       metadata={"huggingface": json.dumps({"info": {"features": features}})})
    folder = standin_dest(key, data_root)
    if folder.exists():
        shutil.rmtree(folder)
    (folder / "data").mkdir(parents=True)
    for split, rows in splits.items():
        for row in rows:
            if set(row) != set(columns):
                raise StandInError(f"{key}: a {split} row has columns {sorted(row)}, the snapshot {sorted(columns)}")
        n = max(1, min(shards, len(rows)))
        cuts = [round(k * len(rows) / n) for k in range(n + 1)]
        for k in range(n):
            table = pa.Table.from_pylist(list(rows[cuts[k]:cuts[k + 1]]), schema=schema)
            pq.write_table(table, folder / "data" / f"{split}-{k:05d}-of-{n:05d}.parquet")
    mark_snapshot(data_root, key)
    return folder
