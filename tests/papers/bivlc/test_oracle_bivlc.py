"""BiVLC's oracle plug-in (``papers.bivlc.oracle``) without the authors' code or a rehearsal: its reading of what
their scripts print (the lines formatted here by the same f-strings) and the SugarCrepe CSV it hands their detector
script. (Its observer of a function's locals is ``common.oracle.observe.returns_of``: tests/common/test_oracle.py.)"""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from common.files.tasks import ImageToTextItem
from papers.bivlc import oracle


def test_detector_prints_read_by_table5_column():
    run_name, text_acc, img_acc = "clipdet", [1, 0, 1, 1], [1, 1, 1, 0]
    scores = {"text_score": [1, 0], "img_score": [0, 0], "group_score": [0, 0], "text_score_i0": [1, 1],
              "text_score_i1": [1, 0], "img_score_c0": [0, 1], "img_score_c1": [1, 0]}
    # verbatim f-strings: IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_evaluation_BiVLC.py:150-151 "checkpoint text
    # accuracy:" and IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_evaluation_BiVLC.py:208-209 "Text_score_i0:"
    printed = "\n".join([
        f"{run_name} checkpoint text accuracy:  {np.mean(text_acc)}",
        f"{run_name} checkpoint img accuracy:  {np.mean(img_acc)}",
        f"Text_score: {100*np.mean(scores['text_score'])}, Image_score: {100*np.mean(scores['img_score'])}, "
        f"Group_score: {100*np.mean(scores['group_score'])}",
        f"Text_score_i0: {100*np.mean(scores['text_score_i0'])}, "
        f"Text_score_i1: {100*np.mean(scores['text_score_i1'])}, "
        f"Image_score_c0: {100*np.mean(scores['img_score_c0'])}, "
        f"Image_score_c1: {100*np.mean(scores['img_score_c1'])}"])
    read = oracle.printed_detector_scores(printed)
    assert read == {"text_detection": 75.0, "image_detection": 75.0, "I2T": 50.0, "T2I": 0.0, "group": 0.0,
                    "Ipos2T": 100.0, "Ineg2T": 50.0, "Tpos2I": 50.0, "Tneg2I": 50.0}
    # the per-instance lists the script leaves behind, under the same columns
    assert set(oracle.DETECTOR_GLOBALS.values()) == set(scores)


def test_sugarcrepe_detector_and_count_prints():
    text_score_i0 = [1, 0, 1]
    assert oracle.printed_sugarcrepe_detector(f"x\nText_score_i0: {100*np.mean(text_score_i0)}\n") == pytest.approx(
        200 / 3)
    correct = [1, 1, 0, 1]
    line = f"ViT-B-32 checkpoint SUGARCREPE OVERALL:  {(np.mean(correct)):.4} ({correct.count(1)}/{len(correct)})"
    assert oracle.printed_sugarcrepe_count(line) == (3, 4)
    with pytest.raises(ValueError):
        oracle.printed_sugarcrepe_detector("nothing printed")


def test_main_evaluation_prints():
    v = {"I2T": 60.0, "T2I": 20.0, "group": 10.0, "Ipos2T": 70.0, "Ineg2T": 80.0, "Tpos2I": 30.0, "Tneg2I": 40.0}
    # IMirandaM/BiVLC@84f0d175 main_evaluation_BiVLC.py:87 "checkpoint OVERALL scores:" (lines 104-106: the same
    # format per type)
    overall = (f"clip checkpoint OVERALL scores:   I2T: {v['I2T']}, T2I: {v['T2I']}, Group score: {v['group']}, "
               f"Ipos_2T: {v['Ipos2T']}, Ineg_2T: {v['Ineg2T']}, Tpos_2I: {v['Tpos2I']}, Tneg_2I: {v['Tneg2I']}")
    replace = overall.replace("OVERALL scores", "REPLACE (6) scores")
    read = oracle.printed_main_scores("\n".join(["42", overall, replace]))
    assert read["overall"] == v and read["replace"] == v and "swap" not in read


def test_sugarcrepe_rows_in_the_authors_columns(tmp_path: Path):
    root = tmp_path / "val2017"
    items = [ImageToTextItem("replace_obj/0", "replace_obj", root / "a.jpg", ("a dog", "a cat")),
             ImageToTextItem("swap_att/3", "swap_att", tmp_path / "elsewhere.jpg", ("red box, blue", "blue box, red"))]
    path = oracle.write_sugarcrepe_csv(tmp_path / "test_SugarCrepe.csv", items, root)
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert rows[0] == {"filename": "a.jpg", "caption": "a dog", "negative_caption": "a cat", "type": "replace",
                       "subtype": "obj"}
    assert rows[1]["filename"] == str(tmp_path / "elsewhere.jpg") and rows[1]["subtype"] == "att"
    assert rows[1]["caption"] == "red box, blue"

