"""COCO train 2017 as CoN-CLIP's pool of distractor images, and the released mapping from CC-Neg's training entries
into it.

What the authors' released code does with it (jaisidhsingh/CoN-CLIP's ``FineTuningDatasetWithNegatives``):

* it builds ``torchvision.datasets.CocoCaptions`` over COCO train 2017 and its captions file,
  jaisidhsingh/CoN-CLIP@503388ac src/data/finetuning_datasets.py:58 "self.negatives_dataset = dsets.CocoCaptions("
  with jaisidhsingh/CoN-CLIP@503388ac src/configs/__init__.py:15 "captions_train2017.json", and takes, for training
  entry ``idx`` (its index in ``ccneg_preprocessed.pt``: the training split is the file's FIRST entries,
  jaisidhsingh/CoN-CLIP@503388ac src/data/finetuning_datasets.py:55 "self.image_paths[:self.split_size]", so the two
  counts coincide), the image ``CocoCaptions[mapping[idx][0]]``, the first index of that entry's row of the mapping:
  jaisidhsingh/CoN-CLIP@503388ac src/data/finetuning_datasets.py:76-78 "top1_index = topk_indices[0]".
  ``CocoCaptions`` orders its images by sorted image id (torchvision: ``sorted(coco.imgs.keys())``, every image of
  the file's ``images`` list, captioned or not); ``coco_train_images`` lists the files in that order.
* How the mapping was written is not in the release (the mining code is not released; the paper's Supplementary
  0.B gives only eq. 4). The released ``distractor_image_mapping.pt`` (jaisidhsingh/CoN-CLIP@503388ac
  ccneg_dataset/README.md:18 "distractor_image_mapping.pt") is read here with ``torch.load(weights_only=True)``
  (``load_distractor_mapping``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np

from common.errors import WorkspaceError
from common.files.jsonl import read_json
from common.files.tasks import DatasetError
from common.paths import data_root as default_root
from papers.conclip.ccneg import load_pickle
from papers.conclip.data_paths import COCO_CAPTIONS as CAPTIONS, COCO_IMAGES as IMAGES

FETCH = "python -m common fetch coco-train2017"
MAPPING_KEY = "conclip/ccneg/distractor_image_mapping.pt"


class CocoPoolError(WorkspaceError):
    """The COCO pool or the distractor mapping is missing (the message says how to get it)."""


def coco_train_images(data_root: Path | None = None) -> list[Path]:
    """The COCO train 2017 image files in ``torchvision.datasets.CocoCaptions`` order (ascending image id)."""
    data_root = Path(data_root if data_root is not None else default_root())
    captions, images_dir = data_root / CAPTIONS, data_root / IMAGES
    if not captions.is_file():
        raise CocoPoolError(f"{captions}: missing; fetch it: {FETCH}")
    images = read_json(captions, dict, f"fetch it: {FETCH}").get("images")
    if not isinstance(images, list) or not images:
        raise DatasetError(f"{captions}: not a COCO captions file (needs a non-empty 'images' list)")
    by_id: dict[int, str] = {}
    for k, image in enumerate(images):
        ok = isinstance(image, dict) and isinstance(image.get("id"), int) and not isinstance(image.get("id"), bool) \
            and isinstance(image.get("file_name"), str) and image["file_name"].strip()
        if not ok:
            raise DatasetError(f"{captions}: images[{k}]: needs an integer 'id' and a 'file_name'")
        if image["id"] in by_id:
            raise DatasetError(f"{captions}: images[{k}]: id {image['id']} repeats an earlier image")
        by_id[image["id"]] = image["file_name"]
    if not images_dir.is_dir():
        raise CocoPoolError(f"{images_dir}: no COCO train 2017 images here; fetch them: {FETCH}")
    return [images_dir / by_id[i] for i in sorted(by_id)]


def _rows(data: Any, path: Path) -> list[list[int]]:
    """The mapping's rows in entry order, each a list of ints, from a list, a dict {entry: row} or a tensor."""
    # deferred: loads torch only when called
    import torch

    if isinstance(data, torch.Tensor):
        if data.ndim not in (1, 2) or len(data) == 0:
            raise DatasetError(f"{path}: a tensor of shape {tuple(data.shape)}; expected (entries,) or "
                               "(entries, k) pool indices")
        data = list(data.unsqueeze(1) if data.ndim == 1 else data)
    elif isinstance(data, Mapping):
        keys = list(data)
        bad = [key for key in keys if isinstance(key, bool) or not isinstance(key, int)]
        if bad:
            raise DatasetError(f"{path}: a dict with key {bad[0]!r}; expected entry indices 0..N-1 as keys "
                               f"(keys seen: {sorted(map(str, data))[:5]})")
        missing = sorted(set(range(len(keys))) - set(keys))
        if missing:
            raise DatasetError(f"{path}: dict keys are not the entry indices 0..{len(keys) - 1} (entry "
                               f"{missing[0]} is missing or out of order)")
        data = [data[k] for k in range(len(keys))]
    elif not isinstance(data, (list, tuple)):
        raise DatasetError(f"{path}: a {type(data).__name__}; expected a list of per-entry pool indices, a dict "
                           "{entry: indices} or an integer tensor")
    rows = []
    for entry, value in enumerate(data):
        if isinstance(value, torch.Tensor):
            if value.is_floating_point() or value.is_complex() or value.dtype == torch.bool:
                raise DatasetError(f"{path}: entry {entry}: a {value.dtype} tensor, not integer pool indices")
            value = value.reshape(-1).tolist()
        elif isinstance(value, int) and not isinstance(value, bool):
            value = [value]
        if not isinstance(value, (list, tuple)) or not value:
            raise DatasetError(f"{path}: entry {entry}: {type(value).__name__} {value!r:.60}, not a non-empty list "
                               "of pool indices")
        bad = [v for v in value if isinstance(v, bool) or not isinstance(v, int)]
        if bad:
            raise DatasetError(f"{path}: entry {entry}: {bad[0]!r} is not an integer pool index")
        rows.append(list(value))
    return rows


def load_distractor_mapping(path: Path, pool_size: int | None = None) -> np.ndarray:
    """The released mapping as an (N, k) int64 array, row i the pool indices of CC-Neg entry i (the training loader
    takes the first), each in [0, pool_size) when given; every failure names the file (and the entry)."""
    path = Path(path)
    rows = _rows(load_pickle(path, MAPPING_KEY, "containers, numbers and tensors", "the mapping", CocoPoolError),
                 path)
    if not rows:
        raise DatasetError(f"{path}: no entries")
    width = len(rows[0])
    ragged = next((i for i, r in enumerate(rows) if len(r) != width), None)
    if ragged is not None:
        raise DatasetError(f"{path}: entry {ragged} has {len(rows[ragged])} pool indices, entry 0 has {width} "
                           "(every entry needs the same top-k)")
    mapping = np.asarray(rows, dtype=np.int64)
    high = pool_size if pool_size is not None else np.iinfo(np.int64).max
    outside = np.flatnonzero(((mapping < 0) | (mapping >= high)).any(axis=1))
    if len(outside):
        entry = int(outside[0])
        value = next(int(v) for v in mapping[entry] if not 0 <= v < high)
        pool = f"the pool of {pool_size} COCO train images" if pool_size is not None else "a pool"
        raise DatasetError(f"{path}: entry {entry}: pool index {value} is outside {pool} ({len(outside)} such "
                           "entries)")
    return mapping
