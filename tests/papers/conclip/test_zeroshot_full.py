"""CoN-CLIP's zero-shot classification, full profile, on tiny datasets written here in the layouts torchvision reads
(CIFAR pickles, Caltech-101's category folders, Flowers-102's .mat files, Food-101's meta json, the Pets lists,
Stanford Cars' devkit, ImageNet's val folders), scored by random tiny CLIPs on the CPU: the loaders against what was
written, the tables against a brute-force argmax over the models' own embeddings with each prompt kind, archives
fetched and extracted, models that cannot be loaded, and datasets that must be fetched by hand."""
from __future__ import annotations

import csv
import dataclasses
import functools
import hashlib
import io
import json
import pickle
import tarfile
import types
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

import common.pipeline.params as common_params
from common.evaluation.engine import EngineConfig
from common.registry.markers import LOCK_NAME
from common.zoo import ModelUnavailable, random_model
from papers.conclip import columns, tables as ccneg_tables, zeroshot_full as zf
from registry_support import state_md5

CONFIG = EngineConfig(progress=False, num_workers=0)
MODELS = {"clip": "openai/ViT-B-32", "negclip": "aro/negclip"}
SCORED = ("caltech101", "flowers102", "cifar100", "food101", "stanford_cars", "oxford_pets", "cifar10")
"""Every dataset but ImageNet, whose 1,000 classes are checked by the loader test alone."""


