"""BiVLC scores recomputed from the authors' released per-instance files (papers/bivlc/released.py).

Small fixtures in the released formats with hand-computed scores (every category, a tie, the 0.5 detector
threshold), malformed-input errors, the command line, and -- skipped without ../shared/mirror -- the real
released files fetched through the downloader (offline: the network is refused).
"""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from common.audit.core import audit_rows
from common.cli import main as cli_main
from common.reporting.published import load_cells, load_claims
from papers.bivlc import released as rb
from papers.bivlc.released import ReleasedFileError, score_released_file
from shared_files import MIRROR as SHARED_MIRROR  # noqa: E402

BIVLC_HEADER = ["image", "caption", "negative_caption", "negative_image", "type", "subtype", "text_score_i0",
                "text_score_i1", "image_score_c0", "image_score_c1", "text_score", "image_score", "group_score"]


def write_csv(path: Path, header: list[str], rows: list[list[object]]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, quoting=csv.QUOTE_ALL)  # the released files quote every field
        writer.writerow(header)
        writer.writerows([[str(v) for v in row] for row in rows])
    return path


def bivlc_row(type_: str, subtype: str, i0: bool, i1: bool, c0: bool, c1: bool, **override: object) -> list[object]:
    values = {"text_score_i0": i0, "text_score_i1": i1, "image_score_c0": c0, "image_score_c1": c1,
              "text_score": i0 and i1, "image_score": c0 and c1, "group_score": i0 and i1 and c0 and c1}
    values.update(override)
    return ["<PIL image>", "A cat.", "A dog.", "<PIL image>", type_, subtype,
            *[values[c] for c in BIVLC_HEADER[6:]]]


# One instance per category: (type, subtype, Ipos2T, Ineg2T, Tpos2I, Tneg2I)
BIVLC_FIXTURE = [
    ("replace", "obj", True, True, True, True),      # I2T T2I Group
    ("replace", "att", True, False, True, True),     # T2I only
    ("replace", "rel", True, True, False, True),     # I2T only
    ("swap", "obj", False, False, False, False),     # nothing
    ("swap", "att", True, True, True, True),         # I2T T2I Group
    ("add", "obj", True, True, True, False),         # I2T only
    ("add", "att", False, True, False, True),        # nothing
]


@pytest.fixture
def bivlc_file(tmp_path: Path) -> Path:
    return write_csv(tmp_path / "BiVLC_fixture.csv", BIVLC_HEADER, [bivlc_row(*r) for r in BIVLC_FIXTURE])


def test_bivlc_instances_hand_computed(bivlc_file: Path) -> None:
    out = score_released_file(bivlc_file)
    assert out["format"] == "bivlc-instances" and out["n_instances"] == 7
    assert out["ties"] is None  # decisions only: ties not observable
    overall = out["overall"]
    # I2T: rows 1,3,5,6; T2I: rows 1,2,5; Group: rows 1,5
    assert overall["correct"] == {"I2T": 4, "T2I": 3, "Group": 2, "Ipos2T": 5, "Ineg2T": 5, "Tpos2I": 4, "Tneg2I": 5}
    assert overall["I2T"] == pytest.approx(100 * 4 / 7)
    assert overall["T2I"] == pytest.approx(100 * 3 / 7)
    assert overall["Group"] == pytest.approx(100 * 2 / 7)
    assert overall["Tpos2I"] == pytest.approx(100 * 4 / 7)
    by_type = out["by_type"]
    assert [by_type[t]["n"] for t in ("replace", "swap", "add")] == [3, 2, 2]
    assert by_type["replace"]["correct"] == {"I2T": 2, "T2I": 2, "Group": 1, "Ipos2T": 3, "Ineg2T": 2,
                                             "Tpos2I": 2, "Tneg2I": 3}
    assert (by_type["swap"]["I2T"], by_type["swap"]["T2I"], by_type["swap"]["Group"]) == (50.0, 50.0, 50.0)
    assert (by_type["add"]["I2T"], by_type["add"]["T2I"], by_type["add"]["Group"]) == (50.0, 0.0, 0.0)
    subs = out["by_subcategory"]
    assert list(subs) == ["replace-obj", "replace-att", "replace-rel", "swap-obj", "swap-att", "add-obj", "add-att"]
    assert subs["replace-rel"]["correct"]["I2T"] == 1 and subs["replace-rel"]["correct"]["T2I"] == 0
    # Table 1: 4 retrieval examples per instance
    assert out["retrieval_examples"] == {c: 4 for c in rb.CATEGORIES} | {"total": 28}
    json.dumps(out)  # JSON-able


