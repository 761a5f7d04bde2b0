"""SugarCrepe Table 5 (mini): the fine-tuning set (``negclip_sets_mini``, ``negclip_rows``), the loss wiring of
CLIP-FT vs NegCLIP (``negclip_train``, ``losses``), and a tiny end-to-end run through the tables
(``negclip_tables --profile mini``).

The rule-based negatives come from a stand-in with ``common.miniworld.templates.template_negative``'s signature, so
these tests pin this module's logic whatever the real generator emits.
"""
from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import numpy as np
import pytest
import torch

from common.files.tasks import DatasetError
from common.miniworld.claims import Claim
from common.miniworld.negatives import replace_obj
from common.miniworld.render import NATURAL, render
from common.miniworld.scene import Scene, sample_scene
from common.training import ClipLoss, FromScratch
from common.training.checkpoint import portable_state, save_weights
from common.training.job import run_job
from common.zoo.trained import tokenizer_for
from papers.sugarcrepe import negclip_rows as rm, negclip_sets_mini as sm, negclip_tables as nt, negclip_train as tm
from papers.sugarcrepe.losses import TextNegativeClipLoss
from papers.sugarcrepe.runs import KINDS, RUNS
from training_support import B_, E1, E2, A, S, ce, dot, mean, mini_section, t

ARCH = "mini-vit-xs"


def stand_in_negative(scene: Scene, claim: Claim, kind: str, rng: random.Random) -> str | None:
    """replace: another shape (false for the scene); swap: two words exchanged; negate: 'There is no <shape>.'"""
    text = claim.text()
    if kind == "replace":
        edited = replace_obj(scene, claim, rng)
        return None if edited is None else edited.text()
    if kind == "swap":
        words = text[:-1].split()
        if len(set(words)) < 3:
            return None
        i, j = rng.sample(range(len(words)), 2)
        words[i], words[j] = words[j], words[i]
        swapped = " ".join(words) + "."
        return None if swapped == text else swapped
    if kind == "negate":
        return f"{text} There is no {claim.phrases[0].shape}."
    raise ValueError(kind)


@pytest.fixture(scope="module")
def tokenize():
    return tokenizer_for(ARCH)


