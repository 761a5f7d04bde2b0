"""CoN-CLIP in the rehearsal (``tests.rehearsal``): this paper's stand-ins, models and shrinking.

What the full stages read, and what the rehearsal puts there (every source here is unpinned: no sha256 is published,
the downloader trusts the first copy, so each is a stand-in in the released format at the registry's destination):

* CC-Neg (manual): ``ccneg_preprocessed.pt`` in the layout this workspace reads (``papers.conclip.ccneg``:
  ``image_paths`` on the authors' machine and ``annotations`` with ``json.caption`` and ``sop_data``, as the authors'
  loaders read them, jaisidhsingh/CoN-CLIP@503388ac src/data/evaluation_datasets.py:18-19 "self.annotations = data["),
  its JPEG folder and ``distractor_image_mapping.pt`` (top-k lists of COCO train 2017 pool indices, one per entry). In
  a rehearsal the evaluation split is the file's last ``full_inputs.cap`` entries.
* COCO 2017's captions and train images (the distractor pool): the shared stand-in zips, DVC's data deps.
* The zero-shot sets (``papers.conclip.zeroshot_full.DATASETS``), each in the files torchvision reads, at its
  registry destination, with a few classes and images; the copy's registry states the stand-ins' md5s and ``params``
  ImageNet's class count, which ``zeroshot_full`` checks as it checks the published ones.
* Models: ``KEPT_ROWS``, the released CoN-CLIP ViT-B/32 in its release layout (``CHECKPOINT_LAYOUTS``).
"""
from __future__ import annotations

import io
import json
import pickle
from pathlib import Path
from typing import Any, Callable

import numpy as np

from papers.conclip import ccneg
from tests.rehearsal import standins
from tests.rehearsal.models import needing_standins
from tests.rehearsal.standins import image_bytes, name_seed, place, tar_gz, zip_bytes

CHECKPOINT_LAYOUTS = {"conclip/conclip-vit-b32": "model", "conclip/conclip-vit-b16": "model",
                      "conclip/conclip-vit-l14": "model", "conclip/laclip-laion400m-vit-b32": "state_dict"}
"""The release layout of this paper's ``data:`` checkpoints: CoN-CLIP's OpenAI-``clip`` training dicts
(``{"model": ...}``, sources.toml), LaCLIP's open_clip ``{"state_dict": {"module.": ...}}``."""
KEPT_ROWS = ("clip", "conclip", "ft-conclip", "ft-l1", "ft-l2", "ft-l1-l2", "ft-crepe-negate-l1")
"""The rows of ``conclip.full.models`` the rehearsal scores: CLIP (the base), the released CoN-CLIP ViT-B/32 (a
``data:`` checkpoint in its release layout) and the five fine-tunes (Table 6's rows: table6-full needs every one).
Left out: NegCLIP, BLIP, FLAVA, LaCLIP, the ViT-B/16 and ViT-L/14 rows (other architectures, minutes each on a CPU)."""

AUTHORS_IMAGES = "/workspace/datasets/cc3m/ccneg_images/cc3m_subset_images_extracted_final"
"""The absolute folder of the stand-in's ``image_paths``: the one the authors' loader can read. It swaps the prefix
``/workspace/datasets/cc3m/`` for the configured root, jaisidhsingh/CoN-CLIP@503388ac
src/data/evaluation_datasets.py:18 "self.image_paths = [path.replace(", whose folder holds ``ccneg_preprocessed.pt``,
jaisidhsingh/CoN-CLIP@503388ac src/configs/__init__.py:9 "{configs.ccneg_root_folder}/ccneg_preprocessed.pt", and
the extracted ``ccneg_images/cc3m_subset_images_extracted_final`` (jaisidhsingh/CoN-CLIP@503388ac
ccneg_dataset/README.md:5 "Verify that the structure of the `ccneg_images` folder becomes"), as the data root's
``ccneg/`` does; so the released paths must read
``/workspace/datasets/cc3m/ccneg_images/cc3m_subset_images_extracted_final/<name>`` (inferred: the real file's prefix
is not published). A path outside that prefix (the earlier ``/raid/...`` guess) is left as it is and the authors'
``Image.open`` fails (papers/conclip/oracle.py). This workspace's reader resolves each path by its file name either
way."""
CCNEG_ROWS = (  # (caption, subject, [(predicate, object)], negated object, word)
    ("A dog running on the grass.", "a dog", [("running on", "grass")], "ball", "no"),
    ("A woman holding an umbrella in the rain.", "a woman", [("holding", "umbrella"), ("in", "rain")], "hat", "not"),
    ("A red car parked near a building.", "a red car", [("parked near", "building")], "tree", "without"),
    ("Two children playing with a kite on the beach.", "two children", [("playing with", "kite"), ("on", "beach")],
     "dog", "no"),
    ("A plate of food on a wooden table.", "a plate of food", [("on", "wooden table")], "fork", "without"),
    ("A man riding a bicycle down the street.", "a man", [("riding", "bicycle"), ("down", "street")], "helmet",
     "not"),
    ("A cat sleeping on a sofa next to a pillow.", "a cat", [("sleeping on", "sofa"), ("next to", "pillow"),
                                                             ("near", "window")], "blanket", "without"),
    ("A bird sitting on a branch.", "a bird", [("sitting on", "branch")], "leaf", "not"),
)
"""CC-Neg-style entries (cycled): CC3M-like captions with their parse (subject, predicate-object pairs), the object
the negation adds and the negation word."""
CCNEG_ENTRIES = 24
"""Entries of the stand-in file: the evaluation split is its last ``full_inputs.cap``, the rest train."""
MAPPING_KEY = "conclip/ccneg/distractor_image_mapping.pt"
POOL_IMAGES = 12
"""COCO train 2017 stand-in images (the distractor pool; the shared writer's default, as hard positives')."""