def test_bivlc_similarities_tie_counts_as_wrong(tmp_path: Path) -> None:
    header = ["type", "subtype", *rb.SIM_COLUMNS]  # sim_C0_I0, sim_C0_I1, sim_C1_I0, sim_C1_I1
    path = write_csv(tmp_path / "sims.csv", header, [
        ["replace", "obj", 0.3, 0.1, 0.2, 0.4],    # all four right
        ["swap", "att", 0.3, 0.25, 0.3, 0.35],     # s(C0,I0) == s(C1,I0): Ipos2T tie -> wrong
        ["add", "obj", 0.2, 0.2, 0.1, 0.2],        # s(C1,I1) == s(C0,I1) and s(C0,I0) == s(C0,I1): two ties
    ])
    out = score_released_file(path)
    assert out["decided_from"] == "similarities"
    assert out["ties"] == {"Ipos2T": 1, "Ineg2T": 1, "Tpos2I": 1, "Tneg2I": 0}
    assert out["overall"]["correct"] == {"I2T": 1, "T2I": 2, "Group": 1, "Ipos2T": 2, "Ineg2T": 2, "Tpos2I": 2,
                                         "Tneg2I": 3}
    assert out["by_type"]["swap"]["correct"]["I2T"] == 0 and out["by_type"]["swap"]["correct"]["T2I"] == 1


def test_bivlc_similarities_must_agree_with_given_decisions(tmp_path: Path) -> None:
    header = ["type", "subtype", *rb.SIM_COLUMNS, *rb.BOOL_COLUMNS.values()]
    path = write_csv(tmp_path / "both.csv", header, [
        ["replace", "obj", 0.3, 0.1, 0.2, 0.4, True, True, True, True],
        ["replace", "obj", 0.3, 0.1, 0.3, 0.4, True, True, True, True],  # tie: Ipos2T must be False
    ])
    with pytest.raises(ReleasedFileError, match=r"both\.csv:3: column 'text_score_i0' = True disagrees"):
        score_released_file(path)


def test_sugarcrepe_micro_and_macro(tmp_path: Path) -> None:
    header = ["filename", "caption", "negative_caption", "type", "subtype", "correct"]
    rows = [[f"x{i}.jpg", "a", "b", t, s, c] for i, (t, s, c) in enumerate([
        ("replace", "obj", 1), ("replace", "obj", 1), ("replace", "obj", 1), ("replace", "obj", 0),
        ("replace", "rel", 0), ("swap", "att", 0), ("swap", "att", 1), ("add", "att", 1)])]
    out = score_released_file(write_csv(tmp_path / "SUGARCREPE_CORRECT_fixture.csv", header, rows))
    assert out["format"] == "sugarcrepe-examples"
    assert (out["n_examples"], out["correct"]) == (8, 5)
    assert out["micro"] == pytest.approx(62.5)                              # 5 / 8
    assert out["macro_subcategory"] == pytest.approx((75 + 0 + 50 + 100) / 4)
    assert out["macro_type"] == pytest.approx((60 + 50 + 100) / 3)          # replace 3/5
    assert out["paper_column"] == "micro"
    assert out["by_type"]["replace"]["accuracy"] == pytest.approx(60.0)
    assert out["retrieval_examples"] == {"replace-obj": 4, "replace-rel": 1, "swap-att": 2, "add-att": 1, "total": 8}


def test_sugarcrepe_benchmark_counts_only(tmp_path: Path) -> None:
    header = ["filename", "caption", "negative_caption", "type", "subtype"]
    out = score_released_file(write_csv(tmp_path / "test_SugarCrepe.csv", header, [
        ["x.jpg", "a", "b", "add", "obj"], ["y.jpg", "a", "b", "add", "obj"], ["z.jpg", "a", "b", "swap", "att"]]))
    assert out["format"] == "sugarcrepe-benchmark"
    assert out["retrieval_examples"] == {"swap-att": 1, "add-obj": 2, "total": 3}


