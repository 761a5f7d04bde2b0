"""SugarCrepe in the rehearsal (``tests/rehearsal/papers/sugarcrepe.py``): its stand-ins are what the full stages' readers
accept, around the real (mirrored, pinned) released JSON; the full profile's hooks keep a real run's defaults; a
capped set exists only in a rehearsal."""
from __future__ import annotations

from pathlib import Path

import pytest

from common.registry.fetch import fetch
from common.registry.sources import get_source
from papers.sugarcrepe import sets_full
from tests.rehearsal import standins
from tests.rehearsal.papers import sugarcrepe as rehearsal

pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def prepared(tmp_path_factory, released_env) -> tuple[Path, list[str]]:
    """The paper's stand-ins in a fresh data root, the released JSON real from the mirror."""
    root = tmp_path_factory.mktemp("rehearsal_data")
    keys = rehearsal.prepare(root, lambda key: fetch(key, data_root=root, progress=False))
    return root, keys


@pytest.fixture
def in_root(prepared, monkeypatch) -> Path:
    """Stages' own fetches (no data_root argument) go to the prepared root."""
    root, _ = prepared
    monkeypatch.setenv("VLC_DATA", str(root))
    return root


def test_the_standins_make_the_capped_full_set_with_every_released_example(prepared, in_root, tmp_path):
    from common.benchmarks.caption_negatives import CATEGORIES, PreparedSet, released_file_key

    root, keys = prepared
    assert keys[0] == "coco/val2017.zip"
    full = sets_full.prepare_full(tmp_path / "set", cap=4)
    assert sum(full.info["released_counts"].values()) == 7511  # every real example read, every image found
    assert full.info["counts"] == {c: 4 for c in CATEGORIES} and full.info["cap"] == 4
    items = PreparedSet.load(tmp_path / "set" / "manifest.json").items()
    assert len(items) == 28 and all(Path(it.image).is_file() for it in items)
    for category in CATEGORIES:  # the released files (pinned, from the mirror), never a stand-in
        assert full.info["sha256"][category] == get_source(released_file_key(category)).sha256


def test_a_real_run_points_at_the_released_files_uncapped(in_root, tmp_path):
    full = sets_full.prepare_full(tmp_path / "set")
    assert "cap" not in full.info and sum(full.info["counts"].values()) == 7511
    assert full.data_dir == Path(fetch("sugarcrepe/data/add_att.json", progress=False)).parent.resolve()
    with pytest.raises(ValueError):
        sets_full.prepare_full(tmp_path / "bad", cap=0)


def test_an_interrupted_capped_set_leaves_the_previous_set_whole(in_root, tmp_path):
    """Rebuilt with another cap and interrupted at every move of a file: the previous capped set (its ``data/`` files
    and the manifest naming them), byte for byte, and nothing staged left; before 2026-11-29 the category files were
    rewritten one by one before the manifest, so an interrupted rebuild paired the previous manifest's counts with new
    files. The uninterrupted rebuild then changes the set."""
    from interrupt_support import count_moves, digest, interrupt_at_every_move, unchanged

    out = tmp_path / "set"
    sets_full.prepare_full(out, cap=4)
    total = count_moves(lambda: sets_full.prepare_full(tmp_path / "count", cap=3))
    interrupt_at_every_move(lambda: sets_full.prepare_full(out, cap=3), total, unchanged(out, digest(out), "capped set"))
    before = digest(out)  # (unchanged by the interrupted runs above)
    assert sets_full.prepare_full(out, cap=3).info["cap"] == 3 and digest(out) == digest(tmp_path / "count") != before


def test_the_negclip_standins_make_a_training_set_that_drops_the_test_image(prepared, in_root, tmp_path):
    from papers.sugarcrepe.negclip_sets_full import build_train_set

    root, keys = prepared
    for key in keys:
        fetch(key, data_root=root, progress=False)
    sets_full.prepare_full(tmp_path / "set", cap=4)
    manifest = build_train_set(root / "negclip" / "train_neg_clip.tsv", root / "coco" / "train2014" / "train2014",
                               tmp_path / "set" / "manifest.json", tmp_path / "train", seed=0, vocabulary_min_count=2)
    counts = manifest["counts"]
    assert counts["test_images_dropped"] == 1 and counts["rows_on_test_images"] == 1
    assert counts["rows"] == standins.NEGCLIP_TRAIN_ROWS and not any(counts["rows_without_negative"].values())


def test_algorithm_1_with_the_standin_scorers_keeps_a_batch_of_every_kind(prepared, in_root, tmp_path):
    """The refined runs train on what Algorithm 1 keeps of the stand-in TSV's rows (with the stand-in Vera and grammar
    model, as ``negclip-full-refine`` runs them): every kind keeps at least the rehearsal's global batch."""
    from common.blind.pretrained import load_text_scorer
    from common.pipeline.params import read_params
    from papers.sugarcrepe.negclip_refine_full import SCORERS, build_refined
    from papers.sugarcrepe.negclip_sets_full import build_train_set
    from tests.rehearsal.params import BATCH

    root, keys = prepared
    for key in keys:
        fetch(key, data_root=root, progress=False)
    sets_full.prepare_full(tmp_path / "set", cap=4)
    build_train_set(root / "negclip" / "train_neg_clip.tsv", root / "coco" / "train2014" / "train2014",
                    tmp_path / "set" / "manifest.json", tmp_path / "train", seed=0, vocabulary_min_count=2)
    refine = read_params()["sugarcrepe"]["negclip_full"]["refine"]
    scorers = {name: load_text_scorer(name, device="cpu", cache_dir=root) for name in SCORERS}
    record = build_refined(tmp_path / "train", tmp_path / "refined.json", scorers, refine["bins"], refine["seed"])
    kept = {kind: len(v["kept"]) for kind, v in record["kinds"].items()}
    print(kept)
    assert len(kept) == 3 and min(kept.values()) >= BATCH, kept


