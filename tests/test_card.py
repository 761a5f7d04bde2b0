"""The report card (``python -m common card``) on tiny mini-profile sets built by each paper's own builders and a
random-weight model saved to a file the test writes (``ARCH:FILE``): every number equals what that paper's pipeline
code computes for the same model on the same set; bad input is one line and writes nothing; several models get
paired differences; the CLI writes the four files per model."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from common.card import core
from common.card.core import CardError, Measure
from common.card.models import resolve
from common.evaluation.engine import Engine, EngineConfig

ARCH = "mini-vit-xs"


# ---- the statistics ---------------------------------------------------------------------------------------------
def _measure(correct, strata=None, ids=None, key="x/y") -> Measure:
    n = len(correct)
    return Measure(key, "B", "m", "rule", tuple(ids or (str(i) for i in range(n))), np.array(correct, float),
                   strata=strata)


def test_macro_is_the_unweighted_mean_of_the_strata_and_its_resamples_keep_them():
    m = _measure([1, 1, 1, 0, 0, 1], strata=("a", "a", "a", "a", "b", "b"))
    assert m.value() == pytest.approx(100 * (0.75 + 0.5) / 2)
    assert _measure([1, 1, 1, 0, 0, 1]).value() == pytest.approx(100 * 4 / 6)
    indices = core.resample_indices(m, n_resamples=50)
    assert indices.shape == (50, 6)
    assert set(indices[:, :4].ravel()) <= {0, 1, 2, 3} and set(indices[:, 4:].ravel()) <= {4, 5}
    e = core.estimate(m)
    assert e.low <= e.value <= e.high and e.low < e.high


def test_a_constant_sample_has_a_point_interval_and_a_model_against_itself_differs_by_nothing():
    e = core.estimate(_measure([1, 1, 1, 1]))
    assert (e.value, e.low, e.high) == (100.0, 100.0, 100.0)
    m = _measure([1, 0, 1, 0, 1, 1, 0])
    d = core.paired_difference(m, m)
    assert (d.value, d.low, d.high) == (0.0, 0.0, 0.0) and not (d.low > 0 or d.high < 0)


def test_a_paired_difference_pairs_examples_and_shows_a_clear_gain():
    better = _measure([1] * 90 + [0] * 10)
    worse = _measure([1] * 50 + [0] * 50)
    d = core.paired_difference(better, worse)
    assert d.value == pytest.approx(40.0) and d.low > 25
    with pytest.raises(CardError, match="same examples"):
        core.paired_difference(better, _measure([1] * 100, ids=[f"other{i}" for i in range(100)]))


def test_a_measure_refuses_outcomes_that_do_not_fit_its_examples():
    with pytest.raises(CardError, match="3 examples"):
        Measure("k", "B", "m", "r", ("a", "b", "c"), np.array([1.0, 0.0]))


def test_the_trend_residual_is_the_distance_from_the_least_squares_line():
    from common.card.trend import residual

    points = [("a", 10.0, 20.0), ("b", 20.0, 30.0), ("c", 30.0, 41.0), ("d", 40.0, 49.0)]
    slope, intercept = np.polyfit([10, 20, 30, 40], [20, 30, 41, 49], 1)
    r = residual(points, (25.0, 24.0, 26.0), (50.0, 48.0, 52.0), "new", "refs")
    assert r.expected == pytest.approx(intercept + slope * 25.0)
    assert r.value == pytest.approx(50.0 - r.expected) and r.low < r.value < r.high and not r.in_fit
    assert residual(points[:2], (25.0, 24.0, 26.0), (50.0, 48.0, 52.0), "a", "refs").low is None


# ---- SPECs ------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    """A random mini-vit-xs saved as safetensors: the "local checkpoint" a researcher would card."""
    from common.training.checkpoint import portable_state, save_weights
    from common.zoo import random_model

    path = tmp_path_factory.mktemp("card_model") / "my-model.safetensors"
    save_weights(path, portable_state(random_model(ARCH, seed=3).model))
    return path


def test_specs_resolve_to_zoo_entries_pretrained_tags_and_checkpoints(checkpoint):
    assert resolve("mini/xs-32k").kind == "zoo"
    tagged = resolve("ViT-B-32:laion2b_s34b_b79k")
    assert (tagged.kind, tagged.spec.arch, tagged.spec.pretrained) == ("open_clip", "ViT-B-32", "laion2b_s34b_b79k")
    local = resolve(f"{ARCH}:{checkpoint}")
    assert local.kind == "checkpoint" and local.file_stem.endswith("my-model.safetensors")
    assert local.provenance()["checkpoint_sha256"]


@pytest.mark.parametrize("spec, message", [
    ("mini/xs-32", r"unknown model 'mini/xs-32'.*close matches: zoo: mini/xs-32k"),
    ("ViT-B-32:no_such_tag", r"no pretrained tag 'no_such_tag' for 'ViT-B-32'"),
    ("mini-vit-xs:/no/such/file.pt", r"checkpoint /no/such/file.pt not found"),
    ("no-such-arch:openai", r"unknown model 'no-such-arch:openai'"),
    ("  ", r"--model is empty"),
])
def test_a_bad_spec_is_one_line_naming_it(spec, message):
    with pytest.raises(CardError, match=message) as info:
        resolve(spec)
    assert "\n" not in str(info.value)


def test_a_model_without_a_text_tower_is_refused(tmp_path):
    transformers = pytest.importorskip("transformers")
    folder = tmp_path / "vit"
    transformers.ViTConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                           intermediate_size=37).save_pretrained(folder)
    with pytest.raises(CardError, match="no text tower"):
        resolve(f"hf:{folder}")


# ---- every benchmark, against its paper's code -----------------------------------------------------------------
def make_cards(specs, only=None, device="cpu", params=None, log=print, strict=False) -> list:
    """Every model's card (``iter_cards``), as a list."""
    from common.card.run import iter_cards  # deferred, as every other test here imports it

    return list(iter_cards(specs, only, device, params, log, strict))