def test_bivlc_detector_hand_computed(tmp_path: Path) -> None:
    # (text_pred, img_pred) for the natural (label 0) and synthetic (label 1) member of each instance
    nat = [(0.2, 0.1), (0.6, 0.2), (0.4, 0.5), (0.3, 0.7)]
    syn = [(0.8, 0.9), (0.7, 0.9), (0.4, 0.95), (0.9, 0.6)]
    order = [("n", 0), ("s", 0), ("n", 1), ("n", 2), ("s", 1), ("s", 2), ("n", 3), ("s", 3)]  # interleaved
    rows = [[*(nat if k == "n" else syn)[i], 0.0 if k == "n" else 1.0] for k, i in order]
    out = score_released_file(write_csv(tmp_path / "BiVLC_Classifier_fixture.csv", ["text_pred", "img_pred", "label"],
                                        rows))
    assert out["format"] == "bivlc-detector" and out["n_instances"] == 4
    # instance 1 all right; 2: C0 detected synthetic (0.6) -> Tpos2I wrong; 3: text tie 0.4 == 0.4 -> both I2T
    # wrong, C1 detected natural -> Tneg2I wrong, I0 = 0.5 rounds to natural; 4: I0 detected synthetic, i0 > i1
    assert out["correct"] == {"Ipos2T": 2, "Ineg2T": 3, "Tpos2I": 2, "Tneg2I": 2, "I2T": 2, "T2I": 1, "Group": 1}
    assert (out["I2T"], out["T2I"], out["Group"]) == (50.0, 25.0, 25.0)
    assert out["ties"] == {"text": 1, "image": 0}
    assert out["text_detection_acc"] == 75.0         # 0.6 (natural) and 0.4 (synthetic) wrong
    assert out["img_detection_acc"] == 87.5          # only 0.7 (natural) wrong; 0.5 -> natural is right
    assert out["img_detection"]["at_threshold"] == 1
    assert out["img_detection"]["misclassified"] == [{"line": 8, "label": 0, "p_synthetic": 0.7}]


def test_sugarcrepe_detector_tie(tmp_path: Path) -> None:
    rows = [[0.2, 0.0], [0.5, 0.0], [0.7, 0.0], [0.8, 1.0], [0.5, 1.0], [0.3, 1.0]]
    out = score_released_file(write_csv(tmp_path / "SUGARCREPE_Classifier_fixture.csv", ["text_pred", "label"], rows))
    assert out["format"] == "sugarcrepe-detector"
    assert (out["correct"], out["n_examples"], out["ties"]) == (1, 3, 1)
    assert out["accuracy"] == pytest.approx(100 / 3)
    assert out["text_detection_acc"] == 50.0


# -- malformed input ----------------------------------------------------------------------------------------------
def test_missing_column_names_file_and_header(tmp_path: Path) -> None:
    header = [c for c in BIVLC_HEADER if c != "image_score_c1"]
    rows = [[v for c, v in zip(BIVLC_HEADER, bivlc_row("add", "obj", True, True, True, True)) if c != "image_score_c1"]]
    path = write_csv(tmp_path / "missing.csv", header, rows)
    with pytest.raises(ReleasedFileError, match=r"missing\.csv:1: missing column\(s\) \['image_score_c1'\]"):
        score_released_file(path)


