"""CoN-CLIP's CC-Neg tables (Tables 2-3, 7-9), full profile, on the tiny released-layout file of test_ccneg.py, scored
by random tiny CLIPs on the CPU and a stand-in ITM model for BLIP: the tables against a brute-force count of each
model's own scores (ties included), the metrics and context, unavailable models (an error, or left out), CoN-CLIP's
checkpoint format, and the stage's entry point.

(Named test_conclip_full.py: tests/papers/hard_positives/test_full.py has the bare name, and test modules without an
``__init__.py`` must have unique basenames.)"""
from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
# The tiny release of test_ccneg.py (one module per test file: its builder is imported, not copied).
from test_ccneg import ANNOTATIONS, EVAL_SIZE, EXPECTED_K, EXPECTED_WORDS, image_name, write_ccneg  # noqa: E402

from common.evaluation.engine import EngineConfig
from common.zoo import ModelUnavailable, random_model
from papers.conclip import ccneg, tables as full

CONFIG = EngineConfig(progress=False, num_workers=0)
TABLE3_FIELDS = full.FILES["full"].table3_fields
MODELS = {"clip": "openai/ViT-B-32", "negclip": "aro/negclip", "blip": "blip/itm-base-coco",
          "conclip": "conclip/conclip-vit-b32"}


class FakeMatcher:
    """A stand-in for BLIP's ITM head: a deterministic score of each (image, caption) pair."""

    name = "fake/itm"
    fingerprint = "fake-itm"

    def load_image(self, path: Path) -> torch.Tensor:
        with Image.open(path) as image:
            return torch.from_numpy(np.asarray(image.convert("RGB"), dtype=np.float32)).permute(2, 0, 1)

    def match_scores(self, pixels: torch.Tensor, texts) -> torch.Tensor:
        return torch.tensor([itm_score(p, t) for p, t in zip(pixels, texts)], dtype=torch.float64)


def itm_score(pixels: torch.Tensor, text: str) -> float:
    return float(pixels.mean()) / 255.0 * (1 + text.count("o")) - 0.01 * len(text)


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> ccneg.CCNegSet:
    return ccneg.load_ccneg(*write_ccneg(tmp_path_factory.mktemp("ccneg")), eval_size=EVAL_SIZE)


def evaluate(models, data, out, config, create, skip_unavailable=False, context=None):
    """The full profile's tables of ``models`` on the tiny release."""
    return full.evaluate_tables(full.full_inputs(models, data, context, skip_unavailable), out, config, create=create)


@pytest.fixture(scope="module")
def tiny():
    """A random mini-vit-xs (an open_clip config of this workspace) per zoo name, and the ITM stand-in for BLIP."""
    models = {"openai/ViT-B-32": random_model("mini-vit-xs", seed=0),
              "aro/negclip": random_model("mini-vit-xs", seed=1),
              "conclip/conclip-vit-b32": random_model("mini-vit-xs", seed=2),
              "blip/itm-base-coco": FakeMatcher()}
    return lambda name, device="cpu": models.get(name) or random_model("mini-vit-xs", seed=3)


