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

from common.audit.runs import RecipeRecordError
from common.evaluation.engine import Engine, EngineConfig
from common.evaluation.scoring.selection import ARGMAX, image_to_text
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
    from common.evaluation.scoring import matching
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


# ----------------------------------------------------------------------------------------------------------------
# issue 31: the authors' precision (fp16 for OpenAI's CLIP through clip.load) with fp32 beside it, NegCLIP's GELU
# variant beside it, ties counted, and the audit comparing every way of scoring a published column
# ----------------------------------------------------------------------------------------------------------------
def test_scorings_put_the_authors_precision_first_and_variants_after_their_model():
    plan = tables.scorings(["openai/ViT-B-32", "aro/negclip", "blip/itm-base-coco"], {"openai/ViT-B-32": "fp16"},
                           "fp32")
    assert [(s.key, s.precision, s.reference) for s in plan] == [
        ("openai/ViT-B-32", "fp16", False), ("openai/ViT-B-32@fp32", "fp32", True),
        ("aro/negclip", "fp32", False), ("aro/negclip-gelu", "fp32", False), ("blip/itm-base-coco", "fp32", False)]
    assert [s.label() for s in plan[:2]] == ["ViT-B-32", "ViT-B-32 [fp32]"]
    assert tables.scorings(["mini/xs-32k"], {}, "fp32") == [tables.Scoring("mini/xs-32k", "fp32")]


@pytest.fixture(scope="module")
def full_run(scored, tiny_model, tmp_path_factory):
    """The tiny model standing in for OpenAI's CLIP (fp16, fp32 beside it) and NegCLIP (QuickGELU and the GELU
    variant), scored and written as the full profile writes them."""
    aro, _, variants, _, _, root = scored
    out = tmp_path_factory.mktemp("aro_full") / "results" / "aro" / "full"
    plan = tables.scorings(["openai/ViT-B-32", "aro/negclip"], {"openai/ViT-B-32": "fp16"}, "fp32")
    scores = []
    for scoring in plan:
        engine = Engine(tiny_model, EngineConfig(progress=False, precision=scoring.precision),
                        cache_root=root / "cache")
        scores.append(tables.score_model(scoring.name, aro, variants, engine, out / "predictions", None, scoring))
    paths = tables.write_tables(scores, SEEDS, "full", out)
    context = {"models": {s.name: s.fingerprint for s in scores}, "scoring": tables.scoring_context(scores, plan)}
    (out / "context.json").write_text(json.dumps(context))
    return scores, paths, context, out


def test_full_run_scores_clip_at_fp16_beside_fp32_and_counts_ties(full_run):
    scores, paths, context, out = full_run
    half, single = scores[0], scores[1]
    assert (half.precision, single.precision, single.key) == ("fp16", "fp32", "openai/ViT-B-32@fp32")
    for s in (half, single):
        assert s.ties["VG-Relation"] == s.vg_relation.ties and s.ties["VG-Attribution"] == s.vg_attribution.ties
        assert {"COCO-Order seed 0", "COCO-Order seed 1", "COCO retrieval image to text"} <= set(s.ties)
    fp16_scores = np.array([o.scores for o in half.vg_relation.outcomes])
    assert np.array_equal(fp16_scores, fp16_scores.astype(np.float16).astype(np.float64))
    assert half.fingerprint == single.fingerprint
    assert (out / "predictions" / "openai__ViT-B-32" / "vg_relation.csv").is_file()
    assert (out / "predictions" / "openai__ViT-B-32@fp32" / "vg_relation.csv").is_file()
    assert (paths["metrics"] / "openai__ViT-B-32@fp32.json").is_file()
    header = rows(paths["table6"])[0]
    assert {"ViT-B-32", "ViT-B-32 [fp32]", "ViT-B-32-negclip", "ViT-B-32-negclip (GELU)"} <= set(header)
    clip = context["scoring"]["ViT-B-32"]
    assert clip["precision"] == "fp16" and "model_zoo/__init__.py:15" in clip["why"] and not clip["reference"]
    assert context["scoring"]["ViT-B-32 [fp32]"]["reference"] is True
    assert context["scoring"]["ViT-B-32-negclip (GELU)"]["variant_of"] == "aro/negclip"


def test_audit_compares_every_way_a_published_column_was_scored(full_run):
    scores, paths, _, out = full_run
    recs = audit.recompute("full", results=out.parent.parent)
    table6 = {r["task"]: r for r in rows(paths["table6"])}
    for column, labels in (("CLIP", ("ViT-B-32", "ViT-B-32 [fp32]")),
                           ("NegCLIP", ("ViT-B-32-negclip", "ViT-B-32-negclip (GELU)"))):
        cell = [r for r in recs if r.key == ("Table 6", "Compositional Tasks | VG-Relation", column)]
        assert len(cell) == 2
        assert sorted(r.value for r in cell) == sorted(float(table6["VG-Relation"][label]) for label in labels)
    clip = [r for r in recs if r.key == ("Table 5", "COCO-PRC | CLIP", "Accuracy")]
    assert sorted(r.note.split(":")[0] for r in clip) == ["fp16", "fp32"]
    assert all("exact ties: VG-Relation" in r.note for r in clip)
    negclip = [r.note for r in recs if r.key == ("Table 2", "Spatial Relationships | above", "NegCLIP")]
    assert len(negclip) == 2 and sum("model_zoo/__init__.py:71" in n for n in negclip) == 1
    samples = [r for r in recs if r.key == ("Table 2", "Spatial Relationships | above", "# Samples")]
    assert len(samples) == 1


