"""CoN-CLIP's SugarCrepe tables (5, 13, 14) and Table 6, full profile: a tiny SugarCrepe in the released layout (seven
category JSON files, COCO-named images, the manifest SugarCrepe's ``full-set`` stage writes), scored by random tiny
CLIPs standing in for the rows of ``conclip.full.sugarcrepe_rows``: sugarcrepe.csv against a brute-force count of each
model's own scores (a tie counts wrong), the mini profile's columns, unavailable models (an error, or left out), and
Table 6 assembled from the full profile's three tables (``table6_full``), with each bad input named."""
from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

import common.pipeline.params as common_params
from common.benchmarks.caption_negatives import CATEGORIES, write_manifest
from common.evaluation.engine import EngineConfig
from common.files.tasks import DatasetError
from common.zoo import ModelUnavailable, random_model
from papers.conclip import columns, sugarcrepe_full as sf, table6_full as t6, tables as ccneg_tables
from papers.conclip.runs import RUNS

CONFIG = EngineConfig(progress=False, num_workers=0)
MODELS = {"clip": "openai/ViT-B-32", "conclip": "conclip/conclip-vit-b32",
          **{f"ft-{run}": f"conclip/full-{run}" for run in RUNS}}
CAPTIONS = [("A red bus parked near a tall building.", "A red bus parked near a small building."),
            ("A cat sleeping on a sofa.", "A dog sleeping on a sofa."),
            ("Two people riding horses on a beach.", "Two people riding bikes on a beach."),
            ("A white plate with a sandwich.", "A white plate with a sandwich.")]  # the same text: an exact tie
COLOURS = [(200, 30, 30), (20, 160, 40), (30, 40, 210), (240, 220, 10)]


def image_name(i: int) -> str:
    return f"{139 + i:012d}.jpg"


def examples(k: int) -> dict[str, dict]:
    """Category k's examples: three, the tie (text 3) in every category, images shared across categories."""
    return {str(10 * k + i): {"filename": image_name((i + k) % 4), "caption": CAPTIONS[(i + k) % 3][0],
                              "negative_caption": CAPTIONS[(i + k) % 3][1]} for i in range(2)} | {
        str(10 * k + 9): {"filename": image_name(3), "caption": CAPTIONS[3][0], "negative_caption": CAPTIONS[3][1]}}


@pytest.fixture(scope="module")
def released(tmp_path_factory) -> Path:
    """SugarCrepe as ``papers.sugarcrepe.sets_full`` leaves it: data/<category>.json, COCO val2017, the manifest."""
    root = tmp_path_factory.mktemp("sugarcrepe_full")
    val = root / "coco" / "val2017"
    val.mkdir(parents=True)
    for i, colour in enumerate(COLOURS):
        pixels = np.zeros((24, 24, 3), np.uint8) + np.array(colour, np.uint8)
        pixels[i * 4:i * 4 + 8, 2:14] = 255 - np.array(colour, np.uint8)
        Image.fromarray(pixels).save(val / image_name(i), format="JPEG", quality=95)
    data = root / "sugarcrepe" / "data"
    data.mkdir(parents=True)
    for k, category in enumerate(CATEGORIES):
        (data / f"{category}.json").write_text(json.dumps(examples(k)), encoding="utf-8")
    return write_manifest(root / "sugarcrepe", "data", "../coco/val2017", {"kind": "sugarcrepe"}).path


@pytest.fixture(scope="module")
def tiny():
    """A random mini-vit-xs (an open_clip config of this workspace) per zoo name."""
    models = {name: random_model("mini-vit-xs", seed=i) for i, name in enumerate(MODELS.values())}
    return lambda name, device="cpu": models[name]