def ccneg_annotation(index: int) -> dict:
    """Entry ``index``'s annotation as released: the caption, its negation and the parse eq. 4 mines with."""
    caption, subject, pairs, negated_object, word = CCNEG_ROWS[index % len(CCNEG_ROWS)]
    positive = caption.rstrip(".")
    negative = {"no": f"{positive}, with no {negated_object}.", "not": f"{positive}, but not a {negated_object}.",
                "without": f"{positive} without a {negated_object}."}[word]
    return {"json": {"caption": caption, "key": f"{index:09d}"},
            "sop_data": {"negative-prompt": negative, "exclusion-prompt": subject,
                         "sop_chosen_object": negated_object,
                         "sop_decomposition": {"subject": subject, "object-predicate-pairs": [
                             {"predicate": p, "object": o} for p, o in pairs]}}}


def ccneg_image_name(index: int) -> str:
    return f"{index:09d}.jpg"


def ccneg_record(entries: int = CCNEG_ENTRIES) -> dict:
    """``ccneg_preprocessed.pt``'s dict (``num_ops``: K -> ascending indices)."""
    annotations = [ccneg_annotation(i) for i in range(entries)]
    num_ops: dict[int, list[int]] = {}
    for i, a in enumerate(annotations):
        num_ops.setdefault(len(a["sop_data"]["sop_decomposition"]["object-predicate-pairs"]), []).append(i)
    return {"image_paths": [f"{AUTHORS_IMAGES}/{ccneg_image_name(i)}" for i in range(entries)],
            "annotations": annotations, "num_ops": dict(sorted(num_ops.items()))}


def torch_bytes(value: Any) -> bytes:
    # deferred: loads torch only when called
    import torch

    out = io.BytesIO()
    torch.save(value, out)
    return out.getvalue()


def write_ccneg(data_root: Path, entries: int = CCNEG_ENTRIES, pool: int = POOL_IMAGES) -> None:
    """CC-Neg's three registry entries as stand-ins: the .pt file, its JPEG folder, the distractor mapping."""
    standins.place(ccneg.DATA_KEY, data_root, torch_bytes(ccneg_record(entries)))
    standins.place_folder(ccneg.IMAGES_KEY, data_root, {f"{ccneg.IMAGES_SUBFOLDER}/{ccneg_image_name(i)}":
                                                        _jpeg(ccneg_image_name(i)) for i in range(entries)})
    standins.place(MAPPING_KEY, data_root, torch_bytes([[(7 * i + 3) % pool] for i in range(entries)]))


# ------------------------------------------------------------------------------------------------------------------
# The zero-shot sets, in the files torchvision reads
# ------------------------------------------------------------------------------------------------------------------
def mat_bytes(value: dict) -> bytes:
    # deferred: loads scipy only when called
    from scipy.io import savemat

    out = io.BytesIO()
    savemat(out, value)
    return out.getvalue()


def _pickle(value: dict) -> bytes:
    return pickle.dumps(value, protocol=2)  # CIFAR's python version: Python 2 pickles


def _jpeg(name: str) -> bytes:
    return image_bytes(name_seed(name))


def _pixels(n: int, seed: int):
    return np.random.default_rng(seed).integers(0, 256, (n, 3072), dtype=np.uint8)