def test_non_boolean_and_non_numeric_scores(tmp_path: Path) -> None:
    rows = [bivlc_row("add", "obj", True, True, True, True), bivlc_row("add", "obj", "maybe", True, True, True)]
    with pytest.raises(ReleasedFileError, match=r"bad\.csv:3: column 'text_score_i0': 'maybe' is not a boolean"):
        score_released_file(write_csv(tmp_path / "bad.csv", BIVLC_HEADER, rows))
    sims = write_csv(tmp_path / "sims.csv", ["type", "subtype", *rb.SIM_COLUMNS],
                     [["add", "obj", 0.1, 0.2, 0.3, 0.4], ["add", "obj", 0.1, "abc", 0.3, 0.4]])
    with pytest.raises(ReleasedFileError, match=r"sims\.csv:3: column 'sim_C0_I1': 'abc' is not a number"):
        score_released_file(sims)
    nan = write_csv(tmp_path / "nan.csv", ["text_pred", "label"], [[0.1, 0.0], ["nan", 1.0]])
    with pytest.raises(ReleasedFileError, match=r"nan\.csv:3: column 'text_pred': 'nan' is not finite"):
        score_released_file(nan)
    sc = write_csv(tmp_path / "sc.csv", ["type", "subtype", "correct"], [["add", "obj", 1], ["add", "obj", 2]])
    with pytest.raises(ReleasedFileError, match=r"sc\.csv:3: column 'correct': '2' is not a boolean"):
        score_released_file(sc)


@pytest.mark.parametrize(("type_", "subtype"), [("shuffle", "obj"), ("swap", "rel"), ("add", "")])
def test_unknown_category(tmp_path: Path, type_: str, subtype: str) -> None:
    rows = [bivlc_row("add", "obj", True, True, True, True), bivlc_row(type_, subtype, True, True, True, True)]
    with pytest.raises(ReleasedFileError, match=r"cat\.csv:3: unknown category"):
        score_released_file(write_csv(tmp_path / "cat.csv", BIVLC_HEADER, rows))


def test_inconsistent_derived_column(tmp_path: Path) -> None:
    rows = [bivlc_row("add", "obj", True, False, True, True, text_score=True)]
    with pytest.raises(ReleasedFileError, match=r"derived\.csv:2: column 'text_score' = True disagrees"):
        score_released_file(write_csv(tmp_path / "derived.csv", BIVLC_HEADER, rows))


def test_detector_errors(tmp_path: Path) -> None:
    bad_label = write_csv(tmp_path / "label.csv", ["text_pred", "label"], [[0.1, 0.0], [0.9, 2.0]])
    with pytest.raises(ReleasedFileError, match=r"label\.csv:3: column 'label'"):
        score_released_file(bad_label)
    unpaired = write_csv(tmp_path / "unpaired.csv", ["text_pred", "label"], [[0.1, 0.0], [0.2, 0.0], [0.9, 1.0]])
    with pytest.raises(ReleasedFileError, match=r"unpaired\.csv:4: 2 natural \(label 0\) rows but 1 synthetic"):
        score_released_file(unpaired)
    prob = write_csv(tmp_path / "prob.csv", ["text_pred", "img_pred", "label"], [[0.1, 1.5, 0.0], [0.9, 0.9, 1.0]])
    with pytest.raises(ReleasedFileError, match=r"prob\.csv:2: column 'img_pred': 1.5 is not a probability"):
        score_released_file(prob)


def test_structural_errors(tmp_path: Path) -> None:
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(ReleasedFileError, match=r"empty\.csv:1: empty file"):
        score_released_file(empty)
    header_only = tmp_path / "header_only.csv"
    header_only.write_text(",".join(BIVLC_HEADER) + "\n")
    with pytest.raises(ReleasedFileError, match=r"header_only\.csv:2: no data rows"):
        score_released_file(header_only)
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("type,subtype,correct\nadd,obj,1\nadd,obj\n")
    with pytest.raises(ReleasedFileError, match=r"ragged\.csv:3: expected 3 fields"):
        score_released_file(ragged)
    unknown = write_csv(tmp_path / "unknown.csv", ["a", "b"], [[1, 2]])
    with pytest.raises(ReleasedFileError, match=r"unknown\.csv:1: unrecognised columns"):
        score_released_file(unknown)
    with pytest.raises(ReleasedFileError, match=r"nowhere\.csv: cannot read"):
        score_released_file(tmp_path / "nowhere.csv")


# -- command line -------------------------------------------------------------------------------------------------
def released_cli(args: list[str]) -> int:
    """``python -m common audit released bivlc ARGS`` in-process, its exit status whether it returns or exits."""
    try:
        return cli_main(["audit", "released", "bivlc", *args])
    except SystemExit as exc:
        return int(exc.code or 0)


