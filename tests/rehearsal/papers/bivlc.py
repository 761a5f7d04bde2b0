"""BiVLC in the rehearsal (``tests.rehearsal``): this paper's stand-ins, models and shrinking.

What the full stages read, and what the rehearsal puts there:

* ``tables-full``: a stand-in Hugging Face snapshot of ``imirandam/BiVLC`` (unpinned) whose text is the real
  benchmark's: the first ``PER_CATEGORY`` instances of each category of the authors' released per-instance results
  (pinned, from the mirror), each image a stand-in under the COCO file name the released negative-image list gives
  its caption. ``params`` states the stand-in's size, which the stage checks as it checks the released 2,933.
* ``finetune-full-set@*``: COCO 2017's captions and train images (stand-in zips; DVC data deps) and TROHN-Text /
  TROHN-Img (unpinned) as stand-in snapshots whose rows name those COCO images.
* Models: the base and the released fine-tune ``bivlc/clip-trohn-img`` (``CHECKPOINT_LAYOUTS``); the released CLIPDet
  heads in the authors' layout, their saved towers those of the base's stand-in (``released_heads``).
"""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Any, Callable

from common.files.io import atomic_path
from common.paths import ROOT
from common.pipeline.params import read_params
from papers.bivlc.sets_full import HF_SOURCES
from tests.rehearsal import standins
from tests.rehearsal.models import needing_standins, pretrained_state
from tests.rehearsal.standins import COCO_LIKE_CAPTIONS, coco_file_name, hf_image, image_bytes, name_seed

CHECKPOINT_LAYOUTS = {"bivlc/clip-coco": "model_state_dict", "bivlc/clip-trohn-text": "model_state_dict",
                      "bivlc/clip-trohn-img": "model_state_dict"}
"""The release layout of this paper's ``data:`` checkpoints: the torch.save of the authors' fine-tuning script
(``IMirandaM/BiVLC@84f0d175 src/CLIP_fine_tuning/CLIP_fine_tuning.py:178-185`` "'model_state_dict': model.state_dict(),"),
``{"epoch", "model_state_dict", "optimizer_state_dict", "loss"}`` (models.toml)."""
KEPT_ROWS = ("clip", "trohn-img", "ft-trohn-img")
"""Table 2's rows the rehearsal scores, one per loader path: the hub's pretrained weights (``openai/ViT-B-32``), a
released ``data:`` training dict (``bivlc/clip-trohn-img``, also the released TROHN-Img detector's encoder) and a
re-training here (``build:`` safetensors, ``bivlc/full-trohn-img``). Left out: the other released fine-tunes and
re-trainings (the same two paths) and ARO's NegCLIP (ARO's rehearsal covers its path)."""
KEPT_DETECTOR_ROWS = ("clipdet", "ft-trohn-img-det")
"""Table 5's rows: the authors' released heads (torch training dicts with their towers) on the hub encoder, compared
with their released per-instance outputs (mirrored), and heads trained here (``detectors-full-trohn-img``) on the
re-trained encoder. The CLIPDet heads trained here (``detectors-full-clip``) still train, unscored."""
PER_CATEGORY = 2
"""Instances of each of the seven categories in the BiVLC stand-in (14 in all)."""
TROHN_TRAIN = 8
TROHN_VALIDATION = 4
COCO_IMAGES = 12
"""COCO 2017 train stand-in images, which TROHN's rows name."""
RELEASED_RESULTS = "bivlc/released/results/BiVLC_ViT-B-32.csv"
NEGATIVE_IMAGES = "bivlc/released/src/BiVLC_Generation/BiVLC_negative_imgs.csv"
RELEASED_HEADS = "bivlc/hf/imirandam/CLIP_Detector"
"""The released CLIPDet heads' snapshot (the files ``params.yaml bivlc.full.detector_rows.clipdet`` names)."""


def params(params: dict[str, Any]) -> None:
    """Table 2 cut to ``KEPT_ROWS``, Table 5 to ``KEPT_DETECTOR_ROWS``, the test split's size the stand-in's."""
    # deferred: loads PIL, torch, tqdm only when called
    from papers.bivlc.tables import CATEGORIES

    full = params["bivlc"]["full"]
    full["n_instances"] = PER_CATEGORY * len(CATEGORIES)
    full["models"] = {row: name for row, name in full["models"].items() if row in KEPT_ROWS}
    full["detector_rows"] = {row: spec for row, spec in full["detector_rows"].items() if row in KEPT_DETECTOR_ROWS}


def models(params: dict[str, Any]) -> list[str]:
    full = params["bivlc"]["full"]
    return needing_standins([full["finetune"]["base"], *full["models"].values(),
                             *full["detectors"]["encoders"].values(),
                             *(spec["encoder"] for spec in full["detector_rows"].values())])


