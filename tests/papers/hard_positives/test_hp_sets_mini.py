"""Hard positives, mini profile: the rendered benchmark (``sets_mini``) and fine-tuning set (``finetune_sets_mini``,
read through ``finetune_rows``): deterministic, prefix-stable, every row a positive and a negative of its type,
bad records named."""
from __future__ import annotations

import json

import pytest

from common.errors import WorkspaceError
from common.files.tasks import DatasetError
from common.miniworld import scene as scene_module
from papers.hard_positives import evaluation as ev, finetune_rows as fr, finetune_sets_mini as fs, sets_mini as sm
from papers.hard_positives.runs import TYPES


# ---------------------------------------------------------------------------------------------------------------
# The benchmark
# ---------------------------------------------------------------------------------------------------------------
def test_benchmark_is_deterministic_and_a_prefix_of_a_larger_one(test_set, tmp_path):
    sm.build_test_set(sm.TestSetConfig(examples_per_group=8), tmp_path / "again")
    for name in ("manifest.json", "scenes.jsonl"):
        assert (tmp_path / "again" / name).read_bytes() == (test_set / name).read_bytes()
    sm.build_test_set(sm.TestSetConfig(examples_per_group=12), tmp_path / "larger")
    small = json.loads((test_set / "manifest.json").read_text())["examples"]
    large = json.loads((tmp_path / "larger" / "manifest.json").read_text())["examples"]
    for group in ev.GROUPS:
        mine = [r for r in small if r["group"] == group]
        assert mine == [r for r in large if r["group"] == group][:8]
        first = mine[0]["filename"]
        assert (test_set / "images" / first).read_bytes() == (tmp_path / "larger" / "images" / first).read_bytes()


def test_benchmark_groups_pair_each_negative_with_its_positive(test_set):
    manifest = json.loads((test_set / "manifest.json").read_text())
    assert manifest["counts"] == {g: 8 for g in ev.GROUPS} and manifest["stream"] == "test-hard-positives"
    items = sm.load_test_items(test_set)
    assert len(items) == 24 and {it.group for it in items} == set(ev.GROUPS)
    by_id = {r["id"]: r for r in manifest["examples"]}
    for it in items:
        record = by_id[it.item_id]
        c, c_p, c_n = it.captions
        assert it.image == test_set / "images" / record["filename"]
        if it.group == "swap":  # "A1 X and A2 Y": c_p "A2 Y and A1 X", c_n "A2 X and A1 Y"
            first, second = c[:-1].lower().removeprefix("there is ").split(" and ")
            assert c_p.lower().endswith(f"{second} and {first}.")
            content = [sorted(w for w in x.lower().split() if w not in ("a", "an")) for x in (c, c_n)]
            assert content[0] == content[1] and c_n != c  # the same words (but articles), other attachments
            assert record["negative_edit"] == "swap_att" and record["positive_variant"] == "reorder_pair"
        else:
            kind = "relation" if it.group == "replace-relations" else ("size", "color")
            assert record["positive_variant"].removeprefix("synonym_") in kind
            assert record["negative_edit"] == ("replace_rel" if it.group == "replace-relations" else "replace_att")
            assert len(c.split()) != len(c_p.split()) or sum(a != b for a, b in zip(c.split(), c_p.split())) == 1


def test_benchmark_scenes_record_their_claims(test_set):
    lines = [json.loads(line) for line in (test_set / "scenes.jsonl").read_text().splitlines()]
    manifest = json.loads((test_set / "manifest.json").read_text())
    assert len(lines) == manifest["n_images"] == len({r["filename"] for r in manifest["examples"]})
    assert all(set(line["examples"]) <= set(ev.GROUPS) and line["scene"]["objects"] for line in lines)