def test_the_blind_scorer_standins_load_as_the_released_ones(prepared):
    """Vera and the grammar model: the downloader returns their snapshots offline; the scorers' own checks pass
    (Vera's head rows, a 2-label head) and distinct captions get distinct scores."""
    import numpy as np

    from common.blind.pretrained import load_text_scorer

    root, _ = prepared
    texts = ["A dog and a cat on a sofa.", "A cat and a dog on a sofa.", "two bears"]
    for name in ("vera", "grammar"):
        scores = load_text_scorer(name, cache_dir=root).scores(texts)
        assert scores.shape == (3,) and np.all((scores > 0) & (scores < 1)) and len(set(scores.tolist())) > 1


def test_the_rehearsal_keeps_one_model_per_loader_path():
    from common.paths import ROOT
    from common.pipeline.params import read_params
    from common.zoo import get_spec
    from tests.rehearsal.params import rehearsal_params

    params = rehearsal_params(read_params(ROOT / "params.yaml"), ["sugarcrepe"])
    assert params["sugarcrepe"]["models"]["full"] == list(rehearsal.KEPT_MODELS)
    names = rehearsal.models(params)
    assert names == [*rehearsal.KEPT_MODELS, "aro/negclip"]  # the NegCLIP base is one of Table 6's
    archs = {get_spec(n).arch for n in rehearsal.KEPT_MODELS}
    assert {"RN50-quickgelu", "ViT-B-32-quickgelu", "ViT-B-32"} == archs
    assert params["sugarcrepe"]["negclip_full"]["device"] == "cpu"
    assert params["sugarcrepe"]["blind_released"]["device"] == "cpu"
    assert params["sugarcrepe"]["negclip_full"]["refine"]["device"] == "cpu"


def test_the_full_stages_hooks_default_to_a_real_run():
    """The devices are parameters (cuda unless a rehearsal says cpu); the set reads ``full_inputs.cap``, null here,
    and the fine-tunes ``max_steps``, null here (the recipe's epochs)."""
    import yaml

    from common.paths import ROOT
    from common.pipeline.params import stage_params

    stages = yaml.safe_load((ROOT / "papers/sugarcrepe/dvc.yaml").read_text())["stages"]
    cmds = {name: " ".join((stage.get("do", stage))["cmd"].split()) for name, stage in stages.items()}
    assert not [name for name, cmd in cmds.items() if "cuda" in cmd]
    assert "--device ${sugarcrepe.negclip_full.device}" in cmds["negclip-full"]
    assert "--device ${sugarcrepe.negclip_full.device}" in cmds["negclip-full-refined"]
    assert "--device ${sugarcrepe.blind_released.device}" in cmds["blind-released"]
    assert "--device ${sugarcrepe.negclip_full.refine.device}" in cmds["negclip-full-refine"]
    assert stage_params("papers/sugarcrepe/dvc.yaml:full-set") == {"full_inputs": {"cap": None}}
    negclip_full = stage_params("papers/sugarcrepe/dvc.yaml:negclip-full@clip-ft")["sugarcrepe"]["negclip_full"]
    assert negclip_full["device"] == "cuda" and negclip_full["max_steps"] is None
    assert stage_params("papers/sugarcrepe/dvc.yaml:blind-released")["sugarcrepe"]["blind_released"] == {
        "device": "cuda"}
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    assert params["sugarcrepe"]["negclip_full"]["refine"]["device"] == "cuda"


def test_the_copy_carries_the_committed_inputs_stages_read():
    """table6 depends on the committed seed-spread table (no stage writes it); the copy has it, as a clone does,
    and no stage output."""
    from tests.rehearsal.workspace import committed_inputs

    inputs = committed_inputs()
    assert "results/sugarcrepe/mini/table6_seeds.csv" in inputs
    assert "results/sugarcrepe/mini/table6.csv" not in inputs and not any("/full/" in name for name in inputs)


def test_a_standin_is_refused_for_the_pinned_json_and_a_bad_cap_before_anything_is_written(monkeypatch, tmp_path):
    from common.pipeline import params as params_module
    from common.pipeline.params import ParamsError
    from tests.rehearsal import standins

    with pytest.raises(standins.StandInError, match="pins its sha256"):
        standins.place_json("sugarcrepe/data/add_att.json", tmp_path, {})
    monkeypatch.setattr(params_module, "stage_params", lambda stage, **_: {"full_inputs": {"cap": 0}})
    monkeypatch.setenv("DVC_STAGE", "papers/sugarcrepe/dvc.yaml:full-set")  # as `dvc repro` sets it
    with pytest.raises(ParamsError, match="full_inputs.cap: must be null or a positive integer"):
        sets_full.main(["--out", str(tmp_path / "set")])
    assert not (tmp_path / "set").exists()
