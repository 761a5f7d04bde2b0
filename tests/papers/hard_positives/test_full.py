"""Table 1, full profile, on a tiny released-layout set written here, scored by a random tiny CLIP on the CPU: the
tables against the per-item scores, the audit reading them, unavailable models, and the stage's entry point."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from common.engine import EngineConfig
from common.zoo import ModelUnavailable, random_model
from papers.hard_positives import audit, data, evaluation, full

# The tiny release of test_data.py (one module per test file: its builder is imported, not copied).
from test_data import write_release  # noqa: E402

CONFIG = EngineConfig(progress=False, num_workers=0)
MODELS = {"base": "openai/ViT-B-32", "negclip": "aro/negclip"}


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> data.FullSet:
    root = tmp_path_factory.mktemp("hp_full")
    release = write_release(root / "release")
    return data.prepare_full(root / "prepared", release.__getitem__)


@pytest.fixture(scope="module")
def tiny():
    """A randomly initialised mini-vit-xs (an open_clip config of this workspace) per zoo name asked for."""
    models = {"openai/ViT-B-32": random_model("mini-vit-xs", seed=0),
              "aro/negclip": random_model("mini-vit-xs", seed=1)}
    return lambda name, device="cpu": models.get(name) or random_model("mini-vit-xs", seed=2)


def _rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def tables(prepared, tiny, tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("results") / "hard_positives" / "full"
    return full.evaluate_tables(MODELS, prepared, out, CONFIG, create=tiny, context={"test": True})


def test_table1_matches_a_brute_force_count_of_the_scores(prepared, tiny, tables):
    scored, skipped = full.score_models(MODELS, prepared.items(), CONFIG, create=tiny)
    assert skipped == {} and [s.row for s in scored] == ["base", "negclip"]
    table1 = _rows(tables["table1"])
    assert [r["row"] for r in table1] == ["base", "negclip"] and list(table1[0]) == list(full.TABLE1_FIELDS)
    for s, written in zip(scored, table1):
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
    assert {(g["row"], g["group"]) for g in groups} == {(r, g) for r in MODELS for g in evaluation.GROUPS}
    relations = next(g for g in groups if g["row"] == "base" and g["group"] == "replace-relations")
    assert int(relations["n"]) == 4
    context = json.loads(tables["context"].read_text())
    assert context["test"] is True and context["skipped"] == {}
    assert context["data"]["counts"] == prepared.info["counts"]
    assert context["models"]["negclip"]["model"] == "aro/negclip"
    assert context["models"]["base"]["fingerprint"] != context["models"]["negclip"]["fingerprint"]
    summary = json.loads(tables["summary"].read_text())
    assert set(summary) == set(MODELS) and set(summary["base"]) == set(evaluation.TABLE_FIELDS)
    table2 = _rows(tables["table2"])
    assert [r["row"] for r in table2] == ["base", "negclip"] and list(table2[0]) == list(full.TABLE2_FIELDS)


def test_the_audit_reads_the_rows_by_their_ids(tables):
    results = tables["table1"].parents[2]
    recs = audit.run_recomputations("full", results=results)
    t1 = {(r.row, r.column): r.value for r in recs if r.table == "Table 1"}
    base = _rows(tables["table1"])[0]
    assert t1[("CLIP ViT-B/32", "REPLACE | Aug. Test Acc.")] == pytest.approx(float(base["replace_aug"]))
    assert t1[("NegCLIP", "SWAP | Brittleness")] == pytest.approx(float(_rows(tables["table1"])[1]["swap_brittleness"]))
    t2 = {(r.row, r.column) for r in recs if r.table == "Table 2"}
    assert ("CLIP ViT-B/32", "Mean score | c_p") in t2


def test_an_unavailable_model_stops_the_stage_with_why_or_is_skipped(prepared, tiny, tmp_path):
    """The real zoo entry of DAC-LLM: no checkpoint here, and its download entry says why it could not be used."""
    from common.zoo import create_model

    def create(name, device="cpu"):
        return create_model(name, device=device) if name.startswith("hard_positives/") else tiny(name)

    models = {**MODELS, "dac-llm": "hard_positives/dac-llm"}
    out = tmp_path / "out"
    with pytest.raises(ModelUnavailable, match=r"Table 1 row 'dac-llm': model 'hard_positives/dac-llm': checkpoint "
                                               r".* not found.*LoRA"):
        full.evaluate_tables(models, prepared, out, CONFIG, create=create)
    assert not (out / "table1.csv").exists()
    paths = full.evaluate_tables(models, prepared, out, CONFIG, create=create, skip_unavailable=True)
    assert [r["row"] for r in _rows(paths["table1"])] == ["base", "negclip"]
    assert "LoRA" in json.loads(paths["context"].read_text())["skipped"]["dac-llm"]


def test_stage_entry_point_scores_the_params_models(prepared, tiny, tmp_path, monkeypatch):
    """``python -m papers.hard_positives.full``: the models of params.yaml (tiny stand-ins), the prepared set given."""
    monkeypatch.setattr(full, "_zoo_create", tiny)
    out = tmp_path / "results"
    assert full.main(["--data", str(prepared.path.parent), "--out", str(out), "--device", "cpu"]) == 0
    rows = _rows(out / "table1.csv")
    from common.params import load_params

    assert [r["row"] for r in rows] == list(load_params()["hard_positives"]["full"]["models"])
    assert (out / "predictions").is_dir() and json.loads((out / "context.json").read_text())["device"] == "cpu"
