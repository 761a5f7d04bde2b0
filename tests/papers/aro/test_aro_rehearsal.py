"""ARO in the rehearsal (``tests/rehearsal/papers/aro.py``): its stand-ins are what the full stages' readers accept, around
the real (mirrored, pinned) ``valid_neg_clip.tsv``; the full profile's hooks keep a real run's defaults; a stand-in
CIFAR tarball is refused by the published md5 the registry states, and read once the registry states its own (as the
rehearsal's copy does)."""
from __future__ import annotations

from pathlib import Path

import pytest

from common.errors import WorkspaceError
from common.registry.fetch import fetch, md5_file
from common.registry.sources import get_source
from papers.aro import sets_full
from registry_support import state_md5
from tests.rehearsal import standins
from tests.rehearsal.papers import aro as rehearsal


@pytest.fixture(scope="module")
def prepared(tmp_path_factory, released_env) -> tuple[Path, list[str]]:
    """The paper's stand-ins in a fresh data root (the one ``VLC_DATA`` names), valid_neg_clip.tsv real from the
    mirror; the keys DVC's data deps need fetched, fetched."""
    import os

    root = Path(os.environ["VLC_DATA"])
    keys = rehearsal.prepare(root, lambda key: fetch(key, data_root=root, progress=False))
    for key in keys:
        fetch(key, data_root=root, progress=False)
    return root, keys


@pytest.fixture
def data_env(prepared, monkeypatch) -> Path:
    """The prepared data root as this test's ``VLC_DATA`` (the stages read the registry's destinations there)."""
    monkeypatch.setenv("VLC_DATA", str(prepared[0]))
    return prepared[0]


def test_the_standins_make_the_full_set_in_a_rehearsal(data_env, tmp_path, monkeypatch):
    for release in sets_full.CIFAR.values():  # as standins.state_md5s states them in the rehearsal's copy
        state_md5(monkeypatch, release.key, md5_file(get_source(release.key).dest_path(data_env)))
    aro = sets_full.prepare_full(tmp_path / "set")
    counts = aro.info["counts"]
    records = rehearsal.vg_records()
    assert counts["vg_relation"] == len(records["relation"]) and counts["vg_attribution"] == len(records["attribution"])
    assert sum(r["relation_name"] == "on" for r in records["relation"]) == 25  # every VG rule keeps a group
    assert sum(r["attributes"] == ["white", "wooden"] for r in records["attribution"]) == 25
    assert counts["retrieval"] == {"coco": {"images": 4, "captions": 20}, "flickr30k": {"images": 4, "captions": 20}}
    assert counts["classification"]["cifar100"] == {"images": len(rehearsal.CIFAR_TEST_LABELS), "classes": 4}
    assert aro.classification_sets()["cifar100"].class_names == ("apple", "aquarium fish", "baby", "bear")
    # COCO's Karpathy test images are valid_neg_clip.tsv's first, each led by its real caption
    coco = aro.retrieval_sets()["coco"]
    assert coco.flat_captions()[0] == "A child holding a flowered umbrella and petting a yak."


def test_a_standin_cifar_tarball_is_refused_by_the_published_md5(data_env, tmp_path, monkeypatch):
    monkeypatch.setenv("DVC_STAGE", "papers/aro/dvc.yaml:full-set")  # as `dvc repro` sets it
    with pytest.raises(WorkspaceError, match="the registry states c32a1d4ab5d03f1284b67883e8d87530"):
        sets_full.prepare_full(tmp_path / "set", ["cifar"])
    with pytest.raises(WorkspaceError, match="the registry states"):
        sets_full.main(["--out", str(tmp_path / "main"), "--parts", "cifar"])  # the workspace's registry


def test_the_negclip_tsvs_train_and_validate_on_their_standin_images(prepared):
    from papers.aro.negclip_tsv_full import released_rows, tsv_table, val_from_tsv

    root, keys = prepared
    assert keys == [standins.NEGCLIP_VALID, "coco/val2014.zip", standins.NEGCLIP_TRAIN, "coco/train2014.zip"]
    valid = root / "negclip" / "valid_neg_clip.tsv"
    assert get_source(standins.NEGCLIP_VALID).sha256 is not None  # real: a pinned file is never a stand-in
    with pytest.raises(standins.StandInError, match="pins its sha256"):
        standins.standin_dest(standins.NEGCLIP_VALID, root)
    names = standins.negclip_tsv_files(valid)
    assert len(names) == 4839 and all((root / "coco/val2014/val2014" / Path(n).name).is_file() for n in names)
    table, images = tsv_table(root / "negclip" / "train_neg_clip.tsv", root / "coco/train2014/train2014", 32)
    assert len(table.captions) == standins.NEGCLIP_TRAIN_ROWS + 1 and all(path.is_file() for path in images.paths)
    released = released_rows(valid)
    assert table.captions[0] == released[0].title and table.negatives[0] == released[0].negatives
    validator = val_from_tsv(valid, root / "coco/val2014/val2014", 32, lambda texts: list(texts), cap=3)
    assert len(validator.captions) == 3  # a rehearsal's cap: the first images only, every image checked
    with pytest.raises(ValueError, match="cap must be a positive"):
        val_from_tsv(valid, root / "coco/val2014/val2014", 32, lambda texts: list(texts), cap=0)


def test_the_rehearsal_keeps_the_base_negclip_and_the_two_runs():
    from common.paths import ROOT
    from common.pipeline.params import read_params
    from common.zoo import get_spec, with_variants
    from tests.rehearsal.params import rehearsal_params

    params = rehearsal_params(read_params(ROOT / "params.yaml"), ["aro"])
    assert params["aro"]["models"]["full"] == ["openai/ViT-B-32", "aro/clip-ft", "aro/negclip", "aro/negclip-rerun"]
    assert "aro/negclip-gelu" in with_variants(params["aro"]["models"]["full"])  # same file, scored too
    names = rehearsal.models(params)
    assert names == ["openai/ViT-B-32", "aro/negclip"]  # the runs are the pipeline's own (build:)
    assert get_spec(names[1]).checkpoint.startswith("data:") and rehearsal.CHECKPOINT_LAYOUTS[names[1]] == "state_dict"
    assert params["aro"]["full"]["device"] == "cpu" and params["aro"]["full"]["gpus"] == 2


def test_the_full_stages_hooks_default_to_a_real_run():
    """The fine-tunes' device is a parameter (cuda unless a rehearsal says cpu); the fine-tunes and the audit read
    ``full_inputs`` (uncapped in the workspace), the set reads no parameter (the registry states its md5s)."""
    import yaml

    from common.paths import ROOT
    from common.pipeline.params import stage_params

    stages = yaml.safe_load((ROOT / "papers/aro/dvc.yaml").read_text())["stages"]
    assert " ".join(stages["finetune-full"]["do"]["cmd"].split()).endswith("--device ${aro.full.device}")
    assert yaml.safe_load((ROOT / "params.yaml").read_text())["aro"]["full"]["device"] == "cuda"
    assert stage_params("papers/aro/dvc.yaml:full-set") == {}
    finetune = stage_params("papers/aro/dvc.yaml:finetune-full@negclip")
    assert finetune["full_inputs"] == {"cap": None} and finetune["aro"]["full"]["finetune"]["max_steps"] is None
    assert stage_params("papers/aro/dvc.yaml:audit") == {"profile": "mini", "full_inputs": {"cap": None}}