# ------------------------------------------------------------------------------------------------------------------
# Tiny datasets in torchvision's layouts
# ------------------------------------------------------------------------------------------------------------------
def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def _image(path: Path, seed: int, size: int = 20) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pixels = np.random.default_rng(seed).integers(0, 256, (size, size, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(path)
    return path


def _pickle(path: Path, obj: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(obj))
    return path


def write_cifar(root: Path, folder: str, files: list[str], meta: tuple[str, str], label_key: str,
                classes: list[str], labels: list[int], seed: int) -> None:
    """A CIFAR folder (every batch file torchvision looks for; the test batch holds ``labels``)."""
    rng = np.random.default_rng(seed)
    batch = {"data": rng.integers(0, 256, (len(labels), 3072), dtype=np.uint8), label_key: labels}
    for name in files:
        _pickle(root / folder / name, batch)
    _pickle(root / folder / meta[0], {meta[1]: classes})


def write_caltech(root: Path) -> tuple[list[str], list[int]]:
    counts = {"BACKGROUND_Google": 1, "Faces_easy": 2, "car_side": 2, "yin_yang": 1}
    for k, (category, n) in enumerate(counts.items()):
        for i in range(1, n + 1):
            _image(root / "caltech101" / "101_ObjectCategories" / category / f"image_{i:04d}.jpg", 100 + 10 * k + i)
    return ["Faces easy", "car side", "yin yang"], [0, 0, 1, 1, 2]


def write_flowers(root: Path) -> tuple[list[int], dict[str, str]]:
    from scipy.io import savemat

    base = root / "flowers-102"
    labels = [1, 2, 3, 1, 2, 3, 1, 2]  # 1-based, one per image_0000k.jpg
    for k in range(1, len(labels) + 1):
        _image(base / "jpg" / f"image_{k:05d}.jpg", 200 + k)
    savemat(base / "imagelabels.mat", {"labels": np.array([labels])})
    savemat(base / "setid.mat", {"trnid": np.array([[1, 2]]), "valid": np.array([[3, 9]]),
                                 "tstid": np.array([[4, 5, 6, 7, 8]])})
    return [labels[k - 1] - 1 for k in (4, 5, 6, 7, 8)], {n: _md5(base / n) for n in ("imagelabels.mat", "setid.mat")}


def write_food(root: Path) -> tuple[list[str], list[int]]:
    meta = {"apple_pie": ["apple_pie/1001", "apple_pie/1002"], "ramen": ["ramen/2001", "ramen/2002", "ramen/2003"]}
    for k, paths in enumerate(meta.values()):
        for i, rel in enumerate(paths):
            _image(root / "food-101" / "images" / f"{rel}.jpg", 300 + 10 * k + i)
    (root / "food-101" / "meta").mkdir(parents=True)
    (root / "food-101" / "meta" / "test.json").write_text(json.dumps(meta))
    return ["apple pie", "ramen"], [0, 0, 1, 1, 1]


def write_pets(root: Path) -> tuple[list[str], list[int]]:
    base = root / "oxford-iiit-pet"
    rows = [("Abyssinian_1", 1, 1), ("Abyssinian_7", 1, 1), ("american_bulldog_3", 2, 2), ("Bengal_2", 3, 1),
            ("american_bulldog_9", 2, 2)]
    for k, (image_id, _, _) in enumerate(rows):
        _image(base / "images" / f"{image_id}.jpg", 400 + k)
    (base / "annotations").mkdir(parents=True)
    (base / "annotations" / "test.txt").write_text("".join(f"{i} {c} {s} 1\n" for i, c, s in rows))
    return ["Abyssinian", "American Bulldog", "Bengal"], [0, 0, 1, 2, 1]


def write_cars(root: Path) -> tuple[list[str], list[int]]:
    from scipy.io import savemat

    base = root / "stanford_cars"
    names = ["AM General Hummer SUV 2000", "Acura RL Sedan 2012", "Audi R8 Coupe 2012"]
    classes = [2, 1, 3, 3, 2, 1]  # 1-based
    (base / "devkit").mkdir(parents=True)
    savemat(base / "devkit" / "cars_meta.mat", {"class_names": np.array([names], dtype=object)})
    annotations = np.array([(f"{k:05d}.jpg", c) for k, c in enumerate(classes, 1)],
                           dtype=[("fname", object), ("class", object)])
    savemat(base / "cars_test_annos_withlabels.mat", {"annotations": annotations[None, :]})
    for k in range(1, len(classes) + 1):
        _image(base / "cars_test" / f"{k:05d}.jpg", 500 + k)
    return names, [c - 1 for c in classes]


@dataclasses.dataclass
class World:
    data_root: Path
    images: Path
    expected: dict[str, tuple[list[str], list[int]]]
    """Per dataset: class names, test labels (in the loader's order)."""


def write_world(data_root: Path, mp: pytest.MonkeyPatch) -> World:
    """Every dataset but ImageNet, the md5s of Flowers' .mat files stated in the registry (as a rehearsal's copy
    states its stand-ins'; CIFAR's batch files are checked through their archive's md5 only)."""
    from torchvision import datasets

    zero = data_root / "zeroshot"
    expected = {}
    cifar10 = ["airplane", "automobile", "bird"]
    batches = [*(f"data_batch_{i}" for i in range(1, 6)), "test_batch"]
    write_cifar(zero / "cifar10", "cifar-10-batches-py", batches, ("batches.meta", "label_names"), "labels",
                cifar10, [0, 1, 2, 1, 0, 2], seed=1)
    expected["cifar10"] = cifar10, [0, 1, 2, 1, 0, 2]
    cifar100 = ["aquarium_fish", "maple_tree", "apple"]
    write_cifar(zero / "cifar100", "cifar-100-python", ["train", "test"], ("meta", "fine_label_names"),
                "fine_labels", cifar100, [2, 2, 0, 1, 0], seed=2)
    expected["cifar100"] = ["aquarium fish", "maple tree", "apple"], [2, 2, 0, 1, 0]
    expected["caltech101"] = write_caltech(zero / "caltech101")
    labels, md5 = write_flowers(zero / "flowers102")
    for name, digest in md5.items():
        state_md5(mp, f"conclip/zeroshot/flowers102/flowers-102/{name}", digest)
    expected["flowers102"] = list(datasets.Flowers102.classes), labels
    expected["food101"] = write_food(zero / "food101")
    expected["oxford_pets"] = write_pets(zero / "oxford_pets")
    expected["stanford_cars"] = write_cars(zero / "stanford_cars")
    return World(data_root, data_root.parent / "images", expected)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        base = tmp_path_factory.mktemp("zeroshot")
        for var in ("VLC_CACHE", "VLC_BUILD"):
            mp.setenv(var, str(base / var.lower()))
        yield write_world(base / "data", mp)


@pytest.fixture(scope="module")
def tiny():
    """A randomly initialised mini-vit-xs (an open_clip config of this workspace) per zoo name asked for."""
    models = {"openai/ViT-B-32": random_model("mini-vit-xs", seed=0),
              "aro/negclip": random_model("mini-vit-xs", seed=1)}
    return lambda name, device="cpu": models[name]


@pytest.fixture(scope="module")
def tables(world, tiny, tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("results") / "conclip" / "full" / "zeroshot"
    return zf.evaluate_zeroshot(MODELS, SCORED, out, CONFIG, create=tiny, data_root=world.data_root,
                                image_dir=world.images, context={"test": True})


def _rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


# ------------------------------------------------------------------------------------------------------------------
# Loaders
# ------------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", SCORED)
def test_loaders_read_what_was_written(world, name):
    loaded = zf.load_dataset(name, world.data_root, world.images)[0]
    names, labels = world.expected[name]
    assert list(loaded.class_names) == names and list(loaded.labels) == labels
    assert len(loaded.images) == len(labels) and all(p.is_file() for p in loaded.images)
    assert len(set(loaded.images)) == len(loaded.images)


def test_cifar_images_are_the_pickled_pixels_written_once(world):
    loaded = zf.load_dataset("cifar10", world.data_root, world.images)[0]
    batch = pickle.loads((world.data_root / "zeroshot" / "cifar10" / "cifar-10-batches-py" / "test_batch").read_bytes())
    pixels = batch["data"].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    assert all(np.array_equal(np.asarray(Image.open(p)), pixels[k]) for k, p in enumerate(loaded.images))
    before = [p.stat().st_mtime_ns for p in loaded.images]
    again = zf.load_dataset("cifar10", world.data_root, world.images)[0]
    assert again == loaded and [p.stat().st_mtime_ns for p in again.images] == before


def test_imagenet_needs_its_thousand_class_folders(tmp_path):
    from open_clip.zero_shot_metadata import IMAGENET_CLASSNAMES

    val = tmp_path / "data" / "zeroshot" / "imagenet" / "val"
    wnids = [f"n{k:08d}" for k in range(1000)]
    jpeg = io.BytesIO()
    Image.new("RGB", (4, 4)).save(jpeg, format="JPEG")
    for k, wnid in enumerate(wnids):
        (val / wnid).mkdir(parents=True)
        (val / wnid / f"ILSVRC2012_val_{k + 1:08d}.JPEG").write_bytes(jpeg.getvalue())
    classes = common_params.read_params(common_params.PARAMS_FILE)["conclip"]["full"]["zeroshot_classes"]
    loaded = zf.load_dataset("imagenet", tmp_path / "data", tmp_path / "images", classes)[0]
    assert loaded.class_names == tuple(IMAGENET_CLASSNAMES) and loaded.labels == tuple(range(1000))
    for path in (val / wnids[-1]).iterdir():
        path.unlink()
    (val / wnids[-1]).rmdir()
    with pytest.raises(zf.ZeroshotDataError, match="holds 999 classes; params.yaml conclip.full.zeroshot_classes "
                                                   "states 1000 for ImageNet-1k"):
        zf.load_dataset("imagenet", tmp_path / "data", tmp_path / "images", classes)
    (val / "n0000000x").mkdir()  # not a WordNet id
    (val / "n0000000x" / "ILSVRC2012_val_00001000.JPEG").write_bytes(jpeg.getvalue())
    with pytest.raises(zf.ZeroshotDataError, match="not WordNet ids"):
        zf.load_dataset("imagenet", tmp_path / "data", tmp_path / "images")


@pytest.mark.parametrize("name, needle", [("imagenet", "image-net.org"), ("stanford_cars", "kaggle")])
def test_a_missing_manual_dataset_names_the_manual_step(tmp_path, tiny, monkeypatch, name, needle):
    """Checked before anything is downloaded (CIFAR-10 is missing too, and the network is refused)."""
    from common.registry import fetch as fetching

    def refuse(url, *args, **kwargs):
        raise AssertionError(f"unexpected network access to {url}")

    monkeypatch.setattr(fetching, "http_download", refuse)
    out = tmp_path / "out"
    with pytest.raises(zf.ZeroshotDataError) as err:
        zf.evaluate_zeroshot(MODELS, ["cifar10", name], out, CONFIG, create=tiny, data_root=tmp_path / "empty")
    message = str(err.value)
    assert "must be downloaded by hand" in message and needle in message
    assert str(tmp_path / "empty" / "zeroshot" / name) in message and "zeroshot_datasets" in message
    assert not (out / "classification.csv").exists()


def test_unknown_or_empty_dataset_lists_are_refused(tmp_path, tiny):
    with pytest.raises(zf.ZeroshotError, match="unknown"):
        zf.evaluate_zeroshot(MODELS, ["mnist"], tmp_path, CONFIG, create=tiny)
    with pytest.raises(zf.ZeroshotError, match="empty"):
        zf.evaluate_zeroshot(MODELS, [], tmp_path, CONFIG, create=tiny)


# ------------------------------------------------------------------------------------------------------------------
# Archives: fetched through the registry (trust on first use), md5-checked, extracted beside the archive
# ------------------------------------------------------------------------------------------------------------------
def _tar_gz(folder: Path, arcname: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(folder, arcname=arcname)
    return buffer.getvalue()


def _with_md5(monkeypatch, name: str, md5: str) -> None:
    """The registry states ``md5`` for the dataset's archive (as a rehearsal's copy states its stand-in's)."""
    state_md5(monkeypatch, zf.DATASETS[name].downloads[0].key, md5)


def test_cifar_archive_is_checked_then_extracted(world, tmp_path, monkeypatch):
    archive = tmp_path / "data" / "zeroshot" / "cifar10" / "cifar-10-python.tar.gz"
    archive.parent.mkdir(parents=True)
    folder = world.data_root / "zeroshot" / "cifar10" / "cifar-10-batches-py"
    archive.write_bytes(_tar_gz(folder, "cifar-10-batches-py"))
    target = archive.parent / "cifar-10-batches-py"
    with pytest.raises(zf.ZeroshotDataError, match="the registry states c58f30108f718f92721af3b95e74349a"):
        zf.load_dataset("cifar10", tmp_path / "data", tmp_path / "images")  # the real pin: a fake archive is refused
    assert not target.exists() and [p.name for p in archive.parent.iterdir()] == [archive.name]
    _with_md5(monkeypatch, "cifar10", _md5(archive))
    loaded = zf.load_dataset("cifar10", tmp_path / "data", tmp_path / "images")[0]
    assert list(loaded.labels) == world.expected["cifar10"][1] and target.is_dir()
    marker = json.loads((archive.parent / f"cifar-10-batches-py{zf.MARKER_SUFFIX}").read_text())
    lock = json.loads((tmp_path / "data" / LOCK_NAME).read_text())
    assert marker["archive_sha256"] == hashlib.sha256(archive.read_bytes()).hexdigest()
    assert marker["archive_sha256"] in json.dumps(lock)


def test_caltech_tarball_inside_the_zip_is_extracted(world, tmp_path, monkeypatch):
    archive = tmp_path / "data" / "zeroshot" / "caltech101" / "caltech-101.zip"
    archive.parent.mkdir(parents=True)
    inner = _tar_gz(world.data_root / "zeroshot" / "caltech101" / "caltech101" / "101_ObjectCategories",
                    "101_ObjectCategories")
    with zipfile.ZipFile(archive, "w") as zf_out:
        zf_out.writestr("caltech-101/101_ObjectCategories.tar.gz", inner)
        zf_out.writestr("caltech-101/Annotations.tar", b"not read")
    _with_md5(monkeypatch, "caltech101", _md5(archive))
    loaded = zf.load_dataset("caltech101", tmp_path / "data", tmp_path / "images")[0]
    assert (list(loaded.class_names), list(loaded.labels)) == world.expected["caltech101"]
    assert not list((archive.parent / "caltech101" / "101_ObjectCategories").glob("*.json"))


def test_an_archive_without_its_folder_is_refused(tmp_path, monkeypatch):
    archive = tmp_path / "data" / "zeroshot" / "food101" / "food-101.tar.gz"
    (tmp_path / "other").mkdir()
    archive.parent.mkdir(parents=True)
    archive.write_bytes(_tar_gz(tmp_path / "other", "other"))
    _with_md5(monkeypatch, "food101", _md5(archive))
    with pytest.raises(zf.ZeroshotDataError, match="no top folder 'food-101'"):
        zf.load_dataset("food101", tmp_path / "data", tmp_path / "images")
    assert sorted(p.name for p in archive.parent.iterdir()) == [archive.name]


# ------------------------------------------------------------------------------------------------------------------
# Scoring and the tables
# ------------------------------------------------------------------------------------------------------------------
def _brute_force_top1(model, loaded, template: str) -> tuple[float, np.ndarray]:
    """Top-1 and predictions from the model's own embeddings, one image at a time (no engine, no cache)."""
    images = torch.cat([model.encode_images(model.load_image(p)[None]) for p in loaded.images]).double().numpy()
    texts = model.encode_texts([template.format(c) for c in loaded.class_names]).double().numpy()
    predictions = (images @ texts.T).argmax(axis=1)
    return float((predictions == np.array(loaded.labels)).mean()), predictions


def test_negated_prompts_are_the_papers(world):
    sets = zf.prompt_sets(zf.load_dataset("food101", world.data_root, world.images)[0])
    assert sets["standard"].class_prompts == (("this is a photo of a apple pie",), ("this is a photo of a ramen",))
    assert sets["negated"].class_prompts == (("this is not a photo of a apple pie",),
                                             ("this is not a photo of a ramen",))
    assert sets["standard"].images == sets["negated"].images and sets["standard"].labels == sets["negated"].labels


def test_tables_match_a_brute_force_argmax_with_each_prompt(world, tiny, tables):
    by_dataset = {(r["row"], r["dataset"]): r for r in _rows(tables["by_dataset"])}
    assert list(_rows(tables["by_dataset"])[0]) == list(zf.BY_DATASET_FIELDS)
    assert len(by_dataset) == len(MODELS) * len(SCORED)
    differ = 0
    for row, name in MODELS.items():
        for dataset in SCORED:
            loaded = zf.load_dataset(dataset, world.data_root, world.images)[0]
            standard, p_standard = _brute_force_top1(tiny(name), loaded, zf.PROMPTS["standard"])
            negated, p_negated = _brute_force_top1(tiny(name), loaded, zf.PROMPTS["negated"])
            differ += int((p_standard != p_negated).sum())
            cell = by_dataset[(row, dataset)]
            assert float(cell["standard"]) == pytest.approx(100 * standard, abs=0.005), (row, dataset)
            assert float(cell["negated"]) == pytest.approx(100 * negated, abs=0.005), (row, dataset)
            assert float(cell["delta"]) == pytest.approx(100 * (standard - negated), abs=0.005)
            assert int(cell["n"]) == len(loaded.labels) and int(cell["n_classes"]) == len(loaded.class_names)
            assert cell["split"] == zf.DATASETS[dataset].split and cell["model"] == name
    assert differ > 0, "the negated prompts changed no prediction: the check above could not tell them apart"


def test_classification_csv_has_the_mini_columns_and_means(tables):
    wide = _rows(tables["classification"])
    assert [r["row"] for r in wide] == list(MODELS)
    assert tuple(wide[0]) == columns.classification_fields(SCORED)
    assert {"row", "model", "label", "classification_top1", "delta"} <= set(wide[0])
    long = _rows(tables["by_dataset"])
    for r in wide:
        cells = [c for c in long if c["row"] == r["row"]]
        for c in cells:
            assert float(r[f"{c['dataset']}_top1"]) == float(c["standard"])
            assert float(r[f"{c['dataset']}_negated_top1"]) == float(c["negated"])
        assert float(r["delta"]) == pytest.approx(np.mean([float(c["delta"]) for c in cells]), abs=0.01)
        assert float(r["classification_top1"]) == pytest.approx(np.mean([float(c["standard"]) for c in cells]),
                                                                abs=0.01)


def test_both_profiles_average_the_unrounded_shares():
    """The mini tables and zeroshot-full build a model's zero-shot cells with one function, whose means are of the
    unrounded shares: 0.006% and 0% average to 0.00 points (a mean of the rounded cells, 0.01 and 0.00, gives 0.01)."""
    def result(correct: int, n: int = 100_000):  # what columns.top1 reads of a ClassificationResult
        return types.SimpleNamespace(predictions=np.where(np.arange(n) < correct, 0, 1), labels=np.zeros(n, int))

    results = {"a": {"standard": result(6), "negated": result(0)}, "b": {"standard": result(0), "negated": result(0)}}
    cells = columns.classification_cells(results, ("a", "b"))
    assert (cells["a_top1"], cells["b_top1"], cells["classification_top1"], cells["delta"]) == (0.01, 0.0, 0.0, 0.0)
    assert ccneg_tables.CLASSIFICATION_FIELDS == columns.classification_fields(ccneg_tables.CLASSIFICATION_SETS)


def test_the_gain_is_the_paired_differences_own_value_rounded_once(monkeypatch):
    """conclip_minus_clip_classification is the value its interval brackets: CoN-CLIP's mean 0.006% minus CLIP's
    0.004% is 0.00 points (a difference of the rounded means, 0.01 - 0.00, gave 0.01)."""
    # 20 resamples: the default is bound when paired_difference is defined, so patching the constant changes nothing
    monkeypatch.setattr(zf, "paired_difference", functools.partial(zf.paired_difference, n_resamples=20))

    def results(correct_a: int, n: int = 100_000):  # what columns.classification_measure reads, per dataset
        outcome = {d: types.SimpleNamespace(predictions=np.where(np.arange(n) < k, 0, 1), labels=np.zeros(n, int))
                   for d, k in (("a", correct_a), ("b", 0))}
        return {d: {"standard": r} for d, r in outcome.items()}

    scored = [types.SimpleNamespace(row="conclip", results=results(12)),
              types.SimpleNamespace(row="clip", results=results(8))]
    compared, why = zf.comparisons(scored, ("a", "b"))
    assert why is None and compared["conclip_minus_clip_classification"] == 0.0
    key = "conclip_minus_clip_classification"
    assert compared[f"{key}_ci_low"] <= 0.0 <= compared[f"{key}_ci_high"]


def test_summary_and_context(tables):
    summary = json.loads(tables["summary"].read_text())
    assert 0 < len(summary) <= 12 and all(isinstance(v, (int, float)) for v in summary.values())
    wide = {r["row"]: r for r in _rows(tables["classification"])}
    assert summary["clip_delta"] == float(wide["clip"]["delta"]) and summary["n_datasets"] == len(SCORED)
    assert summary["negclip_top1"] == float(wide["negclip"]["classification_top1"])
    context = json.loads(tables["context"].read_text())
    assert context["prompts"] == {"standard": "this is a photo of a {}", "negated": "this is not a photo of a {}"}
    assert list(context["datasets"]) == list(SCORED) and context["datasets_missing_from_paper"] == ["imagenet"]
    assert context["datasets"]["flowers102"]["split"] == "test" and context["datasets"]["caltech101"]["split"] == "all"
    assert context["datasets"]["cifar10"]["n"] == 6 and context["datasets"]["cifar10"]["n_expected"] == 10_000
    assert set(context["paper_vs_code"]) >= {"standard_prompt", "negated_prompt", "splits"}
    assert context["skipped"] == {} and context["test"] is True
    assert context["published_columns"]["cifar10_top1"] == "CIFAR-10"


def test_conclip_minus_clip_is_compared_with_a_paired_interval(world, tiny, tables, tmp_path):
    """zeroshot_comparisons.json: the released CoN-CLIP (row conclip) minus CLIP, the mean standard-prompt top-1 over
    the datasets, with a paired interval resampled within each dataset (as the mini profile's comparisons.json);
    empty, and said why, when either row is not scored."""
    assert json.loads(tables["comparisons"].read_text()) == {}  # MODELS has no conclip row
    assert "conclip" in json.loads(tables["context"].read_text())["comparisons"]["left_out"]
    models = {"conclip": "aro/negclip", "clip": "openai/ViT-B-32"}  # two different tiny models
    paths = zf.evaluate_zeroshot(models, SCORED, tmp_path / "out", CONFIG, create=tiny, data_root=world.data_root,
                                 image_dir=world.images)
    compared = json.loads(paths["comparisons"].read_text())
    correct, top1 = {}, {}
    for row, name in models.items():
        for dataset in SCORED:
            loaded = zf.load_dataset(dataset, world.data_root, world.images)[0]
            _, predictions = _brute_force_top1(tiny(name), loaded, zf.PROMPTS["standard"])
            correct[(row, dataset)] = (predictions == np.array(loaded.labels)).astype(float)
        top1[row] = np.mean([100 * correct[(row, d)].mean() for d in SCORED])
    assert compared["conclip_minus_clip_classification"] == round(top1["conclip"] - top1["clip"], 2)
    rng, samples = np.random.default_rng(0), []
    for dataset in SCORED:  # paired: one draw of images per resample for both models, within each dataset
        a, b = correct[("conclip", dataset)], correct[("clip", dataset)]
        picks = rng.integers(0, len(a), size=(2000, len(a)))
        samples.append(100 * (a[picks].mean(axis=1) - b[picks].mean(axis=1)))
    low, high = np.percentile(np.mean(samples, axis=0), [2.5, 97.5])
    assert (compared["conclip_minus_clip_classification_ci_low"],
            compared["conclip_minus_clip_classification_ci_high"]) == pytest.approx((low, high), abs=0.006)
    assert json.loads(paths["context"].read_text())["comparisons"]["left_out"] is None


def test_an_unavailable_model_stops_the_run_or_is_skipped(world, tiny, tmp_path):
    def create(name, device="cpu"):
        if name == "aro/negclip":
            raise ModelUnavailable("aro/negclip: weights not found")
        return tiny(name)

    with pytest.raises(ModelUnavailable, match="row 'negclip'.*weights not found"):
        zf.evaluate_zeroshot(MODELS, ["cifar10"], tmp_path / "a", CONFIG, create=create, data_root=world.data_root,
                             image_dir=world.images)
    assert not (tmp_path / "a" / "classification.csv").exists()
    paths = zf.evaluate_zeroshot(MODELS, ["cifar10"], tmp_path / "b", CONFIG, create=create, skip_unavailable=True,
                                 data_root=world.data_root, image_dir=world.images)
    assert [r["row"] for r in _rows(paths["classification"])] == ["clip"]
    assert "weights not found" in json.loads(paths["context"].read_text())["skipped"]["negclip"]
    with pytest.raises(zf.ZeroshotError, match="no model"):
        zf.evaluate_zeroshot({"negclip": "aro/negclip"}, ["cifar10"], tmp_path / "c", CONFIG, create=create,
                             skip_unavailable=True, data_root=world.data_root, image_dir=world.images)


def test_entry_point_reads_the_stage_parameters(world, tiny, tmp_path, monkeypatch, capsys):
    params = {"engine": {"num_workers": 0},
              "conclip": {"full": {"models": MODELS, "skip_unavailable": False, "zeroshot_datasets": ["cifar10"],
                                   "zeroshot_classes": {"cifar10": 3, "cifar100": 3}}}}
    monkeypatch.setattr(common_params, "stage_params", lambda stage, **_: params)
    monkeypatch.setenv("DVC_STAGE", "papers/conclip/dvc.yaml:zeroshot-full")  # as `dvc repro` sets it
    monkeypatch.setattr(zf, "zoo_create", tiny)
    common = ["--device", "cpu", "--data-root", str(world.data_root), "--images", str(world.images)]
    assert zf.main(["--out", str(tmp_path / "a"), *common]) == 0
    context = json.loads((tmp_path / "a" / "zeroshot_context.json").read_text())
    assert list(context["datasets"]) == ["cifar10"] and context["datasets_from"] == "conclip.full.zeroshot_datasets"
    assert zf.main(["--out", str(tmp_path / "b"), "--datasets", "food101", "cifar100", *common]) == 0
    wide = _rows(tmp_path / "b" / "classification.csv")
    assert "food101_top1" in wide[0] and "cifar100_delta" in wide[0] and "cifar10_top1" not in wide[0]
    assert "classification.csv" in capsys.readouterr().out
    params["conclip"]["full"]["zeroshot_classes"]["cifar10"] = 10  # the class count the parameters state is checked
    with pytest.raises(zf.ZeroshotDataError, match="holds 3 classes; params.yaml conclip.full.zeroshot_classes "
                                                   "states 10"):
        zf.main(["--out", str(tmp_path / "c"), *common])
