"""BiVLC's detector retrieval (Sec. 5.3): natural-vs-synthetic probabilities -> the group metrics, with no
image-text similarity at all.

Each instance has two images (I0 the COCO photo, I1 generated) and two captions (C0 the COCO caption, C1 the
negative); the detectors give p = P(synthetic) of each. The authors' procedure ("for image-to-text retrieval, we first
use the visual encoder to predict the type of image; if the detection is correct, the output of the text detector is
used to see which of the captions has the highest probability to be of the same type as the image"; the same the
other way round):

* Ipos2T = [I0 judged natural] and p_txt(C0) < p_txt(C1); Ineg2T = [I1 judged synthetic] and p_txt(C1) > p_txt(C0);
* Tpos2I = [C0 judged natural] and p_img(I0) < p_img(I1); Tneg2I = [C1 judged synthetic] and p_img(I1) > p_img(I0);
* I2T, T2I and group are the conjunctions, as for similarities (``common.evaluation.scoring.group``).

"Judged synthetic" is p > 0.5: the released detector evaluation rounds with ``np.round``
(``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_evaluation_BiVLC.py:172`` "if (np.round(i0) == 0) & (c0 < c1):")
and ``torch.round`` (``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_evaluation_BiVLC.py:137``
"if (torch.round(text) == lab):"), round half to even, so 0.5 is natural. Comparisons between the two probabilities
are strict: a tie is wrong.
Detection accuracy: the share of the 2N inputs (column 0 natural, column 1 synthetic) classified correctly.

numpy only: the released-file audit (``papers.bivlc.released``), the mini tables and the full profile all decide here.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FINER = ("Ipos2T", "Ineg2T", "Tpos2I", "Tneg2I")
METRICS = (*FINER, "I2T", "T2I", "group")
"""The keys of ``detector_decisions``, in ``common.evaluation.scoring.group.METRICS``' order."""


def is_synthetic(p) -> np.ndarray:
    """P(synthetic) -> judged synthetic: ``round(p) == 1`` with round half to even, i.e. p > 0.5 (0.5 is natural)."""
    return np.asarray(p, dtype=np.float64) > 0.5


def _pairs(name: str, p) -> np.ndarray:
    a = np.asarray(p, dtype=np.float64)
    if a.ndim != 2 or a.shape[1] != 2:
        raise ValueError(f"detector probabilities {name}: expected shape (n, 2) (natural, synthetic), got {a.shape}")
    if a.size and (np.isnan(a).any() or a.min() < 0.0 or a.max() > 1.0):
        raise ValueError(f"detector probabilities {name}: values must lie in [0, 1]")
    return a


def detector_decisions(image, text) -> dict[str, np.ndarray]:
    """Per instance, every metric of ``METRICS``; ``image[k] = (p(I0), p(I1))``, ``text[k] = (p(C0), p(C1))``."""
    img, txt = _pairs("image", image), _pairs("text", text)
    if len(img) != len(txt):
        raise ValueError(f"detector probabilities: {len(img)} image pairs but {len(txt)} text pairs")
    d = {"Ipos2T": ~is_synthetic(img[:, 0]) & (txt[:, 0] < txt[:, 1]),
         "Ineg2T": is_synthetic(img[:, 1]) & (txt[:, 1] > txt[:, 0]),
         "Tpos2I": ~is_synthetic(txt[:, 0]) & (img[:, 0] < img[:, 1]),
         "Tneg2I": is_synthetic(txt[:, 1]) & (img[:, 1] > img[:, 0])}
    d["I2T"] = d["Ipos2T"] & d["Ineg2T"]
    d["T2I"] = d["Tpos2I"] & d["Tneg2I"]
    d["group"] = d["I2T"] & d["T2I"]
    return d


def detection_accuracy(p) -> float:
    """Share of the 2n inputs classified correctly at 0.5 (NaN when there are none)."""
    a = _pairs("p", p)
    correct = np.stack([~is_synthetic(a[:, 0]), is_synthetic(a[:, 1])], axis=1)  # column 0 natural, 1 synthetic
    return float(correct.mean()) if correct.size else float("nan")


@dataclass(frozen=True)
class DetectorOutcome:
    """Every instance's decisions and the detection accuracies (fractions), with the ties of each pair."""

    decisions: dict[str, np.ndarray]
    image_detection: float
    text_detection: float
    image_ties: int
    """Instances whose two images get the same probability (both T2I comparisons are then wrong)."""
    text_ties: int

    def accuracy(self) -> dict[str, float]:
        """Each metric's share of instances (a fraction)."""
        return {m: float(v.mean()) if v.size else float("nan") for m, v in self.decisions.items()}


def score_detectors(image, text) -> DetectorOutcome:
    """Decisions, detection accuracies and ties of the instances' (n, 2) image and text probabilities."""
    img, txt = _pairs("image", image), _pairs("text", text)
    return DetectorOutcome(detector_decisions(img, txt), detection_accuracy(img), detection_accuracy(txt),
                           int((img[:, 0] == img[:, 1]).sum()), int((txt[:, 0] == txt[:, 1]).sum()))


def head_run(row: str, tower: str) -> str:
    """The ``training`` key, in a tables stage's context, of a detector row's head trained here on ``tower`` (the
    audit names its recipe there)."""
    return f"{row} {tower} head"