@pytest.fixture(scope="module")
def mini_build(tmp_path_factory):
    """A build root with every paper's mini set, tiny, and the world's training captions for the blind scorer."""
    from common.card.blind import MINI_LM_IMAGES
    from common.miniworld.classification import ClassificationSetConfig, ensure_classification_set
    from common.pipeline.params import read_params
    from papers.aro.sets_mini import MiniAroConfig, build_mini_set as build_aro
    from papers.bivlc import sets_mini as bivlc_sets
    from papers.conclip import sets_mini as conclip_sets
    from papers.hard_positives.sets_mini import TestSetConfig, build_test_set
    from papers.sugarcrepe.sets_mini import MiniSetConfig, build_mini_set

    root = tmp_path_factory.mktemp("card_build")
    mini = root / "mini"
    build_mini_set(MiniSetConfig(examples_per_category=5, seed=0), mini / "sugarcrepe", progress=False)
    build_aro(MiniAroConfig(vg_relation_cases=40, vg_attribution_cases=28 * 25, test_images=10, captions_per_image=3,
                            classification_images=28, image_size=48, seed=0), mini / "aro" / "benchmarks")
    build_test_set(TestSetConfig(examples_per_group=8), mini / "hard_positives" / "test")
    conclip_sets.build_test_set(conclip_sets.TestSetConfig(examples_per_cell=2, classification_images=56),
                                mini / "conclip" / "test")
    bivlc_sets.build_test_set(bivlc_sets.TestSetConfig(instances_per_category=3, seed=0), mini / "bivlc" / "test")
    params = read_params()  # Figure 5's set, as the card builds it when absent (here: once, for every test)
    ensure_classification_set(ClassificationSetConfig(int(params["sugarcrepe"]["figure5"]["classification_images"]),
                                                      int(params["mini"]["world"]["image_size"]),
                                                      int(params["mini"]["world"]["seed"])), mini / "classification")
    captions = ["a red circle above a blue square", "a green star left of a yellow circle", "a small blue square"]
    train = mini / "world" / "train"
    train.mkdir(parents=True)
    (train / "captions.json").write_text(json.dumps([[captions[i % len(captions)], "a small red circle"]
                                                     for i in range(MINI_LM_IMAGES)]))
    return root


