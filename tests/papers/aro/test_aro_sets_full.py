"""The full-profile preparation on tiny data in the upstream layout, written into a temporary data root."""
from __future__ import annotations

import io
import json
import shutil
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from common.errors import WorkspaceError
from common.registry.fetch import md5_file
from papers.aro import sets_full
from papers.aro.data import AroSet
from registry_support import state_md5


def image_bytes(w: int, h: int, seed: int, fmt: str = "PNG") -> bytes:
    pixels = np.random.default_rng(seed).integers(0, 255, (h, w, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format=fmt)
    return buf.getvalue()


def vg_record(image: str, box: tuple, **extra) -> dict:
    return {"image_path": image, "bbox_x": box[0], "bbox_y": box[1], "bbox_w": box[2], "bbox_h": box[3],
            "true_caption": "the cup is on the table", "false_caption": "the table is on the cup", **extra}


def cifar_tarball(path: Path, release: sets_full.CifarRelease, labels: list[int]) -> None:
    """A CIFAR binary tarball in the upstream layout: label byte(s) then 3,072 pixel bytes per record."""
    pixels = np.arange(len(labels) * 3072, dtype=np.int64).reshape(len(labels), 3072) % 256
    records = b"".join(bytes([7] * (release.label_bytes - 1) + [label]) + bytes(row.astype(np.uint8))
                       for label, row in zip(labels, pixels))
    members = {release.test_member: records, release.names_member: b"aquarium_fish\ncat\n\n"}
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))


@pytest.fixture
def data_root(tmp_path: Path, monkeypatch) -> Path:
    root = tmp_path / "data"
    monkeypatch.setenv("VLC_DATA", str(root))
    monkeypatch.delenv("VLC_MIRROR", raising=False)
    (root / "aro").mkdir(parents=True)
    (root / "aro/visual_genome_relation.json").write_text(json.dumps([
        vg_record("1.jpg", (2, 3, 10, 5), relation_name="on"),
        vg_record("2.jpg", (0, 0, 8, 8), relation_name="near"),
    ]))
    (root / "aro/visual_genome_attribution.json").write_text(json.dumps([
        vg_record("1.jpg", (2, 3, 10, 5), attributes=["white", "red"]),  # same box as a relation case: one crop
        vg_record("1.jpg", (1.4, 0, 4, 4), attributes=["red", "white"]),
    ]))
    with zipfile.ZipFile(root / "aro/vgr_vga_images.zip", "w") as zf:
        zf.writestr("images/1.jpg", image_bytes(16, 12, 1))
        zf.writestr("images/2.jpg", image_bytes(8, 8, 2))
    (root / "coco/karpathy").mkdir(parents=True)
    (root / "coco/karpathy/coco_karpathy_test.json").write_text(json.dumps([
        {"image": "val2014/COCO_val2014_000000000001.jpg", "caption": ["a cat.", "a cat sitting."]}]))
    with zipfile.ZipFile(root / "coco/val2014.zip", "w") as zf:
        zf.writestr("val2014/COCO_val2014_000000000001.jpg", image_bytes(10, 10, 3, "JPEG"))
    (root / "flickr30k/karpathy").mkdir(parents=True)
    (root / "flickr30k/karpathy/flickr30k_test.json").write_text(json.dumps([
        {"image": "flickr30k-images/100.jpg", "caption": ["a dog.", "a dog runs.", "a brown dog."]}]))
    for name, release in sets_full.CIFAR.items():
        tarball = root / release.key.removeprefix("aro/")
        cifar_tarball(tarball, release, [1, 0, 1])
        state_md5(monkeypatch, release.key, md5_file(tarball))  # as the registry states the published one
    return root


def test_prepare_without_flickr_images_then_with(data_root: Path, tmp_path: Path):
    out = tmp_path / "build" / "aro"
    with pytest.raises(WorkspaceError, match="flickr30k/flickr30k-images must be downloaded by hand"):
        sets_full.prepare_full(out)
    assert not (out / "crops").exists()  # every source is fetched before any work
    aro = sets_full.prepare_full(out, ["vg", "coco", "cifar"])
    info = aro.info
    assert info["counts"]["vg_crops"] == {"crops": 3, "written": 3, "already_there": 0}
    assert info["counts"]["vg_relation"] == 2 and info["counts"]["vg_attribution"] == 2
    rel = aro.vg_relation_items()
    assert rel[0].captions == ("the table is on the cup", "the cup is on the table") and rel[1].group == "near"
    with Image.open(data_root / "aro/vgr_vga_images/images/1.jpg") as im:
        expected = np.asarray(im.convert("RGB").crop((2, 3, 12, 8)))
    with Image.open(rel[0].image) as im:
        assert np.array_equal(np.asarray(im), expected)  # the upstream crop, pixel for pixel
    with Image.open(aro.vg_attribution_items()[1].image) as im:
        assert im.size == (4, 4)  # (1.4, 0, 5.4, 4) rounds to (1, 0, 5, 4) as PIL's crop does
    coco = aro.retrieval_sets()["coco"]
    assert coco.flat_captions() == ["a cat.", "a cat sitting."] and coco.images[0].is_file()
    cifar = aro.classification_sets()
    assert cifar["cifar100"].class_names == ("aquarium fish", "cat") and cifar["cifar10"].labels == (1, 0, 1)
    assert cifar["cifar10"].class_prompts[1][0] == "a photo of a cat." and len(cifar["cifar10"].class_prompts[1]) == 18

    (data_root / "flickr30k/flickr30k-images").mkdir(parents=True)
    (data_root / "flickr30k/flickr30k-images/100.jpg").write_bytes(image_bytes(6, 6, 4, "JPEG"))
    assert sets_full.main(["--out", str(out), "--parts", "vg,flickr30k"]) == 0
    again = AroSet.load(out)
    assert again.info["counts"]["vg_crops"]["already_there"] == 3  # crops are kept, not rewritten
    assert again.retrieval_sets()["flickr30k"].n_captions == 3 and not again.has("classification")