@pytest.fixture(scope="module")
def tables(released, tiny, tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("results") / "conclip" / "full"
    return sf.evaluate_sugarcrepe(MODELS, released, out, CONFIG, create=tiny, context={"test": True})


def _rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def brute_force(model, manifest: Path) -> dict[str, list[tuple[float, float]]]:
    """Per category, each example's (s(I, caption), s(I, negative)) from embeddings of one image or one caption at a
    time, read from the test's own JSON files (not through the loader)."""
    images, texts = {}, {}
    out = {}
    with torch.no_grad():
        for category in CATEGORIES:
            records = json.loads((manifest.parent / "data" / f"{category}.json").read_text())
            out[category] = []
            for record in records.values():
                name = record["filename"]
                if name not in images:
                    path = manifest.parent.parent / "coco" / "val2017" / name
                    images[name] = model.encode_images(model.load_image(path)[None])[0]
                pair = []
                for text in (record["caption"], record["negative_caption"]):
                    if text not in texts:
                        texts[text] = model.encode_texts([text])[0]
                    pair.append(float(torch.dot(texts[text], images[name])))
                out[category].append(tuple(pair))
    return out


def test_sugarcrepe_csv_matches_a_brute_force_count_with_the_mini_columns(tables, tiny, released):
    rows = _rows(tables["sugarcrepe"])
    assert tuple(rows[0]) == columns.SUGARCREPE_FIELDS  # the audit maps both profiles with one set of columns
    assert [r["row"] for r in rows] == list(MODELS)
    for row in rows:
        assert row["model"] == MODELS[row["row"]]
        scores = brute_force(tiny(row["model"]), released)
        assert all(s[0] == s[1] for s in (cat[-1] for cat in scores.values()))  # the same text ties exactly
        expected = {c: round(100 * np.mean([s[0] > s[1] for s in scores[c]]), 2) for c in CATEGORIES}
        assert {c: float(row[c]) for c in CATEGORIES} == pytest.approx(expected, abs=1e-9)
        for fold, cats in {"replace": CATEGORIES[:3], "swap": CATEGORIES[3:5], "add": CATEGORIES[5:]}.items():
            assert float(row[f"sugarcrepe_{fold}"]) == pytest.approx(np.mean([expected[c] for c in cats]), abs=0.006)
        predictions = _rows(tables["predictions"] / f"{row['model'].replace('/', '__')}.csv")
        assert len(predictions) == 3 * len(CATEGORIES)
        for p in predictions:
            category, example_id = p["item_id"].split("/")
            s = scores[category][list(examples(CATEGORIES.index(category))).index(example_id)]
            assert (float(p["score_0"]), float(p["score_1"])) == pytest.approx(s, abs=1e-5)
            assert p["correct"] == str(int(s[0] > s[1])) and p["tie"] == str(int(s[0] == s[1]))
    context = json.loads(tables["context"].read_text())
    assert context["test"] is True and context["skipped"] == {} and context["n"] == {c: 3 for c in CATEGORIES}
    assert context["models"]["clip"]["ties"] == {c: 1 for c in CATEGORIES} and context["models"]["clip"]["rule"] == \
        "strict"
    assert len({m["fingerprint"] for m in context["models"].values()}) == len(MODELS)
    assert context["data"]["manifest"] == str(released) and set(context["paper_vs_code"]) >= {"rule", "folds"}


def test_an_unavailable_model_stops_the_stage_or_is_left_out(released, tiny, tmp_path):
    """ft-l2's fine-tune is not in the zoo yet: an error naming the row, or (skip_unavailable) a row left out."""
    def create(name, device="cpu"):
        if name == "conclip/full-l2":
            raise ModelUnavailable(f"model {name!r}: checkpoint not found")
        return tiny(name)

    out = tmp_path / "out"
    with pytest.raises(ModelUnavailable, match=r"SugarCrepe row 'ft-l2': model 'conclip/full-l2': checkpoint"):
        sf.evaluate_sugarcrepe(MODELS, released, out, CONFIG, create=create)
    assert not (out / "sugarcrepe.csv").exists()
    paths = sf.evaluate_sugarcrepe(MODELS, released, out, CONFIG, create=create, skip_unavailable=True)
    assert "ft-l2" not in [r["row"] for r in _rows(paths["sugarcrepe"])]
    assert "checkpoint not found" in json.loads(paths["context"].read_text())["skipped"]["ft-l2"]
    with pytest.raises(sf.SugarcrepeFullError, match="could be loaded"):
        sf.evaluate_sugarcrepe({"ft-l2": "conclip/full-l2"}, released, out, CONFIG, create=create,
                               skip_unavailable=True)


def test_rows_and_set_are_checked(released, tiny, tmp_path):
    assert list(sf.rows_to_score(MODELS, ["ft-l1", "clip"])) == ["ft-l1", "clip"]
    with pytest.raises(sf.SugarcrepeFullError, match=r"\['ft-l3'\] not in conclip.full.models"):
        sf.rows_to_score(MODELS, ["clip", "ft-l3"])
    with pytest.raises(sf.SugarcrepeFullError, match="empty"):
        sf.rows_to_score(MODELS, [])
    info = json.loads(released.read_text())
    partial = released.parent / "partial.json"
    partial.write_text(json.dumps({**info, "categories": ["replace_obj", "swap_att"]}))
    with pytest.raises(sf.SugarcrepeFullError, match=r"partial.json: categories \['replace_att'"):
        sf.evaluate_sugarcrepe(MODELS, partial, tmp_path, CONFIG, create=tiny)
    bad = tmp_path / "bad"
    (bad / "data").mkdir(parents=True)
    for k, category in enumerate(CATEGORIES):
        records = examples(k) | ({"77": {"filename": "000000000999.jpg", "caption": "x", "negative_caption": "y"}}
                                 if category == "add_att" else {})
        (bad / "data" / f"{category}.json").write_text(json.dumps(records))
    manifest = write_manifest(bad, "data", str(released.parent.parent / "coco" / "val2017"), {}).path
    with pytest.raises(DatasetError, match=r"add_att.json#77: image '000000000999.jpg' not found"):  # SugarCrepe's
        sf.evaluate_sugarcrepe(MODELS, manifest, tmp_path / "none", CONFIG, create=tiny)
    assert not (tmp_path / "none" / "sugarcrepe.csv").exists()


# ------------------------------------------------------------------------------------------------------------------
# Table 6
# ------------------------------------------------------------------------------------------------------------------
DATASETS = ("cifar10", "food101")


CCNEG_ITEMS = 400
"""CC-Neg items of the stand-in predictions: every table3.csv accuracy below (90.25, 91.25, ...) is k/400."""


def ccneg_correct(row_index: int, accuracy: float) -> list[int]:
    """One model's per-item outcomes with ``accuracy`` (points) over ``CCNEG_ITEMS`` items, the wrong ones placed
    differently per model (so that two models' outcomes differ item by item, as paired data do)."""
    wrong = round(CCNEG_ITEMS * (1 - accuracy / 100))
    start = (37 * row_index) % CCNEG_ITEMS
    misses = {(start + 7 * j) % CCNEG_ITEMS for j in range(wrong)}
    assert len(misses) == wrong
    return [0 if i in misses else 1 for i in range(CCNEG_ITEMS)]


def write_inputs(results: Path, sugarcrepe_csv: Path, skip: str | None = None) -> dict[str, dict]:
    """table3.csv and classification.csv in the columns of their stages (tables.py, zeroshot_full.py), a number per
    row that says which row it is, with CC-Neg's per-item predictions/ that give table3.csv's accuracies, zero-shot's
    comparison, and the scored sugarcrepe.csv with its sugarcrepe_predictions/; ``skip``: a row left out of
    table3.csv."""
    results.mkdir(parents=True, exist_ok=True)
    ccneg = {row: 90.0 + i + 0.25 for i, row in enumerate(MODELS)}
    top1 = {row: 60.0 + 2 * i + 0.5 for i, row in enumerate(MODELS)}
    label = {row: f"label of {row}" for row in MODELS}
    table3 = [{"row": r, "model": m, "label": label[r], "ccneg": ccneg[r], "ccneg_strict": ccneg[r] - 1,
               "ccneg_ties": 3, "n": 40000} for r, m in MODELS.items() if r != skip]
    fields = columns.classification_fields(DATASETS)
    classification = [{"row": r, "model": m, "label": label[r], **{f: 1.0 for f in fields[3:]},
                       "classification_top1": top1[r]} for r, m in MODELS.items()]
    _write(results / "table3.csv", ccneg_tables.FILES["full"].table3_fields, table3)
    _write(results / "classification.csv", fields, classification)
    correct = {r: ccneg_correct(i, ccneg[r]) for i, r in enumerate(MODELS)}
    (results / "predictions").mkdir(exist_ok=True)
    for r, m in MODELS.items():
        _write(results / "predictions" / f"{m.replace('/', '__')}.csv", ("item_id", "group", "correct", "tie"),
               [{"item_id": str(i), "group": "", "correct": c, "tie": 0} for i, c in enumerate(correct[r])])
    zeroshot = {"conclip_minus_clip_classification": top1["conclip"] - top1["clip"],
                "conclip_minus_clip_classification_ci_low": -1.5, "conclip_minus_clip_classification_ci_high": 5.5}
    (results / "zeroshot_comparisons.json").write_text(json.dumps(zeroshot))  # as zeroshot_full writes it
    if sugarcrepe_csv.parent != results:
        (results / "sugarcrepe.csv").write_bytes(sugarcrepe_csv.read_bytes())
        shutil.copytree(sugarcrepe_csv.parent / sf.PREDICTIONS_DIR, results / sf.PREDICTIONS_DIR, dirs_exist_ok=True)
    return {"ccneg": ccneg, "top1": top1, "label": label, "correct": correct, "zeroshot": zeroshot}


def _write(path: Path, fields, rows) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fields)
        writer.writeheader()
        writer.writerows(rows)