@pytest.fixture(scope="module")
def carded(mini_build, checkpoint):
    from common.pipeline.params import read_params

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VLC_BUILD", str(mini_build))
        params = {**read_params(), "profile": "mini"}
        card = make_cards([f"{ARCH}:{checkpoint}"], params=params, log=lambda line: None)[0]
        yield card, {m.key: card.estimates[m.key].value for m in card.measures}


@pytest.fixture(scope="module")
def engine(checkpoint):
    from common.card.models import build

    return Engine(build(resolve(f"{ARCH}:{checkpoint}")), EngineConfig(progress=False))


def test_the_card_scores_every_benchmark_of_the_five_papers(carded):
    card, values = carded
    assert card.missing == []
    assert {m.key.split("/")[0] for m in card.measures} == {"aro", "bivlc", "conclip", "hard_positives", "sugarcrepe"}
    for m in card.measures:
        e = card.estimates[m.key]
        assert e.low <= e.value <= e.high and m.n > 0 and m.rule


def test_sugarcrepe_numbers_are_table6s(carded, engine, mini_build, tmp_path):
    from common.benchmarks.caption_negatives import CATEGORIES, PreparedSet
    from common.evaluation.results import ModelRow, write_accuracy_table
    from common.evaluation.scoring import selection

    _, values = carded
    items = PreparedSet.load(mini_build / "mini" / "sugarcrepe" / "manifest.json").items()
    result = selection.evaluate(engine, items, selection.STRICT)
    paths = write_accuracy_table(tmp_path, "table6", [(ModelRow("m", "f", "l", "", ""), result)], CATEGORIES, {})
    row = next(csv.DictReader(open(paths["table"])))
    for c in CATEGORIES:
        assert values[f"sugarcrepe/{c}"] == pytest.approx(float(row[c]), abs=0.005)
    assert values["sugarcrepe/average"] == pytest.approx(float(row["average"]), abs=0.01)


def test_aro_numbers_are_the_tables(carded, engine, mini_build, tmp_path):
    from common.pipeline.params import read_params
    from papers.aro import tables
    from papers.aro.data import AroSet

    _, values = carded
    seeds = [int(s) for s in read_params()["aro"]["seeds"]]
    aro = AroSet.load(mini_build / "mini" / "aro" / "benchmarks")
    variants = {name: tables.text_variants(d, seeds) for name, d in aro.retrieval_sets().items()}
    scores = tables.score_model("mini/xs-32k", aro, variants, engine, tmp_path / "predictions")  # a label only
    relation = tables.vg_summaries(scores.vg_relation, "relation")["table2"]
    attribution = tables.vg_summaries(scores.vg_attribution, "attribution")["attribution"]
    assert values["aro/vg_relation"] == pytest.approx(100 * relation.accuracy)
    assert values["aro/vg_relation_micro"] == pytest.approx(100 * relation.n_correct / relation.n_cases)
    assert values["aro/vg_attribution"] == pytest.approx(100 * attribution.accuracy)  # 25 cases per pair: all kept
    for name, accuracies in scores.order.items():
        assert values[f"aro/order_{name}"] == pytest.approx(100 * float(np.mean(accuracies)))


def test_hard_positive_numbers_are_table1s(carded, checkpoint, mini_build):
    from papers.hard_positives import tables
    from papers.hard_positives.sets_mini import load_test_items

    _, values = carded
    entry = tables.ModelEntry("base", "base", None, checkpoint)
    items = load_test_items(mini_build / "mini" / "hard_positives" / "test")
    row = tables.model_rows(tables.score_runs([entry], ARCH, items, EngineConfig(progress=False)))[0]
    for column in ("replace", "swap"):
        for metric in ("orig", "aug", "brittleness"):
            assert values[f"hard_positives/{column}_{metric}"] == pytest.approx(row[f"{column}_{metric}"])