def test_cifar_md5_mismatch_is_refused(data_root: Path, tmp_path: Path, monkeypatch):
    state_md5(monkeypatch, sets_full.CIFAR["cifar10"].key, "0" * 32)
    with pytest.raises(WorkspaceError, match=r"aro/cifar/cifar-10-binary.tar.gz: .* has md5 [0-9a-f]{32}, the registry "
                                             r"states 0{32}"):
        sets_full.prepare_cifar("cifar10", tmp_path / "out")


def test_cifar_binary_records_are_read_as_upstream_lays_them_out(tmp_path: Path):
    release = sets_full.CIFAR["cifar100"]  # two label bytes: coarse (7 here), then the fine label that is used
    tarball = tmp_path / "c.tar.gz"
    cifar_tarball(tarball, release, [1, 0])
    classes, images, labels = sets_full.read_cifar_binary(tarball, release)
    assert classes == ["aquarium fish", "cat"] and labels == [1, 0]
    flat = np.arange(2 * 3072) % 256
    assert images.shape == (2, 32, 32, 3)
    assert images[1, 0, 1].tolist() == [flat[3072 + 1], flat[3072 + 1024 + 1], flat[3072 + 2048 + 1]]  # planes R, G, B


def test_cifar_bad_binary_names_the_file_and_record(tmp_path: Path):
    release = sets_full.CIFAR["cifar10"]
    tarball = tmp_path / "c.tar.gz"
    cifar_tarball(tarball, release, [0, 5])
    with pytest.raises(WorkspaceError, match=r"c.tar.gz: record 1 of cifar-10-batches-bin/test_batch.bin has label 5"):
        sets_full.read_cifar_binary(tarball, release)
    with pytest.raises(WorkspaceError, match="not a CIFAR binary tarball"):
        sets_full.read_cifar_binary(tarball, sets_full.CIFAR["cifar100"])


def test_missing_vg_image_names_record(data_root: Path, tmp_path: Path):
    records = json.loads((data_root / "aro/visual_genome_relation.json").read_text())
    records.append(vg_record("missing.jpg", (0, 0, 2, 2), relation_name="on"))
    (data_root / "aro/visual_genome_relation.json").write_text(json.dumps(records))
    (data_root / "checksums.lock.json").unlink(missing_ok=True)
    with pytest.raises(WorkspaceError, match=r"visual_genome_relation.json:2: image 'missing.jpg' not found"):
        sets_full.prepare_full(tmp_path / "out", ["vg"])
    assert not (tmp_path / "out" / "manifest.json").exists()


def test_an_interrupted_rebuild_leaves_the_previous_set_whole(data_root: Path, tmp_path: Path, monkeypatch):
    """The CIFAR tarballs change (other labels), and the rebuild is interrupted at every move of a file: the set read
    through the manifest is the previous one each time (before 2026-11-29 the index ``classification/<name>.json``
    was rewritten before the manifest, so an interrupted rebuild paired the previous manifest with the new labels),
    and the uninterrupted rebuild then reads the new labels and leaves no index it does not name."""
    from interrupt_support import count_moves, interrupt_at_every_move, leftovers

    out = tmp_path / "build" / "aro"
    sets_full.prepare_full(out, ["vg", "cifar"])
    manifest = (out / "manifest.json").read_bytes()

    def labels() -> dict[str, tuple[int, ...]]:
        return {n: s.labels for n, s in AroSet.load(out).classification_sets().items()}

    assert labels() == {"cifar10": (1, 0, 1), "cifar100": (1, 0, 1)}
    lock = data_root / "checksums.lock.json"  # the downloader pinned the first tarballs: a new release, unpinned
    pins = json.loads(lock.read_text())
    for release in sets_full.CIFAR.values():
        tarball = data_root / release.key.removeprefix("aro/")
        cifar_tarball(tarball, release, [0, 1, 1])
        state_md5(monkeypatch, release.key, md5_file(tarball))
        pins["sources"].pop(release.key)
    lock.write_text(json.dumps(pins))
    for release in sets_full.CIFAR.values():  # pinned again now, so that every run below moves the same files
        sets_full.fetch(release.key, progress=False)
    total = count_moves(lambda: sets_full.prepare_full(shutil.copytree(out, tmp_path / "count"), ["vg", "cifar"]))
    shutil.copytree(out, tmp_path / "previous")

    def from_the_previous_set() -> None:  # an interrupted run keeps the images it wrote: each run starts afresh
        shutil.rmtree(out)
        shutil.copytree(tmp_path / "previous", out)

    def check(at: int) -> None:
        assert (out / "manifest.json").read_bytes() == manifest, f"interrupted at move {at}: another manifest"
        assert labels() == {"cifar10": (1, 0, 1), "cifar100": (1, 0, 1)}, f"interrupted at move {at}: a mix"
        assert not leftovers(out)

    interrupt_at_every_move(lambda: sets_full.prepare_full(out, ["vg", "cifar"]), total, check,
                            before_each=from_the_previous_set)
    sets_full.prepare_full(out, ["vg", "cifar"])
    assert labels() == {"cifar10": (0, 1, 1), "cifar100": (0, 1, 1)}
    named = {e["file"] for e in json.loads((out / "manifest.json").read_text())["classification"].values()}
    assert {p.relative_to(out).as_posix() for p in (out / "classification").glob("*.json")} == named
