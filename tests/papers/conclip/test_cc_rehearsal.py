"""CoN-CLIP in the rehearsal (``tests/rehearsal/papers/conclip.py``): its stand-ins are what the full stages' readers accept
(CC-Neg's file and images, the distractor mapping and COCO pool, every zero-shot set through torchvision) once the
registry and params state their checksums and counts, as the rehearsal's copy does (the workspace's refuse each:
CC-Neg's 40,000-entry split, torchvision's md5 pins, ImageNet's 1,000 classes), and the full profile's hooks keep a
real run's defaults."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from common.files.tasks import DatasetError
from common.registry.fetch import fetch
from papers.conclip import ccneg, sets_full, zeroshot_full as zf
from registry_support import state_md5
from tests.rehearsal.papers import conclip as rehearsal

REAL_RUN = {"full_inputs": {"cap": None}}
REHEARSAL = {"full_inputs": {"cap": 4}}


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> tuple[Path, list[str]]:
    """The paper's stand-ins in a fresh data root, DVC's data deps fetched (extracted) as the rehearsal does."""
    root = tmp_path_factory.mktemp("rehearsal_data")
    keys = rehearsal.prepare(root, lambda key: fetch(key, data_root=root, progress=False))
    for key in keys:
        fetch(key, data_root=root, progress=False)
    return root, keys


def _ccneg(root: Path) -> tuple[Path, Path]:
    return root / "ccneg" / "ccneg_preprocessed.pt", root / "ccneg" / "ccneg_images" / ccneg.IMAGES_SUBFOLDER


def test_the_ccneg_standin_is_read_as_released_with_a_rehearsal_split(prepared):
    root, keys = prepared
    assert keys == ["coco/annotations_trainval2017.zip", "coco/train2017.zip"]
    pt, images = _ccneg(root)
    assert ccneg.eval_size_for(REHEARSAL) == 4 and ccneg.eval_size_for(REAL_RUN) == ccneg.EVAL_SIZE
    data = ccneg.load_ccneg(pt, images, ccneg.eval_size_for(REHEARSAL))
    assert data.n_entries == rehearsal.CCNEG_ENTRIES and [e.index for e in data.entries] == [20, 21, 22, 23]
    assert all(e.k is not None and e.words for e in data.entries)  # every entry in a Table 7-9 cell
    assert all(Path(it.image).is_file() for it in data.items)


def test_a_real_run_refuses_the_ccneg_standin(prepared):
    pt, images = _ccneg(prepared[0])
    with pytest.raises(DatasetError, match="fewer than the evaluation split's 40000"):
        ccneg.load_ccneg(pt, images, ccneg.eval_size_for(REAL_RUN))
    with pytest.raises(DatasetError, match="leave no training entries"):
        ccneg.load_ccneg_training(pt, images, ccneg.eval_size_for(REAL_RUN))


def test_the_standins_make_the_finetuning_set_every_entry_a_row(prepared, tmp_path):
    root, _ = prepared
    pt, images = _ccneg(root)
    manifest = sets_full.build_set(pt, images, root / "ccneg" / "distractor_image_mapping.pt", root, tmp_path / "set",
                                   eval_size=ccneg.eval_size_for(REHEARSAL))
    counts = manifest["counts"]
    assert counts["rows"] == counts["training_entries"] == rehearsal.CCNEG_ENTRIES - 4
    assert counts["pool_images"] == rehearsal.POOL_IMAGES and counts["crepe_negate_rows"] == counts["rows"]
    from tests.rehearsal.params import BATCH

    assert counts["rows"] >= BATCH


def test_the_distractor_texts_are_read_from_the_standin(prepared):
    from papers.conclip.distractors_full import read_training_texts

    texts = read_training_texts(_ccneg(prepared[0])[0], n=2000, seed=0, eval_size=4)
    assert len(texts.texts) == rehearsal.CCNEG_ENTRIES - 4 and all(t.paper_subject for t in texts.texts)


def _classes(params: dict) -> dict[str, int]:
    return params["conclip"]["full"]["zeroshot_classes"]


def _workspace_params() -> dict:
    from common.paths import ROOT
    from common.pipeline.params import read_params

    return read_params(ROOT / "params.yaml")


@pytest.fixture
def stated(prepared, monkeypatch) -> dict[str, int]:
    """The stand-ins' md5s stated in the registry (``standins.state_md5s`` does it in the rehearsal's copy); the
    class counts the rehearsal's params state."""
    from common.registry.fetch import md5_file
    from common.registry.sources import sources_in_group

    for source in sources_in_group("conclip-zeroshot"):
        if source.md5 is not None:
            state_md5(monkeypatch, source.key, md5_file(source.dest_path(prepared[0])))
    params = _workspace_params()
    rehearsal.params(params)
    return _classes(params)


@pytest.mark.parametrize("name", list(zf.DATASETS))
def test_every_zeroshot_standin_is_read_by_torchvision_in_a_rehearsal(prepared, stated, tmp_path, name):
    loaded = zf.load_dataset(name, prepared[0], tmp_path / "images", stated)[0]
    assert loaded.images and all(p.is_file() for p in loaded.images)
    assert max(loaded.labels) < len(loaded.class_names) and len(set(loaded.labels)) > 1