def test_cli_prints_json(bivlc_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert released_cli([str(bivlc_file)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["overall"]["correct"]["Group"] == 2 and doc["by_type"]["swap"]["n"] == 2


def test_cli_reports_malformed_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [bivlc_row("add", "obj", True, True, True, True), bivlc_row("oops", "obj", True, True, True, True)]
    path = write_csv(tmp_path / "cli_bad.csv", BIVLC_HEADER, rows)
    assert released_cli([str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}:3: unknown category" in err
    assert released_cli([]) == 2  # usage error


# -- the real released files (offline, through the downloader) ---------------------------------------------------
needs_mirror = pytest.mark.skipif(not SHARED_MIRROR.is_dir(), reason=f"no mirror at {SHARED_MIRROR}")


@pytest.fixture
def offline_mirror(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    from common.registry import fetch as fetching

    def refuse(url: str, *args: object, **kwargs: object) -> None:
        raise OSError(f"network refused in tests: {url}")

    monkeypatch.setenv("VLC_MIRROR", str(SHARED_MIRROR))
    monkeypatch.setenv("VLC_DATA", str(tmp_path / "data"))
    monkeypatch.setattr(fetching, "http_download", refuse)
    return tmp_path / "data"


def fetched(key: str) -> Path:
    from common.registry.fetch import fetch

    return fetch(key, progress=False)


def r2(x: float) -> float:
    return round(x, 2)


# Recomputed from the released files (pinned: these are OUR numbers; the audit compares them with the paper).
RELEASED_BIVLC = {
    "bivlc/released/results/BiVLC_ViT-B-32.csv": {
        "overall": {"I2T": 2224, "T2I": 1537, "Group": 1439, "Ipos2T": 2473, "Ineg2T": 2625, "Tpos2I": 2030,
                    "Tneg2I": 2429},
        "overall_pct": {"I2T": 75.83, "T2I": 52.40, "Group": 49.06, "Ipos2T": 84.32, "Ineg2T": 89.50,
                        "Tpos2I": 69.21, "Tneg2I": 82.82},
        "by_type_pct": {"replace": (82.09, 60.36, 57.27), "swap": (46.52, 16.16, 13.65), "add": (70.32, 44.63, 39.58)},
    },
    "bivlc/released/results/BiVLC_CLIP_COCO.csv": {
        "overall": {"I2T": 2427, "T2I": 1874, "Group": 1788, "Ipos2T": 2612, "Ineg2T": 2691, "Tpos2I": 2135,
                    "Tneg2I": 2665},
        "overall_pct": {"I2T": 82.75, "T2I": 63.89, "Group": 60.96, "Ipos2T": 89.06, "Ineg2T": 91.75,
                        "Tpos2I": 72.79, "Tneg2I": 90.86},
        "by_type_pct": {"replace": (87.99, 72.42, 69.94), "swap": (51.53, 25.07, 20.89), "add": (83.16, 55.58, 51.58)},
    },
}


@needs_mirror
@pytest.mark.parametrize("key", list(RELEASED_BIVLC))
def test_released_bivlc_tables_2_to_4(offline_mirror: Path, key: str) -> None:
    out = score_released_file(fetched(key))
    want = RELEASED_BIVLC[key]
    assert out["n_instances"] == 2933
    assert out["overall"]["correct"] == want["overall"]
    assert {m: r2(out["overall"][m]) for m in want["overall_pct"]} == want["overall_pct"]
    assert [out["by_type"][t]["n"] for t in ("replace", "swap", "add")] == [2099, 359, 475]
    for t, (i2t, t2i, group) in want["by_type_pct"].items():
        assert (r2(out["by_type"][t]["I2T"]), r2(out["by_type"][t]["T2I"]), r2(out["by_type"][t]["Group"])) == (
            i2t, t2i, group)
    # Table 1: 4 retrieval examples per instance
    assert out["retrieval_examples"] == {"replace-obj": 4800, "replace-att": 1748, "replace-rel": 1848,
                                         "swap-obj": 324, "swap-att": 1112, "add-obj": 1596, "add-att": 304,
                                         "total": 11732}


@needs_mirror
@pytest.mark.parametrize(("key", "correct", "micro", "macro_sub"), [
    ("bivlc/released/results/SUGARCREPE_CORRECT_ViT-B-32.csv", 5751, 76.56, 73.08),
    ("bivlc/released/results/SUGARCREPE_CORRECT_CLIP_COCO.csv", 6360, 84.66, 80.40),
])
def test_released_sugarcrepe_column(offline_mirror: Path, key: str, correct: int, micro: float,
                                    macro_sub: float) -> None:
    out = score_released_file(fetched(key))
    assert (out["n_examples"], out["correct"]) == (7512, correct)
    assert r2(out["micro"]) == micro
    assert r2(out["macro_subcategory"]) == macro_sub


@needs_mirror
def test_released_detector_and_counts(offline_mirror: Path) -> None:
    det = score_released_file(fetched("bivlc/released/src/Detectors/results/BiVLC_Classifier_CORRECT_CLIP_baseline.csv"))
    assert det["n_instances"] == 2933 and det["ties"] == {"text": 0, "image": 0}
    assert (det["text_detection"]["correct"], det["img_detection"]["correct"]) == (3361, 5863)
    assert (r2(det["text_detection_acc"]), r2(det["img_detection_acc"])) == (57.30, 99.95)
    assert det["correct"]["I2T"] == 1956 and det["correct"]["T2I"] == det["correct"]["Group"] == 576
    assert (r2(det["I2T"]), r2(det["T2I"]), r2(det["Group"])) == (66.69, 19.64, 19.64)
    sc = score_released_file(fetched("bivlc/released/src/Detectors/results/SUGARCREPE_Classifier_CLIP_baseline.csv"))
    assert (sc["correct"], sc["n_examples"], sc["ties"], r2(sc["accuracy"])) == (5603, 7512, 0, 74.59)
    bench = score_released_file(fetched("bivlc/released/source_data/SugarCrepe/test_SugarCrepe.csv"))
    assert bench["retrieval_examples"] == {"replace-obj": 1652, "replace-att": 788, "replace-rel": 1406,
                                           "swap-obj": 246, "swap-att": 666, "add-obj": 2062, "add-att": 692,
                                           "total": 7512}


@needs_mirror
def test_recompute_maps_onto_published_keys(offline_mirror: Path) -> None:
    recs = rb.recompute()
    cells, claims = load_cells("bivlc"), load_claims("bivlc")
    published = {c.key for c in cells} | {("claims", c.claim_id, "value") for c in claims}
    assert {r.key for r in recs} <= published
    assert all(r.profile == "released" and r.tolerance_rule == "exact" and r.paper == "bivlc" for r in recs)
    units = {c.key: c.unit for c in cells}
    assert all(r.unit == units.get(r.key, "percent") for r in recs)
    by_key = {r.key: r for r in recs}
    assert len(by_key) == len(recs)
    # mirrored files give numbers, the unmirrored ones leave their cells "not recomputed yet" with the reason
    assert r2(by_key[("Table 3", "CLIP", "BiVLC (finer metrics) | Tpos2I")].value) == 69.21
    assert r2(by_key[("Table 2", "Contrastive | CLIPCOCO", "SugarCrepe")].value) == 84.66
    assert by_key[("Table 1", "BiVLC (ours)", "Total")].value == 11732
    assert by_key[("Table 1", "SugarCrepe", "Total")].value == 7512
    assert r2(by_key[("Table 5", "CLIPDet", "Text detection acc")].value) == 57.30
    assert r2(by_key[("claims", "sec5.3_det_sc_clipdet_74.59", "value")].value) == 74.59
    missing = by_key[("Table 3", "CLIPTROHN-Img", "BiVLC | Group")]
    assert math.isnan(missing.value) and "could not be fetched" in missing.note
    assert missing.source == "bivlc/released/results/BiVLC_CLIP_TROHN-Img.csv"
    rows = audit_rows("bivlc", cells, claims, recs)  # raises on unknown keys
    verdict = {(r.table, r.row, r.column): r.verdict for r in rows if r.source.startswith("bivlc/released/")}
    assert verdict[("Table 4", "CLIPTROHN-Text", "Swap | T2I")] == "not recomputed yet"
    assert verdict[("Table 5", "CLIPTROHN-Img/Det", "I2T")] == "not recomputed yet"