RECIPE = {"name": "mini", "digest": "d1g", "settings": {}, "deviations": {}}


def test_tables_record_the_recipe_of_each_fine_tune_trained_here(tmp_path, monkeypatch):
    """The context's ``training`` is copied from the sidecars of the fine-tunes trained here (``build:`` weights
    fine-tuned from another model); the base model and released weights have none."""
    monkeypatch.setenv("VLC_BUILD", str(tmp_path))
    models = tmp_path / "mini" / "aro" / "models"
    models.mkdir(parents=True)
    (models / "clip-ft.json").write_text(json.dumps({"loss": {"name": "clip"}, "epochs": 2, "recipe": RECIPE}))
    training = tables.training_context(["mini/xs-32k", "aro/mini-clip-ft", "aro/mini-negclip", "aro/negclip"])
    assert training == {"aro/mini-clip-ft": {"trainer": None, "loss": {"name": "clip"}, "data": None,
                                             "final_loss": None, "recipe": RECIPE, "epochs": 2}}


@pytest.mark.parametrize("profile, name", [("mini", "aro/mini-clip-ft"), ("full", "aro/clip-ft")])
def test_audit_rows_of_fine_tunes_trained_here_name_their_recipe(scored, tmp_path, profile, name):
    *_, root = scored
    from common.zoo import get_spec

    out = tmp_path / "results" / "aro" / profile
    out.mkdir(parents=True)
    for f in (root / "results" / "aro" / "mini").glob("*.csv"):
        (out / f.name).write_text(f.read_text().replace("mini-XS / 32k pairs", get_spec(name).label))
    (out / "context.json").write_text(json.dumps({"models": {name: "x"}, "training": {name: {"recipe": RECIPE}}}))
    recs = audit.recompute(profile, results=tmp_path / "results")
    cell = next(r for r in recs if r.key == ("Table 6", "Compositional Tasks | VG-Relation", "CLIP-FT"))
    assert "recipe mini (d1g): this workspace's settings (params.yaml)" in cell.note
    above = next(r for r in recs if r.key == ("Table 2", "Spatial Relationships | above", "CLIP-FT"))
    assert "recipe mini (d1g)" in above.note
    (out / "context.json").write_text(json.dumps({"models": {name: "x"}, "training": {name: {"recipe": {"name": 1}}}}))
    with pytest.raises(RecipeRecordError, match=r"context.json: training.aro/.*clip-ft: 'recipe'"):
        audit.recompute(profile, results=tmp_path / "results")


def test_every_model_the_full_profile_trains_is_audited_against_a_published_column():
    """ARO's re-trainings (CLIP-FT, and NegCLIP re-trained on the released negatives) stand for the paper's columns,
    so their recipe notes reach the audit; a trained model without a column would be scored and never compared."""
    from common.paths import ROOT
    from common.zoo.specs import read_models_file
    from papers.aro.audit import published_column

    trained = [name for name, spec in read_models_file(ROOT / "papers" / "aro" / "models.toml").items()
               if (spec.checkpoint or "").startswith("build:full/")]
    assert trained and {name: published_column(name) for name in trained} == {
        "aro/clip-ft": "CLIP-FT", "aro/negclip-rerun": "NegCLIP"}


def test_comparisons_are_paired_differences_of_the_table6_numbers(scored):
    """NegCLIP minus CLIP-FT as Table 6's columns give it, with a paired interval around it; with one of the two not
    scored, comparisons.json says so."""
    import dataclasses

    _, _, _, scores, paths, _ = scored
    assert json.loads(paths["comparisons"].read_text())["skipped"].startswith("aro/mini-negclip, aro/mini-clip-ft")
    flipped = dataclasses.replace(scores, key="aro/mini-clip-ft", vg_relation=dataclasses.replace(
        scores.vg_relation, outcomes=[dataclasses.replace(o, correct=not o.correct)
                                      for o in scores.vg_relation.outcomes]))
    same = dataclasses.replace(scores, key="aro/mini-negclip")
    got = tables.comparisons([same, flipped], "mini", SEEDS)
    _, per_model = tables.table6([same, flipped])
    expected = 100 * (per_model["aro/mini-negclip"]["VG-Relation"] - per_model["aro/mini-clip-ft"]["VG-Relation"])
    assert got["negclip_minus_clip_ft_vg_relation"] == pytest.approx(expected, abs=0.006) != 0
    low, high = got["negclip_minus_clip_ft_vg_relation_ci_low"], got["negclip_minus_clip_ft_vg_relation_ci_high"]
    assert low <= expected <= high
    assert got["n_vg_attribution"] == 0 and "negclip_minus_clip_ft_vg_attribution" not in got  # no pair kept
    # the same Order outcomes: no difference, a zero-width interval
    assert [got[f"negclip_minus_clip_ft_coco_order{end}"] for end in ("", "_ci_low", "_ci_high")] == [0, 0, 0]
    assert got["n_coco_order"] == len(SEEDS) * len(scores.order_results["coco"][0].outcomes)
