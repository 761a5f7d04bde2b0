"""The mini profile's SugarCrepe-format test set (papers/sugarcrepe/sets_mini.py): the released format, every positive
true and every negative false for its scene, deterministic, and loadable by the real benchmark's loader."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from PIL import Image

from common.miniworld import VERSION
from common.miniworld.claims import Claim, NounPhrase, RelationClaim, satisfies
from common.miniworld.negatives import EDIT_TYPES
from common.miniworld.scene import Scene, SceneObject, contains_heldout
from papers.sugarcrepe.sets_mini import MiniSetConfig, build_mini_set


@pytest.fixture(scope="module")
def sugarcrepe_set(tmp_path_factory):
    out = tmp_path_factory.mktemp("mini_sugarcrepe")
    manifest = build_mini_set(MiniSetConfig(examples_per_category=5, seed=0), out,
                                          progress=False)
    return out, manifest


def test_build_sugarcrepe_set_writes_released_format(sugarcrepe_set):
    out, manifest = sugarcrepe_set
    assert manifest["counts"] == {c: 5 for c in EDIT_TYPES}
    assert (out / "manifest.json").is_file() and (out / "scenes.jsonl").is_file()
    filenames = set()
    for category in EDIT_TYPES:
        data = json.loads((out / "data" / f"{category}.json").read_text())
        assert isinstance(data, dict) and sorted(data) == [str(i) for i in range(5)]
        for record in data.values():
            assert set(record) == {"filename", "caption", "negative_caption"}
            assert all(isinstance(v, str) and v for v in record.values())
            assert record["caption"] != record["negative_caption"]
            path = out / "images" / record["filename"]
            assert path.is_file()
            filenames.add(record["filename"])
    for name in filenames:
        with Image.open(out / "images" / name) as im:
            im.load()
            assert im.size == (48, 48) and im.mode == "RGB"
    assert manifest["n_images"] == len(filenames)


def test_build_sugarcrepe_scenes_jsonl_agrees_with_data(sugarcrepe_set):
    out, _ = sugarcrepe_set
    lines = [json.loads(l) for l in (out / "scenes.jsonl").read_text().splitlines() if l.strip()]
    by_file = {l["filename"]: l for l in lines}
    assert len(by_file) == len(lines)
    for category in EDIT_TYPES:
        data = json.loads((out / "data" / f"{category}.json").read_text())
        for record in data.values():
            line = by_file[record["filename"]]
            scene = Scene(
                objects=tuple(SceneObject(**o) for o in line["scene"]["objects"]),
                background=tuple(line["scene"]["background"]),
            )
            assert line["heldout_combination"] == contains_heldout(scene)
            pos = _claim_from_json(line["positive"])
            neg = _claim_from_json(line["negatives"][category])
            assert pos.text() == record["caption"] and neg.text() == record["negative_caption"]
            assert satisfies(scene, pos) and not satisfies(scene, neg)


def _claim_from_json(d: dict) -> Claim:
    return Claim(
        phrases=tuple(NounPhrase(**p) for p in d["phrases"]),
        relations=tuple(RelationClaim(**r) for r in d["relations"]),
        template=d["template"], lexical_seed=d["lexical_seed"],
    )


def test_build_sugarcrepe_set_loads_through_the_loader(sugarcrepe_set):
    from common.benchmarks.caption_negatives import CATEGORIES, PreparedSet

    out, _ = sugarcrepe_set
    prepared = PreparedSet.load(out / "manifest.json")
    assert prepared.categories == CATEGORIES
    items = prepared.items()
    assert len(items) == 35
    assert {it.group for it in items} == set(CATEGORIES)
    assert prepared.info["world_version"] == VERSION


def test_build_is_deterministic_and_records_version(tmp_path: Path):
    cfg = MiniSetConfig(examples_per_category=3, seed=4)
    m1 = build_mini_set(cfg, tmp_path / "a", progress=False)
    m2 = build_mini_set(cfg, tmp_path / "b", progress=False)
    assert m1["world_version"] == m2["world_version"] == VERSION

    def digest(root: Path) -> dict[str, str]:
        return {
            str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != "manifest.json"
        }

    da, db = digest(tmp_path / "a"), digest(tmp_path / "b")
    assert da == db
    assert any(k.startswith("images/") for k in da)

    other = build_mini_set(MiniSetConfig(examples_per_category=3, seed=5),
                                       tmp_path / "c", progress=False)
    assert other["world_version"] == VERSION
    assert digest(tmp_path / "c") != da

    on_disk_sc = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert on_disk_sc["world_version"] == VERSION
