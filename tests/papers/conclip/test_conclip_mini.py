"""CoN-CLIP, mini profile: negated captions from the world (truth, distractors), the benchmark and fine-tuning set
(``sets_mini``, read back by ``benchmark_mini`` and ``finetune_rows``), the runs' jobs (``train mini``: the same
trainer inputs as before they were jobs, and a resume key that follows the code they run), and a tiny end-to-end
table (``tables --profile mini``)."""
from __future__ import annotations

import argparse
import csv
import hashlib
import json
import random
from pathlib import Path

import numpy as np
import pytest
import torch

from common.files.tasks import DatasetError
from common.miniworld.negation import (
    NEGATION_WORDS, NegationClaim, PredicateObject, distractor_scene, name_object, sample_negation)
from common.miniworld.scene import Scene, SceneObject, sample_scene
from common.training import FromScratch, FromZoo, TrainConfig
from common.training.checkpoint import portable_state, save_weights
from common.training.job import code_files, describe_loss, run_job
from common.training.rendered import pixels
from common.zoo.trained import tokenizer_for
from papers.conclip import benchmark_mini as b, sets_mini as m, tables as t, train
from papers.conclip.finetune_rows import FinetuneSet
from papers.conclip.losses import ConClipLoss
from papers.conclip.runs import RUNS
from sugarcrepe_support import write_sugarcrepe_set
from training_support import mini_section

ARCH = "mini-vit-xs"


def _obj(shape, color, x, y):
    return SceneObject(shape, color, "small", x, y, 0.07)


# A red circle left of a blue square (both on one row), a green star below the circle.
SCENE = Scene((_obj("circle", "red", 0.25, 0.25), _obj("square", "blue", 0.75, 0.25), _obj("star", "green", 0.25, 0.75)))


def _claim(*pairs, negated=None, word=None):
    return NegationClaim(name_object(SCENE, 0), tuple(PredicateObject(p, name_object(SCENE, i)) for p, i in pairs),
                         negated, word, lexical_seed=1)  # seed 1: canonical words (no synonym) for these concepts


def test_negations_follow_the_scene_graph():
    caption = _claim(("left_of", 1), ("with", 2))
    assert caption.text() == "A red circle to the left of a blue square and with a green star."
    assert caption.holds(SCENE) and caption.k == 2
    assert _claim(("right_of", 1)).holds(SCENE) is False
    for word, text in (("not", "A red circle to the left of a blue square and not with a green star."),
                       ("without", "A red circle to the left of a blue square and without a green star."),
                       ("no", "A red circle to the left of a blue square and with no green star.")):
        negated = caption.negate(1, word)
        assert negated.text() == text and not negated.holds(SCENE)
    # the circle is above the green star: "not above a green star" is false, "not below a green star" true
    assert not _claim(("above", 2), negated=0, word="not").holds(SCENE)
    assert _claim(("below", 2), negated=0, word="not").holds(SCENE)  # the circle is not below the star
    assert not _claim(("below", 2), negated=0, word="without").holds(SCENE)  # but there is a green star


def test_sampled_examples_and_distractors_invert_truth():
    rng = random.Random(0)
    for k in range(1, 6):
        for word in NEGATION_WORDS:
            scene = sample_scene(rng, n_objects=k + 1)
            ex = sample_negation(rng, scene, k, word)
            assert ex.caption.holds(scene) and not ex.negated.holds(scene) and ex.caption.k == k
            distractor = distractor_scene(scene, ex)
            assert len(distractor.objects) == k and ex.negated.holds(distractor) and not ex.caption.holds(distractor)
            assert word in ex.negated.text().lower().split()
    with pytest.raises(ValueError, match="need 4 objects"):
        sample_negation(rng, sample_scene(rng, n_objects=2), 3, "no")