def test_table6_is_assembled_from_the_three_tables(tables, tmp_path):
    results = tmp_path / "results"
    given = write_inputs(results, tables["sugarcrepe"])
    paths = t6.write_table6(results, context={"test": True})
    rows = _rows(paths["table6"])
    assert tuple(rows[0]) == columns.TABLE6_FIELDS
    assert [r["row"] for r in rows] == [f"ft-{run}" for run in RUNS]
    sugarcrepe = {r["row"]: r for r in _rows(tables["sugarcrepe"])}
    for row in rows:
        run = row["row"].removeprefix("ft-")
        assert (row["run"], row["terms"], row["negatives"]) == (run, "+".join(RUNS[run].terms), RUNS[run].negatives)
        assert (row["model"], row["label"]) == (MODELS[row["row"]], given["label"][row["row"]])
        assert float(row["ccneg"]) == given["ccneg"][row["row"]]
        assert float(row["classification_top1"]) == given["top1"][row["row"]]
        for fold in ("replace", "add", "swap"):
            assert row[f"sugarcrepe_{fold}"] == sugarcrepe[row["row"]][f"sugarcrepe_{fold}"]
    assert rows[-1]["negatives"] == "crepe" and rows[0]["terms"] == "l1+l2+l3"
    summary = json.loads(paths["summary"].read_text())
    assert len(summary) <= t6.SUMMARY_MAX and all(isinstance(v, float) for v in summary.values())
    means = {r["row"]: np.mean([float(r[f]) for f in columns.TABLE6_FIELDS[6:]]) for r in rows}
    assert summary["ft_l1_l2_mean"] == pytest.approx(means["ft-l1-l2"], abs=0.006)
    assert summary["ft_l2_sugarcrepe"] == pytest.approx(
        np.mean([float(rows[2][f"sugarcrepe_{f}"]) for f in ("replace", "add", "swap")]), abs=0.006)
    assert summary["ft_conclip_mean_rank"] == 1 + sum(m > means["ft-conclip"] for m in means.values())
    assert summary["ft_conclip_minus_ft_crepe_negate_l1_mean"] == pytest.approx(
        means["ft-conclip"] - means["ft-crepe-negate-l1"], abs=0.011)
    context = json.loads(paths["context"].read_text())
    assert context["test"] is True and context["skipped"] == {}
    assert context["inputs"]["table3.csv"]["sha256"] and set(context["runs"]) == set(t6.TABLE6_ROWS)


