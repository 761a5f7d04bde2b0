"""ARO's tables stage end to end on a small mini set and a random tiny CLIP: every table has the shape of the
paper's, the numbers are the scorers' (checked against a direct computation), and the audit maps them onto the
published cells (mini: covered, never compared)."""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest

from common.engine import Engine, EngineConfig
from common.scoring.selection import ARGMAX, image_to_text
from papers.aro import audit, tables
from papers.aro.data import ARO_VG_RULE, AroSet
from papers.aro.sets_mini import MiniAroConfig, build_mini_set

CONFIG = MiniAroConfig(vg_relation_cases=40, vg_attribution_cases=56, test_images=10, captions_per_image=3,
                       classification_images=28, image_size=48, seed=0)
SEEDS = (0, 1)


@pytest.fixture(scope="module")
def scored(tmp_path_factory, tiny_model):
    root = tmp_path_factory.mktemp("aro_tables")
    build_mini_set(CONFIG, root / "set")
    aro = AroSet.load(root / "set")
    engine = Engine(tiny_model, EngineConfig(progress=False), cache_root=root / "cache")
    variants = {name: tables.text_variants(d, SEEDS) for name, d in aro.retrieval_sets().items()}
    # the random model stands in for the mini CLIP analog, so the audit maps it onto the paper's CLIP column
    scores = tables.score_model("mini/xs-32k", aro, variants, engine, root / "predictions")
    out = root / "results" / "aro" / "mini"
    paths = tables.write_tables([scores], SEEDS, "mini", out)
    (out / "context.json").write_text(json.dumps({"models": {"mini/xs-32k": scores.fingerprint}}))
    return aro, engine, variants, scores, paths, root


def rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_vg_table_rows_and_macros(scored):
    aro, engine, _, scores, paths, _ = scored
    table = rows(paths["table2_vg_relation"])
    relations = [r for r in table if r["kind"] == "spatial"]
    assert {r["group"] for r in relations} == {"above", "below", "to the left of", "to the right of"}
    direct = image_to_text(engine, aro.vg_relation_items(), ARO_VG_RULE).by_group()
    label = scores.label
    for r in relations:
        assert int(r["n"]) == direct[r["group"]].n
        assert float(r[label]) == pytest.approx(direct[r["group"]].accuracy, abs=5e-4)
    macro = next(r for r in table if r["group"] == "Accuracy (table2 rule)")
    assert float(macro[label]) == pytest.approx(np.mean([float(r[label]) for r in relations]), abs=2e-3)
    assert {r["group"] for r in table if r["kind"] == "macro"} >= {
        "Accuracy (paper rule)", "Accuracy (notebook rule)", "Accuracy (table2 rule, spatial)"}


def test_order_table_is_mean_and_sample_std_over_seeds(scored):
    _, engine, variants, scores, paths, _ = scored
    per_seed = [image_to_text(engine, variants["coco"].order[s], ARGMAX).by_group()["coco"].accuracy for s in SEEDS]
    row = next(r for r in rows(paths["table5_order"]) if r["model"] == scores.label)
    assert row["dataset"] == "COCO-Order"
    assert float(row["accuracy"]) == pytest.approx(np.mean(per_seed), abs=5e-4)
    assert float(row["std"]) == pytest.approx(np.std(per_seed, ddof=1), abs=5e-4)
    chance = next(r for r in rows(paths["table5_order"]) if r["model"] == "Chance-level")
    assert float(chance["accuracy"]) == pytest.approx(0.2)
    options = variants["coco"].order[SEEDS[0]][0].captions
    assert len(options) == 5 and options[0] == options[0].lower()  # the original first, normalised


def test_shuffle_tables_have_the_papers_rows(scored):
    _, _, _, scores, paths, _ = scored
    text = rows(paths["table3_text_shuffle"])
    assert [r["strategy"] for r in text] == ["No Shuffling", *tables.TABLE3_STRATEGIES.values()]
    image = rows(paths["table4_image_shuffle"])
    assert [r["strategy"] for r in image] == ["No Shuffling", *tables.IMAGE_SHUFFLES]
    assert text[0] == image[0]  # one unshuffled evaluation serves both tables
    for r in text[1:] + image[1:]:
        assert int(r["seeds"]) == len(SEEDS)
        assert 0.0 <= float(r["Text Recall@1"]) <= float(r["Text Recall@5"]) <= 1.0


def test_image_shuffle_changes_the_pixels_the_model_sees(scored):
    aro, *_ = scored
    gallery = aro.retrieval_sets()["coco"].retrieval_set()
    shuffled = tables.shuffled_images(gallery, 3, 3, seed=0)
    assert shuffled.captions == gallery.captions and len(shuffled.images) == len(gallery.images)
    assert all(ref.transform.identity == "grid-shuffle:rows=3:cols=3:seed=0:border=zero" for ref in shuffled.images)