@pytest.fixture(scope="module")
def tables(data, tiny, tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("results") / "conclip" / "full"
    return evaluate(MODELS, data, out, CONFIG, create=tiny, context={"test": True})


def _rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def brute_force_scores(model, name: str, images: Path) -> dict[int, tuple[float, float]]:
    """Entry index -> (s(I, c), s(I, c')), computed one image and two captions at a time from the test's own
    annotations."""
    out = {}
    for index in range(len(ANNOTATIONS) - EVAL_SIZE, len(ANNOTATIONS)):
        caption, negated = ANNOTATIONS[index]
        captions = [caption, negated.replace(",", "")]
        image = images / image_name(index)
        if name == "blip/itm-base-coco":
            pixels = model.load_image(image)
            out[index] = tuple(itm_score(pixels, t) for t in captions)
        else:
            with torch.no_grad():
                img = model.encode_images(model.load_image(image)[None])[0]
                txt = model.encode_texts(captions)
            out[index] = tuple(float(torch.dot(t, img)) for t in txt)  # one product each: equal texts tie exactly
    return out


def test_tables_match_a_brute_force_count_of_each_models_scores(tables, tiny, data):
    table3 = _rows(tables["table3"])
    assert [r["row"] for r in table3] == list(MODELS) and list(table3[0]) == list(TABLE3_FIELDS)
    cells = {(r["row"], r["word"], int(r["k"])): r for r in _rows(tables["by_word_k"])}
    for row in table3:
        scores = brute_force_scores(tiny(row["model"]), row["model"], data.images_dir)
        argmax = {i: s[0] >= s[1] for i, s in scores.items()}
        strict = {i: s[0] > s[1] for i, s in scores.items()}
        ties = sum(s[0] == s[1] for s in scores.values())
        assert ties >= 1  # entry 7: c' without its comma is c
        assert int(row["n"]) == EVAL_SIZE and int(row["ccneg_ties"]) == ties
        assert float(row["ccneg"]) == pytest.approx(100 * np.mean(list(argmax.values())), abs=0.006)
        assert float(row["ccneg_strict"]) == pytest.approx(100 * np.mean(list(strict.values())), abs=0.006)
        expected_cells = {}
        for word in ccneg.NEGATION_WORDS:
            for k in ccneg.KS:
                members = [i for i in scores if EXPECTED_K[i] == k and word in EXPECTED_WORDS[i]]
                if members:
                    expected_cells[(row["row"], word, k)] = members
        written = {key: c for key, c in cells.items() if key[0] == row["row"]}
        assert set(written) == set(expected_cells)
        for key, members in expected_cells.items():
            cell = written[key]
            assert int(cell["n"]) == len(members) and cell["model"] == row["model"]
            assert float(cell["accuracy"]) == pytest.approx(100 * np.mean([argmax[i] for i in members]), abs=0.006)
            assert float(cell["strict_accuracy"]) == pytest.approx(100 * np.mean([strict[i] for i in members]),
                                                                   abs=0.006)
        predictions = _rows(tables["predictions"] / f"{row['model'].replace('/', '__')}.csv")
        assert [int(p["item_id"]) for p in predictions] == list(scores)
        for p in predictions:
            s = scores[int(p["item_id"])]
            assert float(p["score_0"]) == pytest.approx(s[0], abs=1e-5)
            assert float(p["score_1"]) == pytest.approx(s[1], abs=1e-5)
            assert p["correct"] == str(int(argmax[int(p["item_id"])]))
    assert cells[("clip", "no", 1)]["n"] == "2"  # entries 4 and 9 (9 is also in not/k1)
    items = _rows(tables["predictions"] / "items.csv")
    assert [(int(r["item_id"]), r["k"], set(r["words"].split())) for r in items] == [
        (i, "" if EXPECTED_K[i] is None else str(EXPECTED_K[i]), EXPECTED_WORDS[i]) for i in EXPECTED_K]


def test_summary_and_context(tables, data):
    table3 = {r["row"]: r for r in _rows(tables["table3"])}
    summary = json.loads(tables["summary"].read_text())
    assert len(summary) <= full.SUMMARY_MAX and all(isinstance(v, float) for v in summary.values())
    assert summary["clip_ccneg"] == float(table3["clip"]["ccneg"])
    assert summary["conclip_minus_clip_ccneg"] == pytest.approx(
        float(table3["conclip"]["ccneg"]) - float(table3["clip"]["ccneg"]), abs=0.011)
    context = json.loads(tables["context"].read_text())
    assert context["test"] is True and context["profile"] == "full" and context["skipped"] == {}
    assert context["data"]["sha256"] == data.sha256 and context["data"]["items"] == EVAL_SIZE
    assert context["split_sizes"]["without"]["3"] == {"n": 1, "paper": 2328, "difference": 1 - 2328}
    assert context["models"]["blip"]["scoring"].startswith("itm (") and context["models"]["clip"]["scoring"] == \
        full.CONTRASTIVE
    assert context["models"]["clip"]["fingerprint"] != context["models"]["negclip"]["fingerprint"]
    assert set(context["paper_vs_code"]) >= {"rule", "by_k", "by_word"}


def test_summary_keeps_at_most_twelve_numbers():
    rows = [{"row": f"m-{i}", "ccneg": float(i)} for i in range(14)] + [{"row": "clip", "ccneg": 60.0},
                                                                        {"row": "conclip", "ccneg": 99.5}]
    summary = full.summary(rows)
    assert len(summary) == 12 and summary["conclip_minus_clip_ccneg"] == 39.5 and summary["m_0_ccneg"] == 0.0


def test_an_unavailable_model_stops_the_stage_or_is_left_out(data, tiny, tmp_path):
    """CoN-CLIP's real zoo entry: its checkpoint (a manual download) is not in this data root."""
    from common.zoo import create_model

    def create(name, device="cpu"):
        return create_model(name, device=device) if name.startswith("conclip/") else tiny(name)

    out = tmp_path / "out"
    with pytest.raises(ModelUnavailable, match=r"CC-Neg row 'conclip': model 'conclip/conclip-vit-b32': checkpoint "
                                               r".*conclip_vit_b32.pt not found.*common fetch conclip/conclip_vit_b32"):
        evaluate(MODELS, data, out, CONFIG, create=create)
    assert not (out / "table3.csv").exists()
    paths = evaluate(MODELS, data, out, CONFIG, create=create, skip_unavailable=True)
    assert [r["row"] for r in _rows(paths["table3"])] == ["clip", "negclip", "blip"]
    assert "not found" in json.loads(paths["context"].read_text())["skipped"]["conclip"]
    assert "conclip_minus_clip_ccneg" not in json.loads(paths["summary"].read_text())
    with pytest.raises(full.ConclipTablesError, match="no model of conclip.full.models could be loaded"):
        evaluate({"conclip": "conclip/conclip-vit-b32"}, data, out, CONFIG, create=create,
                             skip_unavailable=True)
    with pytest.raises(full.ConclipTablesError, match="empty"):
        evaluate({}, data, out, CONFIG, create=create)


def test_conclips_checkpoint_format_is_read_by_the_zoo(data, tmp_path):
    """The authors' files keep the weights under "model" (OpenAI-`clip` training dicts, as their README loads them,
    jaisidhsingh/CoN-CLIP@503388ac README.md:35 "model.load_state_dict(ckpt["): the zoo unwraps them and
    loads strictly, so a file whose weights do not fit fails in one line naming the file, what is missing, the fix and
    its download entry's note (never loads wrongly)."""
    from common.zoo import create_model, get_spec

    path = get_spec("conclip/conclip-vit-b32").checkpoint_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"model": {"logit_scale": torch.tensor(4.6)}, "optimizer": {"state": {}}, "epoch": 5}, path)
    with pytest.raises(ModelUnavailable, match="holds no ViT-B-32-quickgelu weights") as exc:
        full.score_models(full.full_inputs({"conclip": "conclip/conclip-vit-b32"}, data), CONFIG, create=create_model)
    message = str(exc.value)
    assert "\n" not in message and str(path) in message and "none of" not in message
    assert "301 of the model's 302 tensors missing" in message and "python -m common fetch conclip/" in message
    assert "CoN-CLIP" in message  # the note of papers/conclip/sources.toml's entry