def test_comparisons_are_conclip_minus_clip_over_all_seven_categories(tables, tiny, released, tmp_path):
    """comparisons.json: the released CoN-CLIP minus CLIP on SugarCrepe is the mean over the seven categories (the
    paper's 4.4 points are over all of them), counted here from each model's own scores; CC-Neg's from its per-item
    predictions; each with a paired interval around it, as the mini profile's comparisons.json."""
    results = tmp_path / "results"
    given = write_inputs(results, tables["sugarcrepe"])
    paths = t6.write_table6(results)
    compared = json.loads(paths["comparisons"].read_text())
    assert paths["comparisons"] == results / "comparisons.json"
    accuracy = {row: {c: 100 * np.mean([s[0] > s[1] for s in brute_force(tiny(MODELS[row]), released)[c]])
                      for c in CATEGORIES} for row in ("conclip", "clip")}
    by_category = [accuracy["conclip"][c] - accuracy["clip"][c] for c in CATEGORIES]
    assert compared["conclip_minus_clip_sugarcrepe"] == pytest.approx(np.mean(by_category), abs=0.006)
    replace_only = np.mean([accuracy["conclip"][c] - accuracy["clip"][c] for c in CATEGORIES[:3]])
    assert compared["conclip_minus_clip_sugarcrepe"] != pytest.approx(replace_only, abs=0.006)  # not REPLACE alone
    assert compared["conclip_minus_clip_sugarcrepe_ci_low"] <= compared["conclip_minus_clip_sugarcrepe"] <= \
        compared["conclip_minus_clip_sugarcrepe_ci_high"]
    # the interval, paired and resampled within each category (2,000 resamples, seed 0, categories in file order):
    # the same examples for both models, counted from the predictions the SugarCrepe stage wrote
    outcomes = {row: _rows(tables["predictions"] / f"{MODELS[row].replace('/', '__')}.csv") for row in MODELS}
    order = list(dict.fromkeys(p["group"] for p in outcomes["clip"]))
    assert sorted(order) == sorted(CATEGORIES)
    rng, samples = np.random.default_rng(0), []
    for category in order:
        pairs = np.array([[float(a["correct"]), float(b["correct"])] for a, b in zip(outcomes["conclip"],
                                                                                     outcomes["clip"])
                          if a["group"] == category and a["item_id"] == b["item_id"]])
        picks = rng.integers(0, len(pairs), size=(2000, len(pairs)))
        samples.append(100 * (pairs[:, 0][picks].mean(axis=1) - pairs[:, 1][picks].mean(axis=1)))
    low, high = np.percentile(np.mean(samples, axis=0), [2.5, 97.5])
    assert (compared["conclip_minus_clip_sugarcrepe_ci_low"], compared["conclip_minus_clip_sugarcrepe_ci_high"]) == \
        pytest.approx((low, high), abs=0.006)
    diff = 100 * (np.array(given["correct"]["conclip"]) - np.array(given["correct"]["clip"]))
    assert compared["conclip_minus_clip_ccneg"] == pytest.approx(diff.mean(), abs=0.006) == \
        given["ccneg"]["conclip"] - given["ccneg"]["clip"]
    assert compared["conclip_minus_clip_ccneg_ci_low"] < diff.mean() < compared["conclip_minus_clip_ccneg_ci_high"]
    assert {k: v for k, v in compared.items() if "classification" in k} == given["zeroshot"]  # zeroshot_full's
    context = json.loads(paths["context"].read_text())["comparisons"]
    assert context["file"] == "comparisons.json" and context["left_out"] == {}
    assert t6.write_table6(results)["comparisons"].read_bytes() == paths["comparisons"].read_bytes()  # seeded

    # a predictions file that does not give its table's accuracy is stale: the stage stops, naming it
    clip_file = results / sf.PREDICTIONS_DIR / f"{MODELS['clip'].replace('/', '__')}.csv"
    rows = _rows(clip_file)
    rows[0]["correct"] = str(1 - int(rows[0]["correct"]))
    _write(clip_file, list(rows[0]), rows)
    with pytest.raises(t6.Table6InputError, match=r"openai__ViT-B-32.csv: .*its table says .*stale"):
        t6.write_table6(results)
    # a SugarCrepe table without CLIP's row: that comparison is left out and named, CC-Neg's is still written
    lines = (results / "sugarcrepe.csv").read_text().splitlines()
    (results / "sugarcrepe.csv").write_text("\n".join(line for line in lines if not line.startswith("clip,")) + "\n")
    paths = t6.write_table6(results)
    compared = json.loads(paths["comparisons"].read_text())
    assert "conclip_minus_clip_sugarcrepe" not in compared and "conclip_minus_clip_ccneg" in compared
    assert "no row ['clip']" in json.loads(paths["context"].read_text())["comparisons"]["left_out"]["sugarcrepe"]
    # zero-shot without a comparison (a row not scored): left out and named; a damaged file stops the stage
    (results / "zeroshot_comparisons.json").write_text("{}")
    paths = t6.write_table6(results)
    assert not any("classification" in k for k in json.loads(paths["comparisons"].read_text()))
    assert "zeroshot_comparisons.json" in json.loads(paths["context"].read_text())["comparisons"]["left_out"][
        "classification"]
    (results / "zeroshot_comparisons.json").write_text('{"conclip_minus_clip_classification": 1.0}')
    with pytest.raises(t6.Table6InputError, match=r"zeroshot_comparisons.json: only"):
        t6.write_table6(results)
    (results / "zeroshot_comparisons.json").unlink()
    with pytest.raises(t6.Table6InputError, match=r"zeroshot_comparisons.json: missing; zeroshot-full writes it "
                                                   r"with classification.csv \(run that stage again\)"):
        t6.write_table6(results)


