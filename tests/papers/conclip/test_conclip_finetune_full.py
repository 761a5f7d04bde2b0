"""CoN-CLIP's full-profile fine-tunes on tiny files in the layouts this workspace reads, written here
(``ccneg_preprocessed.pt``, ``distractor_image_mapping.pt`` as a list of lists, a COCO captions file and JPEGs): the
training split reader, the set (``sets_full``: rows, drops by reason; read back by ``finetune_rows``), each
run's job (``train full``: the same trainer inputs as before they were jobs), 2-4 step runs of a random
``mini-vit-xs`` on CPU through the shared trainer (text tower trained, image tower untouched, file order, resume), and
the refusals."""
from __future__ import annotations

import argparse
import hashlib
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from safetensors.torch import load_file

from common.errors import WorkspaceError
from common.files.tasks import DatasetError
from common.paths import ROOT
from common.training import FromScratch, FromZoo, TrainConfig
from common.training.checkpoint import seed_everything
from common.training.files import FileImages
from common.training.job import code_files, describe_loss, run_job
from common.training.recipes import load_recipe
from common.zoo.trained import tokenizer_for
from papers.conclip import ccneg, coco_pool, sets_full as sf, train
from papers.conclip.finetune_rows import load_rows
from papers.conclip.losses import ConClipLoss
from papers.conclip.runs import RUNS
from tests.papers.conclip.test_ccneg import image_name, write_ccneg
from training_support import full_section

ARCH = "mini-vit-xs"
EVAL_SIZE = 2
ANNOTATIONS = [
    ("a dog on the green grass", "a dog not on the green grass"),          # 0
    ("a cup of hot tea on a table", "a cup without tea, on a table"),      # 1
    ("a red car parked on a street", "no red car on a street"),            # 2
    ("a tall tree in a park", "a tree that is not tall, in a park"),       # 3
    ("a man wearing a black hat", "a man not wearing a hat"),              # 4
    ("a room with large windows", "a room without windows"),               # 5
    ("so very happy", "not so very happy"),                                # 6: no noun: no CREPE negation
    ("a cat with a toy mouse", "a cat without a toy mouse"),               # 7: its distractor file is missing
    ("a bowl no spoon", "a bowl, no spoon"),                               # 8: c' without commas reads like c
    ("a girl riding a horse", "a girl not riding a horse"),                # 9: its image is missing
    ("a boat on a lake", "a boat not on a lake"),                          # 10: no mapping row
    ("a kite in the sky", "no kite in the sky"),                           # 11-12: the evaluation split
    ("a bird on a branch", "a bird without a branch"),
]
COCO_IDS = [30, 4, 17, 9, 12]
"""Listed unsorted; CocoCaptions order is 4, 9, 12, 17, 30 (pool index 4, id 30, has no file)."""
MAPPING = [[0, 1], [1, 0], [2, 3], [3, 2], [0, 2], [1, 3], [2, 0], [4, 0], [3, 1], [2, 1]]
"""Rows for entries 0-9 (none for entry 10); top-1 first."""
USED = [0, 1, 2, 3, 4, 5, 6, 8]
"""Every training entry but those the authors' loader would crash on (7, 9, 10): 6 (no CREPE-Negate negation) and 8
(c' reads like c) are rows, as the authors train on them."""
PARAMS = full_section(batch_size=2, shuffle=False)  # the authors' order