def cifar10_members(per_batch: int = 3) -> dict[str, bytes]:
    """cifar-10-batches-py/: five data batches, the test batch and batches.meta (what torchvision's CIFAR10 reads)."""
    names = ["airplane", "automobile", "bird"]
    members = {}
    for k, batch in enumerate([*(f"data_batch_{i}" for i in range(1, 6)), "test_batch"]):
        labels = [j % len(names) for j in range(per_batch)]
        members[f"cifar-10-batches-py/{batch}"] = _pickle({
            "batch_label": f"{batch} stand-in", "labels": labels, "data": _pixels(per_batch, 10 + k),
            "filenames": [f"{batch}_{j}.png" for j in range(per_batch)]})
    members["cifar-10-batches-py/batches.meta"] = _pickle({"num_cases_per_batch": per_batch, "label_names": names,
                                                           "num_vis": 3072})
    return members


def cifar100_members(n: int = 3) -> dict[str, bytes]:
    """cifar-100-python/: train, test and meta (fine and coarse label names)."""
    fine, coarse = ["apple", "aquarium_fish", "baby"], ["fruit_and_vegetables", "fish", "people"]
    members = {}
    for k, split in enumerate(("train", "test")):
        labels = [j % len(fine) for j in range(n)]
        members[f"cifar-100-python/{split}"] = _pickle({
            "filenames": [f"{split}_{j}.png" for j in range(n)], "batch_label": f"{split} stand-in",
            "fine_labels": labels, "coarse_labels": labels, "data": _pixels(n, 20 + k)})
    members["cifar-100-python/meta"] = _pickle({"fine_label_names": fine, "coarse_label_names": coarse})
    return members


def caltech_zip() -> bytes:
    """caltech-101.zip: ``caltech-101/101_ObjectCategories.tar.gz`` (category folders, BACKGROUND_Google among them,
    which torchvision leaves out)."""
    counts = {"BACKGROUND_Google": 1, "Faces_easy": 2, "car_side": 1, "yin_yang": 1}
    inner = tar_gz({f"101_ObjectCategories/{c}/image_{i:04d}.jpg": _jpeg(f"caltech/{c}/{i}")
                    for c, n in counts.items() for i in range(1, n + 1)})
    return zip_bytes({"caltech-101/101_ObjectCategories.tar.gz": inner})


FLOWER_LABELS = (1, 2, 3, 1, 2, 3)
"""1-based class of image_00001.jpg ... (102 classes in torchvision's list; a few used)."""


def flowers_files() -> dict[str, bytes]:
    """102flowers.tgz (``jpg/image_0000k.jpg``), imagelabels.mat (``labels``), setid.mat (``trnid``, ``valid``,
    ``tstid``)."""
    n = len(FLOWER_LABELS)
    return {"102flowers.tgz": tar_gz({f"jpg/image_{k:05d}.jpg": _jpeg(f"flowers/{k}") for k in range(1, n + 1)}),
            "imagelabels.mat": mat_bytes({"labels": np.array([FLOWER_LABELS], dtype=np.uint8)}),
            "setid.mat": mat_bytes({"trnid": np.array([[1]], dtype=np.uint16), "valid": np.array([[2]], dtype=np.uint16),
                                    "tstid": np.array([list(range(3, n + 1))], dtype=np.uint16)})}


def food_members() -> dict[str, bytes]:
    """food-101/: ``images/<class>/<id>.jpg`` and ``meta/{train,test}.json``, ``classes.txt``, ``labels.txt``."""
    splits = {"train": {"apple_pie": ["apple_pie/1001"], "ramen": ["ramen/2001"]},
              "test": {"apple_pie": ["apple_pie/1002", "apple_pie/1003"], "ramen": ["ramen/2002"]}}
    members = {f"food-101/images/{rel}.jpg": _jpeg(f"food/{rel}") for split in splits.values()
               for rels in split.values() for rel in rels}
    for split, meta in splits.items():
        members[f"food-101/meta/{split}.json"] = json.dumps(meta).encode()
        members[f"food-101/meta/{split}.txt"] = "".join(f"{r}\n" for rels in meta.values() for r in rels).encode()
    members["food-101/meta/classes.txt"] = b"apple_pie\nramen\n"
    members["food-101/meta/labels.txt"] = b"Apple pie\nRamen\n"
    return members


PETS = (("Abyssinian_1", 1, 1), ("american_bulldog_3", 2, 2), ("Bengal_2", 3, 1), ("Abyssinian_7", 1, 1))
"""Oxford Pets' test list rows: image id, class id (1-based), species (1 cat, 2 dog)."""