@pytest.mark.parametrize("edit, message", [
    (lambda ex: ex[3].pop("positive"), r"manifest.json: record 3: no 'positive'"),
    (lambda ex: ex[5].update(group="negate"), r"manifest.json: record 5: unknown group 'negate'"),
    (lambda ex: ex[2].update(filename="nowhere.png"), r"manifest.json: record 2: image .*nowhere.png is missing"),
    (lambda ex: ex[4].update(positive=ex[4]["caption"]), r"manifest.json: record 4: c, c_p and c_n must differ"),
    (lambda ex: ex[6].update(id=ex[0]["id"]), r"manifest.json: record 6: id .* repeats"),
])
def test_bad_benchmark_records_are_named(test_set, tmp_path, edit, message):
    broken = tmp_path / "broken"
    (broken / "images").mkdir(parents=True)
    for image in (test_set / "images").iterdir():
        (broken / "images" / image.name).write_bytes(image.read_bytes())
    manifest = json.loads((test_set / "manifest.json").read_text())
    edit(manifest["examples"])
    (broken / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(DatasetError, match=message):
        sm.load_test_items(broken)


def test_a_missing_benchmark_says_which_stage_builds_it(tmp_path):
    with pytest.raises(WorkspaceError, match="manifest.json: missing; run the mini-test-set stage"):
        sm.load_test_items(tmp_path)


# ---------------------------------------------------------------------------------------------------------------
# The fine-tuning set
# ---------------------------------------------------------------------------------------------------------------
def test_finetune_set_is_deterministic_and_every_row_has_a_positive_and_negative_of_its_type(finetune_set, tmp_path):
    fs.build_finetune_set(fs.FinetuneSetConfig(train_images=16, captions_per_image=2), tmp_path)
    for name in ("images.npy", "rows.json", "manifest.json"):
        assert (tmp_path / name).read_bytes() == (finetune_set / name).read_bytes(), name
    data = fr.FinetuneSet.load(finetune_set)
    assert data.images.shape == (16, 48, 48, 3) and {len(r) for r in data.rows} == {2}
    rows = [r for image_rows in data.rows for r in image_rows]
    assert {r.type for r in rows} == set(TYPES)
    for r in rows:
        assert len({r.caption.lower(), r.positive.lower(), r.negative.lower()}) == 3
        assert r.negative_edit in fs.NEGATIVE_EDITS[r.type]
        assert r.positive_variant.startswith("synonym_" if r.type == "replace" else "reorder_")
    counts = json.loads((finetune_set / "manifest.json").read_text())["counts"]
    assert counts["images"] == 16 and sum(counts["distinct_rows_by_type"].values()) == counts["distinct_rows"]
    assert counts["claims_without_a_type"] >= 0 and set(counts["claims_without_a_negative_by_type"]) == set(TYPES)


def test_training_scenes_hold_no_heldout_pair_and_no_benchmark_scene(monkeypatch, tmp_path):
    drawn: dict[str, list] = {"test": [], "train": []}
    phase = {"now": "test"}
    original = scene_module.sample_scene

    def spy(rng, n_objects=None, allow_heldout=True):
        scene = original(rng, n_objects, allow_heldout)
        drawn[phase["now"]].append((scene, allow_heldout))
        return scene

    monkeypatch.setattr(sm, "sample_scene", spy)
    monkeypatch.setattr(fs, "sample_scene", spy)
    sm.build_test_set(sm.TestSetConfig(examples_per_group=10), tmp_path / "test")
    phase["now"] = "train"
    fs.render_finetune_set(fs.FinetuneSetConfig(train_images=30, captions_per_image=2))
    assert drawn["train"] and all(not allow for _, allow in drawn["train"])
    assert not any(scene_module.contains_heldout(s) for s, _ in drawn["train"])
    assert not {s for s, _ in drawn["train"]} & {s for s, _ in drawn["test"]}


def test_bad_rows_are_named(finetune_set, tmp_path):
    (tmp_path / "images.npy").write_bytes((finetune_set / "images.npy").read_bytes())
    rows = json.loads((finetune_set / "rows.json").read_text())
    rows[3][1]["type"] = "negate"
    (tmp_path / "rows.json").write_text(json.dumps(rows))
    with pytest.raises(DatasetError, match=r"rows.json: record 3: row 1: unknown type 'negate'"):
        fr.FinetuneSet.load(tmp_path)
    del rows[3][1]["type"]
    rows[2][0]["positive"] = ""
    (tmp_path / "rows.json").write_text(json.dumps(rows))
    with pytest.raises(DatasetError, match=r"rows.json: record 2: row 0: no 'positive'"):
        fr.FinetuneSet.load(tmp_path)




def test_a_missing_fine_tuning_set_says_which_stage_builds_it(finetune_set, tmp_path):
    with pytest.raises(fr.HardPositivesRowsError, match="images.npy: no fine-tuning set here; run the mini-finetune"):
        fr.FinetuneSet.load(tmp_path)
    (tmp_path / "images.npy").write_bytes((finetune_set / "images.npy").read_bytes())
    with pytest.raises(WorkspaceError, match="rows.json: missing; run the mini-finetune-set stage"):
        fr.FinetuneSet.load(tmp_path)
    (tmp_path / "rows.json").write_text("[[", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"rows.json: line 1 column 3: not valid JSON"):
        fr.FinetuneSet.load(tmp_path)