def write_data(root: Path) -> dict[str, Path]:
    pt, images = write_ccneg(root / "ccneg", ANNOTATIONS, num_ops={1: [0, 11], 2: [12]})
    (images / image_name(9)).unlink()
    captions = root / coco_pool.CAPTIONS
    captions.parent.mkdir(parents=True)
    captions.write_text(json.dumps({"images": [{"id": i, "file_name": f"{i:012d}.jpg"} for i in COCO_IDS],
                                    "annotations": [{"id": 1, "image_id": 4, "caption": "a thing"}]}))
    pool = root / coco_pool.IMAGES
    pool.mkdir(parents=True)
    for i in COCO_IDS[1:]:
        pixels = np.random.default_rng(100 + i).integers(0, 256, (36, 28, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(pool / f"{i:012d}.jpg")
    mapping = root / "distractor_image_mapping.pt"
    torch.save(MAPPING, mapping)
    return {"pt": pt, "images": images, "mapping": mapping, "root": root}


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, Path]:
    return write_data(tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="module")
def train_set(data, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("set")
    sf.build_set(data["pt"], data["images"], data["mapping"], data["root"], out, seed=0, eval_size=EVAL_SIZE)
    return out


def test_training_split_is_every_entry_but_the_last(data):
    split = ccneg.load_ccneg_training(data["pt"], data["images"], EVAL_SIZE)
    assert [e.index for e in split.entries] == list(range(11)) and split.n_entries == 13
    assert split.entries[1].negated == "a cup without tea on a table"  # commas removed, as the authors' loader
    assert split.entries[1].caption == ANNOTATIONS[1][0]
    assert split.entries[9].image == (data["images"] / image_name(9)).resolve()  # missing: the set counts it
    with pytest.raises(DatasetError, match="13 entries leave no training entries"):
        ccneg.load_ccneg_training(data["pt"], data["images"], 13)


def test_training_split_names_a_bad_entry(tmp_path):
    annotations = [("a dog", "no dog"), ("", "no cat"), ("a kite", "no kite")]
    pt, images = write_ccneg(tmp_path, annotations, num_ops={1: [0]})
    with pytest.raises(DatasetError, match=r"ccneg_preprocessed.pt: entry 1: annotations\[1\]\['json'\]"
                                           r"\['caption'\] is empty"):
        ccneg.load_ccneg_training(pt, images, eval_size=1)


def test_the_set_pairs_each_entry_with_its_top1_distractor_and_counts_drops(data, train_set, tmp_path):
    rows = load_rows(train_set)
    assert [r.index for r in rows] == USED
    names = sorted(f"{i:012d}.jpg" for i in COCO_IDS)
    for r in rows:
        assert r.image == image_name(r.index) and r.caption == ANNOTATIONS[r.index][0]
        assert r.negated == ANNOTATIONS[r.index][1].replace(",", "")
        assert r.distractor_index == MAPPING[r.index][0] and r.distractor == names[MAPPING[r.index][0]]
        assert (r.crepe_negated is None) == (r.index == 6)
        assert r.crepe_negated is None or not sf.reads_alike(r.crepe_negated, r.caption)
    manifest = json.loads((train_set / "manifest.json").read_text())
    counts = manifest["counts"]
    assert counts["rows"] == 8 and counts["training_entries"] == 11 and counts["mapping_rows"] == 10
    assert counts["pool_images"] == 5 and counts["mapping_top_k"] == 2
    assert counts["dropped"] == {"no_mapping_row": 1, "image_missing": 1, "distractor_missing": 1}
    assert counts["negation_reads_like_caption"] == 1 and counts["crepe_negate_rows"] == 7
    assert counts["crepe_negate_run_skips"] == {"no_crepe_negation": 1, "crepe_negation_reads_like_caption": 0}
    assert counts["dropped_examples"]["distractor_missing"] == [7]
    assert set(manifest["sha256"]) == {"ccneg_preprocessed.pt", "distractor_image_mapping.pt",
                                       "captions_train2017.json"}
    again = tmp_path / "again"
    sf.build_set(data["pt"], data["images"], data["mapping"], data["root"], again, seed=0, eval_size=EVAL_SIZE)
    assert (again / "rows.jsonl").read_bytes() == (train_set / "rows.jsonl").read_bytes()


def test_a_row_without_a_negation_reaches_the_cc_neg_runs_only(data, tmp_path):
    """The authors train L_conclip on every training entry (their loader filters none: jaisidhsingh/CoN-CLIP@503388ac
    src/data/finetuning_datasets.py:55 "self.image_paths = self.image_paths[:self.split_size]"):
    a row whose caption has no CREPE-Negate negation (``crepe_negated: null``) and one whose negated caption reads
    like its caption are in every CC-Neg run; only the CREPE-Negate run skips the first."""
    rows = [{"index": 0, "image": image_name(0), "caption": "a dog on the grass", "negated": "no dog on the grass",
             "distractor": "000000000004.jpg", "distractor_index": 0, "crepe_negated": "a dog not on the grass"},
            {"index": 1, "image": image_name(1), "caption": "so very happy", "negated": "not so very happy",
             "distractor": "000000000009.jpg", "distractor_index": 1, "crepe_negated": None},
            {"index": 2, "image": image_name(2), "caption": "a bowl no spoon", "negated": "a bowl no spoon",
             "distractor": "000000000012.jpg", "distractor_index": 2, "crepe_negated": "a bowl and a spoon"}]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    loaded = load_rows(tmp_path)
    params = {**PARAMS, "batch_size": 1}
    for run in ("conclip", "l1", "l2", "l1-l2", "crepe-negate-l1"):
        job = train.build_job(run, train.FileSamples(loaded, data["images"], data["root"] / coco_pool.IMAGES), params,
                              init=FromScratch(ARCH))
        crepe = run == "crepe-negate-l1"
        assert job.batches.captions == [r["caption"] for r in rows if not crepe or r["crepe_negated"]]
        assert job.provenance["steps_per_epoch"] == (2 if crepe else 3)
    with pytest.raises(train.TrainingSetError, match="crepe-negate-l1: no row of the set has a CREPE-Negate negation"):
        train.run_rows("crepe-negate-l1", [loaded[1]])


class Opaque:
    """A class ``torch.load(weights_only=True)`` refuses to rebuild."""


def test_set_refusals_name_file_and_entry(data, tmp_path):
    bad = tmp_path / "distractor_image_mapping.pt"
    torch.save([[0], [5]], bad)
    with pytest.raises(DatasetError, match=r"distractor_image_mapping.pt: entry 1: pool index 5 is outside the pool "
                                           r"of 5 COCO train images"):
        sf.build_set(data["pt"], data["images"], bad, data["root"], tmp_path / "out", eval_size=EVAL_SIZE)

    torch.save({"rows": Opaque()}, bad)
    with pytest.raises(DatasetError, match=r"distractor_image_mapping.pt: refused by torch.load\(weights_only=True\)"):
        sf.build_set(data["pt"], data["images"], bad, data["root"], tmp_path / "out", eval_size=EVAL_SIZE)
    assert not (tmp_path / "out").exists()
    (tmp_path / "rows.jsonl").write_text(json.dumps({"index": 0, "image": "a.jpg", "caption": "c"}) + "\n")
    with pytest.raises(DatasetError, match=r"rows.jsonl: line 1: no 'negated'"):
        load_rows(tmp_path)
    with pytest.raises(WorkspaceError, match=r"rows.jsonl: missing; run the finetune-full-set stage"):
        load_rows(tmp_path / "nowhere")
    (tmp_path / "rows.jsonl").write_text("")
    with pytest.raises(DatasetError, match=r"rows.jsonl: no rows"):
        load_rows(tmp_path)


def test_batches_walk_the_file_in_order_with_distractors_as_second_image(data, train_set):
    rows = load_rows(train_set)
    samples = train.FileSamples(rows, data["images"], data["root"] / coco_pool.IMAGES)
    batches = samples.batches("conclip", PARAMS, lambda texts: torch.tensor([[len(t), 0] for t in texts]))
    assert batches.steps_per_epoch(3) == 2  # drop_last: 8 rows, 2 batches of 3
    assert list(batches.draws(0, 0, 2)) == [0, 1] and list(batches.draws(7, 5, 2)) == [2, 3]  # step 5: epoch 1
    out = batches.batch(0, 1, 2)
    assert out["images"].shape == (2, 2, 3, 48, 48) and out["texts"].shape == (2, 2, 2)
    assert out["texts"][:, 1, 0].tolist() == [len(rows[2].negated), len(rows[3].negated)]
    assert not torch.equal(out["images"][:, 0], out["images"][:, 1])
    assert batches.describe()["order"] == "file order"
    crepe = samples.batches("crepe-negate-l1", PARAMS, lambda texts: torch.tensor([[len(t), 0] for t in texts]))
    assert crepe.batch(0, 1, 2)["texts"][:, 1, 0].tolist() == [len(rows[2].crepe_negated),
                                                               len(rows[3].crepe_negated)]
    shuffled = samples.batches("conclip", {**PARAMS, "shuffle": True}, lambda texts: torch.zeros(len(texts), 2))
    assert sorted(shuffled.draws(0, 0, 8)) == list(range(8)) and list(shuffled.draws(0, 0, 8)) != list(range(8))


FULL_SECTION = {"base": "mini/xs-32k", "image_size": 48, "seed": 5, "precision": "bf16", "shuffle": False,
                "lr": 0.003, "epochs": 2, "batch_size": 2, "warmup_steps": 1, "weight_decay": 0.07, "gpus": 1,
                "checkpoint_every": 500}
"""``params.yaml conclip.full.finetune`` as the run stages read it (other values than the pipeline's)."""


@pytest.mark.parametrize("steps", [None, 4])
@pytest.mark.parametrize("run", list(RUNS))
def test_each_runs_job_gives_the_trainer_what_the_old_run_gave_it(run, steps, data, train_set, monkeypatch):
    """``run <name> [--steps N]``'s job against the old ``train_full_run``/``train_file_run``/``_cmd_run``
    (papers/conclip/finetune_full.py, common/file_batches.py at fc79156), written out: ``TrainConfig`` with steps =
    ``--steps`` or epochs x steps per epoch (6 rows, batch 2, drop_last: 3 per epoch), ``FromZoo(base)``,
    ``NegationFileBatches`` named ``conclip-full-<negatives>`` in file order, ``partial(ConClipLoss, terms=...)``, no
    validation, provenance {run, terms, negatives, profile, set_manifest_sha256, **the CPU profile, steps_per_epoch,
    epochs} in that order, checkpoints every 500 steps, resumable; ``launch``'s ``with_steps`` changes nothing."""
    import common.pipeline.params

    monkeypatch.setattr(common.pipeline.params, "stage_params", lambda stage, **_: {"conclip": {"full": {"finetune": FULL_SECTION}}})
    monkeypatch.setenv("DVC_STAGE", f"papers/conclip/dvc.yaml:finetune-full@{run}")  # as `dvc repro` sets it
    profile = {"cpu_profile": "off"}
    args = argparse.Namespace(profile="full", run=run, set=str(train_set), data=str(data["root"]), steps=steps)
    (data["root"] / train.CCNEG_IMAGES).parent.mkdir(parents=True, exist_ok=True)
    if not (data["root"] / train.CCNEG_IMAGES).exists():
        (data["root"] / train.CCNEG_IMAGES).symlink_to(data["images"])
    job = train._build(args, None, profile)
    spec = RUNS[run]
    field = {"ccneg": "negated", "crepe": "crepe_negated"}[spec.negatives]

    # 8 rows (7 with a CREPE-Negate negation, the CREPE-Negate run's), batch 2, drop_last
    n_rows = 7 if spec.negatives == "crepe" else 8
    per_epoch = n_rows // 2
    total = steps or 2 * per_epoch
    recipe = load_recipe(ROOT / "papers" / "conclip" / "recipes.toml", "conclip")
    assert job.config == TrainConfig(steps=total, batch_size=2, lr=0.003, warmup_steps=1, weight_decay=0.07, seed=5,
                                     precision="bf16", checkpoint_every=500, recipe=recipe)
    # every run: the authors' one AdamW group,
    # jaisidhsingh/CoN-CLIP@503388ac src/conclip_fine_tuning.py:116 "filter(lambda p: p.requires_grad, model"
    assert recipe.decay_rule == "all"
    assert job.describe()["config"]["recipe"]["deviations"] == {
        "lr": {"authors": 1e-6, "run": 0.003}, "weight_decay": {"authors": 0.2, "run": 0.07},
        "warmup_steps": {"authors": 50, "run": 1}, "batch_size": {"authors": 200, "run": 2},
        "precision": {"authors": "fp16", "run": "bf16"}}
    assert job.with_steps(steps) == job
    assert job.init == FromZoo("mini/xs-32k")
    assert job.loss.func is ConClipLoss and job.loss.args == () and job.loss.keywords == {"terms": spec.terms}
    assert describe_loss(job.loss) == {"class": "papers.conclip.losses.ConClipLoss", "keywords": {"terms": spec.terms}}
    assert job.validate is None and job.config.checkpoint_every == 500 and job.resume is True
    sha = hashlib.sha256((train_set / "manifest.json").read_bytes()).hexdigest()
    assert list(job.provenance.items()) == [
        ("run", run), ("terms", list(spec.terms)), ("negatives", spec.negatives), ("profile", "full"),
        ("set_manifest_sha256", sha), ("cpu_profile", "off"), ("steps_per_epoch", per_epoch), ("epochs", total / per_epoch)]
    assert job.batches.describe() == {"name": f"conclip-full-{spec.negatives}", "rows": n_rows,
                                      "images": ["image", "distractor"], "texts": ["caption", field],
                                      "order": "file order"}
    assert job.module == "papers.conclip.train" and job.name == f"conclip-full-{run}"
    # the same batches: rows [j*B, (j+1)*B) of the file every epoch, [I, I'] and [c, c'] per sample
    rows = train.run_rows(run, load_rows(train_set))
    tokenize = tokenizer_for("mini-vit-xs")
    for step in (0, 2, 4):
        picked = rows[2 * (step % per_epoch): 2 * (step % per_epoch) + 2]
        files = [*(data["images"] / r.image for r in picked), *(data["root"] / coco_pool.IMAGES / r.distractor
                                                                 for r in picked)]
        pixels = FileImages(tuple(files), 48).get(np.arange(4))
        batch = job.batches.batch(5, step, 2)
        assert torch.equal(batch["images"], torch.stack([pixels[:2], pixels[2:]], 1))
        assert torch.equal(batch["texts"], torch.stack([tokenize([r.caption for r in picked]),
                                                        tokenize([getattr(r, field) for r in picked])], 1))


def test_the_runs_follow_their_code_not_the_readers_of_the_released_files():
    """The GPU fine-tunes' closure (their resume key and their DVC code deps): the batches, the loss, the runs and the
    set's format, not the set's building nor CC-Neg's or the COCO pool's readers (only their folders)."""
    files = code_files("papers.conclip.train")
    assert {"common/training/files.py", "papers/conclip/losses.py", "papers/conclip/runs.py",
            "papers/conclip/finetune_rows.py", "papers/conclip/data_paths.py",
            "papers/conclip/train.py"} <= set(files)
    assert not {"papers/conclip/sets_full.py", "papers/conclip/ccneg.py", "papers/conclip/coco_pool.py",
                "common/text/crepe_style.py"} & set(files)


def test_a_run_trains_the_text_tower_and_leaves_the_image_tower(data, train_set, tmp_path):
    rows = load_rows(train_set)
    seed_everything(PARAMS["seed"])  # the trainer builds the model right after this seeding
    before = {k: v.clone() for k, v in FromScratch(ARCH).build().model.state_dict().items()}
    out = tmp_path / "conclip.safetensors"
    job = train.build_job("conclip", train.FileSamples(rows, data["images"], data["root"] / coco_pool.IMAGES), PARAMS,
                          init=FromScratch(ARCH), steps=2)
    result = run_job(job, out)
    assert np.isfinite(result.final_loss)
    after = load_file(out)
    visual = [k for k in before if k.startswith("visual.")]
    text = [k for k in before if not k.startswith("visual.") and k != "logit_scale"]
    assert visual and all(torch.equal(before[k], after[k]) for k in visual)
    assert any(not torch.equal(before[k], after[k]) for k in text)
    record = json.loads(out.with_suffix(".json").read_text())
    assert record["run"] == "conclip" and record["terms"] == ["l1", "l2", "l3"] and record["steps_per_epoch"] == 4


class _Interrupt(Exception):
    pass


def test_an_interrupted_run_resumes_to_the_same_weights(data, train_set, tmp_path, monkeypatch):
    rows = load_rows(train_set)

    def run(name: str):
        job = train.build_job("l1-l2", train.FileSamples(rows, data["images"], data["root"] / coco_pool.IMAGES), PARAMS,
                              init=FromScratch(ARCH), steps=4)
        return run_job(replace(job, config=replace(job.config, checkpoint_every=2)), tmp_path / name / "m.safetensors")

    whole = run("whole")
    original = train.NegationFileBatches.batch

    def killed(self, seed, step, size, rows=slice(None)):
        if step == 3:
            raise _Interrupt
        return original(self, seed, step, size, rows)

    monkeypatch.setattr(train.NegationFileBatches, "batch", killed)
    with pytest.raises(_Interrupt):
        run("cut")
    monkeypatch.setattr(train.NegationFileBatches, "batch", original)
    resumed = run("cut")
    assert resumed.resumed_from == 2 and whole.resumed_from is None and resumed.losses == whole.losses
    assert (tmp_path / "cut" / "m.safetensors").read_bytes() == (tmp_path / "whole" / "m.safetensors").read_bytes()


def test_run_entry_works_as_a_plain_process(data, train_set, tmp_path, monkeypatch):
    """``python -m papers.conclip.train full run`` without torchrun: a local world, weights and sidecar."""
    import common.pipeline.params
    import common.pipeline.reproducible

    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.setattr(common.pipeline.reproducible, "reexec_pinned", lambda: None)
    monkeypatch.setattr(common.pipeline.params, "stage_params", lambda stage, **_: {"conclip": {"full": {"finetune": PARAMS}}})
    monkeypatch.setenv("DVC_STAGE", "papers/conclip/dvc.yaml:finetune-full@crepe-negate-l1")  # as `dvc repro` sets it
    monkeypatch.setattr(train, "FromZoo", lambda name: FromScratch(ARCH))
    root = tmp_path / "root"
    (root / train.CCNEG_IMAGES).parent.mkdir(parents=True)
    (root / train.CCNEG_IMAGES).symlink_to(data["images"])
    (root / coco_pool.IMAGES).parent.mkdir(parents=True)
    (root / coco_pool.IMAGES).symlink_to(data["root"] / coco_pool.IMAGES)
    out = tmp_path / "crepe-negate-l1.safetensors"
    assert train.main(["full", "run", "crepe-negate-l1", "--set", str(train_set), "--data", str(root),
                       "--out", str(out), "--steps", "2"]) == 0
    record = json.loads(out.with_suffix(".json").read_text())
    assert out.is_file() and record["negatives"] == "crepe" and record["terms"] == ["l1"]


def test_zoo_entries_name_every_run():
    import tomllib

    models = tomllib.loads((Path(__file__).parents[3] / "papers/conclip/models.toml").read_text())["model"]
    ours = {m["name"]: m for m in models if m["name"].startswith("conclip/full-")}
    assert sorted(ours) == sorted(f"conclip/full-{run}" for run in RUNS)
    for run in RUNS:
        entry = ours[f"conclip/full-{run}"]
        assert entry["checkpoint"] == f"build:full/conclip/models/{run}.safetensors"
        assert entry["arch"] == "ViT-B-32-quickgelu" and entry["finetuned_from"] == "openai/ViT-B-32"


def test_set_entry_point_writes_the_group(data, tmp_path, monkeypatch):
    import common.pipeline.params

    monkeypatch.setattr(common.pipeline.params, "stage_params", lambda stage, **_: {"conclip": {"full": {"finetune": {"seed": 0}}}})
    monkeypatch.setenv("DVC_STAGE", "papers/conclip/dvc.yaml:finetune-full-set")  # as `dvc repro` sets it
    out = tmp_path / "finetune"
    assert sf.main(["set", "--ccneg", str(data["pt"]), "--ccneg-images", str(data["images"]), "--mapping",
                    str(data["mapping"]), "--data", str(data["root"]), "--eval-size", str(EVAL_SIZE), "--out",
                    str(out)]) == 0
    assert [r.index for r in load_rows(out)] == USED
    assert json.loads((out / "manifest.json").read_text())["kind"] == sf.SET_KIND