def test_a_pair_scored_model_without_a_matching_head(data, tiny):
    with pytest.raises(full.ConclipTablesError, match="no image-text matching head"):
        full.score_models(full.full_inputs({"blip": "blip/itm-base-coco"}, data), CONFIG,
                          create=lambda name, device="cpu": tiny("x"))


def test_zoo_entries_of_the_released_checkpoints():
    from common import zoo
    from common.registry.sources import get_source

    for size, arch in (("b32", "ViT-B-32-quickgelu"), ("b16", "ViT-B-16-quickgelu"), ("l14", "ViT-L-14-quickgelu")):
        spec = zoo.get_spec(f"conclip/conclip-vit-{size}")
        assert spec.arch == arch and zoo.uses_quick_gelu(spec.arch) and zoo.activation_mismatch(spec) is None
        assert spec.checkpoint == f"data:{get_source(spec.source).dest}"
    assert zoo.get_spec("conclip/conclip-vit-b32").finetuned_from == "openai/ViT-B-32"
    laclip = zoo.get_spec("conclip/laclip-laion400m-vit-b32")
    assert not zoo.uses_quick_gelu(laclip.arch)  # trained with open_clip's GELU ViT-B-32
    assert full.pair_score("blip/itm-base-coco").score == "itm" and full.pair_score("flava/full") is None


