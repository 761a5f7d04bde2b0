"""The mini ARO set: small counts via a config, every caption checked against its scene, loaders round-trip."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from common.miniworld import lexicon
from common.miniworld.claims import Claim, NounPhrase, RelationClaim, satisfies
from common.miniworld.scene import Scene, SceneObject
from papers.aro.data import AroSet
from papers.aro.sets_mini import MiniAroConfig, build_mini_set

CONFIG = MiniAroConfig(vg_relation_cases=40, vg_attribution_cases=56, test_images=12, captions_per_image=3,
                       classification_images=60, image_size=48, seed=0)


def claim(d: dict) -> Claim:
    return Claim(tuple(NounPhrase(**p) for p in d["phrases"]), tuple(RelationClaim(**r) for r in d["relations"]),
                 d["template"], d["lexical_seed"])


def scene(d: dict) -> Scene:
    return Scene(tuple(SceneObject(**o) for o in d["objects"]), tuple(d["background"]))


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("aro_mini")
    build_mini_set(CONFIG, out)
    return out


def scenes(out: Path) -> dict[str, dict]:
    lines = (out / "scenes.jsonl").read_text().splitlines()
    return {(d := json.loads(line))["image"]: d for line in lines}


def test_vg_captions_true_and_false_for_their_scene(built: Path):
    by_image = scenes(built)
    for name in ("visual_genome_relation", "visual_genome_attribution"):
        records = json.loads((built / "vg" / f"{name}.json").read_text())
        for r in records:
            s = by_image[f"images/{r['image_path']}"]
            world = scene(s["scene"])
            true, false = claim(s["true"]), claim(s["false"])
            assert satisfies(world, true) and not satisfies(world, false), r
            assert (true.text(), false.text()) == (r["true_caption"], r["false_caption"])
            assert sorted(true.text().lower().rstrip(".").split()) == sorted(false.text().lower().rstrip(".").split())
            assert (r["bbox_x"], r["bbox_y"], r["bbox_w"], r["bbox_h"]) == (0, 0, 48, 48)


def test_relations_balanced_and_named_canonically(built: Path):
    records = json.loads((built / "vg" / "visual_genome_relation.json").read_text())
    counts = Counter(r["relation_name"] for r in records)
    assert counts == {lexicon.SURFACE[p][0]: 10 for p in ("left_of", "right_of", "above", "below")}
    assert " is " in records[0]["true_caption"]


def test_attribute_pairs_balanced_distinct_colours(built: Path):
    records = json.loads((built / "vg" / "visual_genome_attribution.json").read_text())
    counts = Counter(tuple(r["attributes"]) for r in records)
    assert len(counts) == 28 and set(counts.values()) == {2}  # 56 cases over 28 unordered colour pairs
    assert all(a < b for a, b in counts)
    by_image = scenes(built)
    for r in records:
        s = by_image[f"images/{r['image_path']}"]
        true, false = claim(s["true"]), claim(s["false"])  # attributes are colour concepts (text may say "violet")
        assert [p.color for p in true.phrases] == r["attributes"] == [p.color for p in false.phrases][::-1]
        assert [p.shape for p in true.phrases] == [p.shape for p in false.phrases]


def test_loaders_round_trip(built: Path):
    aro = AroSet.load(built / "manifest.json")
    rel, attr = aro.vg_relation_items(), aro.vg_attribution_items()
    assert len(rel) == 40 and len(attr) == 56 and all(it.image.is_file() for it in rel + attr)
    coco = aro.retrieval_sets()["coco"]
    assert len(coco.images) == 12 and all(len(set(c)) == 3 for c in coco.captions)
    by_image = scenes(built)
    for path, captions in zip(coco.images, coco.captions):
        world = scene(by_image[path.relative_to(built / "coco").as_posix()]["scene"])
        assert by_image[path.relative_to(built / "coco").as_posix()]["captions"] == list(captions)
        assert world.objects
    cls = aro.classification_sets()
    shapes, colored = cls["shapes"], cls["colored-shapes"]
    assert len(shapes.class_names) == 7 and len(colored.class_names) == 56
    assert shapes.images == colored.images
    for label, fine in zip(shapes.labels, colored.labels):
        assert colored.class_names[fine].endswith(shapes.class_names[label])
    assert "an orange circle." in colored.class_prompts[colored.class_names.index("orange circle")]
    info = json.loads((built / "manifest.json").read_text())
    assert info["counts"]["coco_captions"] == 36 and info["config"]["seed"] == 0


def test_deterministic(built: Path, tmp_path: Path):
    """Every file, the manifest included, is the same bytes on a rerun: the set is a DVC output, and a byte that
    changes (a wall time, a path) changes its hash in dvc.lock and reruns everything downstream."""
    build_mini_set(CONFIG, tmp_path)
    files = sorted(p.relative_to(built).as_posix() for p in built.rglob("*") if p.is_file())
    assert "manifest.json" in files and "vg/images/rel_000003.png" in files
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()) == files
    for name in files:
        assert (tmp_path / name).read_bytes() == (built / name).read_bytes(), name


def test_main_reads_its_stage_params(tmp_path: Path, monkeypatch, capsys):
    import common.pipeline.params
    from papers.aro import sets_mini

    params = {"aro": {"mini": {"vg_relation_cases": 4, "vg_attribution_cases": 28, "test_images": 2,
                               "captions_per_image": 2, "classification_images": 7}},
              "mini": {"world": {"image_size": 48, "seed": 1}}}
    seen = []
    monkeypatch.setattr(common.pipeline.params, "stage_params", lambda stage, **_: seen.append(stage) or params)
    monkeypatch.setenv("DVC_STAGE", "papers/aro/dvc.yaml:mini-set")  # as `dvc repro` sets it
    assert sets_mini.main(["--out", str(tmp_path)]) == 0
    assert seen == ["papers/aro/dvc.yaml:mini-set"]
    assert json.loads(capsys.readouterr().out)["counts"]["coco_captions"] == 4
    assert AroSet.load(tmp_path).info["config"]["seed"] == 1