def test_table6_names_a_missing_or_bad_input(tables, tmp_path):
    results = tmp_path / "results"
    write_inputs(results, tables["sugarcrepe"], skip="ft-l2")
    with pytest.raises(t6.Table6InputError, match=r"table3.csv: no row 'ft-l2'"):
        t6.write_table6(results)
    assert not (results / "table6.csv").exists()
    paths = t6.write_table6(results, skip_unavailable=True)
    assert [r["row"] for r in _rows(paths["table6"])] == ["ft-conclip", "ft-l1", "ft-l1-l2", "ft-crepe-negate-l1"]
    assert "table3.csv" in json.loads(paths["context"].read_text())["skipped"]["ft-l2"]
    assert "ft_l2_mean" not in json.loads(paths["summary"].read_text())

    (results / "classification.csv").unlink()
    with pytest.raises(t6.Table6InputError, match=r"classification.csv: not found"):
        t6.write_table6(results, skip_unavailable=True)
    write_inputs(results, tables["sugarcrepe"])
    text = (results / "table3.csv").read_text().replace("conclip/full-l1-l2", "conclip/full-other")
    (results / "table3.csv").write_text(text)
    with pytest.raises(t6.Table6InputError, match=r"row 'ft-l1-l2' names different models"):
        t6.write_table6(results)
    write_inputs(results, tables["sugarcrepe"])
    lines = (results / "sugarcrepe.csv").read_text().splitlines()
    broken = [",".join(v if i != 10 else "n/a" for i, v in enumerate(line.split(","))) if line.startswith("ft-l1,")
              else line for line in lines]
    (results / "sugarcrepe.csv").write_text("\n".join(broken) + "\n")
    with pytest.raises(t6.Table6InputError, match=r"sugarcrepe.csv: row 'ft-l1': .* must be numbers"):
        t6.write_table6(results)
    (results / "sugarcrepe.csv").write_text("row,model,label\nft-l1,x,y\n")
    with pytest.raises(t6.Table6InputError, match=r"sugarcrepe.csv: no column \['sugarcrepe_replace'"):
        t6.write_table6(results)


