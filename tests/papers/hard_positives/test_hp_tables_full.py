"""Tables 1-3, full profile, on a tiny released-layout set written here, scored by random tiny CLIPs on the CPU (the
zoo's rows, and a checkpoint per fine-tune standing in for the COCO runs): the tables against the per-item scores,
the comparisons, the audit reading them, unavailable models, and the stage's entry point."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
# The tiny release of test_hp_sets_full.py (one module per test file: its builder is imported, not copied).
from test_hp_sets_full import write_release  # noqa: E402

from common.errors import WorkspaceError
from common.evaluation.engine import EngineConfig
from common.zoo import ModelUnavailable, random_model
from papers.hard_positives import audit, evaluation, sets_full, tables as tb
from papers.hard_positives.runs import RUNS

CONFIG = EngineConfig(progress=False, num_workers=0)
MODELS = {"base": "openai/ViT-B-32", "negclip": "aro/negclip"}
ZOO_ROWS = ["base", "negclip", "negclip@quickgelu"]
"""The rows ``MODELS`` is scored as: NegCLIP as the authors build it (GELU, its row) and as trained beside it."""
ARCH = "mini-vit-xs"


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> sets_full.FullSet:
    root = tmp_path_factory.mktemp("hp_full")
    release = write_release(root / "release")
    return sets_full.prepare_full(root / "prepared", release.__getitem__)


@pytest.fixture(scope="module")
def tiny():
    """A randomly initialised mini-vit-xs (an open_clip config of this workspace) per zoo name asked for."""
    models = {"openai/ViT-B-32": random_model("mini-vit-xs", seed=0),
              "aro/negclip": random_model("mini-vit-xs", seed=1),
              "aro/negclip-gelu": random_model("mini-vit-xs", seed=3)}
    return lambda name, device="cpu": models.get(name) or random_model("mini-vit-xs", seed=2)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> list[tb.ModelEntry]:
    """A random mini-vit-xs checkpoint per run (the fine-tunes' training is tested in test_hp_train.py)."""
    import torch

    from common.training import FromScratch
    from common.training.checkpoint import portable_state, save_weights

    models = tmp_path_factory.mktemp("models")
    for k, run in enumerate(RUNS):
        torch.manual_seed(10 + k)
        save_weights(models / f"{run}.safetensors", portable_state(FromScratch(ARCH).build().model))
    return tb.run_entries("hard_positives/full", models)


def _rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def tables(prepared, tiny, runs, tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("results") / "hard_positives" / "full"
    return tb.evaluate_tables(tb.full_inputs(MODELS, runs, ARCH, prepared, {"test": True}), out, CONFIG, create=tiny)


def test_table1_matches_a_brute_force_count_of_the_scores(prepared, tiny, runs, tables):
    scored, skipped = tb.score_models(MODELS, prepared.items(), CONFIG, create=tiny)
    scored += tb.score_runs([e for e in runs if e.run in ("hn", "hp-hn")], ARCH, prepared.items(), CONFIG)
    assert skipped == {} and [s.row for s in scored] == [*ZOO_ROWS, "hn", "hp-hn"]
    table1 = _rows(tables["table1"])
    assert [r["row"] for r in table1] == [*ZOO_ROWS, *tb.TABLE1_RUNS]
    assert list(table1[0]) == list(tb.TABLE1_FIELDS)
    by_row = {r["row"]: r for r in table1}
    for s in scored:
        written = by_row[s.row]
        per_group: dict[str, dict[str, float]] = {}
        for group in evaluation.GROUPS:
            scores = np.array([o.scores for o in s.result.outcomes if o.group == group])
            c, cp, cn = scores[:, 0], scores[:, 1], scores[:, 2]
            per_group[group] = {"orig": 100 * np.mean(c > cn), "aug": 100 * np.mean((c > cn) & (cp > cn)),
                                "brittleness": 100 * np.mean(((c > cn) & (cn > cp)) | ((cp > cn) & (cn > c)))}
        for metric in ("orig", "aug", "brittleness"):
            replace = (per_group["replace-attributes"][metric] + per_group["replace-relations"][metric]) / 2
            assert float(written[f"replace_{metric}"]) == pytest.approx(replace, abs=0.006)
            assert float(written[f"swap_{metric}"]) == pytest.approx(per_group["swap"][metric], abs=0.006)
        assert float(written["replace_drop"]) == pytest.approx(
            float(written["replace_aug"]) - float(written["replace_orig"]), abs=0.011)
        predictions = _rows(tables["predictions"] / f"{s.model.replace('/', '__')}.csv")
        assert [p["item_id"] for p in predictions] == [o.item_id for o in s.result.outcomes]


def test_groups_context_and_metrics(tables, prepared):
    groups = _rows(tables["groups"])
    assert {(g["row"], g["group"]) for g in groups} == {(r, g) for r in (*ZOO_ROWS, *RUNS) for g in evaluation.GROUPS}
    relations = next(g for g in groups if g["row"] == "base" and g["group"] == "replace-relations")
    assert int(relations["n"]) == 4
    context = json.loads(tables["context"].read_text())
    assert context["test"] is True and context["skipped"] == {}
    assert context["data"]["counts"] == prepared.info["counts"]
    assert context["models"]["negclip"]["model"] == "aro/negclip-gelu"  # the authors' build: Table 1's row
    assert context["models"]["negclip@quickgelu"]["model"] == "aro/negclip"
    assert context["models"]["base"]["fingerprint"] != context["models"]["negclip"]["fingerprint"]
    assert context["checkpoints"]["hn"]["sha256"] and context["models"]["hp-hn"]["model"] == "hard_positives/full-hp-hn"
    summary = json.loads(tables["summary"].read_text())
    comparisons = json.loads(tables["comparisons"].read_text())
    assert list(summary) == list(tb.SUMMARY_KEYS) and all(summary[k] == comparisons[k] for k in summary)
    table1 = {r["row"]: r for r in _rows(tables["table1"])}
    assert summary["hn_minus_clip_swap_brittleness"] == pytest.approx(
        float(table1["hn"]["swap_brittleness"]) - float(table1["base"]["swap_brittleness"]), abs=0.011)
    drops = {row: {c: float(table1[row][f"{c}_drop"]) for c in evaluation.COLUMNS} for row in ("base", "hn")}
    for column in evaluation.COLUMNS:  # the scorecard's drop keys, in the full profile's comparisons too
        key = f"hn_minus_clip_drop_{column}"
        assert comparisons[key] == pytest.approx(drops["hn"][column] - drops["base"][column], abs=0.011)
        assert comparisons[f"{key}_ci_low"] <= comparisons[key] <= comparisons[f"{key}_ci_high"]
    assert comparisons["clip_drop_mean"] == pytest.approx(sum(drops["base"].values()) / 2, abs=0.011)
    assert comparisons["clip_drop_mean_ci_low"] <= comparisons["clip_drop_mean"] <= comparisons["clip_drop_mean_ci_high"]
    table2 = _rows(tables["table2"])
    assert [r["row"] for r in table2] == [*ZOO_ROWS, *RUNS] and list(table2[0]) == list(tb.TABLE2_FIELDS)
    table3 = _rows(tables["table3"])
    assert [r["row"] for r in table3] == list(tb.TABLE3_ROWS)
    assert [r["hard_negative_weight"] for r in table3] == ["N/A", "0.00", "0.25", "0.50", "0.75", "1.00", "1.00"]


def test_the_audit_reads_the_rows_by_their_ids(tables):
    results = tables["table1"].parents[2]
    recs = audit.run_recomputations("full", results=results)
    t1 = {(r.row, r.column): r.value for r in recs if r.table == "Table 1" and r.row != "NegCLIP"}
    base = _rows(tables["table1"])[0]
    assert t1[("CLIP ViT-B/32", "REPLACE | Aug. Test Acc.")] == pytest.approx(float(base["replace_aug"]))
    negclip = [r for r in recs if r.key == ("Table 1", "NegCLIP", "SWAP | Brittleness")]
    assert sorted(r.value for r in negclip) == sorted(
        float(r["swap_brittleness"]) for r in _rows(tables["table1"]) if r["row"] in ("negclip", "negclip@quickgelu"))
    t2 = {(r.row, r.column) for r in recs if r.table == "Table 2"}
    assert ("CLIP ViT-B/32", "Mean score | c_p") in t2 and ("Ours", "Mean score | c_n") in t2
    t3 = {(r.row, r.column): r.value for r in recs if r.table == "Table 3"}
    ratio = next(r for r in _rows(tables["table3"]) if r["row"] == "ratio-0.25")
    assert t3[("0.25 HN", "REPLACE | Brittleness")] == pytest.approx(float(ratio["replace_brittleness"]))
    assert ("Our HP+HN (Swap-only)", "SWAP | Orig. Test Acc.") in {(r.row, r.column) for r in recs}


def test_an_unavailable_model_stops_the_stage_with_why_or_is_skipped(prepared, tiny, runs, tmp_path):
    """The real zoo entry of DAC-LLM: no checkpoint here, and its download entry says why it could not be used."""
    from common.zoo import create_model

    def create(name, device="cpu"):
        return create_model(name, device=device) if name.startswith("hard_positives/") else tiny(name)

    models = {**MODELS, "dac-llm": "hard_positives/dac-llm"}
    out = tmp_path / "out"
    with pytest.raises(ModelUnavailable, match=r"Table 1 row 'dac-llm': model 'hard_positives/dac-llm': checkpoint "
                                               r".* not found.*LoRA"):
        tb.evaluate_tables(tb.full_inputs(models, runs, ARCH, prepared), out, CONFIG, create=create)
    assert not (out / "table1.csv").exists()
    paths = tb.evaluate_tables(tb.full_inputs(models, runs, ARCH, prepared, skip_unavailable=True), out, CONFIG,
                               create=create)
    assert [r["row"] for r in _rows(paths["table1"])] == [*ZOO_ROWS, *tb.TABLE1_RUNS]
    assert "LoRA" in json.loads(paths["context"].read_text())["skipped"]["dac-llm"]
    with pytest.raises(tb.HardPositivesTablesError, match="base model cannot be left out"):
        tb.evaluate_tables(tb.full_inputs({"base": "hard_positives/dac-llm"}, runs, ARCH, prepared,
                                          skip_unavailable=True), out, CONFIG, create=create)
    with pytest.raises(tb.HardPositivesTablesError, match="no Table 1 row"):
        tb.full_inputs({}, runs, ARCH, prepared)
    missing = [tb.ModelEntry(e.name, e.label, e.run, tmp_path / "none" / e.checkpoint.name) for e in runs]
    with pytest.raises(WorkspaceError, match="no weights for hard_positives/full-clip-ft"):
        tb.evaluate_tables(tb.full_inputs(MODELS, missing, ARCH, prepared), out, CONFIG, create=tiny)


def test_stage_entry_point_scores_the_params_models(prepared, tiny, runs, tmp_path, monkeypatch):
    """``python -m papers.hard_positives.tables --profile full``: the models of params.yaml (tiny stand-ins), the prepared set
    and the runs' weights given."""
    from types import SimpleNamespace

    from common.pipeline.params import read_params

    monkeypatch.setattr(tb, "create_model", tiny)
    monkeypatch.setattr(tb, "get_spec", lambda name: SimpleNamespace(arch=ARCH, label=f"stand-in {name}"))
    out = tmp_path / "results"
    monkeypatch.setenv("DVC_STAGE", "papers/hard_positives/dvc.yaml:table1-full")  # as `dvc repro` sets it
    assert tb.main(["--profile", "full", "--data", str(prepared.path.parent), "--models",
                    str(runs[0].checkpoint.parent), "--out", str(out), "--device", "cpu"]) == 0
    rows = _rows(out / "table1.csv")
    full = read_params()["hard_positives"]["full"]
    zoo_rows = [r for row, name in full["models"].items()  # a model of authors_precision: its fp32 reference after it;
                for r in (row, *([f"{row}@fp32"] if name in full["authors_precision"] else []),  # one the authors
                          *([f"{row}@quickgelu"] if name in tb.AUTHORS_BUILD else []))]  # build GELU: QuickGELU
    assert "base@fp32" in zoo_rows and [r["row"] for r in rows] == [*zoo_rows, *tb.TABLE1_RUNS]
    assert {"negclip@quickgelu", "crepe-swap@quickgelu", "crepe-replace@quickgelu"} <= set(zoo_rows)
    assert (out / "predictions").is_dir() and json.loads((out / "context.json").read_text())["device"] == "cpu"


def test_the_authors_fp16_row_is_scored_beside_fp32_and_the_audit_compares_both(prepared, tiny, runs, tmp_path):
    """Issue 31: the base CLIP scored at the authors' fp16 (clip.load on CUDA) drives Table 1's row; its fp32
    reference row is written beside it and audited against the same published cells, and the comparisons set the
    fine-tunes (scored at the engine's fp32) against that reference: one precision on both sides."""
    out = tmp_path / "results" / "hard_positives" / "full"
    inputs = tb.full_inputs(MODELS, runs, ARCH, prepared, authors_precision={"openai/ViT-B-32": "fp16"})
    paths = tb.evaluate_tables(inputs, out, CONFIG, create=tiny)
    table1 = {r["row"]: r for r in _rows(paths["table1"])}
    assert list(table1)[:4] == ["base", "base@fp32", "negclip", "negclip@quickgelu"]
    base = _rows(out / "predictions" / "openai__ViT-B-32.csv")
    reference = _rows(out / "predictions" / "openai__ViT-B-32@fp32.csv")
    assert len(base) == len(reference)
    context = json.loads(paths["context"].read_text())["models"]
    assert (context["base"]["precision"], context["base@fp32"]["precision"]) == ("fp16", "fp32")
    assert context["base@fp32"]["stands_for"] == "base" and "run_eval.py:46" in context["base"]["why"]
    assert set(context["base"]["ties"]) == set(evaluation.GROUPS) and context["negclip"]["precision"] == "fp32"
    assert {context[run]["precision"] for run in RUNS} == {"fp32"}
    summary = json.loads(paths["summary"].read_text())
    differences = [(summary[f"hn_minus_clip_{column}_{metric}"], float(table1["hn"][f"{column}_{metric}"]),
                    float(table1["base@fp32"][f"{column}_{metric}"]), float(table1["base"][f"{column}_{metric}"]))
                   for column in evaluation.COLUMNS for metric in tb.METRICS]
    assert all(d == pytest.approx(hn - reference, abs=0.011) for d, hn, reference, _ in differences)
    recs = audit.run_recomputations("full", results=tmp_path / "results")
    cell = [r for r in recs if r.key == ("Table 1", "CLIP ViT-B/32", "REPLACE | Aug. Test Acc.")]
    assert sorted((r.note.split(":")[0], r.value) for r in cell) == sorted(
        [("fp16", float(table1["base"]["replace_aug"])), ("fp32", float(table1["base@fp32"]["replace_aug"]))])
    assert all("exact ties: replace-attributes" in r.note for r in cell)
    negclip = [r for r in recs if r.row == "NegCLIP"]  # at the engine's fp32, named by activation, not precision
    assert negclip and all(r.note.startswith("fp32: ") and "GELU" in r.note and "precision" not in r.note
                           for r in negclip)


def test_the_comparisons_use_the_base_at_the_fine_tunes_precision(prepared, tiny, runs, tmp_path):
    """An fp16 base row whose every score is a tie (never correct) moves Table 1's base row, not the comparisons:
    they set the fine-tunes against the base scored at their own precision (the ``base@fp32`` reference)."""
    import dataclasses

    from common.evaluation.scoring.selection import Outcome

    items = prepared.items()
    scored, _ = tb.score_models(MODELS, items, CONFIG, create=tiny,
                                         authors_precision={"openai/ViT-B-32": "fp16"})
    scored += tb.score_runs(runs, ARCH, items, CONFIG)
    tied = [Outcome(o.item_id, o.group, (0.5,) * len(o.scores), False, True) for o in scored[0].result.outcomes]
    scored[0] = dataclasses.replace(scored[0], result=dataclasses.replace(scored[0].result, outcomes=tied))
    assert (scored[0].row, scored[1].row) == ("base", "base@fp32")
    paths = tb.write_outputs(tmp_path / "out", "full", scored, ["base", "base@fp32", "negclip"], {})
    table1 = {r["row"]: r for r in _rows(paths["table1"])}
    summary = json.loads(paths["summary"].read_text())
    key = "replace_orig"
    assert float(table1["base"][key]) == 0 < float(table1["base@fp32"][key])
    assert summary[f"hn_minus_clip_{key}"] == pytest.approx(
        float(table1["hn"][key]) - float(table1["base@fp32"][key]), abs=0.011)


def test_the_authors_gelu_builds_are_registered_variants_of_the_models_as_trained():
    """Issue 45: the hard-positives evaluator builds NegCLIP and the CREPE models as open_clip 'ViT-B-32' (GELU:
    amitakamath/hard_positives@33addaae model_zoo/__init__.py:81 "open_clip.create_model_and_transforms('ViT-B-32',"
    and amitakamath/hard_positives@33addaae model_zoo/__init__.py:101 "open_clip.create_model_and_transforms('ViT-B-32',");
    each GELU build is a declared zoo variant of the model as trained (QuickGELU), reading the same weights, and the
    full profile lists all three."""
    from common.pipeline.params import read_params
    from common.zoo import get_spec, runs_quick_gelu

    assert set(tb.AUTHORS_BUILD) == {"aro/negclip", "hard_positives/crepe-swap", "hard_positives/crepe-replace"}
    for trained, gelu in tb.AUTHORS_BUILD.items():
        spec, variant = get_spec(trained), get_spec(gelu)
        assert variant.variant_of == trained and (variant.checkpoint, variant.source) == (spec.checkpoint, spec.source)
        assert runs_quick_gelu(spec) and not runs_quick_gelu(variant)
    for name in ("hard_positives/crepe-swap-gelu", "hard_positives/crepe-replace-gelu"):
        assert "model_zoo/__init__.py:101" in get_spec(name).variant_note
    assert set(tb.AUTHORS_BUILD) <= set(read_params()["hard_positives"]["full"]["models"].values())


def test_negclip_and_crepe_rows_are_scored_both_ways_and_the_audit_names_gelu_the_authors(prepared, runs, tmp_path):
    """Each model of AUTHORS_BUILD is scored twice: its row with the GELU build (the authors' configuration) and
    ``<row>@quickgelu`` (as trained) right after it; the audit compares both with the row's published cells, the
    row's recomputation named the authors' configuration, the other beside it."""
    seeds = {"openai/ViT-B-32": 0, "aro/negclip": 1, "aro/negclip-gelu": 3, "hard_positives/crepe-swap": 4,
             "hard_positives/crepe-swap-gelu": 5, "hard_positives/crepe-replace": 6,
             "hard_positives/crepe-replace-gelu": 7}
    made = {name: random_model(ARCH, seed=seed) for name, seed in seeds.items()}
    asked = []

    def create(name, device="cpu"):
        asked.append(name)
        return made[name]

    models = {"base": "openai/ViT-B-32", "negclip": "aro/negclip", "crepe-swap": "hard_positives/crepe-swap",
              "crepe-replace": "hard_positives/crepe-replace"}
    out = tmp_path / "results" / "hard_positives" / "full"
    paths = tb.evaluate_tables(tb.full_inputs(models, runs, ARCH, prepared), out, CONFIG, create=create)
    assert asked == ["openai/ViT-B-32", "aro/negclip-gelu", "aro/negclip", "hard_positives/crepe-swap-gelu",
                     "hard_positives/crepe-swap", "hard_positives/crepe-replace-gelu", "hard_positives/crepe-replace"]
    table1 = {r["row"]: r for r in _rows(paths["table1"])}
    assert list(table1)[:7] == ["base", "negclip", "negclip@quickgelu", "crepe-swap", "crepe-swap@quickgelu",
                                "crepe-replace", "crepe-replace@quickgelu"]
    context = json.loads(paths["context"].read_text())["models"]
    published = {"negclip": "NegCLIP", "crepe-swap": "CREPE-Swap", "crepe-replace": "CREPE-Replace"}
    recs = audit.run_recomputations("full", results=tmp_path / "results")
    for row, label in published.items():
        gelu, quick = context[row], context[f"{row}@quickgelu"]
        assert (gelu["model"], quick["model"]) == (tb.AUTHORS_BUILD[quick["model"]], models[row])
        assert (gelu["activation"], gelu["stands_for"], gelu["reference"]) == ("GELU", None, None)
        assert (quick["activation"], quick["stands_for"], quick["reference"]) == ("QuickGELU", row, "activation")
        assert gelu["fingerprint"] != quick["fingerprint"]
        assert table1[row]["label"].endswith("(GELU)") and table1[f"{row}@quickgelu"]["label"].endswith("[QuickGELU]")
        for stem in (gelu["model"], quick["model"]):  # both scorings' per-item scores, by zoo name
            assert (out / "predictions" / f"{stem.replace('/', '__')}.csv").is_file()
        for column, published_column in audit.TABLE1_COLUMNS.items():
            cell = [r for r in recs if r.key == ("Table 1", label, published_column)]
            authors = [r for r in cell if "the authors' configuration" in r.note and "beside" not in r.note]
            beside = [r for r in cell if "beside the authors' configuration" in r.note]
            assert len(cell) == 2 and len(authors) == len(beside) == 1
            assert authors[0].value == pytest.approx(float(table1[row][column]))
            assert beside[0].value == pytest.approx(float(table1[f"{row}@quickgelu"][column]))
            assert authors[0].note.startswith("fp32: GELU") and "model_zoo/__init__.py:81" in authors[0].note
            assert beside[0].note.startswith("fp32: QuickGELU")
    assert not [r for r in recs if r.row not in (*published.values(), "CLIP ViT-B/32") and r.table == "Table 1"
                and "configuration" in r.note]  # the runs and the base are scored one way
    summary = json.loads(paths["summary"].read_text())  # the comparisons are the fine-tunes' and the base's alone
    base = {r["row"]: r for r in _rows(paths["table1"])}["base"]
    assert summary["hn_minus_clip_replace_orig"] == pytest.approx(
        float(table1["hn"]["replace_orig"]) - float(base["replace_orig"]), abs=0.011)
