"""The REPLACE and SWAP loaders and the full-profile set, on tiny files in the released layout written here."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from common.errors import WorkspaceError
from common.files.tasks import DatasetError
from common.files.visual_genome import VG_ATTRIBUTION, crop_relpath, crop_vg, read_vg
from common.registry import fetch as registry
from papers.hard_positives import evaluation, released, sets_full


def _image(path: Path, seed: int, size=(40, 30)) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pixels = np.random.default_rng(seed).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
    Image.fromarray(pixels).save(path)
    return path


def _write(path: Path, rows) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows), encoding="utf-8")
    return path


def replace_row(image: str, c: str, c_n: str) -> dict:
    return {"image_id": Path(image).stem, "true_caption": c, "false_caption": c_n, "image_path": image}


REPLACE = {  # kind -> [(image_path, c, c_p, c_n)]; row 2 of relations repeats row 0; row 3 has c == c_n (released so)
    "attributes": [("data/VG_100K/1.jpg", "walking elephant", "strolling elephant", "jumping elephant"),
                   ("data/VG_100K_2/2.jpg", "red bus", "crimson bus", "blue bus")],
    "relations": [("data/VG_100K/1.jpg", "chair in room", "chair within room", "chair out of room"),
                  ("data/VG_100K_2/2.jpg", "cup on table", "cup atop table", "cup under table"),
                  ("data/VG_100K/1.jpg", "chair in room", "chair within room", "chair out of room"),
                  ("data/VG_100K_2/2.jpg", "man holding beer", "man grasping beer", "man holding beer")],
}


def swap_row(image: str, box: tuple, c: str, c_n: str, attributes=("white", "black")) -> dict:
    return {"image_id": Path(image).stem, "image_path": image, "bbox_x": box[0], "bbox_y": box[1], "bbox_w": box[2],
            "bbox_h": box[3], "true_caption": c, "false_caption": c_n, "attributes": list(attributes)}


SWAP = [  # (image, box, c, c_p, c_n)
    ("11.jpg", (2, 3, 20, 15), "the white cat and the black dog", "the black dog and the white cat",
     "the black cat and the white dog"),
    ("12.jpg", (0, 0, 40, 30), "the open door and the red car", "the red car and the open door",
     "the red door and the open car"),
    ("11.jpg", (1.5, 0, 10, 10), "the small cup and the wooden table", "the wooden table and the small cup",
     "the wooden cup and the small table"),
]


def write_release(root: Path) -> dict[str, Path]:
    """The six released files and the three image sets in their upstream layouts; returns registry key -> path."""
    paths: dict[str, Path] = {}
    for kind, rows in REPLACE.items():
        original, swapped = released.file_keys(kind)
        paths[original] = _write(root / original, [replace_row(i, c, n) for i, c, _, n in rows])
        paths[swapped] = _write(root / swapped, [replace_row(i, p, n) for i, _, p, n in rows])
    original, swapped = sets_full.SWAP_FILES
    paths[original] = _write(root / original, [swap_row(i, b, c, n) for i, b, c, _, n in SWAP])
    paths[swapped] = _write(root / swapped, [swap_row(i, b, p, n) for i, b, _, p, n in SWAP])
    _image(root / "visual_genome/images/VG_100K/1.jpg", 1)
    _image(root / "visual_genome/images2/VG_100K_2/2.jpg", 2)
    _image(root / "aro/vgr_vga_images/images/11.jpg", 11)
    _image(root / "aro/vgr_vga_images/images/12.jpg", 12)
    paths["visual_genome/images.zip"] = root / "visual_genome/images"
    paths["visual_genome/images2.zip"] = root / "visual_genome/images2"
    paths[sets_full.SWAP_IMAGES] = root / "aro/vgr_vga_images"
    return paths


@pytest.fixture
def release(tmp_path) -> dict[str, Path]:
    return write_release(tmp_path / "release")


def folders(release) -> dict[str, Path]:
    return {"VG_100K": release["visual_genome/images.zip"] / "VG_100K",
            "VG_100K_2": release["visual_genome/images2.zip"] / "VG_100K_2"}


# ------------------------------------------------------------------------------------------------------------------
# REPLACE
# ------------------------------------------------------------------------------------------------------------------
def test_replace_items_pair_rows_by_position_as_c_cp_cn(release):
    items = sets_full.replace_items(release.__getitem__, folders(release))
    assert [it.group for it in items] == ["replace-attributes"] * 2 + ["replace-relations"] * 4
    expected = [(c, p, n) for kind in ("attributes", "relations") for _, c, p, n in REPLACE[kind]]
    assert [it.captions for it in items] == expected
    assert [it.item_id for it in items][:3] == ["replace-attributes/0", "replace-attributes/1", "replace-relations/0"]
    assert items[0].image == folders(release)["VG_100K"] / "1.jpg"
    assert items[1].image == folders(release)["VG_100K_2"] / "2.jpg"
    assert items[2].origin.endswith("vl_checklist_relations.json:0")


def test_replace_image_root_may_be_the_authors_data_folder(release, tmp_path):
    root = tmp_path / "authors_data"
    _image(root / "VG_100K/1.jpg", 1)
    _image(root / "VG_100K_2/2.jpg", 2)
    items = sets_full.replace_items(release.__getitem__, root)
    assert items[0].image == root / "VG_100K/1.jpg" and len(items) == 6


def test_repeats_and_equal_captions_are_kept_as_released(release):
    items = sets_full.replace_items(release.__getitem__, folders(release))
    relations = [it for it in items if it.group == "replace-relations"]
    assert relations[0].captions == relations[2].captions and relations[0].item_id != relations[2].item_id
    assert sets_full.equal_caption_ids(items) == ["replace-relations/3"]
    assert relations[3].captions[evaluation.ORIGINAL] == relations[3].captions[evaluation.NEGATIVE]


def test_replace_files_out_of_step_are_refused_naming_both_files(release):
    original, swapped = released.file_keys("relations")
    rows = json.loads(release[swapped].read_text())
    rows[1]["false_caption"] = "cup beside table"
    release[swapped].write_text(json.dumps(rows))
    with pytest.raises(WorkspaceError, match=r"vl_checklist_relations\.json / .*swapped_data.*first: \[1\]"):
        sets_full.replace_items(release.__getitem__, folders(release))
    release[swapped].write_text(json.dumps(rows[:2]))
    with pytest.raises(WorkspaceError, match="has 4 entries but .* has 2"):
        sets_full.replace_items(release.__getitem__, folders(release))


def test_replace_missing_images_and_bad_paths_are_each_named(release):
    (folders(release)["VG_100K_2"] / "2.jpg").unlink()
    original = released.file_keys("attributes")[0]
    rows = json.loads(release[original].read_text())
    rows[0]["image_path"] = "images/1.jpg"  # not a Visual Genome folder
    release[original].write_text(json.dumps(rows))
    swapped = release[released.file_keys("attributes")[1]]
    swapped_rows = json.loads(swapped.read_text())
    swapped_rows[0]["image_path"] = "images/1.jpg"
    swapped.write_text(json.dumps(swapped_rows))
    with pytest.raises(DatasetError) as info:
        sets_full.replace_items(release.__getitem__, folders(release))
    message = str(info.value)
    assert "vl_checklist_attributes.json:0: image path 'images/1.jpg' is not [data/]<folder>/<file>" in message
    assert "vl_checklist_attributes.json:1: image 'data/VG_100K_2/2.jpg' not found" in message
    assert "vl_checklist_relations.json:1:" in message and "vl_checklist_relations.json:3:" in message


# ------------------------------------------------------------------------------------------------------------------
# SWAP
# ------------------------------------------------------------------------------------------------------------------
def test_swap_items_point_at_crops_of_aros_images(release, tmp_path):
    image_root = release[sets_full.SWAP_IMAGES] / "images"
    crops = tmp_path / "crops"
    counts = crop_vg({VG_ATTRIBUTION: release[sets_full.SWAP_FILES[0]]}, image_root, crops)
    assert counts == {"crops": 3, "written": 3, "already_there": 0}
    items = sets_full.swap_items(release.__getitem__, image_root, crops)
    assert [it.captions for it in items] == [(c, p, n) for _, _, c, p, n in SWAP]
    assert {it.group for it in items} == {"swap"} and [it.item_id for it in items] == ["swap/0", "swap/1", "swap/2"]
    records = read_vg(release[sets_full.SWAP_FILES[0]], VG_ATTRIBUTION)
    assert [it.image for it in items] == [crops / crop_relpath(r) for r in records]
    with Image.open(items[0].image) as im:
        assert im.size == (20, 15)  # the box (2, 3, 20, 15), as ARO crops before preprocessing
    (crops / crop_relpath(records[1])).unlink()
    with pytest.raises(DatasetError, match=r"visual_genome_attribution\.json:1: crop .* \(run the full-data stage\)"):
        sets_full.swap_items(release.__getitem__, image_root, crops)


@pytest.mark.parametrize("field, value", [("false_caption", "the white cat and the white dog"),
                                          ("bbox_x", 3), ("image_path", "12.jpg"), ("attributes", ["black", "white"])])
def test_swap_files_out_of_step_name_the_row(release, field, value):
    rows = json.loads(release[sets_full.SWAP_FILES[1]].read_text())
    rows[2][field] = value
    release[sets_full.SWAP_FILES[1]].write_text(json.dumps(rows))
    with pytest.raises(DatasetError, match=r"swapped_data/visual_genome_attribution\.json:2: differs from "
                                           r".*/data/visual_genome_attribution\.json:2"):
        sets_full.swap_pairs(release.__getitem__)


def test_swap_files_of_different_length_are_refused(release):
    rows = json.loads(release[sets_full.SWAP_FILES[1]].read_text())
    release[sets_full.SWAP_FILES[1]].write_text(json.dumps(rows[:2]))
    with pytest.raises(DatasetError, match="has 3 rows but .* has 2"):
        sets_full.swap_pairs(release.__getitem__)


# ------------------------------------------------------------------------------------------------------------------
# The prepared set (stage full-data)
# ------------------------------------------------------------------------------------------------------------------
def test_prepare_full_crops_checks_and_records_every_file(release, tmp_path):
    out = tmp_path / "prepared"
    full = sets_full.prepare_full(out, release.__getitem__)
    manifest = json.loads((out / "manifest.json").read_text())
    assert set(manifest["files"]) == set(sets_full.ANNOTATION_KEYS) and manifest["crops"]["crops"] == 3
    assert manifest["counts"] == {
        "replace-attributes": {"items": 2, "distinct": 2, "equal_captions": 0},
        "replace-relations": {"items": 4, "distinct": 3, "equal_captions": 1},
        "swap": {"items": 3, "distinct": 3, "equal_captions": 0}}
    items = sets_full.FullSet.load(out).items()
    assert len(items) == 9 and items == full.items()
    assert all(Path(it.image).is_file() for it in items)
    release[sets_full.SWAP_FILES[1]].write_text(release[sets_full.SWAP_FILES[1]].read_text() + "\n")
    with pytest.raises(sets_full.HardPositivesDataError, match="changed since it was prepared"):
        sets_full.FullSet.load(out).items()
    with pytest.raises(sets_full.HardPositivesDataError, match="no prepared set here; run `dvc repro"):
        sets_full.FullSet.load(tmp_path / "nowhere")


def test_prepare_full_fetches_everything_before_cropping(release, tmp_path):
    def fetch(key: str) -> Path:
        if key == sets_full.SWAP_IMAGES:
            raise WorkspaceError(f"{key} must be downloaded by hand")
        return release[key]

    with pytest.raises(WorkspaceError, match="must be downloaded by hand"):
        sets_full.prepare_full(tmp_path / "prepared", fetch)
    assert not (tmp_path / "prepared" / "crops").exists()


def test_entry_point_prepares_through_the_registry(release, tmp_path, monkeypatch):
    """``python -m papers.hard_positives.sets_full``: keys fetched through ``common.registry.fetch.fetch`` (a stand-in
    here)."""
    monkeypatch.setattr(registry, "fetch", lambda key, progress=True: release[key])
    monkeypatch.setenv("DVC_STAGE", "papers/hard_positives/dvc.yaml:full-data")  # as `dvc repro` sets it
    assert sets_full.main(["--out", str(tmp_path / "prepared")]) == 0
    assert sets_full.FullSet.load(tmp_path / "prepared").info["counts"]["swap"]["items"] == 3


def test_a_rehearsals_cap_keeps_the_first_items_of_each_group_after_checking_every_row(release, tmp_path):
    full = sets_full.prepare_full(tmp_path / "set", release.__getitem__, cap=1)
    assert full.cap == 1 and full.info["cap"] == 1
    assert {g: c["items"] for g, c in full.info["counts"].items()} == {
        "replace-attributes": 1, "replace-relations": 1, "swap": 1}
    assert {g: c["items"] for g, c in full.info["released_counts"].items()} == {
        "replace-attributes": 2, "replace-relations": 4, "swap": 3}
    assert [it.item_id for it in full.items()] == ["replace-attributes/0", "replace-relations/0", "swap/0"]
    assert len(full.items(capped=False)) == 9
    uncapped = sets_full.prepare_full(tmp_path / "all", release.__getitem__)
    assert uncapped.cap is None and "released_counts" not in uncapped.info and len(uncapped.items()) == 9
    with pytest.raises(ValueError, match="cap must be a positive"):
        sets_full.prepare_full(tmp_path / "none", release.__getitem__, cap=0)


def test_the_stage_reads_the_cap_from_its_full_inputs_params(release, tmp_path, monkeypatch, capsys):
    import common.pipeline.params

    seen = {}
    monkeypatch.setattr(common.pipeline.params, "stage_params", lambda stage, **_: seen.setdefault(stage, {
        "full_inputs": {"cap": 2}}))
    monkeypatch.setenv("DVC_STAGE", "papers/hard_positives/dvc.yaml:full-data")  # as `dvc repro` sets it
    prepare = sets_full.prepare_full
    monkeypatch.setattr(sets_full, "prepare_full", lambda out, cap=None: prepare(out, release.__getitem__, cap=cap))
    assert sets_full.main(["--out", str(tmp_path / "set")]) == 0
    assert list(seen) == ["papers/hard_positives/dvc.yaml:full-data"]
    assert sets_full.FullSet.load(tmp_path / "set").cap == 2
    monkeypatch.setattr(common.pipeline.params, "stage_params", lambda stage, **_: {"full_inputs": {"cap": 0}})
    with pytest.raises(WorkspaceError, match="full_inputs.cap: must be null or a positive integer"):
        sets_full.main(["--out", str(tmp_path / "other")])