@pytest.fixture(scope="module")
def tiny_set(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("negclip_set")
    sm.build_set(sm.SetConfig(train_images=16, captions_per_image=2), out, stand_in_negative, sm.RefineConfig(folds=3))
    return out


def test_set_is_deterministic_and_every_caption_has_each_kind(tiny_set, tmp_path):
    again = tmp_path / "again"
    sm.build_set(sm.SetConfig(train_images=16, captions_per_image=2), again, stand_in_negative,
                 sm.RefineConfig(folds=3))
    for name in ("images.npy", "captions.json", "negatives.json", "refined.json", "manifest.json"):
        assert (again / name).read_bytes() == (tiny_set / name).read_bytes(), name
    data = rm.FinetuneSet.load(tiny_set)
    assert data.images.shape == (16, 48, 48, 3) and data.images.dtype == np.uint8
    assert data.kinds() == ("replace", "swap", "negate")
    for caps, negs in zip(data.captions, data.negatives):
        assert len(caps) == len(negs) == 2
        for caption, per_kind in zip(caps, negs):
            assert set(per_kind) == set(KINDS)
            assert all(n != caption for n in per_kind.values())
    manifest = json.loads((tiny_set / "manifest.json").read_text())
    assert manifest["stream"] == "sugarcrepe-finetune-train" and manifest["counts"]["images"] == 16


def test_set_keeps_only_captions_every_kind_applies_to(tmp_path):
    """A kind that never applies to 'relation' sentences: no kept caption is one, and the rejections are counted."""
    def no_swap_of_relations(scene, claim, kind, rng):
        if kind == "swap" and claim.relations:
            return None
        return stand_in_negative(scene, claim, kind, rng)

    data, counts = sm.render_set(sm.SetConfig(train_images=10, captions_per_image=2), no_swap_of_relations)
    assert counts["claims_rejected_by_kind"]["swap"] > 0
    assert not any(w in c for caps in data.captions for c in caps for w in (" left of ", " above ", " below "))


def test_bad_negatives_file_names_the_record(tiny_set, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    for name in ("images.npy", "captions.json"):
        (broken / name).write_bytes((tiny_set / name).read_bytes())
    negatives = json.loads((tiny_set / "negatives.json").read_text())
    del negatives[3][1]["swap"]
    (broken / "negatives.json").write_text(json.dumps(negatives))
    with pytest.raises(DatasetError, match=r"negatives.json: record 3: caption 1"):
        rm.FinetuneSet.load(broken)


def test_clip_ft_and_negclip_draw_the_same_captions(tiny_set, tokenize):
    data = rm.FinetuneSet.load(tiny_set)
    plain = tm.batches_for(data, None, tokenize)
    hard = tm.batches_for(data, "swap", tokenize)
    for step in range(9):  # crosses epochs (16 images, batches of 4: 4 steps per epoch)
        a, b = plain.batch(0, step, 4), hard.batch(0, step, 4)
        assert a["texts"].shape[1] == 1 and b["texts"].shape[1] == 2
        assert torch.equal(a["images"], b["images"]) and torch.equal(a["texts"][:, 0], b["texts"][:, 0])
        idx, pick = hard.draws(0, step, 4)
        expected = tokenize([data.negatives[i][j]["swap"] for i, j in zip(idx, pick)])
        assert torch.equal(b["texts"][:, 1], expected)
    assert not torch.equal(plain.batch(0, 0, 4)["texts"], plain.batch(1, 0, 4)["texts"])  # the seed matters


def test_a_negative_identical_to_its_caption_in_tokens_is_refused(tiny_set, tokenize):
    data = rm.FinetuneSet.load(tiny_set)
    data.negatives[2][0]["negate"] = data.captions[2][0]
    with pytest.raises(DatasetError, match="image 2: caption 0"):
        tm.batches_for(data, "negate", tokenize)


def test_text_negative_loss_by_hand():
    """B = 2 images against texts [c_1, c_2, n_1, n_2]: the negatives join the image->text softmax only."""
    images, texts = [E1, E2], [A, B_, [0.0, -1.0], [-0.6, 0.8]]
    i2t = mean(ce([S * dot(images[m], x) for x in texts], m) for m in range(2))  # 2 x 4
    t2i = mean(ce([S * dot(texts[m], i) for i in images], m) for m in range(2))  # 2 x 2
    got = TextNegativeClipLoss()(t(images), t(texts), S)["contrastive_loss"].item()
    assert got == pytest.approx((i2t + t2i) / 2, abs=1e-12)
    assert got > ClipLoss()(t(images), t(texts[:2]), S)["contrastive_loss"].item()


@pytest.mark.parametrize("run, n_texts", [("clip-ft", 1), ("negclip-negate", 2)])
def test_negatives_reach_the_loss_only_in_negclip_runs(tiny_set, tokenize, tmp_path, monkeypatch, run, n_texts):
    seen = []
    for cls in (ClipLoss, TextNegativeClipLoss):
        original = cls.forward

        def spy(self, image_features, text_features, logit_scale, batch=None, _original=original):
            seen.append((type(self).__name__, tuple(image_features.shape), tuple(text_features.shape)))
            return _original(self, image_features, text_features, logit_scale, batch)

        monkeypatch.setattr(cls, "forward", spy)
    job = tm.mini_job(run, rm.FinetuneSet.load(tiny_set), mini_section(), init=FromScratch(ARCH), tokenize=tokenize)
    result = run_job(job, tmp_path / f"{run}.safetensors")
    expected = "ClipLoss" if run == "clip-ft" else "TextNegativeClipLoss"
    assert [s[0] for s in seen] == [expected, expected]
    assert all(s[1][0] == 4 and s[2][0] == 4 * n_texts for s in seen)
    assert result.record["loss"]["name"] == expected and result.record["run"] == run
    assert result.record["hard_negative"] == RUNS[run].hard_negative and result.record["refined"] is False


def _write_benchmark(root: Path, categories: dict[str, list[tuple[str, str]]], image_names: list[str],
                     **info) -> Path:
    data = root / "data"
    data.mkdir(parents=True)
    for category, pairs in categories.items():
        records = {str(i): {"filename": image_names[i % len(image_names)], "caption": c, "negative_caption": n}
                   for i, (c, n) in enumerate(pairs)}
        (data / f"{category}.json").write_text(json.dumps(records))
    manifest = root / "manifest.json"
    manifest.write_text(json.dumps({"data_dir": "data", "image_root": "../images", "categories": list(categories),
                                    **info}))
    return manifest


@pytest.fixture(scope="module")
def tiny_benchmarks(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("benchmarks")
    (root / "images").mkdir()
    rng = random.Random(0)
    names = []
    for i in range(3):
        names.append(f"img_{i}.png")
        render(sample_scene(rng), 48, NATURAL, seed=i).save(root / "images" / names[-1])
    pair = [("A red circle left of a blue square.", "A blue circle left of a red square."),
            ("A small star.", "A large star."), ("There is a green heart.", "There is no green heart.")]
    sugar = _write_benchmark(root / "sugarcrepe", {c: pair[: 1 + i % 3] for i, c in enumerate(
        ("replace_obj", "replace_att", "replace_rel", "swap_obj", "swap_att", "add_obj", "add_att"))}, names)
    templates = _write_benchmark(root / "templates", {k: pair for k in ("replace", "swap", "negate", "shuffle")}, names,
                                 kind="sugarcrepe-templates")
    return sugar, templates.parent


def test_tiny_end_to_end_writes_table5(tiny_set, tiny_benchmarks, tokenize, tmp_path):
    from common.evaluation.engine import EngineConfig

    params = mini_section(steps=3)
    models = tmp_path / "models"
    base = FromScratch(ARCH)
    torch.manual_seed(0)
    save_weights(models / "base.safetensors", portable_state(base.build().model))
    data = rm.FinetuneSet.load(tiny_set)
    for run in RUNS:  # the refined runs on the whole tiny set too: refinement has its own test
        run_job(tm.mini_job(run, data, params, init=base, tokenize=tokenize), models / f"{run}.safetensors")
    entries = [nt.ModelEntry("base", "pretrained", checkpoint=models / "base.safetensors", arch=ARCH),
               *nt.model_entries(nt.PROFILES["mini"], "unused", ARCH, models)[1:]]
    sugar, templates = tiny_benchmarks
    config = EngineConfig(progress=False)
    out = tmp_path / "results"
    refined = {"replace": {"n_in": 32, "n_kept": 10}, "swap": {"n_in": 32, "n_kept": 6}}
    mini = nt.PROFILES["mini"]
    paths = nt.evaluate_tables(mini, entries, sugar, templates, out, config, context={"test": True}, refined=refined)
    first = {name: p.read_bytes() for name, p in paths.items()}
    nt.evaluate_tables(mini, entries, sugar, templates, out, config, context={"test": True}, refined=refined)
    assert {name: p.read_bytes() for name, p in paths.items()} == first  # deterministic bytes, PNG included

    with open(paths["table5"], newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["model"] for r in rows] == ["base", *(f"sugarcrepe/mini-{r}" for r in (
        "clip-ft", "negclip-replace", "negclip-swap", "negclip-negate"))]
    assert [r["hard_negative"] for r in rows] == ["N/A", "N/A", "replace", "swap", "negate"]
    clip_ft = rows[1]
    for r in rows:
        for c in nt.COLUMNS:
            assert 0 <= float(r[c]) <= 100
            assert float(r[f"gain_{c}"]) == pytest.approx(float(r[c]) - float(clip_ft[c]), abs=0.011)
    assert all(float(clip_ft[f"gain_{c}"]) == 0 for c in nt.COLUMNS)
    metrics = json.loads(paths["metrics5"].read_text())
    assert len(metrics) <= 8 and all(isinstance(v, float) for v in metrics.values())
    with open(paths["table10"], newline="") as fh:
        rows10 = list(csv.DictReader(fh))
    assert [(r["hard_negative"], r["negatives"], r["negatives_kept"]) for r in rows10] == [
        ("N/A", "N/A", ""), ("replace", "template", "all"), ("swap", "template", "all"), ("negate", "template", "all"),
        ("replace", "refined", "10/32"), ("swap", "refined", "6/32")]
    assert set(json.loads(paths["metrics10"].read_text())) == {
        "gain_sugarcrepe_template", "gain_sugarcrepe_refined", "gain_template_matching_template",
        "gain_template_matching_refined"}
    context = json.loads(paths["context"].read_text())
    assert context["n"]["sugarcrepe"]["replace_rel"] == 3 and context["n"]["aro_crepe"]["shuffle"] == 3
    assert paths["figure5"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_sugarcrepe_columns_pool_their_categories():
    """Micro average: 3 of 4 replace_obj right and 0 of 1 replace_att right is 60%, not the macro 37.5%."""
    from common.evaluation.scoring.selection import GroupScore, SelectionResult

    class Result(SelectionResult):
        def by_group(self):
            return {"replace_obj": GroupScore(4, 3, 0), "replace_att": GroupScore(1, 0, 0),
                    "replace_rel": GroupScore(0, 0, 0)}

    got = nt.grouped_accuracy(Result("m", "f", "t"), {"replace": ("replace_obj", "replace_att", "replace_rel")}, "x")
    assert got == {"replace": 60.0}
    with pytest.raises(DatasetError, match="no examples of \\['swap_obj'\\]"):
        nt.grouped_accuracy(Result("m", "f", "t"), {"swap": ("swap_obj",)}, "x")


def test_summary_of_hand_made_rows():
    def row(training, kind, template_gain, sugar_gain):
        cells = {c: 50.0 for c in nt.COLUMNS}
        gains = {f"gain_{c}": (template_gain.get(c, 0.0) if c.startswith("aro") else sugar_gain.get(c, 0.0))
                 for c in nt.COLUMNS}
        return {"model": kind, "training": training, "hard_negative": kind, "negatives": "template", **cells, **gains}

    rows = [row("clip-ft", "N/A", {}, {})]
    rows += [row("negclip", k, {f"aro_crepe_{k}": 30.0, "aro_crepe_shuffle": 6.0},
                 {f"sugarcrepe_{nt.MATCHING_SUGARCREPE[k]}": 3.0}) for k in KINDS]
    got = nt.summary(rows)
    assert got["gain_template_matching"] == 30.0 and got["gain_sugarcrepe_matching"] == 3.0
    assert got["gain_template_all"] == pytest.approx((30 + 6) / 4) and got["gain_sugarcrepe_all"] == 1.0
    assert got["max_gain_template"] == 30.0 and got["clip_ft_template_mean"] == 50.0


def test_refinement_balances_both_blind_scorers_and_refined_runs_train_on_what_it_keeps(tiny_set):
    """On the kept pairs each cross-fitted scorer's gap is positive as often as negative (Algorithm 1), so its
    accuracy (positive strictly above) is at most one half; a refined run's data holds exactly the kept rows."""
    refined = json.loads((tiny_set / "refined.json").read_text())["kinds"]
    data = rm.FinetuneSet.load(tiny_set)
    for kind, info in refined.items():
        assert info["n_in"] == 32 and info["n_kept"] == len(info["kept"]) <= 32
        for accuracy in info["blind_accuracy_after"].values():
            assert accuracy is None or accuracy <= 0.5
    assert refined["negate"]["blind_accuracy_before"]["text-classifier"] > 0.9  # "There is no" is a give-away
    rows = refined["swap"]["kept"]
    if rows:
        subset = rm.run_data("negclip-refined-swap", tiny_set)
        kept = {(data.captions[i][j], data.negatives[i][j]["swap"]) for i, j in rows}
        got = {(c, n["swap"]) for caps, negs in zip(subset.captions, subset.negatives) for c, n in zip(caps, negs)}
        assert got == kept and len(subset.images) == len({i for i, _ in rows})


def test_subset_pads_each_image_with_its_kept_captions_and_refuses_nothing(tiny_set):
    data = rm.FinetuneSet.load(tiny_set)
    sub = data.subset([(5, 1), (2, 0), (2, 1)])
    assert np.array_equal(sub.images, data.images[[2, 5]])
    assert sub.captions == [data.captions[2], [data.captions[5][1]] * 2]
    with pytest.raises(rm.NegclipSetError, match="empty"):
        data.subset([])


def test_a_refined_run_with_nothing_kept_refuses_to_start(tiny_set, tmp_path):
    broken = tmp_path / "set"
    broken.mkdir()
    for name in ("images.npy", "captions.json", "negatives.json"):
        (broken / name).write_bytes((tiny_set / name).read_bytes())
    refined = json.loads((tiny_set / "refined.json").read_text())
    refined["kinds"]["swap"]["kept"] = []
    (broken / "refined.json").write_text(json.dumps(refined))
    with pytest.raises(rm.NegclipSetError, match="refinement kept no swap negative"):
        rm.run_data("negclip-refined-swap", broken)


# ---- the runs as jobs: what the trainer receives is what the old entry point gave it ----------------------------
CPU_PROFILE = {"cpu_profile": "stand-in", "threads": 1}
"""Stands in for ``common.pipeline.reproducible.describe()``, which the launcher passes to the builder on the CPU."""


def _set_with_refinement(tiny_set: Path, tmp_path: Path) -> Path:
    """The tiny set with a ``refined.json`` that keeps 5 rows over 4 images of every kind (enough for a batch of 4)."""
    out = tmp_path / "set"
    out.mkdir()
    for name in ("images.npy", "captions.json", "negatives.json", "manifest.json"):
        (out / name).write_bytes((tiny_set / name).read_bytes())
    kept = [[0, 1], [3, 0], [5, 1], [7, 0], [7, 1]]
    (out / "refined.json").write_text(json.dumps({"kinds": {k: {"n_in": 32, "n_kept": 5, "kept": kept}
                                                             for k in ("replace", "swap", "negate")}}))
    return out


@pytest.mark.parametrize("run", sorted(RUNS))
def test_each_run_is_the_job_the_old_entry_point_trained(tiny_set, tmp_path, monkeypatch, run):
    """The expected values are the old ``negclip_mini._cmd_run`` / ``train_run``'s, written out: the section's
    trainer config, ``FromZoo(base)``, the batch source named per kind, ``ClipLoss`` or ``TextNegativeClipLoss``,
    checkpoints every 50 steps with resume, no validation, and the sidecar's provenance: run, hard_negative,
    refined, the set manifest's sha256, then the CPU profile, in that order (the sidecar keeps it)."""
    import argparse
    import hashlib
    from dataclasses import asdict

    import common.pipeline.params

    section = {"base": "mini/xs-32k", "steps": 3, "batch_size": 4, "lr": 1e-3, "warmup_steps": 1,
               "weight_decay": 0.1, "seed": 0, "checkpoint_every": 50}
    stages = []
    monkeypatch.setattr(common.pipeline.params, "stage_params", lambda stage, **_: stages.append(stage) or
                        {"sugarcrepe": {"negclip_mini": section}})
    monkeypatch.setenv("DVC_STAGE", f"papers/sugarcrepe/dvc.yaml:negclip-mini@{run}")  # as `dvc repro` sets it
    set_dir = _set_with_refinement(tiny_set, tmp_path)
    job = tm.build_mini(argparse.Namespace(run=run, set=str(set_dir)), None, CPU_PROFILE)

    kind = {"clip-ft": None, "negclip-replace": "replace", "negclip-swap": "swap", "negclip-negate": "negate",
            "negclip-refined-replace": "replace", "negclip-refined-swap": "swap"}[run]
    refined = run.startswith("negclip-refined-")
    assert stages == [f"papers/sugarcrepe/dvc.yaml:negclip-mini@{run}"]
    assert asdict(job.config) == {"steps": 3, "batch_size": 4, "lr": 0.001, "weight_decay": 0.1, "warmup_steps": 1,
                                  "accum": 1, "seed": 0, "precision": "fp32", "checkpoint_every": 50,
                                  "validate_every": 0, "freeze": (), "recipe": None}
    assert job.init.describe() == {"kind": "zoo", "name": "mini/xs-32k", "arch": "mini-vit-xs",
                                   "weights": "build:mini/models/xs-32k.safetensors"}
    assert job.batches.describe() == {
        "name": "sugarcrepe-mini-clip-ft" if kind is None else f"sugarcrepe-mini-negclip-{kind}",
        "n_images": 4 if refined else 16, "captions_per_image": 2, "negatives": kind is not None}
    assert job.loss is (ClipLoss if kind is None else TextNegativeClipLoss)
    assert job.loss().describe() == {"name": "ClipLoss" if kind is None else "TextNegativeClipLoss"}
    sha = hashlib.sha256((set_dir / "manifest.json").read_bytes()).hexdigest()
    assert list(job.provenance.items()) == [("run", run), ("hard_negative", kind), ("refined", refined),
                                            ("set_manifest_sha256", sha), *CPU_PROFILE.items()]
    assert (job.config.checkpoint_every, job.resume, job.validate) == (50, True, None)
    assert (job.name, job.module) == (f"sugarcrepe-mini-{run}", "papers.sugarcrepe.negclip_train")


def test_the_training_module_imports_no_table_set_or_blind_code():
    """A module boundary is a rerun boundary: the runs' stage must not rerun when the tables, the set's rendering or
    the blind scorers change (``common.training.job`` keys the resume state by the same closure)."""
    from common.pipeline.import_closure import closure
    from common.training.job import code_files

    assert tm.MODULE == tm.__name__
    files = set(closure([tm.MODULE]).files)
    assert files == set(code_files(tm.MODULE))
    assert not [f for f in files if f.startswith("common/blind/") or "tables" in f or "sets" in f
                or f.startswith(("common/evaluation/engine", "common/evaluation/scoring/", "common/miniworld/"))], sorted(files)


def test_run_entry_trains_and_logs(tiny_set, tmp_path, monkeypatch):
    """``python -m papers.sugarcrepe.negclip_train mini run <run>``: weights and sidecar where ``--out`` says, the
    wall-time log under ``build/mini/sugarcrepe_negclip/logs/`` (its old place)."""
    import common.pipeline.params
    import common.pipeline.reproducible
    from common.paths import build_dir

    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.setattr(common.pipeline.reproducible, "reexec_pinned", lambda: None)
    section = mini_section(steps=9)
    monkeypatch.setattr(common.pipeline.params, "stage_params", lambda stage, **_: {"sugarcrepe": {"negclip_mini": section}})
    monkeypatch.setenv("DVC_STAGE", "papers/sugarcrepe/dvc.yaml:negclip-mini@negclip-swap")  # as `dvc repro` sets it
    monkeypatch.setattr(tm, "FromZoo", lambda name: FromScratch(ARCH))
    out = tmp_path / "negclip-swap.safetensors"
    assert tm.main(["mini", "run", "negclip-swap", "--set", str(tiny_set), "--out", str(out), "--steps", "2"]) == 0
    record = json.loads(out.with_suffix(".json").read_text())
    assert record["run"] == "negclip-swap" and record["hard_negative"] == "swap" and record["trainer"]["steps"] == 2
    assert record["loss"] == {"name": "TextNegativeClipLoss"} and "set_manifest_sha256" in record
    log = json.loads((build_dir("mini", "sugarcrepe_negclip") / "logs" / "negclip-swap.json").read_text())
    assert log["run"] == "sugarcrepe-mini-negclip-swap" and log["world_size"] == 1
