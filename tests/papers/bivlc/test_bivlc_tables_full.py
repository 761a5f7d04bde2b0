"""BiVLC's full profile's tables (``papers.bivlc.tables --profile full``) on a tiny snapshot in the Hugging Face layout (parquet
shards of the test split, images as {bytes, path} structs), scored by random tiny CLIPs on the CPU: the tables against
a brute-force evaluation of each model's own embeddings (ties included), SugarCrepe's micro average, the detectors
against hand-computed probabilities, the predictions re-scored by the released-file audit, and the input errors."""
from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from PIL import Image

from common.evaluation.engine import EngineConfig
from common.files.tasks import DatasetError
from common.zoo import ModelUnavailable, random_model
from papers.bivlc import tables as full
from sugarcrepe_support import write_sugarcrepe_set  # noqa: E402

CONFIG = EngineConfig(progress=False, num_workers=0)
MODELS = {"clip": "openai/ViT-B-32", "trohn-img": "bivlc/clip-trohn-img"}
COLOURS = [(200, 30, 30), (30, 200, 30), (30, 30, 200), (220, 220, 40), (40, 220, 220), (120, 60, 160)]
# (photo colour, generated colour, caption, negative caption, type, subtype); instance 4 reuses instance 0's photo,
# instance 5's negative caption equals its caption (every text comparison ties: I2T wrong).
RECORDS = [
    (0, 1, "a red circle left of a square", "a square left of a red circle", "swap", "obj"),
    (2, 3, "a big white dog", "a small white dog", "replace", "att"),
    (4, 5, "a cat is on the table", "a cat is under the table", "replace", "rel"),
    (1, 2, "a green star", "a green star and a dog", "add", "obj"),
    (0, 4, "a red circle left of a square", "a blue circle left of a square", "replace", "obj"),
    (3, 5, "a yellow square", "a yellow square", "add", "att"),
]


def png(colour, size=(40, 30), fmt="PNG") -> bytes:
    buf = io.BytesIO()
    pixels = np.zeros((size[1], size[0], 3), np.uint8) + np.array(colour, np.uint8)
    pixels[5:15, 5:20] = 255 - np.array(colour, np.uint8)  # some structure
    Image.fromarray(pixels).save(buf, fmt)
    return buf.getvalue()


def write_snapshot(root: Path, records=RECORDS, shards=(4,)) -> Path:
    """``data/test-0000k-of-0000n.parquet`` (split at ``shards``) and a decoy validation shard."""
    snapshot = root / "BiVLC"
    (snapshot / "data").mkdir(parents=True)
    image_type = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    rows = [{"image": {"bytes": png(COLOURS[a], fmt="JPEG" if k % 2 else "PNG"), "path": f"{k}.jpg"},
             "caption": c, "negative_caption": n,
             "negative_image": {"bytes": png(COLOURS[b], (32, 32)), "path": None}, "type": t, "subtype": s}
            for k, (a, b, c, n, t, s) in enumerate(records)]
    # instance 4's photo is byte-identical to instance 0's (same colour, same format): make it so
    rows[4]["image"]["bytes"] = rows[0]["image"]["bytes"]
    schema = pa.schema([("image", image_type), ("caption", pa.string()), ("negative_caption", pa.string()),
                        ("negative_image", image_type), ("type", pa.string()), ("subtype", pa.string())])
    cuts = [0, *shards, len(rows)]
    n = len(cuts) - 1
    for i in range(n):
        table = pa.Table.from_pylist(rows[cuts[i]:cuts[i + 1]], schema=schema)
        pq.write_table(table, snapshot / "data" / f"test-{i:05d}-of-{n:05d}.parquet")
    decoy = snapshot / "data" / "validation-00000-of-00001.parquet"
    pq.write_table(pa.Table.from_pylist(rows[:1], schema=schema), decoy)
    return snapshot


def evaluate(models, data, out, sugarcrepe=None, detectors=None, engine_config=None, create=None,
             skip_unavailable=False, context=None, fetch=None) -> dict[str, Path]:
    """The full profile's tables of ``models`` (row -> zoo model) on ``data`` (``tables.full_inputs``)."""
    inputs = full.full_inputs(models, data, sugarcrepe, detectors, context, create=create,
                              skip_unavailable=skip_unavailable)
    return full.evaluate_tables(inputs, out, engine_config, **({"fetch": fetch} if fetch else {}))


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> full.BivlcSet:
    root = tmp_path_factory.mktemp("bivlc")
    return full.load_bivlc(write_snapshot(root), root / "images", expected=len(RECORDS))