def test_table6_and_metrics(scored):
    _, _, _, scores, paths, _ = scored
    table = {r["task"]: r[scores.label] for r in rows(paths["table6"])}
    assert list(table)[:3] == ["VG-Relation", "VG-Attribution", "COCO-PRC"]
    assert {"zero-shot shapes", "zero-shot colored-shapes", "COCO Image R@1", "COCO Text R@1"} <= set(table)
    metrics = json.loads((paths["metrics"] / "mini__xs-32k.json").read_text())
    assert metrics["VG-Relation"] == pytest.approx(float(table["VG-Relation"]), abs=5e-4)
    assert paths["figure1"].stat().st_size > 1000 and paths["figure2"].stat().st_size > 1000


def test_audit_marks_mini_cells_covered_not_compared(scored):
    *_, root = scored
    recs = audit.recompute("mini", results=root / "results")
    keys = {(r.table, r.row, r.column) for r in recs}
    assert ("Table 2", "Spatial Relationships | above", "CLIP") in keys
    assert ("Table 5", "COCO-PRC | CLIP", "Accuracy") in keys
    assert ("Table 3", "COCO Text Shuffle | CLIP | Shuffle all words", "Text Recall@1 | std") in keys
    assert ("Table 4", "COCO Image Shuffle | CLIP | Shuffle Patches (9)", "Image Recall@5") in keys
    assert ("Table 6", "Compositional Tasks | VG-Relation", "CLIP") in keys
    assert all(r.profile == "mini" and math.isnan(r.value) for r in recs)


def test_audit_compares_full_runs(scored, tmp_path):
    *_, root = scored
    full = tmp_path / "results" / "aro" / "full"
    full.mkdir(parents=True)
    for f in (root / "results" / "aro" / "mini").glob("*.csv"):
        (full / f.name).write_text(f.read_text().replace("mini-XS / 32k pairs", "ViT-B-32"))
    (full / "context.json").write_text(json.dumps({"models": {"openai/ViT-B-32": "x"}}))
    recs = audit.recompute("full", results=tmp_path / "results")
    above = next(r for r in recs if r.key == ("Table 2", "Spatial Relationships | above", "CLIP"))
    table2 = {r["group"]: r for r in rows(full / "table2_vg_relation.csv")}
    assert above.profile == "full" and above.value == pytest.approx(float(table2["above"]["ViT-B-32"]))
    samples = next(r for r in recs if r.key == ("Table 2", "Spatial Relationships | above", "# Samples"))
    assert samples.value == int(table2["above"]["n"]) and samples.tolerance_rule == "exact"


@pytest.mark.parametrize("arch", ["blip", "flava"])
def test_blip_and_flava_choose_captions_by_aros_pair_scores(arch, scored, tmp_path, monkeypatch):
    """A tiny random BLIP / FLAVA (transformers, saved here) goes through the tables as ARO's code scores it: the
    VG and Order cases by its ITM-based pair score, with the original code's ITM inputs; retrieval by its
    contrastive embeddings."""
    pytest.importorskip("transformers")
    import dataclasses

    import hf_support
    from common.scoring import matching
    from common.zoo import get_spec

    aro, _, variants, _, _, _ = scored
    saved = hf_support.save_blip(tmp_path) if arch == "blip" else hf_support.save_flava(tmp_path)
    name = "blip/itm-base-coco" if arch == "blip" else "flava/full"
    spec = dataclasses.replace(get_spec(name), pretrained=str(saved))  # the registered entry, local weights
    monkeypatch.setattr(tables, "get_spec", lambda n: spec if n == name else get_spec(n))
    model, select, protocol = tables.load_model(name, "cpu")
    expected = tables.ARO_PAIR_SCORES[arch]
    assert protocol.startswith(expected.score)
    if arch == "blip":
        assert model.itm_start_id == model.tokenizer.convert_tokens_to_ids("[ENC]")
    else:
        assert model.itm_attends_padding
    engine = Engine(model, EngineConfig(progress=False), cache_root=tmp_path / "cache")
    result = tables.score_model(name, aro, {"coco": variants["coco"]}, engine, tmp_path / "predictions", select)
    direct = matching.image_to_text(model, aro.vg_relation_items(), ARO_VG_RULE, score=expected.score)
    assert result.vg_relation.outcomes == direct.outcomes and result.vg_relation.task.endswith(
        "itm" if expected.score == "itm" else expected.score)
    contrastive = image_to_text(engine, aro.vg_relation_items(), ARO_VG_RULE)
    assert [o.scores for o in contrastive.outcomes] != [o.scores for o in direct.outcomes]
    assert set(result.text_shuffle["coco"]) >= {tables.NO_SHUFFLE}  # retrieval ran on the embeddings
