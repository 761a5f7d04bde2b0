"""Hard positives in the rehearsal (``tests/rehearsal/papers/hard_positives.py``): its stand-ins are what the full stages'
readers accept, around the real (mirrored, pinned) REPLACE files, and the full profile's hooks keep a real run's
defaults."""
from __future__ import annotations

from pathlib import Path

import pytest

from common.registry.fetch import fetch
from common.registry.sources import get_source
from papers.hard_positives import released, sets_full
from tests.rehearsal.papers import hard_positives as rehearsal


@pytest.fixture(scope="module")
def prepared(tmp_path_factory, released_env) -> tuple[Path, list[str]]:
    """The paper's stand-ins in a fresh data root, the REPLACE files real from the mirror."""
    root = tmp_path_factory.mktemp("rehearsal_data")
    keys = rehearsal.prepare(root, lambda key: fetch(key, data_root=root, progress=False))
    return root, keys


def test_the_standins_make_the_full_set_with_every_released_replace_row(prepared, tmp_path):
    root, keys = prepared
    full = sets_full.prepare_full(tmp_path / "set", lambda key: fetch(key, data_root=root, progress=False), cap=4)
    released_counts = full.info["released_counts"]
    assert released_counts["replace-attributes"]["items"] == 10575  # every real row read, every image found
    assert released_counts["replace-relations"]["items"] == 16868
    assert released_counts["swap"]["items"] == len(rehearsal.SWAP_ROWS)
    assert {g: c["items"] for g, c in full.info["counts"].items()} == {
        "replace-attributes": 4, "replace-relations": 4, "swap": 4}
    items = sets_full.FullSet.load(tmp_path / "set").items()
    assert len(items) == 12 and all(Path(it.image).is_file() for it in items)
    assert items[0].captions[0] == "walking elephant"  # the real first row (amitakamath/hard_positives@33addaae data/vl_checklist_attributes.json)
    # the REPLACE files are the authors' (pinned, from the mirror), never a stand-in
    for key in (k for kind in sets_full.REPLACE_KINDS for k in released.file_keys(kind)):
        pinned = get_source(key).sha256
        assert pinned is not None and full.info["sha256"][key] == pinned


def test_the_coco_standins_make_the_finetuning_set_with_both_types(prepared, tmp_path):
    from papers.hard_positives.finetune_rows import IMAGES
    from papers.hard_positives.finetune_sets_full import CAPTIONS, build_set

    root, keys = prepared
    assert keys == ["coco/annotations_trainval2017.zip", "coco/train2017.zip"]  # DVC data deps: fetched first
    for key in keys:
        fetch(key, data_root=root, progress=False)
    manifest = build_set(root / CAPTIONS, root / IMAGES, tmp_path / "ft", seed=0, vocabulary_min_count=2)
    by_type = manifest["counts"]["rows_by_type"]
    from tests.rehearsal.params import BATCH

    assert min(by_type.values()) >= BATCH  # every run, the type-only ones too, has a batch


def test_the_rehearsal_keeps_the_base_and_one_released_checkpoint():
    from common.paths import ROOT
    from common.pipeline.params import read_params
    from common.zoo import get_spec
    from tests.rehearsal.params import rehearsal_params

    params = rehearsal_params(read_params(ROOT / "params.yaml"), ["hard_positives"])
    names = rehearsal.models(params)
    assert names == ["openai/ViT-B-32", "hard_positives/crepe-swap"]
    assert get_spec(names[0]).pretrained == "openai"
    assert get_spec(names[1]).checkpoint.startswith("data:") and names[1] in rehearsal.CHECKPOINT_LAYOUTS


def test_the_full_stages_hooks_default_to_a_real_run():
    """The device of the fine-tunes is a parameter (cuda unless a rehearsal says cpu); the audit and the set read
    the rehearsal section, off in the workspace."""
    import yaml

    from common.paths import ROOT
    from common.pipeline.params import stage_params

    stages = yaml.safe_load((ROOT / "papers/hard_positives/dvc.yaml").read_text())["stages"]
    assert "--device ${hard_positives.full.finetune.device}" in " ".join(stages["finetune-full"]["do"]["cmd"].split())
    assert stage_params("papers/hard_positives/dvc.yaml:finetune-full@hn")  # resolves
    assert stage_params("papers/hard_positives/dvc.yaml:audit") == {"profile": "mini", "full_inputs": {"cap": None}}
    assert stage_params("papers/hard_positives/dvc.yaml:full-data") == {"full_inputs": {"cap": None}}
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    assert params["hard_positives"]["full"]["finetune"]["device"] == "cuda"
