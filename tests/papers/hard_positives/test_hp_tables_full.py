"""Tables 1-3, full profile, on a tiny released-layout set written here, scored by random tiny CLIPs on the CPU (the
zoo's rows, and a checkpoint per fine-tune standing in for the COCO runs): the tables against the per-item scores,
the comparisons, the audit reading them, unavailable models, and the stage's entry point."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from common.engine import EngineConfig
from common.errors import WorkspaceError
from common.zoo import ModelUnavailable, random_model
from papers.hard_positives import audit, evaluation, sets_full, tables_full, tables as tb
from papers.hard_positives.runs import RUNS

# The tiny release of test_hp_sets_full.py (one module per test file: its builder is imported, not copied).
from test_hp_sets_full import write_release  # noqa: E402

CONFIG = EngineConfig(progress=False, num_workers=0)
MODELS = {"base": "openai/ViT-B-32", "negclip": "aro/negclip"}
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
              "aro/negclip": random_model("mini-vit-xs", seed=1)}
    return lambda name, device="cpu": models.get(name) or random_model("mini-vit-xs", seed=2)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> list[tb.ModelEntry]:
    """A random mini-vit-xs checkpoint per run (the fine-tunes' training is tested in test_hp_train_full.py)."""
    import torch

    from common.training import FromScratch
    from common.training.checkpoint import portable_state, save_weights

    models = tmp_path_factory.mktemp("models")
    for k, run in enumerate(RUNS):
        torch.manual_seed(10 + k)
        save_weights(models / f"{run}.safetensors", portable_state(FromScratch(ARCH).build().model))
    return tb.run_entries(tables_full.RUN_PREFIX, models)


def _rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def tables(prepared, tiny, runs, tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("results") / "hard_positives" / "full"
    return tables_full.evaluate_tables(MODELS, runs, ARCH, prepared, out, CONFIG, create=tiny, context={"test": True})


def test_table1_matches_a_brute_force_count_of_the_scores(prepared, tiny, runs, tables):
    scored, skipped = tables_full.score_models(MODELS, prepared.items(), CONFIG, create=tiny)
    scored += tables_full.score_runs([e for e in runs if e.run in ("hn", "hp-hn")], ARCH, prepared.items(), CONFIG)
    assert skipped == {} and [s.row for s in scored] == ["base", "negclip", "hn", "hp-hn"]
    table1 = _rows(tables["table1"])
    assert [r["row"] for r in table1] == ["base", "negclip", *tb.TABLE1_RUNS]
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
    assert {(g["row"], g["group"]) for g in groups} == {(r, g) for r in (*MODELS, *RUNS) for g in evaluation.GROUPS}
    relations = next(g for g in groups if g["row"] == "base" and g["group"] == "replace-relations")
    assert int(relations["n"]) == 4
    context = json.loads(tables["context"].read_text())
    assert context["test"] is True and context["skipped"] == {}
    assert context["data"]["counts"] == prepared.info["counts"]
    assert context["models"]["negclip"]["model"] == "aro/negclip"
    assert context["models"]["base"]["fingerprint"] != context["models"]["negclip"]["fingerprint"]
    assert context["checkpoints"]["hn"]["sha256"] and context["models"]["hp-hn"]["model"] == "hard_positives/full-hp-hn"
    summary = json.loads(tables["summary"].read_text())
    comparisons = json.loads(tables["comparisons"].read_text())
    assert list(summary) == list(tb.SUMMARY_KEYS) and all(summary[k] == comparisons[k] for k in summary)
    table1 = {r["row"]: r for r in _rows(tables["table1"])}
    assert summary["hn_minus_clip_swap_brittleness"] == pytest.approx(
        float(table1["hn"]["swap_brittleness"]) - float(table1["base"]["swap_brittleness"]), abs=0.011)
    table2 = _rows(tables["table2"])
    assert [r["row"] for r in table2] == ["base", "negclip", *RUNS] and list(table2[0]) == list(tb.TABLE2_FIELDS)
    table3 = _rows(tables["table3"])
    assert [r["row"] for r in table3] == list(tb.TABLE3_ROWS)
    assert [r["hard_negative_weight"] for r in table3] == ["N/A", "0.00", "0.25", "0.50", "0.75", "1.00", "1.00"]


def test_the_audit_reads_the_rows_by_their_ids(tables):
    results = tables["table1"].parents[2]
    recs = audit.run_recomputations("full", results=results)
    t1 = {(r.row, r.column): r.value for r in recs if r.table == "Table 1"}
    base = _rows(tables["table1"])[0]
    assert t1[("CLIP ViT-B/32", "REPLACE | Aug. Test Acc.")] == pytest.approx(float(base["replace_aug"]))
    assert t1[("NegCLIP", "SWAP | Brittleness")] == pytest.approx(float(_rows(tables["table1"])[1]["swap_brittleness"]))
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
        tables_full.evaluate_tables(models, runs, ARCH, prepared, out, CONFIG, create=create)
    assert not (out / "table1.csv").exists()
    paths = tables_full.evaluate_tables(models, runs, ARCH, prepared, out, CONFIG, create=create, skip_unavailable=True)
    assert [r["row"] for r in _rows(paths["table1"])] == ["base", "negclip", *tb.TABLE1_RUNS]
    assert "LoRA" in json.loads(paths["context"].read_text())["skipped"]["dac-llm"]
    with pytest.raises(tables_full.HardPositivesFullError, match="base model cannot be left out"):
        tables_full.evaluate_tables({"base": "hard_positives/dac-llm"}, runs, ARCH, prepared, out, CONFIG,
                                    create=create, skip_unavailable=True)
    missing = [tb.ModelEntry(e.name, e.label, e.run, tmp_path / "none" / e.checkpoint.name) for e in runs]
    with pytest.raises(WorkspaceError, match="no weights for hard_positives/full-clip-ft"):
        tables_full.evaluate_tables(MODELS, missing, ARCH, prepared, out, CONFIG, create=tiny)


def test_stage_entry_point_scores_the_params_models(prepared, tiny, runs, tmp_path, monkeypatch):
    """``python -m papers.hard_positives.tables_full``: the models of params.yaml (tiny stand-ins), the prepared set
    and the runs' weights given."""
    from types import SimpleNamespace

    import common.zoo
    from common.params import load_params

    monkeypatch.setattr(tables_full, "_zoo_create", tiny)
    monkeypatch.setattr(common.zoo, "get_spec", lambda name: SimpleNamespace(arch=ARCH, label=f"stand-in {name}"))
    out = tmp_path / "results"
    assert tables_full.main(["--data", str(prepared.path.parent), "--models", str(runs[0].checkpoint.parent),
                             "--out", str(out), "--device", "cpu"]) == 0
    rows = _rows(out / "table1.csv")
    full = load_params()["hard_positives"]["full"]
    zoo_rows = [r for row, name in full["models"].items()  # a model of authors_precision: its fp32 reference after it
                for r in (row, *([f"{row}@fp32"] if name in full["authors_precision"] else []))]
    assert "base@fp32" in zoo_rows and [r["row"] for r in rows] == [*zoo_rows, *tb.TABLE1_RUNS]
    assert (out / "predictions").is_dir() and json.loads((out / "context.json").read_text())["device"] == "cpu"


def test_the_authors_fp16_row_is_scored_beside_fp32_and_the_audit_compares_both(prepared, tiny, runs, tmp_path):
    """Issue 31: the base CLIP scored at the authors' fp16 (clip.load on CUDA) drives Table 1's row; its fp32
    reference row is written beside it and audited against the same published cells, and the comparisons set the
    fine-tunes (scored at the engine's fp32) against that reference: one precision on both sides."""
    out = tmp_path / "results" / "hard_positives" / "full"
    paths = tables_full.evaluate_tables(MODELS, runs, ARCH, prepared, out, CONFIG, create=tiny,
                                        authors_precision={"openai/ViT-B-32": "fp16"})
    table1 = {r["row"]: r for r in _rows(paths["table1"])}
    assert list(table1)[:3] == ["base", "base@fp32", "negclip"]
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
    assert all(r.note == "" for r in recs if r.row == "NegCLIP")


def test_the_comparisons_use_the_base_at_the_fine_tunes_precision(prepared, tiny, runs, tmp_path):
    """An fp16 base row whose every score is a tie (never correct) moves Table 1's base row, not the comparisons:
    they set the fine-tunes against the base scored at their own precision (the ``base@fp32`` reference)."""
    import dataclasses

    from common.scoring.selection import Outcome

    items = prepared.items()
    scored, _ = tables_full.score_models(MODELS, items, CONFIG, create=tiny,
                                         authors_precision={"openai/ViT-B-32": "fp16"})
    scored += tables_full.score_runs(runs, ARCH, items, CONFIG)
    tied = [Outcome(o.item_id, o.group, (0.5,) * len(o.scores), False, True) for o in scored[0].result.outcomes]
    scored[0] = dataclasses.replace(scored[0], result=dataclasses.replace(scored[0].result, outcomes=tied))
    assert (scored[0].row, scored[1].row) == ("base", "base@fp32")
    paths = tables_full.write_outputs(tmp_path / "out", scored, ["base", "base@fp32", "negclip"], {})
    table1 = {r["row"]: r for r in _rows(paths["table1"])}
    summary = json.loads(paths["summary"].read_text())
    key = "replace_orig"
    assert float(table1["base"][key]) == 0 < float(table1["base@fp32"][key])
    assert summary[f"hn_minus_clip_{key}"] == pytest.approx(
        float(table1["hn"][key]) - float(table1["base@fp32"][key]), abs=0.011)
