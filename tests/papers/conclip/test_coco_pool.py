"""The COCO distractor pool in torchvision's CocoCaptions order, and the released mapping in each layout it may have
(a list of lists, a tensor, a dict: how the authors wrote it is not in their release), with its refusals named by file
and entry."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from common.files.tasks import DatasetError
from papers.conclip import coco_pool


def write_coco(root: Path, ids: list[int], make_dir: bool = True) -> Path:
    """A captions file whose images are listed in the order ``ids`` (not sorted), one caption for all but the last."""
    captions = root / coco_pool.CAPTIONS
    captions.parent.mkdir(parents=True, exist_ok=True)
    images = [{"id": i, "file_name": f"{i:012d}.jpg"} for i in ids]
    annotations = [{"id": 100 + k, "image_id": i, "caption": f"image {i}"} for k, i in enumerate(ids[:-1])]
    captions.write_text(json.dumps({"images": images, "annotations": annotations}), encoding="utf-8")
    if make_dir:
        (root / coco_pool.IMAGES).mkdir(parents=True, exist_ok=True)
    return captions


def test_pool_is_in_ascending_image_id_order_uncaptioned_images_included(tmp_path):
    write_coco(tmp_path, [30, 4, 17, 9])
    files = coco_pool.coco_train_images(tmp_path)
    assert [p.name for p in files] == ["000000000004.jpg", "000000000009.jpg", "000000000017.jpg",
                                       "000000000030.jpg"]
    assert all(p.parent == tmp_path / coco_pool.IMAGES for p in files)


def test_pool_refusals_name_the_file(tmp_path):
    with pytest.raises(coco_pool.CocoPoolError, match=r"captions_train2017.json: missing; .*fetch coco-train2017"):
        coco_pool.coco_train_images(tmp_path)
    write_coco(tmp_path, [1, 2], make_dir=False)
    with pytest.raises(coco_pool.CocoPoolError, match=r"train2017/train2017: no COCO .*fetch coco-train2017"):
        coco_pool.coco_train_images(tmp_path)
    captions = write_coco(tmp_path, [1, 2, 1])
    with pytest.raises(DatasetError, match=r"captions_train2017.json: images\[2\]: id 1 repeats"):
        coco_pool.coco_train_images(tmp_path)
    captions.write_text(json.dumps({"images": [{"id": "1", "file_name": "a.jpg"}], "annotations": []}))
    with pytest.raises(DatasetError, match=r"images\[0\]: needs an integer 'id'"):
        coco_pool.coco_train_images(tmp_path)


@pytest.mark.parametrize("layout", ["list", "tuple-rows", "tensor", "tensor-rows", "dict"])
def test_mapping_layouts_read_alike(tmp_path, layout):
    rows = [[5, 1, 0], [2, 3, 4], [0, 0, 1]]
    data = {"list": rows, "tuple-rows": [tuple(r) for r in rows], "tensor": torch.tensor(rows),
            "tensor-rows": [torch.tensor(r) for r in rows], "dict": {2: rows[2], 0: rows[0], 1: rows[1]}}[layout]
    path = tmp_path / "distractor_image_mapping.pt"
    torch.save(data, path)
    mapping = coco_pool.load_distractor_mapping(path, pool_size=6)
    assert mapping.dtype == np.int64 and mapping.tolist() == rows


def test_a_flat_tensor_is_one_index_per_entry(tmp_path):
    path = tmp_path / "m.pt"
    torch.save(torch.tensor([3, 1, 2]), path)
    assert coco_pool.load_distractor_mapping(path).tolist() == [[3], [1], [2]]


def test_mapping_refusals_name_the_file_and_the_entry(tmp_path):
    path = tmp_path / "distractor_image_mapping.pt"
    torch.save([[0, 1], [2, 6], [7, 1]], path)
    with pytest.raises(DatasetError, match=r"distractor_image_mapping.pt: entry 1: pool index 6 is outside the pool "
                                           r"of 6 COCO train images \(2 such entries\)"):
        coco_pool.load_distractor_mapping(path, pool_size=6)
    assert coco_pool.load_distractor_mapping(path).shape == (3, 2)  # no pool size: any non-negative index
    torch.save([[0, 1], [-1, 2]], path)
    with pytest.raises(DatasetError, match=r"entry 1: pool index -1 is outside"):
        coco_pool.load_distractor_mapping(path)
    torch.save([[0, 1], [2]], path)
    with pytest.raises(DatasetError, match=r"entry 1 has 1 pool indices, entry 0 has 2"):
        coco_pool.load_distractor_mapping(path)
    torch.save([[0, 1], [2.0, 1]], path)
    with pytest.raises(DatasetError, match=r"entry 1: 2.0 is not an integer pool index"):
        coco_pool.load_distractor_mapping(path)
    torch.save({0: [1], 2: [2]}, path)
    with pytest.raises(DatasetError, match=r"dict keys are not the entry indices"):
        coco_pool.load_distractor_mapping(path)
    torch.save({"mapping": [[1]]}, path)
    with pytest.raises(DatasetError, match=r"a dict with key 'mapping'"):
        coco_pool.load_distractor_mapping(path)
    with pytest.raises(coco_pool.CocoPoolError, match=r"nowhere.pt: no such file; .*distractor_image_mapping.pt"):
        coco_pool.load_distractor_mapping(tmp_path / "nowhere.pt")


class NotAllowed:
    """A class ``torch.load(weights_only=True)`` refuses to rebuild."""


def test_a_file_weights_only_refuses_is_not_unpickled(tmp_path):
    path = tmp_path / "distractor_image_mapping.pt"
    torch.save([[0], NotAllowed()], path)
    with pytest.raises(DatasetError, match=r"distractor_image_mapping.pt: refused by torch.load\(weights_only=True\)"):
        coco_pool.load_distractor_mapping(path)