@pytest.fixture(scope="module")
def tiny():
    models = {"openai/ViT-B-32": random_model("mini-vit-xs", seed=0),
              "bivlc/clip-trohn-img": random_model("mini-vit-xs", seed=1)}

    def create(name, device="cpu"):
        if name not in models:
            raise ModelUnavailable(f"{name}: not in this test")
        return models[name]
    return create


@pytest.fixture(scope="module")
def sugarcrepe(tmp_path_factory):
    root = tmp_path_factory.mktemp("sugarcrepe")
    images = root / "val2017"
    images.mkdir()
    records = []
    for k, (colour, caption, negative) in enumerate([(COLOURS[0], "a red circle", "a blue circle"),
                                                     (COLOURS[1], "a green star", "a green star"),
                                                     (COLOURS[2], "a blue square", "a red square")]):
        (images / f"{k}.png").write_bytes(png(colour))
        records.append((f"{k}.png", caption, negative))
    manifest = write_sugarcrepe_set(root / "set", images, records)
    return full.load_sugarcrepe(manifest)[0], records, images


def heads(tmp: Path, dim: int, seed: int) -> dict[str, Path]:
    from safetensors.torch import save_file

    g = torch.Generator().manual_seed(seed)
    out = {}
    for tower in ("image", "text"):
        path = tmp / f"{seed}-{tower}.best.loss.safetensors"
        # raw tower outputs have norms ~8 in the random mini-vit-xs: weights ~0.3 keep the logits unsaturated
        save_file({"head.weight": torch.randn(1, dim, generator=g) * 0.3, "head.bias": torch.randn(1, generator=g)},
                  str(path))
        out[tower] = path
    return out


@pytest.fixture(scope="module")
def detector_specs(tmp_path_factory, tiny):
    tmp = tmp_path_factory.mktemp("heads")
    dim = int(tiny("openai/ViT-B-32").encode_texts(["a"]).shape[-1])
    h = heads(tmp, dim, 7)
    return {"clipdet": full.DetectorSpec("openai/ViT-B-32", h["image"], h["text"], "CLIPDet")}


