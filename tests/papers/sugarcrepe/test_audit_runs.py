"""Tables 4, 5 and 10 and Table 6's text-only rows join the audit: every run row lands on a published cell."""
from __future__ import annotations

import csv
import math
import shutil
from pathlib import Path

import pytest

from common.paths import RESULTS
from common.reporting.published import load_cells
from papers.sugarcrepe import audit

PUBLISHED = {(c.table, c.row, c.column) for c in load_cells("sugarcrepe")}
MINI = RESULTS / "sugarcrepe" / "mini"


def write_csv(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_mini_runs_cover_published_cells_without_comparing(tmp_path):
    out = tmp_path / "results" / "sugarcrepe" / "mini"
    for name in ("table5.csv", "table10.csv", "table4.csv"):
        out.mkdir(parents=True, exist_ok=True)
        shutil.copy(MINI / name, out / name)
    recs = audit.run_recomputations("mini", tmp_path / "results")
    assert recs and all(r.profile == "mini" and math.isnan(r.value) for r in recs)
    assert {r.key for r in recs} <= PUBLISHED, sorted({r.key for r in recs} - PUBLISHED)[:3]
    per_table = {t: sum(r.table == t for r in recs) for t in ("Table 4", "Table 5", "Table 10")}
    # Table 5: pretrained, CLIP-FT and NegCLIP x 3 kinds, 7 columns; Table 10: CLIP-FT, template x 3 and refined x 2
    # (no refined NEGATE in the mini run), 3 columns; Table 4: the grammar rows (an n-gram LM stands in), 3 columns
    assert per_table == {"Table 4": 9, "Table 5": 35, "Table 10": 18}


def test_full_runs_are_compared_cell_by_cell(tmp_path):
    out = tmp_path / "results" / "sugarcrepe" / "full"
    columns = list(audit.TABLE5_COLUMNS)
    runs = [("pretrained", "N/A"), ("clip-ft", "N/A"), ("negclip", "replace"), ("negclip", "released"),
            ("scratch-clip", "N/A"), ("scratch-negclip", "swap"), ("scratch-negclip", "all")]
    write_csv(out / "table5.csv", [{"model": f"m{i}", "training": t, "hard_negative": k,
                                    **{c: f"{50 + i}.{j}" for j, c in enumerate(columns)}}
                                   for i, (t, k) in enumerate(runs)])
    write_csv(out / "table10.csv", [
        {"model": "a", "hard_negative": "N/A", "negatives": "N/A", "sugarcrepe_replace": "60", "sugarcrepe_swap": "61",
         "sugarcrepe_add": "62"},
        {"model": "b", "hard_negative": "negate", "negatives": "refined", "sugarcrepe_replace": "70",
         "sugarcrepe_swap": "71", "sugarcrepe_add": "72"}])
    write_csv(out / "table4.csv", [
        {"type": "SWAP", "scorer": "vera", "mean_aro_crepe": "23.5", "mean_sugarcrepe": "41.0",
         "sugarcrepe_more_fluent_share": "78.0"}])
    write_csv(out / "blind_accuracy.csv", [
        {"benchmark": "sugarcrepe", "category": c, "scorer": s, "accuracy": str(49.0 + k)}
        for s in ("vera", "grammar") for k, c in enumerate(audit.released.COLUMNS)])
    recs = audit.run_recomputations("full", tmp_path / "results")
    assert all(r.profile == "full" for r in recs) and {r.key for r in recs} <= PUBLISHED
    value = {r.key: r.value for r in recs}
    assert value[("Table 5", "ViT-B/32 | NEGCLIP finetuned | Released in [49]", "ARO+CREPE | SWAP")] == 53.1
    assert value[("Table 5", "RN50 | NEGCLIP from scratch | Rep + Sw + Neg", "SUGARCREPE | ADD")] == 56.6
    assert value[("Table 10", "NEGCLIP with adversarial refined hard negatives | NEGATE", "SUGARCREPE | SWAP")] == 71
    assert value[("Table 4", "SWAP | Commonsense", "Pairwise Better Ratio")] == 78.0
    assert value[("Table 6", "Text-only model | Grammar", "Average")] == pytest.approx(52.0)  # mean of 49..55
    assert sum(r.table == "Table 5" for r in recs) == 7 * 7


DATACOMP = ["datacomp/small-ViT-B-32", "datacomp/medium-ViT-B-32"]


def test_table6_scores_datacomp_small_and_medium_with_quickgelu_beside_gelu(tmp_path, monkeypatch):
    """Issue 31: SugarCrepe's model list pairs DataComp small/medium with ViT-B-32-quickgelu
    (``RAIVNLab/sugar-crepe@0047054b main_eval.py:19-20`` "# ('ViT-B-32-quickgelu', 'datacomp_s_s13m_b4k'), #
    ('ViT-B-32-quickgelu', 'datacomp_m_s128m_b4k'),") while open_clip registers them as GELU: the full Table 6 scores
    each listed model, then its registered variants."""
    from types import SimpleNamespace

    from papers.sugarcrepe import table6

    class Stop(Exception):
        pass

    seen = {}

    def capture(models, *args, **kwargs):
        seen["models"] = list(models)
        raise Stop

    listed = ["openai/ViT-B-32", *DATACOMP]
    monkeypatch.setattr(table6, "best_device", lambda: "cuda")
    monkeypatch.setattr(table6, "own_params",
                        lambda stage=None: {"profile": "full", "engine": {},
                                            "sugarcrepe": {"models": {"full": listed}}})
    monkeypatch.setattr(table6, "PreparedSet", SimpleNamespace(load=lambda path: SimpleNamespace(items=list, info={})))
    monkeypatch.setattr(table6, "RESULTS", tmp_path)
    monkeypatch.setattr(table6, "evaluate_selection", capture)
    with pytest.raises(Stop):
        table6.main([])
    assert seen["models"] == ["openai/ViT-B-32", "datacomp/small-ViT-B-32", "datacomp/small-ViT-B-32-quickgelu",
                              "datacomp/medium-ViT-B-32", "datacomp/medium-ViT-B-32-quickgelu"]


def test_the_audit_compares_both_activations_with_the_published_datacomp_rows(tmp_path, monkeypatch):
    out = tmp_path / "results" / "sugarcrepe" / "full"
    models = ["datacomp/small-ViT-B-32", "datacomp/small-ViT-B-32-quickgelu", "openai/ViT-B-32"]
    write_csv(out / "table6.csv", [{"model": m, **{c: f"{60 + i}.{j}" for j, c in enumerate(audit.TABLE6_COLUMNS)}}
                                   for i, m in enumerate(models)])
    monkeypatch.setattr(audit.released, "recompute", lambda model_names=None: [])
    recs = [r for r in audit.recompute("full", DATACOMP, tmp_path / "results") if r.table == "Table 6"]
    small = [r for r in recs if r.key == ("Table 6", "DataComp | small: ViT-B-32", "REPLACE | Object")]
    assert sorted(r.value for r in small) == [60.0, 61.0] and small[0].key in PUBLISHED
    notes = {r.value: r.note for r in small}
    assert "main_eval.py:19" in notes[61.0] and "QuickGELU" in notes[61.0]
    assert "datacomp/small-ViT-B-32-quickgelu" in notes[60.0]
    assert all(r.note == "" for r in recs if r.row == "OpenAI | ViT-B-32")