def _read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def bivlc_rows(released: Path, negative_images: Path, per_category: int = PER_CATEGORY) -> list[dict]:
    """The first ``per_category`` instances of each category of the released per-instance file as parquet rows: real
    text, stand-in images under the names ``negative_images`` gives the pair (photo, first generated image)."""
    names = {(r["caption"], r["negative_caption"]): r for r in _read_csv(negative_images)}
    taken: dict[tuple[str, str], int] = {}
    rows = []
    for k, r in enumerate(_read_csv(released)):
        category = (r["type"], r["subtype"])
        if taken.get(category, 0) >= per_category:
            continue
        taken[category] = taken.get(category, 0) + 1
        named = names.get((r["caption"], r["negative_caption"]), {})
        photo, generated = named.get("filename") or f"bivlc-{k}.jpg", named.get("hn_img_0") or f"bivlc-{k}-neg.jpg"
        rows.append({"image": hf_image(image_bytes(name_seed(photo)), photo), "caption": r["caption"],
                     "negative_caption": r["negative_caption"],
                     "negative_image": hf_image(image_bytes(name_seed(generated), (32, 32), "PNG"), generated),
                     "type": r["type"], "subtype": r["subtype"]})
    return rows


def trohn_rows(with_images: bool) -> dict[str, list[dict]]:
    """TROHN rows on the COCO train2017 stand-ins, each negative swapping its caption's first and last words."""
    out: dict[str, list[dict]] = {"train": [], "validation": []}
    for k in range(TROHN_TRAIN + TROHN_VALIDATION):
        caption = COCO_LIKE_CAPTIONS[k % len(COCO_LIKE_CAPTIONS)]
        words = caption.rstrip(".").split(" ")
        negative = " ".join([words[-1].capitalize(), *words[1:-1], words[0].lower()]) + "."
        image_id = coco_file_name(k % COCO_IMAGES + 1)
        row = {"image_id": image_id, "caption": caption, "negative_caption": negative}
        if with_images:
            generated = f"trohn-img-{k}.jpg"
            row["negative_image"] = hf_image(image_bytes(name_seed(generated), (40, 40)), generated)
        out["train" if k < TROHN_TRAIN else "validation"].append(row)
    return out


def released_head_state(tower: str, clip_state: dict, seed: int) -> dict:
    """A released head's ``model_state_dict`` (the torch.save of
    ``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_img_classifier.py:157-164`` "'model_state_dict': model.state_dict(),"
    and of ``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_text_classifier.py:162-169`` "'model_state_dict':
    model.state_dict(),"): a random
    ``classifier`` Linear(d, 1) and the frozen tower it was trained on (``image_encoder.*``: the visual tower;
    ``text_encoder.*``: the CLIP model without its visual tower), from ``clip_state`` (open_clip's names)."""
    # deferred: loads torch only when called
    import torch

    # deferred: loads torch only when called
    from papers.bivlc.detector_heads import RELEASED_TOWER_PREFIX

    ours, theirs = RELEASED_TOWER_PREFIX[tower]
    tower_state = {ours + k[len(theirs):]: v for k, v in clip_state.items()
                   if (k.startswith(theirs) if theirs else not k.startswith("visual."))}
    dim = int(clip_state["text_projection"].shape[1])
    generator = torch.Generator().manual_seed(seed)
    return {**tower_state, "classifier.weight": torch.randn(1, dim, generator=generator) * 0.05,
            "classifier.bias": torch.zeros(1)}


def released_heads(data_root: Path, row: dict, seed: int) -> list[Path]:
    """The row's released heads in the authors' torch.save layout, their towers the stand-in of the row's encoder
    (the same seed, so the stage's tower check finds them equal); returns the files."""
    # deferred: loads torch only when called
    import torch

    state = pretrained_state(row["encoder"], seed)  # the hub stand-in's weights, as write_pretrained writes them
    out = []
    for k, tower in enumerate(("image", "text")):
        target = Path(data_root) / row[f"{tower}_head"].removeprefix("data:")
        with atomic_path(target) as tmp:
            torch.save({"epoch": 0, "model_state_dict": released_head_state(tower, state, seed + k),
                        "optimizer_state_dict": {}, "loss": 0.0}, tmp)
        out.append(target)
    return out


def prepare(data_root: Path, fetch: Callable[[str], Path]) -> list[str]:
    """``fetch``: the downloader with the mirror, for the pinned released files whose text the stand-in takes."""
    # deferred: loads PIL, torch, tqdm only when called
    from papers.bivlc.tables import COLUMNS, SOURCE, SPLIT

    string, image = standins.HF_STRING, standins.HF_IMAGE
    standins.hf_dataset_snapshot(
        SOURCE, data_root, {SPLIT: bivlc_rows(fetch(RELEASED_RESULTS), fetch(NEGATIVE_IMAGES))},
        {c: image if c in ("image", "negative_image") else string for c in COLUMNS}, shards=2)
    for dataset, key in HF_SOURCES.items():
        with_images = dataset == "trohn-img"
        columns = {"image_id": string, "caption": string, "negative_caption": string,
                   **({"negative_image": image} if with_images else {})}
        standins.hf_dataset_snapshot(key, data_root, trohn_rows(with_images), columns)
    row = read_params(ROOT / "params.yaml")["bivlc"]["full"]["detector_rows"]["clipdet"]
    released_heads(data_root, row, standins.name_seed(row["encoder"]))
    standins.mark_snapshot(data_root, RELEASED_HEADS)
    return standins.coco_train2017(data_root, standins.coco_captions(images=COCO_IMAGES))