@pytest.fixture(scope="module")
def tables(data, tiny, sugarcrepe, detector_specs, tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("results") / "bivlc" / "full"
    return evaluate(MODELS, data, out, sugarcrepe[0], detector_specs, CONFIG, create=tiny,
                                context={"test": True})


def _rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def embed(model, paths, texts):
    with torch.no_grad():
        img = model.encode_images(torch.stack([model.load_image(p) for p in paths]))
        txt = model.encode_texts(list(texts))
    return img.double().numpy(), txt.double().numpy()


def raw(model, paths, texts):
    """The towers' unnormalised outputs, one call each (what the authors' probes read)."""
    with torch.no_grad():
        img = model.model.encode_image(torch.stack([model.load_image(p) for p in paths]), normalize=False)
        txt = model.model.encode_text(model.tokenize(list(texts)), normalize=False)
    return img.double().numpy(), txt.double().numpy()


def brute_force(model, data: full.BivlcSet) -> list[dict]:
    """Every instance's 2x2 similarities and decisions, one instance at a time, by the definitions."""
    out = []
    for it in data.items:
        img, txt = embed(model, it.images, it.captions)
        s = txt @ img.T  # s[c, i]
        if it.captions[0] == it.captions[1]:
            s[1] = s[0]  # equal texts embed equally: the engine encodes a distinct text once
        d = {"Ipos2T": s[0, 0] > s[1, 0], "Ineg2T": s[1, 1] > s[0, 1], "Tpos2I": s[0, 0] > s[0, 1],
             "Tneg2I": s[1, 1] > s[1, 0]}
        d["I2T"], d["T2I"] = d["Ipos2T"] and d["Ineg2T"], d["Tpos2I"] and d["Tneg2I"]
        d["group"] = d["I2T"] and d["T2I"]
        ties = sum(a == b for a, b in ((s[0, 0], s[1, 0]), (s[1, 1], s[0, 1]), (s[0, 0], s[0, 1]), (s[1, 1], s[1, 0])))
        out.append({"sim": s, "d": d, "ties": ties, "category": it.group})
    return out


def pct(values) -> float:
    return 100.0 * float(np.mean(values))


def test_snapshot_becomes_group_items(data):
    assert len(data.items) == len(RECORDS) and [p.name for p in data.files] == [
        "test-00000-of-00002.parquet", "test-00001-of-00002.parquet"]
    for it, (_, _, c, n, t, s) in zip(data.items, RECORDS):
        assert it.captions == (c, n) and it.group == f"{t}-{s}"
        assert all(p.parent == data.image_dir and p.is_file() for p in it.images)
    assert data.items[4].images[0] == data.items[0].images[0]  # identical bytes, one cached file
    assert data.items[0].images[0].suffix == ".png" and data.items[1].images[0].suffix == ".jpg"
    assert data.items[5].origin == "test-00001-of-00002.parquet: row 1"
    assert data.counts() == {"replace-obj": 1, "replace-att": 1, "replace-rel": 1, "swap-obj": 1, "add-obj": 1,
                             "add-att": 1}
    from papers.bivlc.released import CATEGORIES, TYPES

    assert full.CATEGORIES == CATEGORIES and full.TYPES == TYPES


def test_tables_match_a_brute_force_evaluation(tables, tiny, data, sugarcrepe):
    table2 = _rows(tables["table2"])
    assert [r["row"] for r in table2] == list(MODELS) and list(table2[0]) == list(full.TABLE2_FIELDS)
    table4 = _rows(tables["table4"])
    items, records, images = sugarcrepe
    for row in table2:
        model = tiny(row["model"])
        ref = brute_force(model, data)
        assert int(row["n"]) == len(RECORDS) and int(row["ties"]) == sum(r["ties"] for r in ref)
        assert int(row["ties"]) >= 2  # instance 5: both image-to-text comparisons tie
        for m in (*full.MAIN, *full.FINER):
            assert float(row[m]) == pytest.approx(pct([r["d"][m] for r in ref]), abs=0.006), m
        # SugarCrepe: every category holds the same three records, so the micro average is their mean
        wins = []
        for name, caption, negative in records:
            img, txt = embed(model, [images / name], [caption, negative])
            s = txt @ img[0]
            wins.append(caption != negative and s[0] > s[1])
        assert float(row["sugarcrepe"]) == pytest.approx(pct(wins), abs=0.006)
        assert not wins[1]  # equal captions tie: wrong
        (mine,) = [r for r in table4 if r["row"] == row["row"]]
        assert list(mine) == list(full.TABLE4_FIELDS)
        for key in full.TABLE4_KEYS:
            members = [r for r in ref if key in (r["category"], r["category"].split("-")[0])]
            if not members:  # swap-att: not in the tiny split
                assert mine[f"{key}_n"] == "" and mine[f"{key}_I2T"] == "", key
                continue
            assert int(mine[f"{key}_n"]) == len(members), key
            assert [float(mine[f"{key}_{m}"]) for m in full.MAIN] == pytest.approx(
                [pct([r["d"][m] for r in members]) for m in full.MAIN], abs=0.006), key
        predictions = _rows(tables["predictions"] / f"{row['model'].replace('/', '__')}.csv")
        assert [p["item_id"] for p in predictions] == [it.item_id for it in data.items]
        for p, r in zip(predictions, ref):
            got = np.array([[float(p["sim_C0_I0"]), float(p["sim_C0_I1"])],
                            [float(p["sim_C1_I0"]), float(p["sim_C1_I1"])]])
            assert got == pytest.approx(r["sim"], abs=1e-5)
            assert p["group_score"] == str(r["d"]["group"]) and p["text_score_i0"] == str(r["d"]["Ipos2T"])


def test_predictions_rescore_with_the_released_file_audit(tables):
    from papers.bivlc.released import score_released_file

    for row in _rows(tables["table2"]):
        scored = score_released_file(tables["predictions"] / f"{row['model'].replace('/', '__')}.csv")
        assert scored["format"] == "bivlc-instances" and scored["decided_from"] == "similarities"
        for mine, theirs in (("I2T", "I2T"), ("T2I", "T2I"), ("group", "Group"), *((m, m) for m in full.FINER)):
            assert float(row[mine]) == pytest.approx(scored["overall"][theirs], abs=0.006)
        assert sum(scored["ties"].values()) == int(row["ties"])


def test_detectors_match_hand_computed_probabilities(tables, tiny, data, detector_specs, sugarcrepe):
    from safetensors.torch import load_file

    (row,) = _rows(tables["table5"])
    spec = detector_specs["clipdet"]
    model = tiny(spec.encoder)

    def prob(path, x):
        state = load_file(str(path))
        w, b = state["head.weight"].double().numpy()[0], float(state["head.bias"])
        return 1.0 / (1.0 + np.exp(-(x @ w + b)))

    decisions, img_ok, txt_ok = [], [], []
    for it in data.items:
        img, txt = raw(model, it.images, it.captions)
        pi, pt = prob(spec.image_head, img), prob(spec.text_head, txt)
        if it.captions[0] == it.captions[1]:
            pt[1] = pt[0]  # the engine encodes a distinct text once (a batch of two may differ in the last bits)
        syn = lambda p: p > 0.5  # noqa: E731
        d = {"Ipos2T": (not syn(pi[0])) and pt[0] < pt[1], "Ineg2T": syn(pi[1]) and pt[1] > pt[0],
             "Tpos2I": (not syn(pt[0])) and pi[0] < pi[1], "Tneg2I": syn(pt[1]) and pi[1] > pi[0]}
        d["I2T"], d["T2I"] = d["Ipos2T"] and d["Ineg2T"], d["Tpos2I"] and d["Tneg2I"]
        d["group"] = d["I2T"] and d["T2I"]
        decisions.append(d)
        img_ok += [not syn(pi[0]), syn(pi[1])]
        txt_ok += [not syn(pt[0]), syn(pt[1])]
    assert row["row"] == "clipdet" and row["label"] == "CLIPDet" and int(row["n"]) == len(RECORDS)
    assert float(row["image_detection"]) == pytest.approx(pct(img_ok), abs=0.006)
    assert float(row["text_detection"]) == pytest.approx(pct(txt_ok), abs=0.006)
    for m in (*full.MAIN, *full.FINER):
        assert float(row[m]) == pytest.approx(pct([d[m] for d in decisions]), abs=0.006), m
    assert int(row["text_ties"]) == 1  # instance 5's two captions are one text
    items, records, images = sugarcrepe
    wins = []
    for _, caption, negative in records:
        _, txt = raw(model, [images / records[0][0]], [caption, negative])
        p = prob(spec.text_head, txt)
        wins.append(caption != negative and p[0] < p[1])
    assert float(row["sugarcrepe"]) == pytest.approx(pct(wins), abs=0.006)


def test_summary_and_context(tables, data):
    table2 = {r["row"]: r for r in _rows(tables["table2"])}
    summary = json.loads(tables["summary"].read_text())
    assert len(summary) <= full.SUMMARY_MAX and all(isinstance(v, float) for v in summary.values())
    assert summary["clip_group"] == float(table2["clip"]["group"])
    assert summary["trohn_img_t2i"] == float(table2["trohn-img"]["T2I"])
    assert "clipdet_group" in summary
    context = json.loads(tables["context"].read_text())
    assert context["test"] is True and context["profile"] == "full" and context["data"]["instances"] == len(RECORDS)
    assert set(context["data"]["files"]) == {p.name for p in data.files}
    assert context["models"]["clip"]["fingerprint"] and context["skipped"] == {}
    assert context["sugarcrepe_examples"] == 21


def _decisions(path: Path, column: str) -> np.ndarray:
    """One model's 0/1 decisions per instance from its ``predictions/<model>.csv`` (the released files' columns)."""
    return np.array([{"True": 1.0, "False": 0.0}[r[column]] for r in _rows(path)])


def test_comparisons_are_the_mini_keys_paired_over_the_instances(tables, tiny, data):
    """``comparisons.json`` of the full profile: the mini profile's keys (the same code, ``papers.bivlc.findings``),
    each paired difference the mean of the per-instance differences of the written predictions (and of a brute-force
    evaluation), with the 95% bootstrap interval over those instances around it."""
    from common.evaluation.stats import bootstrap_mean_ci

    comp = json.loads(tables["comparisons"].read_text())
    table2 = {r["row"]: r for r in _rows(tables["table2"])}
    (det,) = _rows(tables["table5"])
    # every key the mini's comparisons.json has for the rows this run scored (CLIP, TROHN-Img, the detector CLIPDet)
    expected = ["clip_i2t", "clip_t2i", "clip_group", "clip_i2t_minus_t2i", "clip_i2t_minus_t2i_ci_low",
                "clip_i2t_minus_t2i_ci_high", "t2i_below_i2t_for_every_pretrained", "clip_i2t_minus_group",
                "clip_i2t_minus_group_ci_low", "clip_i2t_minus_group_ci_high", "trohn_img_i2t", "trohn_img_t2i",
                "trohn_img_group", "trohn_img_sugarcrepe", "trohn_img_minus_clip_t2i",
                "trohn_img_minus_clip_t2i_ci_low", "trohn_img_minus_clip_t2i_ci_high", "trohn_img_minus_clip_group", "trohn_img_minus_clip_group_ci_low",
                "trohn_img_minus_clip_group_ci_high", "trohn_img_gap_closed", "best_sugarcrepe_row", "best_group_row",
                "trohn_text_best_sugarcrepe_not_best_group", "clipdet_text_detection", "clipdet_image_detection",
                "clipdet_i2t", "clipdet_t2i", "clipdet_group", "clipdet_sugarcrepe"]
    assert list(comp) == expected
    predictions = {row: tables["predictions"] / f"{r['model'].replace('/', '__')}.csv" for row, r in table2.items()}
    column = {"I2T": "text_score", "T2I": "image_score", "group": "group_score"}
    reference = {row: brute_force(tiny(r["model"]), data) for row, r in table2.items()}
    for key, (a, a_metric, b, b_metric) in {
            "clip_i2t_minus_t2i": ("clip", "I2T", "clip", "T2I"),
            "clip_i2t_minus_group": ("clip", "I2T", "clip", "group"),
            "trohn_img_minus_clip_t2i": ("trohn-img", "T2I", "clip", "T2I"),
            "trohn_img_minus_clip_group": ("trohn-img", "group", "clip", "group")}.items():
        diff = 100.0 * (_decisions(predictions[a], column[a_metric]) - _decisions(predictions[b], column[b_metric]))
        brute = 100.0 * np.array([float(ra["d"][a_metric]) - float(rb["d"][b_metric])
                                  for ra, rb in zip(reference[a], reference[b])])
        assert len(diff) == len(RECORDS) and np.array_equal(diff, brute), key
        ci = bootstrap_mean_ci(diff, n_resamples=2000, seed=0)
        assert comp[key] == pytest.approx(float(np.mean(diff)), abs=0.006), key
        assert comp[key] == pytest.approx(float(table2[a][a_metric]) - float(table2[b][b_metric]), abs=0.011), key
        assert (comp[f"{key}_ci_low"], comp[f"{key}_ci_high"]) == pytest.approx((ci.low, ci.high), abs=0.006), key
        assert comp[f"{key}_ci_low"] <= comp[key] <= comp[f"{key}_ci_high"], key
    assert [comp[f"clip_{m.lower()}"] for m in full.MAIN] == [float(table2["clip"][m]) for m in full.MAIN]
    assert comp["trohn_img_sugarcrepe"] == float(table2["trohn-img"]["sugarcrepe"])
    assert comp["t2i_below_i2t_for_every_pretrained"] == (float(table2["clip"]["T2I"]) < float(table2["clip"]["I2T"]))
    assert comp["clipdet_group"] == float(det["group"]) and comp["clipdet_sugarcrepe"] == float(det["sugarcrepe"])
    assert comp["trohn_text_best_sugarcrepe_not_best_group"] is None  # no TROHN-Text row in this run


def test_comparisons_leave_out_the_rows_not_scored(data, tiny, tmp_path):
    """A run without TROHN-Img and without SugarCrepe: no TROHN-Img key, no best SugarCrepe row; CLIP's keys stay."""
    paths = evaluate({"clip": "openai/ViT-B-32"}, data, tmp_path / "out", engine_config=CONFIG,
                                 create=tiny)
    comp = json.loads(paths["comparisons"].read_text())
    assert not [k for k in comp if k.startswith("trohn_img")]
    assert comp["best_sugarcrepe_row"] is None and comp["best_group_row"] == "clip"
    assert comp["clip_i2t_minus_t2i_ci_low"] <= comp["clip_i2t_minus_t2i"] <= comp["clip_i2t_minus_t2i_ci_high"]


def test_unavailable_model_stops_or_is_left_out(data, tiny, tmp_path):
    models = {**MODELS, "negclip": "aro/negclip"}
    with pytest.raises(ModelUnavailable, match="negclip"):
        evaluate(models, data, tmp_path / "a", engine_config=CONFIG, create=tiny)
    assert not (tmp_path / "a" / "table2.csv").exists()
    paths = evaluate(models, data, tmp_path / "b", engine_config=CONFIG, create=tiny,
                                 skip_unavailable=True)
    assert [r["row"] for r in _rows(paths["table2"])] == list(MODELS)
    assert all(r["sugarcrepe"] == "" for r in _rows(paths["table2"]))
    assert "negclip" in json.loads(paths["context"].read_text())["skipped"]
    assert _rows(paths["table5"]) == [] and paths["table5"].read_text().startswith("row,encoder,")


def test_bad_snapshots_name_the_file_and_row(tmp_path):
    with pytest.raises(full.BivlcTablesError, match="fetch bivlc/BiVLC"):
        full.load_bivlc(tmp_path / "nothing", tmp_path / "images")
    bad = list(RECORDS)
    bad[2] = (4, 5, "a cat", "a dog", "shuffle", "obj")
    snapshot = write_snapshot(tmp_path / "a", bad)
    with pytest.raises(DatasetError, match=r"test-00000-of-00002.parquet: row 2: unknown category"):
        full.load_bivlc(snapshot, tmp_path / "images", expected=None)
    snapshot = write_snapshot(tmp_path / "b")
    with pytest.raises(DatasetError, match=r"6 instances in the test split, expected 2933 \(params.yaml "
                                           r"bivlc.full.n_instances\)"):
        full.load_bivlc(snapshot, tmp_path / "images", expected=2933)


def test_entry_point_reads_params_and_writes_results(data, tiny, tmp_path, monkeypatch, sugarcrepe):
    from common.pipeline import params as common_params

    snapshot = write_snapshot(tmp_path / "data")
    section = {"bivlc": {"full": {"models": {"clip": "openai/ViT-B-32"}, "skip_unavailable": False}},
               "engine": {}}
    monkeypatch.setattr(common_params, "stage_params", lambda stage, **_: section)
    monkeypatch.setenv("DVC_STAGE", "papers/bivlc/dvc.yaml:tables-full")  # as `dvc repro` sets it
    monkeypatch.setattr(full, "zoo_create", tiny)
    monkeypatch.setattr(full, "engine_config", lambda params: CONFIG)
    out = tmp_path / "out"
    assert full.main(["--profile", "full", "--data", str(snapshot), "--images", str(tmp_path / "img"), "--no-sugarcrepe", "--any-size",
                      "--out", str(out), "--device", "cpu"]) == 0
    rows = _rows(out / "table2.csv")
    assert [r["row"] for r in rows] == ["clip"] and int(rows[0]["n"]) == len(RECORDS)
    assert math.isfinite(float(rows[0]["group"]))


def test_summary_keeps_every_group_first_and_at_most_twelve_numbers():
    rows2 = [{"row": f"m-{k}", "group": float(k), "T2I": 50.0 + k} for k in range(8)]
    rows5 = [{"row": "clipdet", "group": 9.5}]
    summary = full.summary(rows2, rows5)
    assert len(summary) == full.SUMMARY_MAX
    assert [summary[f"m_{k}_group"] for k in range(8)] == [float(k) for k in range(8)]
    assert summary["clipdet_group"] == 9.5 and summary["m_2_t2i"] == 52.0 and "m_3_t2i" not in summary


def released_heads(tmp: Path, model, seed: int) -> dict[str, Path]:
    """Heads in the layout of the authors' released files
    (``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_img_classifier.py:157-164`` "'model_state_dict':
    model.state_dict(),"): the
    ``torch.save`` of {"epoch", "model_state_dict", "optimizer_state_dict", "loss"}, the state dict of
    ``CLIP_classifier`` (``image_encoder.*``: the visual tower) / ``CLIP_text_classifier`` (``text_encoder.*``: the
    CLIP model with ``visual = None``) with ``classifier.weight`` / ``classifier.bias``."""
    g = torch.Generator().manual_seed(seed)
    dim = model.model.text_projection.shape[-1]
    out = {}
    for tower, prefix in (("image", "image_encoder."), ("text", "text_encoder.")):
        state = {f"{prefix}{k}": v.clone() for k, v in
                 (model.model.visual.state_dict().items() if tower == "image" else
                  ((k, v) for k, v in model.model.state_dict().items() if not k.startswith("visual.")))}
        state["classifier.weight"] = torch.randn(1, dim, generator=g) * 0.5
        state["classifier.bias"] = torch.randn(1, generator=g)
        path = tmp / f"best_{tower}_VIT-B-32_{seed}.pt"
        torch.save({"epoch": 0, "model_state_dict": state, "optimizer_state_dict": {"state": {}, "param_groups": []},
                    "loss": torch.tensor(0.5)}, path)
        out[tower] = path
    return out


def write_released_outputs(path: Path, image: np.ndarray, text: np.ndarray, batch: int) -> Path:
    """``BiVLC_Classifier_CORRECT_<run>.csv`` as the released detector evaluation writes it
    (``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_evaluation_BiVLC.py:122-147`` "text_list.append(text.item())";
    ``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_evaluation_BiVLC.py:212``
    "f'BiVLC_Classifier_CORRECT_{args.run_name}.csv'"): per batch of ``batch`` instances, the naturals' rows
    (label 0) then the synthetics' (label 1)."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, quoting=csv.QUOTE_ALL)
        w.writerow(["text_pred", "img_pred", "label"])
        for start in range(0, len(image), batch):
            for col in (0, 1):
                for k in range(start, min(len(image), start + batch)):
                    w.writerow([repr(float(text[k, col])), repr(float(image[k, col])), f"{float(col)}"])
    return path


def test_released_heads_score_on_raw_outputs_beside_their_released_outputs(data, tiny, tmp_path):
    """The authors' head files (written here in their layout, on a tiny random encoder) are read with the tower they
    were saved with, scored on the raw tower outputs exactly as ``CLIP_classifier.forward`` does, and compared instance
    by instance with released outputs in the authors' CSV layout (two batches); one flipped probability in the
    released file is one instance with a decision differing. Heads saved with another encoder's tower are named."""
    model = tiny("openai/ViT-B-32")
    heads_ = released_heads(tmp_path, model, 3)
    linear = {t: torch.load(p, weights_only=True)["model_state_dict"] for t, p in heads_.items()}

    # sigmoid(classifier(encoder(x))), as
    # IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_evaluation_BiVLC.py:127-131 "img_prob = sigmoid(img_logits)"
    def authors(tower, x):
        w, b = linear[tower]["classifier.weight"].double().numpy()[0], float(linear[tower]["classifier.bias"])
        return 1.0 / (1.0 + np.exp(-(x @ w + b)))

    image, text = [], []
    for it in data.items:
        img, txt = raw(model, it.images, it.captions)
        image.append(authors("image", img))
        text.append(authors("text", txt))
    image, text = np.array(image), np.array(text)
    csv_path = write_released_outputs(tmp_path / "BiVLC_Classifier_CORRECT_CLIP_baseline.csv", image, text, batch=4)
    key = "bivlc/released/src/Detectors/results/BiVLC_Classifier_CORRECT_CLIP_baseline.csv"
    spec = full.DetectorSpec("openai/ViT-B-32", heads_["image"], heads_["text"], "CLIPDet", released_outputs=key)
    paths = evaluate({"clip": "openai/ViT-B-32"}, data, tmp_path / "out", None, {"clipdet": spec}, CONFIG,
                                 create=tiny, fetch={key: csv_path}.__getitem__)
    (row,) = _rows(paths["table5"])
    assert row["heads"] == "released"
    assert float(row["released_max_abs_diff"]) < 1e-5 and int(row["released_instances_differing"]) == 0
    assert float(row["image_detection"]) == pytest.approx(
        pct(np.concatenate([image[:, 0] <= 0.5, image[:, 1] > 0.5])), abs=0.006)
    context = json.loads(paths["context"].read_text())["detectors"]["clipdet"]
    assert context["heads"]["image"]["tower_agreement"]["differing"] == 0
    assert context["heads"]["text"]["tower_agreement"]["differing"] == 0
    assert context["released_outputs"]["instances"] == len(RECORDS)

    flipped = image.copy()
    flipped[2, 1] = 1.0 - flipped[2, 1] if abs(flipped[2, 1] - 0.5) > 1e-3 else 0.99
    write_released_outputs(csv_path, flipped, text, batch=4)
    (tmp_path / "other").mkdir()
    other = released_heads(tmp_path / "other", tiny("bivlc/clip-trohn-img"), 3)
    spec = full.DetectorSpec("openai/ViT-B-32", other["image"], heads_["text"], "CLIPDet", released_outputs=key)
    paths = evaluate({"clip": "openai/ViT-B-32"}, data, tmp_path / "out2", None, {"clipdet": spec},
                                 CONFIG, create=tiny, fetch={key: csv_path}.__getitem__)
    context = json.loads(paths["context"].read_text())["detectors"]["clipdet"]
    assert context["heads"]["image"]["tower_agreement"]["differing"] > 0  # saved with another encoder's tower
    ours = context["released_outputs"]
    assert ours["comparable"] and ours["image_max_abs_diff"] > 0


def test_released_outputs_pair_naturals_and_synthetics_across_batches(tmp_path):
    from papers.bivlc.released_csv import ReleasedFileError, read_released_outputs

    image = np.array([[0.1, 0.9], [0.2, 0.8], [0.3, 0.7]])
    text = np.array([[0.4, 0.6], [0.45, 0.55], [0.35, 0.65]])
    got = read_released_outputs(write_released_outputs(tmp_path / "r.csv", image, text, batch=2))
    assert np.array_equal(got[0], image) and np.array_equal(got[1], text)
    (tmp_path / "bad.csv").write_text('"text_pred","img_pred","label"\n"0.1","0.2","2.0"\n')
    with pytest.raises(ReleasedFileError, match=r"bad\.csv:2: column 'label': '2\.0' is not 0 \(natural\)"):
        read_released_outputs(tmp_path / "bad.csv")


def test_paper_vs_code_counts_the_sugarcrepe_examples_of_each_side():
    """The authors pooled their own copy's 7,512 rows; SugarCrepe's release, read here, has 7,511."""
    text = full.PAPER_VS_CODE["sugarcrepe"]
    assert "7,512" in text and "7,511" in text and "test_SugarCrepe.csv" in text
    assert "normalised embedding" not in full.PAPER_VS_CODE["detectors"]


def test_audit_compares_released_and_retrained_heads_with_the_paper(tmp_path):
    """Both the released heads (``clipdet``) and the heads trained here (``ft-clipdet``) are compared with the paper's
    CLIPDet row; each row's audit note says whose heads they are and, for the released ones, how the recomputed
    probabilities compare with the authors' per-instance outputs."""
    from papers.bivlc import audit

    out = tmp_path / "results" / "bivlc" / "full"
    out.mkdir(parents=True)
    base = {f: "" for f in full.TABLE5_FIELDS}
    metrics = {"text_detection": 60.0, "image_detection": 90.0, **{m: 10.0 for m in (*full.MAIN, *full.FINER)},
               "n": 2933, "text_ties": 0, "image_ties": 0}
    rows = [{**base, **metrics, "row": "clipdet", "encoder": "openai/ViT-B-32", "label": "CLIPDet", "heads": "released",
             "released_max_abs_diff": 2.5e-06, "released_instances_differing": 1},
            {**base, **metrics, "row": "ft-clipdet", "encoder": "openai/ViT-B-32", "label": "x",
             "heads": "trained here"}]
    from common.files.io import write_csv_atomic

    write_csv_atomic(out / "table5.csv", rows, full.TABLE5_FIELDS)
    recs = [r for r in audit.run_recomputations("full", tmp_path / "results") if r.table == "Table 5"]
    assert {r.row for r in recs} == {"CLIPDet"} and len(recs) == 2 * 5
    released = [r for r in recs if "heads: released" in r.note]
    retrained = [r for r in recs if "heads: trained here" in r.note]
    assert len(released) == len(retrained) == 5
    assert all("max |P difference| 2.5e-06, 1 of 2933 instances" in r.note for r in released)


def test_no_inputs_are_empty_rows_of_the_joint_width(tiny):
    """Nothing to encode is (0, joint width) for both towers (the visual tower's ``output_dim``, whatever form the
    text projection takes), so a head still checks its width against it."""
    from papers.bivlc.detector_heads import tower_outputs

    model = tiny("openai/ViT-B-32")
    image, text = tower_outputs(model, [], [])
    width = model.model.visual.output_dim
    assert image.shape == text.shape == (0, width) and width > 0