def test_ccneg_numbers_are_conclips_tables(carded, engine, mini_build):
    from common.evaluation.scoring import selection
    from papers.conclip import tables
    from papers.conclip.benchmark_mini import load_test_items

    _, values = carded
    items = load_test_items(mini_build / "mini" / "conclip" / "test")
    result = selection.evaluate(engine, items, selection.ARGMAX)
    scored = tables.Scored(tables.ModelEntry("clip", "m", "m"), result, tables.CONTRASTIVE)
    assert values["conclip/ccneg"] == pytest.approx(tables.ccneg_row(scored)["ccneg"], abs=0.005)
    rows = tables.word_k_rows(scored, tables.NegationSet.rendered(items))
    for word in {r["word"] for r in rows}:  # each word's cells have the same n: the word's accuracy is their mean
        assert values[f"conclip/ccneg/word-{word}"] == pytest.approx(
            float(np.mean([r["accuracy"] for r in rows if r["word"] == word])), abs=0.01)


def test_bivlc_numbers_are_table2s(carded, engine, mini_build):
    from common.evaluation.scoring import group
    from papers.bivlc import tables
    from papers.bivlc.sets_mini import load_test_items

    _, values = carded
    items, _ = load_test_items(mini_build / "mini" / "bivlc" / "test")
    result = group.evaluate(engine, items)
    row = tables.table2_row(tables.Scored("clip", "m", "m", result, _one_selection(), "", "pretrained"))
    for metric in ("I2T", "T2I", "group"):
        assert values[f"bivlc/{metric}"] == pytest.approx(row[metric], abs=0.005)


def _one_selection():
    from common.evaluation.scoring.selection import Outcome, SelectionResult

    return SelectionResult("m", "", "image_to_text", outcomes=[Outcome("x", "g", (1.0, 0.0), True, False)])


def test_the_blind_baseline_is_the_text_only_scorer_under_the_same_rule(carded):
    card, _ = carded
    blind = {m.key: m for m in card.measures if m.blind is not None}
    assert "sugarcrepe/replace_obj" in blind and "aro/order_coco" in blind
    assert "bivlc/T2I" not in blind and "sugarcrepe/recognition/imagenet-analog" not in blind
    assert card.blind["bivlc/I2T"].value == 0.0  # one caption wins for both images: never both right


def test_a_benchmark_without_data_is_listed_with_how_to_get_it(mini_build, checkpoint, tmp_path):
    import shutil

    from common.pipeline.params import read_params

    partial = tmp_path / "build"
    shutil.copytree(mini_build, partial)
    shutil.rmtree(partial / "mini" / "bivlc")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VLC_BUILD", str(partial))
        card = make_cards([f"{ARCH}:{checkpoint}"], only=["bivlc", "ccneg"],
                          params={**read_params(), "profile": "mini"}, log=lambda line: None)[0]
    assert [m["benchmark"] for m in card.missing] == ["bivlc"]
    assert "mini-test-set" in card.missing[0]["how"]
    assert {m.key.split("/")[0] for m in card.measures} == {"conclip"}


