"""ARO's loaders on small files in the upstream formats, written here: records, candidate order, errors."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from common.files.tasks import DatasetError
from papers.aro.data import (
    ARO_VG_RULE, VG_ATTRIBUTION, VG_RELATION, AroSet, KarpathySet, crop_relpath, read_classification, read_vg, vg_items)


def png(path: Path, size: tuple[int, int] = (20, 10), value: int = 0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full((size[1], size[0], 3), value, dtype=np.uint8)).save(path)
    return path


def relation_record(**over) -> dict:
    record = {"image_path": "a.png", "bbox_x": 2, "bbox_y": 1, "bbox_w": 5, "bbox_h": 4,
              "relation_name": "on", "true_caption": "the cup is on the table",
              "false_caption": "the table is on the cup"}
    record.update(over)
    return record


def write(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def test_vg_relation_items_false_first_with_crops(tmp_path: Path):
    file = write(tmp_path / "vgr.json", [relation_record(), relation_record(relation_name="holding", bbox_x=0.5)])
    crops = tmp_path / "crops"
    records = read_vg(file, VG_RELATION)
    for r in records:
        png(crops / crop_relpath(r))
    items = vg_items(file, VG_RELATION, tmp_path / "images", crops)
    assert [it.group for it in items] == ["on", "holding"]
    assert items[0].captions == ("the table is on the cup", "the cup is on the table")  # upstream: [false, true]
    assert items[0].origin == f"{file}:0" and items[1].item_id == f"{VG_RELATION}/1"
    assert items[0].image == (crops / "a__2_1_5_4.png").resolve()
    assert crop_relpath(records[1]) == "a__0p5_1_5_4.png"  # a fractional box keeps its own crop
    assert records[0].crop_box() == (2, 1, 7, 5)


def test_vg_attribution_group_is_the_attribute_pair(tmp_path: Path):
    png(tmp_path / "images" / "b.png", (8, 6))
    record = {"image_path": "b.png", "bbox_x": 0, "bbox_y": 0, "bbox_w": 8, "bbox_h": 6, "attributes": ["white", "red"],
              "true_caption": "the white cat and the red box", "false_caption": "the red cat and the white box"}
    items = vg_items(write(tmp_path / "vga.json", [record]), VG_ATTRIBUTION, tmp_path / "images")
    assert items[0].group == "white_red" and items[0].captions[1] == record["true_caption"]


def test_vg_without_crop_root_needs_a_full_image_box(tmp_path: Path):
    png(tmp_path / "images" / "a.png", (20, 10))
    file = write(tmp_path / "vgr.json", [relation_record()])
    with pytest.raises(DatasetError, match=r"vgr.json:0: box \(2, 1, 7, 5\) does not cover the whole 20x10"):
        vg_items(file, VG_RELATION, tmp_path / "images")
    write(file, [relation_record(bbox_x=0, bbox_y=0, bbox_w=20, bbox_h=10)])
    assert len(vg_items(file, VG_RELATION, tmp_path / "images")) == 1


@pytest.mark.parametrize("bad, needle", [
    ({"relation_name": None}, "'relation_name'"),
    ({"bbox_w": "5"}, "'bbox_w'"),
    ({"true_caption": ""}, "'true_caption'"),
    ({"bbox_h": 0}, "empty bounding box"),
])
def test_bad_vg_record_names_file_and_record(tmp_path: Path, bad: dict, needle: str):
    file = write(tmp_path / "vgr.json", [relation_record(), relation_record(**bad)])
    with pytest.raises(DatasetError) as err:
        read_vg(file, VG_RELATION)
    assert str(err.value).startswith(f"{file}:1: ") and needle in str(err.value)


def test_vg_image_escaping_root_is_refused(tmp_path: Path):
    file = write(tmp_path / "vgr.json", [relation_record(image_path="../../etc/passwd")])
    with pytest.raises(DatasetError, match=r"vgr.json:0: filename .* escapes"):
        vg_items(file, VG_RELATION, tmp_path / "images")


def test_attribution_needs_two_attributes(tmp_path: Path):
    record = relation_record(attributes=["red"])
    with pytest.raises(DatasetError, match=r"vga.json:0: .*'attributes'"):
        read_vg(write(tmp_path / "vga.json", [record]), VG_ATTRIBUTION)


def test_aro_vg_rule_counts_a_tie_wrong():
    assert ARO_VG_RULE.decide(np.array([0.1, 0.2])) == (True, False)
    assert ARO_VG_RULE.decide(np.array([0.2, 0.2])) == (False, True)  # argmax picks the false caption first
    assert ARO_VG_RULE.decide(np.array([0.3, 0.2])) == (False, False)


def karpathy(tmp_path: Path) -> Path:
    for name in ("val2014/x1.jpg", "val2014/x2.jpg"):
        png(tmp_path / "coco" / name)
    return write(tmp_path / "coco_karpathy_test.json", [
        {"image": "val2014/x1.jpg", "caption": ["a", "b", "c"]},
        {"image": "val2014/x2.jpg", "caption": ["d", "e"]},
    ])


def test_karpathy_set_image_major(tmp_path: Path):
    ks = KarpathySet.load("coco", karpathy(tmp_path), tmp_path / "coco")
    assert ks.flat_captions() == ["a", "b", "c", "d", "e"] and ks.caption_image() == (0, 0, 0, 1, 1)
    rs = ks.retrieval_set("coco-shuffled", captions=["A", "B", "C", "D", "E"])
    assert rs.name == "coco-shuffled" and rs.captions[3] == "D" and rs.caption_image == (0, 0, 0, 1, 1)
    assert ks.retrieval_set().captions == ("a", "b", "c", "d", "e") and ks.n_captions == 5
    with pytest.raises(DatasetError, match="4 replacement captions for 5"):
        ks.retrieval_set("x", captions=["A"] * 4)


def test_karpathy_bad_record_and_missing_image(tmp_path: Path):
    file = karpathy(tmp_path)
    write(file, [{"image": "val2014/x1.jpg", "caption": []}])
    with pytest.raises(DatasetError, match=r"coco_karpathy_test.json:0: 'image' must be"):
        KarpathySet.load("coco", file, tmp_path / "coco")
    write(file, [{"image": "val2014/nope.jpg", "caption": ["x"]}])
    with pytest.raises(DatasetError, match=r"coco_karpathy_test.json:0: image 'val2014/nope.jpg' not found"):
        KarpathySet.load("coco", file, tmp_path / "coco")


def test_classification_templates_and_prompts(tmp_path: Path):
    png(tmp_path / "img" / "0.png")
    data = {"classes": ["cat", "owl"], "templates": ["a photo of a {}."],
            "images": [{"image": "0.png", "label": 1}]}
    cs = read_classification("animals", write(tmp_path / "c.json", data), tmp_path / "img")
    assert cs.class_prompts == (("a photo of a cat.",), ("a photo of a owl.",)) and cs.labels == (1,)
    data["prompts"] = [["a cat."], ["an owl."]]
    cs = read_classification("animals", write(tmp_path / "c.json", data), tmp_path / "img")
    assert cs.class_prompts[1] == ("an owl.",)
    data["images"] = [{"image": "0.png", "label": 2}]
    with pytest.raises(DatasetError, match=r"c.json:images\[0\]: needs 'image'"):
        read_classification("animals", write(tmp_path / "c.json", data), tmp_path / "img")


def test_aro_set_manifest(tmp_path: Path):
    file = karpathy(tmp_path)
    manifest = write(tmp_path / "set" / "manifest.json", {
        "retrieval": {"coco": {"annotations": str(file), "image_root": "../coco"}}})
    aro = AroSet.load(manifest.parent)
    assert list(aro.retrieval_sets()) == ["coco"] and not aro.has("vg_relation")
    with pytest.raises(DatasetError, match="has no 'vg_relation'"):
        aro.vg_relation_items()
    write(manifest, {"vg_relation": {"annotations": "x.json"}})
    with pytest.raises(DatasetError, match=r"manifest.json: vg_relation.image_root must be a path"):
        AroSet.load(manifest)
    with pytest.raises(DatasetError, match="no prepared ARO set"):
        AroSet.load(tmp_path / "none" / "manifest.json")
