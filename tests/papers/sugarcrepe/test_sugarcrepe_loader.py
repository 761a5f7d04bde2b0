"""The SugarCrepe loader (common/benchmarks/caption_negatives.py): released format in, ImageToTextItems out, and
every bad input rejected with a message naming the file and the example id.

Fixtures are written by the tests (JSON + tiny PNG/JPEG images). The last tests read the real released
JSON from the shared mirror at <repo root>/../shared/mirror and skip when it is absent.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from common.benchmarks import caption_negatives as sugarcrepe
from common.benchmarks.caption_negatives import (
    CATEGORIES, PreparedSet, category_counts, load_sugarcrepe, read_category, write_manifest)
from common.files.tasks import MAX_LISTED_PROBLEMS, DatasetError, ImageToTextItem

REPO_ROOT = Path(__file__).resolve().parents[3]
from shared_files import MIRROR as SHARED_MIRROR  # noqa: E402

RELEASED_COUNTS = {
    "add_att": 692, "add_obj": 2062, "replace_att": 788, "replace_obj": 1652,
    "replace_rel": 1406, "swap_att": 666, "swap_obj": 245,
}


def write_image(path: Path, fmt: str = "PNG", colour=(200, 30, 30)) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (8, 8), colour).save(path, format=fmt)
    return path


def write_category(data_dir: Path, category: str, examples) -> Path:
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / f"{category}.json"
    path.write_text(examples if isinstance(examples, str) else json.dumps(examples), encoding="utf-8")
    return path


@pytest.fixture
def fixture_set(tmp_path: Path):
    """Two categories, three examples, PNG and JPEG images (one image shared, as in SugarCrepe)."""
    images = tmp_path / "images"
    write_image(images / "000000000139.jpg", "JPEG")
    write_image(images / "sub" / "b.png", "PNG", (10, 200, 10))
    data = tmp_path / "data"
    files = {
        "replace_obj": write_category(data, "replace_obj", {
            "0": {"filename": "000000000139.jpg", "caption": "A man riding a horse.",
                  "negative_caption": "A man riding a bicycle."},
            "7": {"filename": "sub/b.png", "caption": "A green square.", "negative_caption": "A green circle."},
        }),
        "swap_att": write_category(data, "swap_att", {
            "3": {"filename": "000000000139.jpg", "caption": "A white cat and a black dog.",
                  "negative_caption": "A black cat and a white dog."},
        }),
    }
    return tmp_path, files, images


# --------------------------------------------------------------------------------------------------
# good input
# --------------------------------------------------------------------------------------------------
def test_categories_are_table6_order():
    assert CATEGORIES == ("replace_obj", "replace_att", "replace_rel", "swap_obj", "swap_att", "add_obj", "add_att")


def test_fixture_loads_positive_first(fixture_set):
    _root, files, images = fixture_set
    items = load_sugarcrepe(files, images)
    assert all(isinstance(it, ImageToTextItem) for it in items)
    by_id = {it.item_id: it for it in items}
    assert set(by_id) == {"replace_obj/0", "replace_obj/7", "swap_att/3"}
    a = by_id["replace_obj/0"]
    assert a.captions == ("A man riding a horse.", "A man riding a bicycle.")
    assert a.group == "replace_obj"
    assert a.image == (images / "000000000139.jpg").resolve() and a.image.is_file()
    assert str(files["replace_obj"]) in a.origin and "0" in a.origin
    b = by_id["replace_obj/7"]
    assert b.image == (images / "sub" / "b.png").resolve()
    assert b.captions[0] == "A green square."
    c = by_id["swap_att/3"]
    assert c.group == "swap_att" and c.captions == ("A white cat and a black dog.", "A black cat and a white dog.")
    # the image opens
    with Image.open(a.image) as im:
        assert im.size == (8, 8)


def test_good_set_is_not_truncated(tmp_path: Path):
    images = tmp_path / "images"
    write_image(images / "x.png")
    n = 57  # above MAX_LISTED_PROBLEMS and any plausible page size
    examples = {str(i): {"filename": "x.png", "caption": f"caption {i}", "negative_caption": f"negative {i}"}
                for i in range(n)}
    files = {c: write_category(tmp_path / "data", c, examples) for c in CATEGORIES}
    items = load_sugarcrepe(files, images)
    assert len(items) == n * len(CATEGORIES)
    assert category_counts(files) == {c: n for c in CATEGORIES}
    assert {it.item_id for it in items} == {f"{c}/{i}" for c in CATEGORIES for i in range(n)}
    first = [it for it in items if it.group == "add_att"]
    assert [it.captions[0] for it in first] == [f"caption {i}" for i in range(n)]


def test_check_images_false_skips_existence_but_not_escape(tmp_path: Path):
    files = {"replace_obj": write_category(tmp_path / "data", "replace_obj", {
        "0": {"filename": "not-there.png", "caption": "a", "negative_caption": "b"}})}
    items = load_sugarcrepe(files, tmp_path / "images", check_images=False)
    assert len(items) == 1
    files = {"replace_obj": write_category(tmp_path / "data", "replace_obj", {
        "0": {"filename": "../escape.png", "caption": "a", "negative_caption": "b"}})}
    with pytest.raises(DatasetError):
        load_sugarcrepe(files, tmp_path / "images", check_images=False)


# --------------------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------------------
def one_bad(tmp_path: Path, record, example_id: str = "ex-bad-17", good_image: bool = True):
    images = tmp_path / "images"
    images.mkdir(parents=True, exist_ok=True)
    if good_image:
        write_image(images / "ok.png")
    path = write_category(tmp_path / "data", "replace_att", {
        "ok-1": {"filename": "ok.png", "caption": "a red car", "negative_caption": "a blue car"},
        example_id: record,
    })
    return {"replace_att": path}, images, path


def assert_names(exc: pytest.ExceptionInfo, path: Path, example_id: str) -> str:
    msg = str(exc.value)
    assert str(path) in msg, msg
    assert example_id in msg, msg
    assert "ok-1" not in msg, "the good example must not be reported"
    return msg


def test_missing_image(tmp_path: Path):
    files, images, path = one_bad(tmp_path, {"filename": "missing.png", "caption": "a", "negative_caption": "b"})
    with pytest.raises(DatasetError) as exc:
        load_sugarcrepe(files, images)
    msg = assert_names(exc, path, "ex-bad-17")
    assert "missing.png" in msg


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "symlink", "nested-dotdot"])
def test_filename_escaping_image_root(tmp_path: Path, kind: str):
    outside = write_image(tmp_path / "outside.png")  # exists, so only the escape can fail the load
    images = tmp_path / "images"
    images.mkdir()
    if kind == "dotdot":
        filename = "../outside.png"
    elif kind == "nested-dotdot":
        write_image(images / "sub" / "in.png")
        filename = "sub/../../outside.png"
    elif kind == "absolute":
        filename = str(outside.resolve())
    else:
        (images / "link.png").symlink_to(outside)
        filename = "link.png"
    files, images, path = one_bad(tmp_path, {"filename": filename, "caption": "a", "negative_caption": "b"})
    with pytest.raises(DatasetError) as exc:
        load_sugarcrepe(files, images)
    msg = assert_names(exc, path, "ex-bad-17")
    assert "escapes" in msg


def test_symlink_inside_root_is_fine(tmp_path: Path):
    images = tmp_path / "images"
    target = write_image(images / "real" / "a.png")
    (images / "alias.png").symlink_to(target)
    files, images, _ = one_bad(tmp_path, {"filename": "alias.png", "caption": "a", "negative_caption": "b"})
    items = load_sugarcrepe(files, images)
    assert len(items) == 2


def test_malformed_json_names_file_and_line(tmp_path: Path):
    text = '{\n  "0": {"filename": "a.png", "caption": "x", "negative_caption": "y"},\n  "1": {"filename": \n}\n'
    path = write_category(tmp_path / "data", "swap_obj", text)
    with pytest.raises(DatasetError) as exc:
        load_sugarcrepe({"swap_obj": path}, tmp_path)
    msg = str(exc.value)
    assert str(path) in msg and "line 4" in msg, msg
    with pytest.raises(DatasetError):
        read_category(path)


def test_unreadable_file_is_a_dataset_error(tmp_path: Path):
    missing = tmp_path / "data" / "add_obj.json"
    with pytest.raises(DatasetError) as exc:
        read_category(missing)
    assert str(missing) in str(exc.value)


@pytest.mark.parametrize("top", [[], [{"filename": "a.png", "caption": "x", "negative_caption": "y"}], "text", 3, None])
def test_top_level_not_an_object(tmp_path: Path, top):
    path = write_category(tmp_path / "data", "add_att", json.dumps(top))
    with pytest.raises(DatasetError) as exc:
        load_sugarcrepe({"add_att": path}, tmp_path)
    assert str(path) in str(exc.value)


@pytest.mark.parametrize("record", [["a.png", "x", "y"], "a.png", 5, None])
def test_record_not_an_object(tmp_path: Path, record):
    files, images, path = one_bad(tmp_path, record)
    with pytest.raises(DatasetError) as exc:
        load_sugarcrepe(files, images)
    assert_names(exc, path, "ex-bad-17")


@pytest.mark.parametrize("field", ["filename", "caption", "negative_caption"])
@pytest.mark.parametrize("bad", ["missing", "", "   ", 7, None, ["x"]])
def test_bad_field(tmp_path: Path, field: str, bad):
    record = {"filename": "ok.png", "caption": "a red car", "negative_caption": "a blue car"}
    if bad == "missing":
        del record[field]
    else:
        record[field] = bad
    files, images, path = one_bad(tmp_path, record)
    with pytest.raises(DatasetError) as exc:
        load_sugarcrepe(files, images)
    msg = assert_names(exc, path, "ex-bad-17")
    assert field in msg


def test_every_bad_example_is_listed(tmp_path: Path):
    images = tmp_path / "images"
    write_image(images / "ok.png")
    outside = write_image(tmp_path / "outside.png")
    examples = {
        "good-0": {"filename": "ok.png", "caption": "a", "negative_caption": "b"},
        "bad-missing-image": {"filename": "nope.png", "caption": "a", "negative_caption": "b"},
        "bad-escape": {"filename": "../outside.png", "caption": "a", "negative_caption": "b"},
        "bad-absolute": {"filename": str(outside), "caption": "a", "negative_caption": "b"},
        "good-1": {"filename": "ok.png", "caption": "c", "negative_caption": "d"},
        "bad-missing-image-2": {"filename": "nope2.jpg", "caption": "a", "negative_caption": "b"},
    }
    path = write_category(tmp_path / "data", "replace_rel", examples)
    other = write_category(tmp_path / "data", "swap_obj", {
        "bad-other-file": {"filename": "gone.png", "caption": "a", "negative_caption": "b"}})
    with pytest.raises(DatasetError) as exc:
        load_sugarcrepe({"replace_rel": path, "swap_obj": other}, images)
    msg = str(exc.value)
    for example_id in ("bad-missing-image", "bad-escape", "bad-absolute", "bad-missing-image-2"):
        assert f"{path}#{example_id}" in msg, msg
    assert f"{other}#bad-other-file" in msg
    assert "good-0" not in msg and "good-1" not in msg
    assert msg.startswith("5 bad"), msg

    # record-level problems are all listed too, one per bad field
    records = {
        "r1": {"caption": "a", "negative_caption": "b"},
        "r2": {"filename": "ok.png", "caption": "", "negative_caption": "b"},
        "r3": "not an object",
        "r4": {"filename": "ok.png", "caption": "a", "negative_caption": "b"},
    }
    path = write_category(tmp_path / "data2", "add_obj", records)
    with pytest.raises(DatasetError) as exc:
        load_sugarcrepe({"add_obj": path}, images)
    msg = str(exc.value)
    assert msg.startswith("3 bad"), msg
    for example_id in ("r1", "r2", "r3"):
        assert repr(example_id) in msg
    assert "'r4'" not in msg


def test_many_bad_examples_are_counted_not_dropped(tmp_path: Path):
    images = tmp_path / "images"
    images.mkdir()
    n = 33
    path = write_category(tmp_path / "data", "add_att", {
        f"m{i}": {"filename": f"missing-{i}.png", "caption": "a", "negative_caption": "b"} for i in range(n)})
    with pytest.raises(DatasetError) as exc:
        load_sugarcrepe({"add_att": path}, images)
    msg = str(exc.value)
    assert msg.startswith(f"{n} bad"), msg
    listed = MAX_LISTED_PROBLEMS
    assert f"and {n - listed} more" in msg
    assert f"{path}#m0:" in msg


def test_non_utf8_file_names_the_file(tmp_path: Path):
    path = tmp_path / "data" / "add_att.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"0": {"filename": "a.png", "caption": "caf\xe9", "negative_caption": "x"}}')
    with pytest.raises(DatasetError) as exc:
        read_category(path)
    assert str(path) in str(exc.value)


def test_duplicate_example_ids_are_rejected(tmp_path: Path):
    images = tmp_path / "images"
    write_image(images / "ok.png")
    text = ('{"5": {"filename": "ok.png", "caption": "first", "negative_caption": "x"},\n'
            ' "5": {"filename": "ok.png", "caption": "second", "negative_caption": "y"}}')
    path = write_category(tmp_path / "data", "swap_obj", text)
    with pytest.raises(DatasetError) as exc:
        load_sugarcrepe({"swap_obj": path}, images)
    assert str(exc.value) == f"{path}: duplicate key '5' (a key appears once per object)"


@pytest.mark.parametrize("kind", ["nul", "loop"])
def test_unresolvable_filename_is_a_listed_dataset_error(tmp_path: Path, kind: str):
    images = tmp_path / "images"
    images.mkdir()
    if kind == "loop":
        (images / "loop1").symlink_to(images / "loop2")
        (images / "loop2").symlink_to(images / "loop1")
        filename = "loop1"
    else:
        filename = "a\x00b.png"
    files, images, path = one_bad(tmp_path, {"filename": filename, "caption": "a", "negative_caption": "b"})
    with pytest.raises(DatasetError) as exc:
        load_sugarcrepe(files, images)
    assert_names(exc, path, "ex-bad-17")


# --------------------------------------------------------------------------------------------------
# prepared sets (manifest)
# --------------------------------------------------------------------------------------------------
def test_prepared_set_missing_manifest(tmp_path: Path):
    manifest = tmp_path / "nowhere" / "manifest.json"
    with pytest.raises(DatasetError) as exc:
        PreparedSet.load(manifest)
    assert str(manifest) in str(exc.value)


def test_prepared_set_malformed_manifest(tmp_path: Path):
    manifest = tmp_path / "manifest.json"
    manifest.write_text("{not json")
    with pytest.raises(DatasetError) as exc:
        PreparedSet.load(manifest)
    assert str(manifest) in str(exc.value)


def test_prepared_set_relative_paths_resolve_against_manifest_folder(tmp_path: Path, monkeypatch, fixture_set):
    root, files, images = fixture_set
    prepared = write_manifest(root, "data", "images", {"kind": "sugarcrepe", "profile": "test"})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    loaded = PreparedSet.load(root / "manifest.json")
    assert loaded.data_dir == root / "data" and loaded.image_root == root / "images"
    assert loaded.categories == CATEGORIES
    assert loaded.files()["replace_obj"] == files["replace_obj"]
    assert loaded.info["profile"] == "test"
    assert loaded.describe()["image_root"] == str(root / "images")
    # a manifest listing only the categories present loads every example
    info = json.loads((root / "manifest.json").read_text())
    info["categories"] = ["replace_obj", "swap_att"]
    (root / "manifest.json").write_text(json.dumps(info))
    items = PreparedSet.load(root / "manifest.json").items()
    assert sorted(it.item_id for it in items) == ["replace_obj/0", "replace_obj/7", "swap_att/3"]
    assert prepared.path == root / "manifest.json"


# --------------------------------------------------------------------------------------------------
# the real released JSON, through the downloader
# --------------------------------------------------------------------------------------------------
needs_mirror = pytest.mark.skipif(not SHARED_MIRROR.is_dir(), reason=f"no shared mirror at {SHARED_MIRROR}")


@needs_mirror
def test_released_counts_through_downloader(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("VLC_MIRROR", str(SHARED_MIRROR))
    monkeypatch.setenv("VLC_DATA", str(tmp_path))
    files = sugarcrepe.fetch_released()
    assert list(files) == list(CATEGORIES)
    for path in files.values():
        assert path.is_file() and path.resolve().is_relative_to(tmp_path.resolve())
    assert category_counts(files) == RELEASED_COUNTS
    # the released records are well-formed (no image check: COCO is not here)
    items = load_sugarcrepe(files, tmp_path / "coco", check_images=False)
    assert len(items) == sum(RELEASED_COUNTS.values())


@needs_mirror
def test_cli_describe_released(tmp_path: Path):
    env = dict(os.environ, VLC_MIRROR=str(SHARED_MIRROR), VLC_DATA=str(tmp_path))
    proc = subprocess.run(
        [sys.executable, "-m", "common", "data", "describe", "sugarcrepe"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["dataset"] == "sugarcrepe"
    assert out["counts"] == RELEASED_COUNTS
    assert out["total"] == sum(RELEASED_COUNTS.values())