# ---- the command ------------------------------------------------------------------------------------------------
def test_the_command_writes_each_card_and_the_paired_comparison(mini_build, checkpoint, tmp_path, monkeypatch,
                                                                 capsys):
    from common.cli import main
    from common.training.checkpoint import portable_state, save_weights
    from common.zoo import random_model

    other = tmp_path / "other.safetensors"
    save_weights(other, portable_state(random_model(ARCH, seed=4).model))
    monkeypatch.setenv("VLC_BUILD", str(mini_build))
    monkeypatch.setenv("VLC_CPU_PROFILE", "off")
    out = tmp_path / "cards"
    assert main(["card", "--model", f"{ARCH}:{checkpoint}", "--model", f"{ARCH}:{other}", "--benchmark",
                 "hard_positives", "--out", str(out)]) == 0
    stems = [resolve(f"{ARCH}:{p}").file_stem for p in (checkpoint, other)]
    for stem in stems:
        assert {p.name for p in out.glob(f"{stem}.*")} == {f"{stem}.{s}" for s in ("json", "csv", "md", "png")}
    data = json.loads((out / f"{stems[0]}.json").read_text())
    assert data["provenance"]["model"]["checkpoint_sha256"] and data["provenance"]["commit"]
    assert all(n["rule"] and n["interval"].startswith("percentile bootstrap") for n in data["numbers"])
    comparison = list(csv.DictReader(open(out / "comparison.csv")))
    specs = [f"{ARCH}:{p}" for p in (checkpoint, other)]
    assert len(comparison) == 6 and {r["verdict"] for r in comparison} <= {
        f"{specs[0]} higher", f"{specs[1]} higher", "no difference shown (the interval holds 0)"}
    assert "| Hard positives | SWAP Aug. accuracy |" in capsys.readouterr().out