def test_entry_points_read_the_stage_parameters(released, tiny, tmp_path, monkeypatch, capsys):
    params = {"engine": {"num_workers": 0}, "conclip": {"full": {
        "models": MODELS, "sugarcrepe_rows": ["clip", "ft-conclip"], "skip_unavailable": False}}}
    stages = []
    monkeypatch.setattr(common_params, "stage_params", lambda stage, **_: stages.append(stage) or params)
    monkeypatch.setattr(sf, "zoo_create", tiny)
    out = tmp_path / "results"
    monkeypatch.setenv("DVC_STAGE", "papers/conclip/dvc.yaml:sugarcrepe-full")  # as `dvc repro` sets it
    assert sf.main(["--out", str(out), "--sugarcrepe", str(released), "--device", "cpu"]) == 0
    assert [r["row"] for r in _rows(out / "sugarcrepe.csv")] == ["clip", "ft-conclip"]
    assert json.loads((out / "sugarcrepe_context.json").read_text())["rows_from"] == "conclip.full.sugarcrepe_rows"
    monkeypatch.setenv("DVC_STAGE", "papers/conclip/dvc.yaml:table6-full")
    with pytest.raises(t6.Table6InputError, match="table3.csv: not found"):
        t6.main(["--out", str(out)])
    params["conclip"]["full"]["skip_unavailable"] = True
    write_inputs(out, out / "sugarcrepe.csv")
    assert t6.main(["--out", str(out)]) == 0
    assert [r["row"] for r in _rows(out / "table6.csv")] == ["ft-conclip"]
    assert stages == ["papers/conclip/dvc.yaml:sugarcrepe-full"] + ["papers/conclip/dvc.yaml:table6-full"] * 2
    assert "ft-conclip" in capsys.readouterr().out


def test_table6_and_sugarcrepe_are_stages_of_their_own():
    """Table 6 reads CSV files: editing it must not rescore SugarCrepe on a GPU, nor the other way round."""
    from common.training.job import code_files

    table6, score = code_files("papers.conclip.table6_full"), code_files("papers.conclip.sugarcrepe_full")
    assert "papers/conclip/sugarcrepe_full.py" not in table6 and "common/evaluation/engine.py" not in table6
    assert "papers/conclip/table6_full.py" not in score