def pets_archives() -> dict[str, bytes]:
    """images.tar.gz (``images/<id>.jpg``) and annotations.tar.gz (``annotations/{test,trainval,list}.txt``)."""
    lines = "".join(f"{i} {c} {s} 1\n" for i, c, s in PETS).encode()
    return {"images.tar.gz": tar_gz({f"images/{i}.jpg": _jpeg(f"pets/{i}") for i, _, _ in PETS}),
            "annotations.tar.gz": tar_gz({"annotations/test.txt": lines, "annotations/trainval.txt": lines,
                                          "annotations/list.txt": b"#Image CLASS-ID SPECIES BREED ID\n" + lines})}


CARS = ("AM General Hummer SUV 2000", "Acura RL Sedan 2012", "Audi R8 Coupe 2012")
CAR_CLASSES = (2, 1, 3, 3)
"""1-based class of cars_test/00001.jpg ..."""


def cars_files() -> dict[str, bytes]:
    """The folder the registry's steps rebuild: ``devkit/cars_meta.mat``, ``cars_test_annos_withlabels.mat``,
    ``cars_test/<5 digits>.jpg``."""
    annotations = np.array([(1, 1, 20, 20, c, f"{k:05d}.jpg") for k, c in enumerate(CAR_CLASSES, 1)],
                           dtype=[("bbox_x1", object), ("bbox_y1", object), ("bbox_x2", object), ("bbox_y2", object),
                                  ("class", object), ("fname", object)])
    files = {"devkit/cars_meta.mat": mat_bytes({"class_names": np.array([list(CARS)], dtype=object)}),
             "cars_test_annos_withlabels.mat": mat_bytes({"annotations": annotations[None, :]})}
    files.update({f"cars_test/{k:05d}.jpg": _jpeg(f"cars/{k}") for k in range(1, len(CAR_CLASSES) + 1)})
    return files


IMAGENET_WNIDS = ("n01440764", "n01443537", "n01484850")
"""ImageNet-1k's first three WordNet ids in sorted order (tench, goldfish, great white shark: OpenAI's first names)."""


def imagenet_files(per_class: int = 2) -> dict[str, bytes]:
    """``val/<wnid>/ILSVRC2012_val_<8 digits>.JPEG``, as torchvision's ImageNet lays out the val archive."""
    files, k = {}, 0
    for wnid in IMAGENET_WNIDS:
        for _ in range(per_class):
            k += 1
            files[f"{wnid}/ILSVRC2012_val_{k:08d}.JPEG"] = _jpeg(f"imagenet/{k}")
    return files


def write_zeroshot(data_root: Path) -> None:
    """Every dataset of ``zeroshot_full.DATASETS`` at its registry entries' destinations."""
    def key(path: str) -> str:
        return f"conclip/zeroshot/{path}"

    place(key("cifar10/cifar-10-python.tar.gz"), data_root, tar_gz(cifar10_members()))
    place(key("cifar100/cifar-100-python.tar.gz"), data_root, tar_gz(cifar100_members()))
    place(key("caltech101/caltech-101.zip"), data_root, caltech_zip())
    for name, data in flowers_files().items():
        place(key(f"flowers102/flowers-102/{name}"), data_root, data)
    place(key("food101/food-101.tar.gz"), data_root, tar_gz(food_members()))
    for name, data in pets_archives().items():
        place(key(f"oxford_pets/oxford-iiit-pet/{name}"), data_root, data)
    standins.place_folder(key("stanford_cars/stanford_cars"), data_root, cars_files())
    standins.place_folder(key("imagenet/val"), data_root, imagenet_files())


def params(params: dict[str, Any]) -> None:
    """The models and SugarCrepe rows cut to ``KEPT_ROWS``; ImageNet's class count the stand-in's."""
    full = params["conclip"]["full"]
    full["zeroshot_classes"] = {**full["zeroshot_classes"], "imagenet": len(IMAGENET_WNIDS)}
    full["models"] = {row: name for row, name in full["models"].items() if row in KEPT_ROWS}
    full["sugarcrepe_rows"] = [row for row in full["sugarcrepe_rows"] if row in KEPT_ROWS]


def models(params: dict[str, Any]) -> list[str]:
    full = params["conclip"]["full"]
    return needing_standins([full["finetune"]["base"], full["distractors"]["model"], *full["models"].values()])


def prepare(data_root: Path, fetch: Callable[[str], Path]) -> list[str]:
    """CC-Neg's entries are manual, so already where the stages read them: only COCO 2017's zips to fetch."""
    write_ccneg(Path(data_root))
    write_zeroshot(Path(data_root))
    return standins.coco_train2017(data_root, standins.coco_captions(images=POOL_IMAGES))