def test_stage_entry_point_scores_the_params_models(data, tiny, tmp_path, monkeypatch):
    """``python -m papers.conclip.tables --profile full``: params.yaml's conclip.full (tiny stand-ins for its models),
    the file and the image folder given."""
    import common.pipeline.params
    from common.pipeline.params import read_params

    params = read_params()
    asked = []

    def stage_params(stage, **_):
        asked.append(stage)
        return {"conclip": {"full": params["conclip"]["full"]}, "engine": {"num_workers": 0}}

    monkeypatch.setattr(common.pipeline.params, "stage_params", stage_params)
    monkeypatch.setenv("DVC_STAGE", "papers/conclip/dvc.yaml:tables-full")  # as `dvc repro` sets it
    monkeypatch.setattr(full, "zoo_create", tiny)
    out = tmp_path / "results"
    assert full.main(["--profile", "full", "--data", str(data.path), "--images", str(data.images_dir),
                      "--out", str(out), "--device", "cpu", "--eval-size", str(EVAL_SIZE)]) == 0
    assert asked == ["papers/conclip/dvc.yaml:tables-full"]
    assert [r["row"] for r in _rows(out / "table3.csv")] == list(params["conclip"]["full"]["models"])
    context = json.loads((out / "context.json").read_text())
    assert context["device"] == "cpu" and context["data"]["file"] == str(data.path)
    assert (out / "by_word_k.csv").is_file() and (out / "predictions" / "items.csv").is_file()


def test_a_re_training_s_recipe_reaches_the_context_the_audit_reads(data, tiny, tmp_path, monkeypatch):
    """A full ``ft-<run>`` row trained here: its sidecar's recipe is copied into context.json (released rows get no
    entry), and the audit's reader of that context gives the row's note (every table of the row shares it)."""
    from common.audit.runs import context_recipe_notes

    monkeypatch.setenv("VLC_BUILD", str(tmp_path / "build"))
    models = tmp_path / "build" / "full" / "conclip" / "models"
    models.mkdir(parents=True)
    recipe = {"name": "conclip", "file": "papers/conclip/recipes.toml", "digest": "0123456789abcdef",
              "settings": {"epochs": 5}, "deviations": {"batch_size": {"authors": 128, "run": 4}}}
    (models / "conclip.json").write_text(json.dumps({"trainer": {}, "recipe": recipe, "epochs": 5}))
    out = tmp_path / "results" / "conclip" / "full"
    paths = evaluate({"clip": "openai/ViT-B-32", "ft-conclip": "conclip/full-conclip"}, data, out, CONFIG,
                                 create=tiny)
    context = json.loads(paths["context"].read_text())
    assert set(context["training"]) == {"ft-conclip"} and context["training"]["ft-conclip"]["recipe"] == recipe
    notes = context_recipe_notes(paths["context"], "rerun")
    assert notes == {"ft-conclip": "recipe conclip (0123456789abcdef): batch_size 4 (authors 128)"}


def test_only_runs_trained_here_carry_a_training_record(tmp_path, monkeypatch):
    """A released checkpoint (``data:``) with a JSON file beside it is not a run trained here; a ``build:`` one with
    its sidecar is (the audit names its recipe)."""
    from types import SimpleNamespace

    released, built = tmp_path / "released.safetensors", tmp_path / "ft-conclip.safetensors"
    for weights in (released, built):
        weights.write_bytes(b"")
        weights.with_suffix(".json").write_text(json.dumps({"trainer": {}, "recipe": {"name": "conclip"}}))
    specs = {"released": SimpleNamespace(checkpoint="data:released.safetensors", checkpoint_path=lambda: released),
             "built": SimpleNamespace(checkpoint="build:ft-conclip.safetensors", checkpoint_path=lambda: built)}
    monkeypatch.setattr(full, "get_spec", specs.__getitem__)
    scored = [SimpleNamespace(row="conclip", model="released"), SimpleNamespace(row="ft-conclip", model="built")]
    assert list(full.trained_here(scored)) == ["ft-conclip"]
