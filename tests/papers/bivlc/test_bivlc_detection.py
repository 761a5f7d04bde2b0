"""BiVLC's detector decision rule (``papers.bivlc.detection``) against a per-instance loop written from Sec. 5.3's
text, hand-worked instances (threshold 0.5 natural, strict ties), detection accuracy, and the released-file audit
(``papers.bivlc.released``) deciding through it."""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from papers.bivlc import detection


def reference(image, text) -> list[dict[str, bool]]:
    """Sec. 5.3, one instance at a time: the query's own detector first, then the candidate of the query's type."""
    out = []
    for (i0, i1), (c0, c1) in zip(image, text):
        natural = lambda p: not round(p) == 1 if p != 0.5 else True  # noqa: E731  (np.round: 0.5 -> 0)
        d = {"Ipos2T": natural(i0) and c0 < c1, "Ineg2T": (not natural(i1)) and c1 > c0,
             "Tpos2I": natural(c0) and i0 < i1, "Tneg2I": (not natural(c1)) and i1 > i0}
        d["I2T"] = d["Ipos2T"] and d["Ineg2T"]
        d["T2I"] = d["Tpos2I"] and d["Tneg2I"]
        d["group"] = d["I2T"] and d["T2I"]
        out.append(d)
    return out


def test_hand_worked_instances():
    image = [(0.1, 0.9), (0.5, 0.7), (0.2, 0.2), (0.6, 0.9), (0.1, 0.4)]
    text = [(0.3, 0.8), (0.2, 0.9), (0.1, 0.7), (0.4, 0.4), (0.2, 0.8)]
    d = detection.detector_decisions(image, text)
    # 0: all right. 1: p(I0) = 0.5 is natural (round half to even): all right. 2: the images tie (T2I wrong) and
    # I1 = 0.2 is judged natural (Ineg2T wrong).
    # 3: I0 judged synthetic and the captions tie: I2T wrong; C0 natural, I0 < I1: Tpos2I right; C1 not synthetic.
    # 4: I1 judged natural (0.4): Ineg2T wrong; Tneg2I right (C1 synthetic, 0.4 > 0.1).
    assert d["Ipos2T"].tolist() == [True, True, True, False, True]
    assert d["Ineg2T"].tolist() == [True, True, False, False, False]
    assert d["Tpos2I"].tolist() == [True, True, False, True, True]
    assert d["Tneg2I"].tolist() == [True, True, False, False, True]
    assert d["group"].tolist() == [True, True, False, False, False]
    outcome = detection.score_detectors(image, text)
    assert outcome.image_ties == 1 and outcome.text_ties == 1
    # images: natural ok in 0, 1, 2, 4 (0.6 wrong); synthetic ok in 0, 1, 3 (0.2, 0.4 wrong) -> 7 of 10
    assert outcome.image_detection == pytest.approx(0.7)
    # texts: natural ok in all 5; synthetic ok in 0, 1, 2, 4 (0.4 wrong) -> 9 of 10
    assert outcome.text_detection == pytest.approx(0.9)
    assert outcome.accuracy()["group"] == pytest.approx(0.4)


def test_matches_the_per_instance_reference_on_random_probabilities():
    rng = np.random.default_rng(3)
    image = np.round(rng.random((400, 2)), 1)  # coarse values: many ties and many exact 0.5
    text = np.round(rng.random((400, 2)), 1)
    got = detection.detector_decisions(image, text)
    ref = reference(image.tolist(), text.tolist())
    for m in detection.METRICS:
        assert got[m].tolist() == [r[m] for r in ref], m
    assert (image == 0.5).any() and (image[:, 0] == image[:, 1]).any()


def test_detection_accuracy_and_threshold():
    assert detection.is_synthetic([0.5, 0.5000001, 0.4999]).tolist() == [False, True, False]
    assert detection.detection_accuracy([[0.5, 0.51]]) == 1.0
    assert detection.detection_accuracy([[0.51, 0.5]]) == 0.0
    assert detection.detection_accuracy([[0.2, 0.3]]) == 0.5  # the natural input right, the synthetic one wrong
    assert np.isnan(detection.detection_accuracy(np.zeros((0, 2))))


def test_bad_shapes_and_values_are_refused():
    with pytest.raises(ValueError, match=r"shape \(n, 2\)"):
        detection.detector_decisions([0.1, 0.2], [[0.1, 0.2]])
    with pytest.raises(ValueError, match="2 image pairs but 1 text pairs"):
        detection.detector_decisions([[0.1, 0.2], [0.3, 0.4]], [[0.1, 0.2]])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        detection.detector_decisions([[0.1, 1.2]], [[0.1, 0.2]])


def test_released_detector_file_is_decided_by_the_shared_rule(tmp_path: Path):
    from papers.bivlc.released import score_released_file

    rng = np.random.default_rng(5)
    image = np.round(rng.random((30, 2)), 1)
    text = np.round(rng.random((30, 2)), 1)
    path = tmp_path / "BiVLC_Classifier_CORRECT_test.csv"
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["text_pred", "img_pred", "label"])
        for (c0, _), (i0, _) in zip(text, image):
            w.writerow([c0, i0, 0])
        for (_, c1), (_, i1) in zip(text, image):
            w.writerow([c1, i1, 1])
    scored = score_released_file(path)
    ref = reference(image.tolist(), text.tolist())
    for mine, theirs in (("I2T", "I2T"), ("T2I", "T2I"), ("group", "Group"), ("Tneg2I", "Tneg2I")):
        assert scored[theirs] == pytest.approx(100 * np.mean([r[mine] for r in ref]))
    assert scored["img_detection_acc"] == pytest.approx(100 * detection.detection_accuracy(image))
    assert scored["ties"] == {"text": int((text[:, 0] == text[:, 1]).sum()),
                              "image": int((image[:, 0] == image[:, 1]).sum())}