def test_a_checkpoint_of_another_architecture_is_one_line_and_writes_nothing(mini_build, checkpoint, tmp_path,
                                                                            monkeypatch, capsys):
    from common.cli import main

    monkeypatch.setenv("VLC_BUILD", str(mini_build))
    monkeypatch.setenv("VLC_CPU_PROFILE", "off")
    out = tmp_path / "cards"
    assert main(["card", "--model", f"mini-vit-s:{checkpoint}", "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) >= 1 and err[-1].startswith("error: ") and "another architecture" in err[-1]
    assert not out.exists() or not any(out.iterdir())


def test_the_notebook_draws_the_cards_side_by_side(mini_build, checkpoint, tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("nbclient")
    from common.card.report import write_cards
    from common.card.run import comparisons
    from common.pipeline.params import read_params
    from test_notebooks import _execute, _text

    notebook = Path(__file__).resolve().parents[1] / "notebooks" / "cards.ipynb"
    committed = nbformat.read(notebook, as_version=4)
    assert all(c.outputs == [] and c.execution_count is None for c in committed.cells if c.cell_type == "code")
    monkeypatch.setenv("VLC_BUILD", str(mini_build))
    cards = make_cards([f"{ARCH}:{checkpoint}"], only=["ccneg"], params={**read_params(), "profile": "mini"},
                       log=lambda line: None)
    write_cards(cards, comparisons(cards), tmp_path / "cards")
    nb = _execute(notebook, {"VLC_CARDS_DIR": str(tmp_path / "cards")}, monkeypatch)
    assert f"cards in {tmp_path / 'cards'}: {ARCH}:{checkpoint}" in _text(nb)
    assert any("image/png" in o.get("data", {}) for c in nb.cells for o in c.get("outputs", []))
    empty = _execute(notebook, {"VLC_CARDS_DIR": str(tmp_path / "none")}, monkeypatch)
    assert "create them with `python -m common card" in _text(empty)


def test_the_full_profile_scores_the_wired_benchmarks_and_lists_the_rest(mini_build, checkpoint, tmp_path):
    """The full profile's path on sets in the benchmarks' prepared format (the mini builders write the same files
    the full preparers do) with a real, tiny open_clip architecture."""
    import shutil

    from common.pipeline.params import read_params

    full = tmp_path / "build" / "full"
    shutil.copytree(mini_build / "mini" / "sugarcrepe", full / "sugarcrepe")
    shutil.copytree(mini_build / "mini" / "aro" / "benchmarks", full / "aro" / "benchmarks")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VLC_BUILD", str(tmp_path / "build"))
        card = make_cards([f"{ARCH}:{checkpoint}"], params={**read_params(), "profile": "full"},
                          log=lambda line: None)[0]
    assert card.profile == "full"
    assert {m.key.split("/")[0] for m in card.measures} == {"aro", "sugarcrepe"}
    left_out = {m["benchmark"]: m["why"] for m in card.missing}
    assert set(left_out) == {"recognition", "hard_positives", "ccneg", "bivlc"}
    assert all(left_out[b].startswith("missing: ") for b in ("hard_positives", "ccneg", "bivlc"))
    assert "ImageNet-1k" in left_out["recognition"]
    assert all(m.blind is None and "not computed in the full profile" in m.blind_note for m in card.measures)
    assert card.residuals == {}
    from common.card.report import as_json, markdown

    assert as_json(card)["note"] == "full profile: the papers' benchmarks"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VLC_BUILD", str(tmp_path / "build"))
        rehearsed = make_cards([f"{ARCH}:{checkpoint}"], only=["sugarcrepe"], log=lambda line: None,
                               params={**read_params(), "profile": "full",
                                       "full_inputs": {"cap": 4}})[0]
    assert as_json(rehearsed)["note"].startswith("a rehearsal: ") and "never the papers' numbers" in markdown(rehearsed)


def test_a_transformers_blip_folder_is_carded_by_its_contrastive_embeddings(mini_build, tmp_path):
    pytest.importorskip("transformers")
    from common.pipeline.params import read_params
    from hf_support import save_blip

    folder = save_blip(tmp_path)
    model = resolve(f"hf:{folder}")
    assert (model.kind, model.spec.arch, model.spec.backend) == ("transformers", "blip", "transformers")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VLC_BUILD", str(mini_build))
        card = make_cards([f"hf:{folder}"], only=["ccneg"], params={**read_params(), "profile": "mini"},
                          log=lambda line: None)[0]
    assert card.measures[0].key == "conclip/ccneg" and card.measures[0].n > 0


def test_a_sweep_under_torchrun_cards_each_rank_its_share(mini_build, checkpoint, tmp_path):
    import os
    import shutil
    import subprocess
    import sys

    from common.training.checkpoint import portable_state, save_weights
    from common.zoo import random_model

    other = tmp_path / "other.safetensors"
    save_weights(other, portable_state(random_model(ARCH, seed=5).model))
    specs = [f"{ARCH}:{checkpoint}", f"{ARCH}:{other}"]
    torchrun = shutil.which("torchrun", path=str(Path(sys.executable).parent)) or "torchrun"
    out = tmp_path / "sweep"
    done = subprocess.run([torchrun, "--standalone", "--nproc_per_node", "2", "-m", "common", "card",
                           *(a for s in specs for a in ("--model", s)), "--benchmark", "ccneg", "--out", str(out)],
                          cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "VLC_BUILD": str(mini_build), "VLC_CPU_PROFILE": "off"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "[rank 0] scoring" in done.stderr and "[rank 1] scoring" in done.stderr
    for spec in specs:
        assert (out / f"{resolve(spec).file_stem}.json").is_file()
    assert not (out / "comparison.json").exists()  # pairs need every model in one process


def test_the_full_profile_trend_is_the_200_checkpoint_tables_pretrained_rows(mirror):
    from common.card.core import Estimate
    from common.card.run import _trend_residuals
    from papers.sugarcrepe.card import trends

    (trend,) = trends("full")
    assert len(trend.points["sugarcrepe/swap_att"]) >= 150 and "openai/ViT-B-32" in trend.x_published
    assert all(not name.endswith("-ft") for name, _, _ in trend.points["sugarcrepe/swap_att"])
    estimates = {"sugarcrepe/swap_att": Estimate(70.0, 66.0, 74.0)}
    residuals = _trend_residuals(estimates, [trend], "openai/ViT-B-32")
    r = residuals["sugarcrepe/swap_att"]
    assert r.in_fit and r.low < r.value < r.high and r.n_references == len(trend.points["sugarcrepe/swap_att"])
    assert _trend_residuals(estimates, [trend], "mini-vit-xs:/some/file.safetensors") == {}


def test_figure5s_classification_set_is_built_when_absent(mini_build, checkpoint, tmp_path):
    """A fresh clone whose figure5 stage DVC skipped (its outputs are committed) has no classification set: the card
    builds it as Figure 5 does, and scores recognition."""
    import shutil

    from common.pipeline.params import read_params

    partial = tmp_path / "build"
    shutil.copytree(mini_build / "mini" / "world", partial / "mini" / "world")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VLC_BUILD", str(partial))
        card = make_cards([f"{ARCH}:{checkpoint}"], only=["recognition"], params={**read_params(), "profile": "mini"},
                          log=lambda line: None)[0]
    assert card.missing == [] and (partial / "mini" / "classification" / "manifest.json").is_file()
    assert [m.key for m in card.measures] == ["sugarcrepe/recognition/imagenet-analog",
                                              "sugarcrepe/recognition/shapes"]


def test_openai_weights_are_carded_at_the_authors_fp16_where_the_paper_loaded_them_so():
    """ARO, hard positives and CoN-CLIP load OpenAI's CLIP with clip.load (fp16 on CUDA); every other model, and
    every model of SugarCrepe and BiVLC, at the engine's precision."""
    from common.card.run import discover
    from common.zoo import get_spec

    by_key = {b.key: b for b in discover("full")[0]}
    openai, negclip = get_spec("openai/ViT-B-32"), get_spec("aro/negclip")
    for key in ("aro", "hard_positives", "ccneg"):
        precision, why = by_key[key].authors_precision(openai)
        assert precision == "fp16" and "clip.load" in why and "@" in why  # cites the authors' code
        assert by_key[key].authors_precision(negclip) is None
    assert by_key[key].authors_precision(resolve("ViT-B-32-quickgelu:openai").spec)[0] == "fp16"
    for key in ("sugarcrepe", "bivlc"):
        assert by_key[key].authors_precision(openai) is None


def test_the_card_scores_at_the_authors_precision_with_the_engine_s_beside(mini_build, checkpoint, tmp_path,
                                                                            monkeypatch):
    """On the full profile's path (ARO's prepared set), a model the paper scored at fp16: its numbers are fp16's
    (rule and precision say so), the engine's fp32 ones stand beside them under ``<key>@fp32``, the provenance names
    both, and two such cards pair fp16 with fp16."""
    import dataclasses
    import shutil

    from common.card import run
    from common.card.report import as_json, markdown, rows
    from common.pipeline.params import read_params

    full = tmp_path / "build" / "full"
    shutil.copytree(mini_build / "mini" / "aro" / "benchmarks", full / "aro" / "benchmarks")
    monkeypatch.setenv("VLC_BUILD", str(tmp_path / "build"))
    real = run.discover

    def discover(profile, only=None):
        benchmarks, trends = real(profile, only)
        return [dataclasses.replace(b, authors_precision=lambda spec: ("fp16", "the test's authors"))
                for b in benchmarks], trends

    monkeypatch.setattr(run, "discover", discover)
    cards = make_cards([f"{ARCH}:{checkpoint}"], only=["aro"], params={**read_params(), "profile": "full"},
                       log=lambda line: None)
    card = cards[0]
    keys = [m.key for m in card.measures]
    primary = [m for m in card.measures if "@" not in m.key]
    assert primary and all(m.precision == "fp16" and "scored at fp16 as the authors' code" in m.rule for m in primary)
    assert [k for k in keys if "@" in k] == [f"{m.key}@fp32" for m in primary]
    assert card.provenance["precision"]["authors"]["aro"].startswith("fp16 (the test's authors)")
    assert {r["precision"] for r in rows(card)} == {"fp16", "fp32"}
    assert "Precision: aro: the authors' fp16" in markdown(card) and as_json(card)["provenance"]["precision"]
    # fp16 scores are the fp32 ones rounded: the two precisions' numbers differ only by ties
    fp32 = {m.key.split("@")[0]: m for m in card.measures if "@" in m.key}
    assert all(abs(m.value() - fp32[m.key].value()) < 25 for m in primary)
    # paired comparisons never mix the two precisions
    other = dataclasses.replace(card, model=dataclasses.replace(card.model, spec_text="other"))
    for row in run.comparisons([card, other]):
        assert row["precision"] == "fp16" and row["difference"] == 0