@pytest.mark.parametrize("name,match", [("cifar10", "the registry states c58f30108f718f92721af3b95e74349a"),
                                        ("flowers102", "the registry states 52808999861908f626f3c1f4e79d11fa"),
                                        ("imagenet", "holds 3 classes; params.yaml conclip.full.zeroshot_classes "
                                                     "states 1000")])
def test_a_real_run_refuses_the_zeroshot_standins(prepared, tmp_path, name, match):
    root = tmp_path / "data"
    shutil.copytree(prepared[0] / "zeroshot" / name, root / "zeroshot" / name)
    folder = root / "zeroshot" / name
    for extracted in [*folder.glob("cifar-10-batches-py*"), *folder.glob("flowers-102/jpg*")]:  # as fetched only
        shutil.rmtree(extracted) if extracted.is_dir() else extracted.unlink()
    with pytest.raises(zf.ZeroshotDataError, match=match):
        zf.load_dataset(name, root, tmp_path / "images", _classes(_workspace_params()))


def test_torchvisions_own_md5_pins_are_lifted_for_the_registrys(prepared, stated):
    """torchvision's copies of the pins would refuse the stand-ins whatever the registry states: the loaders lift
    them, so the registry's md5s (checked on the archive and the .mat files) are the ones that hold."""
    from torchvision.datasets import CIFAR10, Flowers102

    zero = prepared[0] / "zeroshot"
    zf.load_dataset("cifar10", prepared[0], zero.parent / "images", stated)  # extracted
    zf.load_dataset("flowers102", prepared[0], zero.parent / "images", stated)
    with pytest.raises(RuntimeError, match="not found or corrupted"):
        CIFAR10(str(zero / "cifar10"), train=False, download=False)
    with pytest.raises(RuntimeError, match="not found or corrupted"):
        Flowers102(str(zero / "flowers102"), split="test", download=False)
    assert len(zf.unpinned(CIFAR10)(str(zero / "cifar10"), train=False, download=False)) == 3


def test_the_rehearsal_keeps_clip_conclip_and_the_finetunes():
    from common.paths import ROOT
    from common.pipeline.params import read_params
    from common.zoo import get_spec
    from tests.rehearsal.params import rehearsal_params

    params = rehearsal_params(read_params(ROOT / "params.yaml"), ["conclip"])
    full = params["conclip"]["full"]
    assert list(full["models"]) == list(rehearsal.KEPT_ROWS)
    assert set(full["sugarcrepe_rows"]) <= set(full["models"])
    assert {f"ft-{run}" for run in __import__("papers.conclip.runs", fromlist=["RUNS"]).RUNS} <= set(full["models"])
    assert full["finetune"]["device"] == "cpu" and full["finetune"]["gpus"] == 2
    names = rehearsal.models(params)
    assert names == ["openai/ViT-B-32", "conclip/conclip-vit-b32"]
    assert rehearsal.CHECKPOINT_LAYOUTS[names[1]] == "model" and get_spec(names[1]).checkpoint.startswith("data:")


def test_the_full_stages_hooks_default_to_a_real_run():
    """The fine-tunes' device is a parameter (cuda unless a rehearsal says cpu); the stages that split CC-Neg, and the
    audit, declare ``full_inputs`` (uncapped in the workspace); the zero-shot stage the class counts."""
    import yaml

    from common.paths import ROOT
    from common.pipeline.params import stage_params

    stages = yaml.safe_load((ROOT / "papers/conclip/dvc.yaml").read_text())["stages"]
    assert "--device ${conclip.full.finetune.device}" in " ".join(stages["finetune-full"]["do"]["cmd"].split())
    assert yaml.safe_load((ROOT / "params.yaml").read_text())["conclip"]["full"]["finetune"]["device"] == "cuda"
    for stage in ("tables-full", "finetune-full-set", "distractors-full"):  # the evaluation split's size
        assert stage_params(f"papers/conclip/dvc.yaml:{stage}")["full_inputs"] == {"cap": None}
    zeroshot = stage_params("papers/conclip/dvc.yaml:zeroshot-full")
    assert "full_inputs" not in zeroshot and zeroshot["conclip"]["full"]["zeroshot_classes"] == {"imagenet": 1000}
    assert stage_params("papers/conclip/dvc.yaml:audit")["full_inputs"] == {"cap": None}


def test_the_audit_compares_each_column_in_its_published_unit():
    """Found by the rehearsal: a full run's audit compared Table 16's mean Delta (published in points) as a percent
    and stopped ("cannot compare a percent with a points"); every mapped column now carries the published unit."""
    import csv

    from common.audit.core import convert
    from common.paths import ROOT
    from papers.conclip import audit

    with open(ROOT / "results/published/conclip.csv", newline="", encoding="utf-8") as fh:
        published = {(r["table"], r["column"]): r["unit"] for r in csv.DictReader(fh)}
    checked = 0
    for table, (_, columns, _) in audit.TABLES.items():
        for ours, theirs in columns.items():
            if (table, theirs) in published:
                unit = audit.UNITS.get(ours, "percent")
                assert unit == published[(table, theirs)], (table, ours)
                assert convert(1.5, unit, published[(table, theirs)]) == 1.5
                checked += 1
    assert checked and audit.UNITS["delta"] == published[("Table 16", "Mean Δ")] == "points"