@pytest.fixture(scope="module")
def test_set(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("conclip_test")
    m.build_test_set(m.TestSetConfig(examples_per_cell=2, classification_images=56), out)
    return out


@pytest.fixture(scope="module")
def finetune_set(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("conclip_finetune")
    m.build_finetune_set(m.FinetuneSetConfig(train_images=12), out)
    return out


def test_a_negation_past_the_context_is_dropped_for_every_run(tmp_path):
    """CREPE-Negate appends "There is no X."; on a long caption a short-context tokenizer cuts it off, and the scene is
    dropped from the set (so every run trains on the same scenes), counted in the manifest."""
    def short_tokenizer(texts):  # the first 9 words of each text, as ids: the context cuts off the rest
        ids = [[hash(w) % 10007 + 1 for w in t.lower().replace(".", " .").split()[:9]] for t in texts]
        return torch.tensor([row + [0] * (9 - len(row)) for row in ids])

    config = m.FinetuneSetConfig(train_images=24)
    m.build_finetune_set(config, tmp_path / "all")
    m.build_finetune_set(config, tmp_path / "cut", short_tokenizer)
    full, cut = FinetuneSet.load(tmp_path / "all"), FinetuneSet.load(tmp_path / "cut")
    manifest = json.loads((tmp_path / "cut" / "manifest.json").read_text())
    dropped = manifest["counts"]["dropped_unreadable_negation"]
    assert dropped["crepe_negated"] > 0 and manifest["counts"]["rows"] == len(cut.rows) < len(full.rows)
    kept = [r for r in full.rows if r in cut.rows]
    assert len(kept) == len(cut.rows)  # the survivors, unchanged and in order
    assert not (short_tokenizer(cut.texts("crepe_negated")) == short_tokenizer(cut.texts("caption"))).all(-1).any()
    assert not (short_tokenizer(cut.texts("negated")) == short_tokenizer(cut.texts("caption"))).all(-1).any()
    index = [full.rows.index(r) for r in cut.rows]
    assert np.array_equal(cut.images, full.images[index]) and np.array_equal(cut.distractors, full.distractors[index])


def test_benchmark_cells_and_records(test_set, tmp_path):
    items = b.load_test_items(test_set)
    assert len(items) == 2 * 5 * 3 and {it.group for it in items} == {b.group_name(w, k) for w in NEGATION_WORDS
                                                                        for k in b.KS}
    manifest = json.loads((test_set / "manifest.json").read_text())
    for record in manifest["examples"]:
        assert record["word"] in record["negated"].lower().split() and record["caption"] != record["negated"]
    assert (test_set / "classification" / "manifest.json").is_file()
    again = tmp_path / "again"
    m.build_test_set(m.TestSetConfig(examples_per_cell=2, classification_images=56), again)
    assert (again / "manifest.json").read_bytes() == (test_set / "manifest.json").read_bytes()
    bad = dict(manifest, examples=[{**manifest["examples"][0], "k": 7}])
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "manifest.json").write_text(json.dumps(bad))
    with pytest.raises(DatasetError, match=r"manifest.json: record 0: .* is not a CC-Neg cell"):
        b.load_test_items(tmp_path / "bad")


def test_finetune_set_has_distractors_and_crepe_negations(finetune_set):
    data = FinetuneSet.load(finetune_set)
    assert data.images.shape == data.distractors.shape == (12, 48, 48, 3)
    assert not np.array_equal(data.images, data.distractors)
    for row in data.rows:
        assert row["negated"] != row["caption"] and row["crepe_negated"] != row["caption"]
        assert row["word"] in NEGATION_WORDS and 1 <= row["k"] <= 5
    manifest = json.loads((finetune_set / "manifest.json").read_text())
    assert sum(manifest["counts"]["by_word"].values()) == 12


def test_batches_carry_image_distractor_caption_and_negation(finetune_set):
    data = FinetuneSet.load(finetune_set)
    tokenize = tokenizer_for(ARCH)
    batches = train.RenderedSamples(data).batches("conclip", {}, tokenize)
    batch = batches.batch(0, 0, 4)
    assert batch["images"].shape == (4, 2, 3, 48, 48) and batch["texts"].shape[:2] == (4, 2)
    idx = batches.draws(0, 0, 4)[0]
    assert torch.equal(batch["images"][:, 1], pixels(data.distractors)[idx])
    assert torch.equal(batch["texts"][:, 1], tokenize([data.rows[i]["negated"] for i in idx]))
    crepe = train.RenderedSamples(data).batches("crepe-negate-l1", {}, tokenize).batch(0, 0, 4)
    assert torch.equal(crepe["texts"][:, 1], tokenize([data.rows[i]["crepe_negated"] for i in idx]))
    assert torch.equal(crepe["texts"][:, 0], batch["texts"][:, 0])  # the same captions in the same order
    with pytest.raises(train.TrainingSetError, match=r"l1: batch of 64 is larger than the \d+ training images"):
        train.build_job("l1", train.RenderedSamples(data), mini_section(batch_size=64), init=FromScratch(ARCH))


def test_the_runs_resume_key_follows_the_batch_code():
    """The drift the jobs fixed: the old runs keyed their resume state on [mini.py, losses.py, runs.py] by hand, but
    trained through the batch module (common/segment_batches.py, now common/training/rendered.py), so an edit there
    could let a killed run continue from a state that other batch code wrote. The key now follows the import closure."""
    files = code_files("papers.conclip.train")
    assert {"common/training/rendered.py", "papers/conclip/losses.py", "papers/conclip/runs.py",
            "papers/conclip/finetune_rows.py", "papers/conclip/train.py"} <= set(files)
    assert "papers/conclip/sets_mini.py" not in files and "papers/conclip/tables.py" not in files
    tables = code_files("papers.conclip.tables")  # the tables read the sets, they do not render them
    assert "papers/conclip/benchmark_mini.py" in tables and "papers/conclip/sets_mini.py" not in tables


MINI_SECTION = {"base": "mini/xs-32k", "steps": 7, "batch_size": 4, "lr": 0.002, "warmup_steps": 2,
                "weight_decay": 0.05, "seed": 3, "checkpoint_every": 50, "family": ["mini/xs-32k"], "train_images": 12}
"""``params.yaml conclip.mini`` as the run stages read it (other values than the pipeline's, so none is a default)."""


@pytest.mark.parametrize("run", list(RUNS))
def test_each_runs_job_gives_the_trainer_what_the_old_run_gave_it(run, finetune_set, monkeypatch):
    """``run <name>``'s job against the old ``train_run``/``_cmd_run`` (papers/conclip/mini.py at fc79156), written
    out: the section's ``TrainConfig``, ``FromZoo(base)``, ``PairedImageBatches`` named ``conclip-mini-<negatives>``
    over the set, ``partial(ConClipLoss, terms=...)``, no validation, provenance {run, terms, negatives,
    set_manifest_sha256, **the CPU profile} in that order, checkpoints every 50 steps, resumable."""
    import common.pipeline.params

    monkeypatch.setattr(common.pipeline.params, "stage_params", lambda stage, **_: {"conclip": {"mini": MINI_SECTION}})
    monkeypatch.setenv("DVC_STAGE", f"papers/conclip/dvc.yaml:mini-finetune@{run}")  # as `dvc repro` sets it
    profile = {"cpu_profile": {"pins": "x", "threads": 2}}
    job = train._build(argparse.Namespace(profile="mini", run=run, set=str(finetune_set), data=None, steps=None),
                       None, profile)
    spec = RUNS[run]
    field = {"ccneg": "negated", "crepe": "crepe_negated"}[spec.negatives]
    data = FinetuneSet.load(finetune_set)

    assert job.config == TrainConfig(steps=7, batch_size=4, lr=0.002, warmup_steps=2, weight_decay=0.05, seed=3,
                                     checkpoint_every=50)
    assert job.init == FromZoo("mini/xs-32k")
    assert job.loss.func is ConClipLoss and job.loss.args == () and job.loss.keywords == {"terms": spec.terms}
    assert describe_loss(job.loss) == {"class": "papers.conclip.losses.ConClipLoss", "keywords": {"terms": spec.terms}}
    assert job.validate is None and job.config.checkpoint_every == 50 and job.resume is True
    sha = hashlib.sha256((finetune_set / "manifest.json").read_bytes()).hexdigest()
    assert list(job.provenance.items()) == [("run", run), ("terms", list(spec.terms)), ("negatives", spec.negatives),
                                            ("set_manifest_sha256", sha), *profile.items()]
    assert job.batches.describe() == {"name": f"conclip-mini-{spec.negatives}", "n_images": len(data.rows),
                                      "captions_per_image": 1, "texts": ["caption", field],
                                      "images": ["image", "distractor"]}
    assert job.module == "papers.conclip.train" and job.name == f"conclip-mini-{run}"
    # the same batches: an epoch is default_rng([seed, 0, epoch])'s permutation, [I, I'] and [c, c'] per sample
    tokenize = tokenizer_for("mini-vit-xs")
    for step in (0, 1, 3):  # 3 steps of 4 per epoch of 12 images: step 3 starts the second epoch
        epoch, j = divmod(step, len(data.rows) // 4)
        idx = np.random.default_rng([3, 0, epoch]).permutation(len(data.rows))[j * 4:(j + 1) * 4]
        batch = job.batches.batch(3, step, 4)
        assert torch.equal(batch["images"], torch.stack([pixels(data.images)[idx], pixels(data.distractors)[idx]], 1))
        assert torch.equal(batch["texts"], torch.stack([tokenize([data.rows[i]["caption"] for i in idx]),
                                                        tokenize([data.rows[i][field] for i in idx])], 1))


def test_run_command_trains_the_job_and_writes_its_log(finetune_set, tmp_path, monkeypatch):
    """``python -m papers.conclip.train mini run <name>``: weights and sidecar where ``--out`` says, the log beside
    the pipeline's (``build/mini/conclip/logs/<run>.json``, wall time: not a DVC output)."""
    import common.pipeline.params
    from common.paths import build_dir

    monkeypatch.setenv("VLC_CPU_PROFILE", "off")  # no pinned re-exec of the test process
    monkeypatch.setattr(common.pipeline.params, "stage_params", lambda stage, **_: {"conclip": {"mini": MINI_SECTION}})
    monkeypatch.setenv("DVC_STAGE", "papers/conclip/dvc.yaml:mini-finetune@l1")  # as `dvc repro` sets it
    monkeypatch.setattr(train, "FromZoo", lambda name: FromScratch(ARCH))
    out = tmp_path / "l1.safetensors"
    assert train.main(["mini", "run", "l1", "--set", str(finetune_set), "--out", str(out), "--steps", "2"]) == 0
    record = json.loads(out.with_suffix(".json").read_text())
    assert record["run"] == "l1" and record["terms"] == ["l1"] and record["cpu_profile"] == "off"
    assert record["trainer"]["steps"] == 2 and record["frozen"] == ["image"]
    log = json.loads((build_dir("mini", "conclip") / "logs" / "l1.json").read_text())
    assert log["run"] == "conclip-mini-l1" and log["world_size"] == 1


def _sugarcrepe(root: Path, test_set: Path) -> Path:
    """A SugarCrepe-format set over a few of the benchmark's images (captions from its records)."""
    records = json.loads((test_set / "manifest.json").read_text())["examples"][:4]
    return write_sugarcrepe_set(root, test_set / "images", [(r["filename"], r["caption"], r["negated"]) for r in records])


def test_tiny_end_to_end_writes_the_tables(test_set, finetune_set, tmp_path):
    from common.evaluation.engine import EngineConfig

    params = mini_section()
    models = tmp_path / "models"
    base = FromScratch(ARCH)
    torch.manual_seed(0)
    save_weights(models / "base.safetensors", portable_state(base.build().model))
    data = FinetuneSet.load(finetune_set)
    for run in RUNS:
        job = train.build_job(run, train.RenderedSamples(data), params, init=base)
        run_job(job, models / f"{run}.safetensors")
    record = json.loads((models / "l2.json").read_text())
    assert record["loss"]["terms"] == ["l2"] and record["frozen"] == ["image"]
    entries = [t.ModelEntry("clip", "base", "CLIP", "base", models / "base.safetensors"),
               t.ModelEntry("negclip", "negclip", "NegCLIP", "base", models / "base.safetensors"),
               *t.entries_for("unused", [], "unused", models)[2:]]
    entries = [e if e.row not in ("clip", "negclip") else t.ModelEntry(e.row, e.name, e.label, None, e.checkpoint)
               for e in entries]
    out = tmp_path / "results"
    inputs = t.mini_inputs(entries, {e.row: ARCH for e in entries}, test_set,
                           _sugarcrepe(tmp_path / "sugarcrepe", test_set), context={"test": True})
    paths = t.evaluate_tables(inputs, out, EngineConfig(progress=False))

    def read(name):
        with open(paths[name], newline="") as fh:
            return list(csv.DictReader(fh))

    table3, cells, table6 = read("table3"), read("by_word_k"), read("table6")
    assert [r["row"] for r in table3] == ["clip", "negclip", *RUNS] and [r["row"] for r in table6] == list(RUNS)
    for r in table3:
        mine = [c for c in cells if c["row"] == r["row"]]
        assert len(mine) == 15 and all(int(c["n"]) == 2 for c in mine)
        pooled = sum(float(c["accuracy"]) * int(c["n"]) for c in mine) / sum(int(c["n"]) for c in mine)
        assert float(r["ccneg"]) == pytest.approx(pooled, abs=0.011)
        assert float(r["ccneg_strict"]) <= float(r["ccneg"])
    classification = {r["row"]: r for r in read("classification")}
    for r in classification.values():
        assert float(r["shapes_delta"]) == pytest.approx(float(r["shapes_top1"]) - float(r["shapes_negated_top1"]),
                                                         abs=0.011)
    metrics = json.loads(paths["summary"].read_text())
    assert list(metrics) == list(t.MINI_SUMMARY_KEYS) and all(isinstance(v, (int, float)) for v in metrics.values())
    comparisons = json.loads(paths["comparisons"].read_text())
    assert comparisons["conclip_ccneg"] == float(table3[2]["ccneg"])
    for what in ("sugarcrepe", "classification"):  # paired intervals around the tables' differences
        low, high = (comparisons[f"conclip_minus_clip_{what}_ci_{end}"] for end in ("low", "high"))
        assert low - 0.01 <= comparisons[f"conclip_minus_clip_{what}"] <= high + 0.01 and low <= high
    mining = read("distractors")
    assert all(0 <= float(r["eq4_precision"]) <= 100 and 0 < float(r["eq4_chance"]) < 100 for r in mining)
    assert json.loads(paths["context"].read_text())["test"] is True


class _Embeddings:
    def __init__(self, vectors):
        self.vectors = vectors

    def images(self, images):
        return np.array([self.vectors[str(p)] for p in images])

    def texts(self, texts):
        return np.array([self.vectors[t] for t in texts])


class _Engine:
    """Features on two axes (red circle, blue square): an image's vector says which of the two it shows."""

    def __init__(self, vectors):
        self.vectors = vectors

    def embed(self, owners, texts):
        list(owners)
        return _Embeddings(self.vectors)


def test_eq4_mining_is_checked_against_the_scene_graphs():
    pool = t.MiningPool(images=(Path("a"), Path("b"), Path("c")),
                        subjects=("a red circle", "a red circle", "a red circle"),
                        objects=("a blue square", "a blue square", "a blue square"),
                        contents=(frozenset({"red circle", "blue square"}), frozenset({"red circle"}),
                                  frozenset({"blue square"})))
    vectors = {"a": [1.0, 1.0], "b": [1.0, 0.0], "c": [0.0, 1.0], "a red circle": [1.0, 0.0],
               "a blue square": [0.0, 1.0]}
    mined = t.mine(_Engine(vectors), pool)
    assert mined.picks == (1, 0, 1)  # b (circle, no square) for a and c; b itself must take another image
    assert mined.correct == (True, False, True) and mined.precision == pytest.approx(2 / 3)
    assert mined.chance == pytest.approx((1 / 2 + 0 / 2 + 1 / 2) / 3)
