"""BiVLC's published numbers recomputed from the authors' released per-instance files.

What the authors released (IMirandaM/BiVLC@84f0d175; registry groups ``bivlc-released`` and
``bivlc-released-unmirrored``):

* ``results/BiVLC_<model>.csv`` (e.g. ``IMirandaM/BiVLC@84f0d175 results/BiVLC_ViT-B-32.csv``): one row per BiVLC
  instance (2 images, 2 captions) with ``type``/``subtype`` and the *decisions* (``True``/``False``) of the four
  retrieval examples -- ``text_score_i0``, ``text_score_i1``, ``image_score_c0``, ``image_score_c1`` -- plus their
  conjunctions ``text_score``, ``image_score``, ``group_score``. Similarities are not released, so ties cannot be
  observed in these files.
* ``results/SUGARCREPE_CORRECT_<model>.csv`` (e.g. ``IMirandaM/BiVLC@84f0d175 results/SUGARCREPE_CORRECT_ViT-B-32.csv``):
  one row per SugarCrepe example with ``correct`` (0/1).
* ``src/Detectors/results/BiVLC_Classifier_CORRECT_<detector>.csv`` (e.g.
  ``IMirandaM/BiVLC@84f0d175 src/Detectors/results/BiVLC_Classifier_CORRECT_CLIP_baseline.csv``): ``text_pred``,
  ``img_pred`` (sigmoid probability of *synthetic*) and ``label`` (0 natural, 1 synthetic) for the 2 captions / 2
  images of every instance; ``SUGARCREPE_Classifier_<detector>.csv`` the same for SugarCrepe captions (``text_pred``,
  ``label``; e.g. ``IMirandaM/BiVLC@84f0d175 src/Detectors/results/SUGARCREPE_Classifier_CLIP_baseline.csv``).

Definitions implemented (paper, Sec. 3.2 and App. D; C0/C1 positive/negative caption, I0/I1 positive/negative
image, s the similarity):

* Ipos2T = s(C0,I0) > s(C1,I0); Ineg2T = s(C1,I1) > s(C0,I1); Tpos2I = s(C0,I0) > s(C0,I1);
  Tneg2I = s(C1,I1) > s(C1,I0) (Table 3: "Ipos2T refers to image-to-text retrieval with positive image,
  Ineg2T for image-to-text retrieval with negative image, etc.");
* I2T = Ipos2T and Ineg2T (Eq. 1: "To obtain a perfect I2T score, the correct captions for both images have
  to be selected"); T2I = Tpos2I and Tneg2I (Eq. 2); Group = I2T and T2I (Eq. 3);
* strict inequality, so a tie counts as wrong: Eqs. 1-3 use ">" and the released ``evaluate_BiVLC`` computes
  ``s_C0_I0 > s_C1_I0`` etc. (``IMirandaM/BiVLC@84f0d175 src/CLIP_fine_tuning/CLIP_utils.py:161-164``
  "Ipos_2T = s_C0_I0 > s_C1_I0"). A file that carries similarities (columns ``sim_C0_I0``, ``sim_C0_I1``,
  ``sim_C1_I0``, ``sim_C1_I1``, the released code's names:
  ``IMirandaM/BiVLC@84f0d175 src/CLIP_fine_tuning/CLIP_utils.py:142`` "sim_C0_I0 = caption_0_embedding @
  image_0_embedding.t()") is decided here with the same rule and its ties are counted;
* SugarCrepe: the accuracy over all examples (micro average), which is what the paper's SugarCrepe column
  reports (CLIP 76.56 = 5,751 / 7,512); the macro averages over the 7 subcategories and the 3 categories are
  reported too (73.08 / 73.04 for CLIP: they do not match);
* detectors (Sec. 5.3): "for image-to-text retrieval, we first use the visual encoder to predict the type of
  image (natural or synthetic); if the detection is correct, the output of the text detector is used to see
  which of the captions has the highest probability to be of the same type as the image, and we select it as
  the matching caption; for text-to-image retrieval, we follow the same procedure, but using first the text
  detector over the given caption, and afterwards the visual detector for the two candidate images".
  So Ipos2T = [I0 detected natural] and p_text(C0) < p_text(C1); Ineg2T = [I1 detected synthetic] and
  p_text(C1) > p_text(C0); Tpos2I = [C0 detected natural] and p_img(I0) < p_img(I1); Tneg2I = [C1 detected
  synthetic] and p_img(I1) > p_img(I0); a probability is "synthetic" when it rounds to 1 with round-half-to-even
  (the released detector evaluation uses ``np.round``,
  ``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_evaluation_BiVLC.py:172`` "if (np.round(i0) == 0) & (c0 < c1):",
  and ``torch.round``, ``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_evaluation_BiVLC.py:137``
  "if (torch.round(text) == lab):": 0.5 -> natural), ties
  between the two probabilities count as wrong (strict ``<``). Detection accuracy: share of the 2N captions
  (images) whose rounded probability equals the label. Rows are paired as the released script pairs them: the
  k-th natural row with the k-th synthetic row (``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_evaluation_BiVLC.py:164``
  "for c0, i0, c1 , i1 in zip(positives['text_pred'], positives['img_pred'],"). On SugarCrepe the detector's
  accuracy is the share of examples whose positive caption is judged less synthetic than the negative one
  (``c0 < c1``: ``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_evaluation_SugarCrepe.py:119-120``
  "for c0, c1 in zip(positives['text_pred'], negatives['text_pred']): if (c0 < c1):").
* Table 1 counts retrieval examples: 4 per BiVLC instance (2 I2T + 2 T2I), 1 per SugarCrepe example.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable

from common.audit.core import CLAIM_TABLE, Recomputed
from common.registry.errors import FetchError, RegistryError
from common.registry.fetch import quiet_fetch
from papers.bivlc.detection import FINER, is_synthetic, score_detectors
from papers.bivlc.released_csv import ReleasedFileError, Row, number, paired, read_csv, require, split_pairs

PAPER = "bivlc"
DATA_FILES = ("papers/bivlc/sources.toml",)
"""Read at run time (``common.pipeline.stage_deps``): this paper's download-registry entries."""

TYPES = ("replace", "swap", "add")
CATEGORIES = ("replace-obj", "replace-att", "replace-rel", "swap-obj", "swap-att", "add-obj", "add-att")
"""SugarCrepe's 7 subcategories (BiVLC keeps them); there is no swap-rel nor add-rel."""
_SUBTYPE_ALIASES = {"obj": "obj", "object": "obj", "att": "att", "attribute": "att", "rel": "rel", "relation": "rel"}

MAIN = ("I2T", "T2I", "Group")
BOOL_COLUMNS = {"Ipos2T": "text_score_i0", "Ineg2T": "text_score_i1", "Tpos2I": "image_score_c0",
                "Tneg2I": "image_score_c1"}
"""Released column of each finer metric: the header of the released files (``IMirandaM/BiVLC@84f0d175
results/BiVLC_ViT-B-32.csv``, cited whole). The evaluation script at that commit writes other names
(``IMirandaM/BiVLC@84f0d175 main_evaluation_BiVLC.py:90`` "df['Ipos_2T'] = [tensor.item() for tensor in Ipos_2T]"),
so the released files came from an earlier version of it."""
DERIVED_COLUMNS = {"I2T": "text_score", "T2I": "image_score", "Group": "group_score"}
SIM_COLUMNS = ("sim_C0_I0", "sim_C0_I1", "sim_C1_I0", "sim_C1_I1")

STRICT_RULE = ("strict '>' (Eqs. 1-3 of the paper and the released evaluate_BiVLC): a tie counts as wrong")

# -- the released files and the published cells they fill -------------------------------------------------------
_R = "bivlc/released/"
_MODEL_ROWS: dict[str, tuple[str | None, str]] = {
    "ViT-B-32": ("Contrastive | CLIP", "CLIP"), "CLIP_COCO": ("Contrastive | CLIPCOCO", "CLIPCOCO"),
    "CLIP_TROHN-Text": (None, "CLIPTROHN-Text"), "CLIP_TROHN-Img": (None, "CLIPTROHN-Img")}
"""A released model's file suffix -> (Table 2 row or None, Table 3/4 row)."""
BIVLC_FILES = {f"{_R}results/BiVLC_{m}.csv": rows for m, rows in _MODEL_ROWS.items()}
SUGARCREPE_FILES = {f"{_R}results/SUGARCREPE_CORRECT_{m}.csv": rows for m, rows in _MODEL_ROWS.items()}
DETECTOR_FILES: dict[str, str] = {
    _R + "src/Detectors/results/BiVLC_Classifier_CORRECT_CLIP_baseline.csv": "CLIPDet",
    _R + "src/Detectors/results/BiVLC_Classifier_CORRECT_CLIP_TROHN-Img.csv": "CLIPTROHN-Img/Det",
}
"""The baseline detector is CLIPDet ("the original pretrained CLIP visual and text encoders")."""
SUGARCREPE_DETECTOR_FILES: dict[str, str] = {
    _R + "src/Detectors/results/SUGARCREPE_Classifier_CLIP_baseline.csv": "sec5.3_det_sc_clipdet_74.59",
    _R + "src/Detectors/results/SUGARCREPE_Classifier_CLIP_TROHN-Img.csv": "sec5.3_det_sc_trohn_77.65",
}
"""Registry key -> claim id (Sec. 5.3: "an accuracy of 74.59 for CLIPDet and 77.65 for CLIPTROHN-Img/Det")."""
TABLE1_BIVLC_FILE = _R + "results/BiVLC_ViT-B-32.csv"
TABLE1_BIVLC_CROSSCHECK = _R + "results/BiVLC_CLIP_COCO.csv"
TABLE1_SUGARCREPE_FILE = _R + "source_data/SugarCrepe/test_SugarCrepe.csv"

TABLE1_COLUMNS = {"replace-obj": "Replace | Obj", "replace-att": "Replace | Att", "replace-rel": "Replace | Rel",
                  "swap-obj": "Swap | Obj", "swap-att": "Swap | Att", "add-obj": "Add | Obj", "add-att": "Add | Att"}
TABLE3_COLUMNS = {"I2T": "BiVLC | I2T", "T2I": "BiVLC | T2I", "Group": "BiVLC | Group",
                  **{m: f"BiVLC (finer metrics) | {m}" for m in FINER}}
TABLE5_COLUMNS = {"text_detection_acc": "Text detection acc", "img_detection_acc": "Img detection acc",
                  "I2T": "I2T", "T2I": "T2I", "Group": "Group"}


# -- reading ------------------------------------------------------------------------------------------------------
def _no_row_twice(path: Path, header: list[str], rows: list[Row]) -> None:
    """A row of a file of examples equal to an earlier one in every field is a copy, which would count that example
    twice (a detector's file is only probabilities and labels: equal rows are expected there)."""
    first: dict[tuple[str, ...], int] = {}
    for row in rows:
        key = tuple(row.values[h] for h in header)
        if key in first:
            raise ReleasedFileError(f"{path}:{row.line}: the same row as line {first[key]} (an example twice); "
                                    "remove the copy or fetch the file again")
        first[key] = row.line


def _bool(path: Path, row: Row, column: str) -> bool:
    text = row.values[column].strip()
    low = text.lower()
    if low in ("true", "1", "1.0"):
        return True
    if low in ("false", "0", "0.0"):
        return False
    raise ReleasedFileError(f"{path}:{row.line}: column {column!r}: {text!r} is not a boolean score "
                            "(expected True/False or 1/0)")


def _category(path: Path, row: Row) -> str:
    raw_type, raw_sub = row.values["type"].strip(), row.values["subtype"].strip()
    cat = f"{raw_type.lower()}-{_SUBTYPE_ALIASES.get(raw_sub.lower())}"
    if cat not in CATEGORIES:  # every category's type is one of TYPES
        raise ReleasedFileError(f"{path}:{row.line}: unknown category type={raw_type!r} subtype={raw_sub!r} "
                                f"(known: {', '.join(CATEGORIES)})")
    return cat


def _pct(k: int, n: int) -> float:
    return 100.0 * k / n if n else math.nan


# -- format detection ---------------------------------------------------------------------------------------------
def detect_format(header: list[str]) -> str | None:
    cols = set(header)
    if {"text_pred", "img_pred"} <= cols or ("img_pred" in cols and "label" in cols):
        return "bivlc-detector"
    if {"text_pred", "label"} <= cols:
        return "sugarcrepe-detector"
    if cols & (set(BOOL_COLUMNS.values()) | set(DERIVED_COLUMNS.values()) | set(SIM_COLUMNS)):
        return "bivlc-instances"
    if "correct" in cols:
        return "sugarcrepe-examples"
    if {"type", "subtype", "caption", "negative_caption"} <= cols:
        return "sugarcrepe-benchmark"
    return None


# -- scorers ------------------------------------------------------------------------------------------------------
def _group_scores(decisions: list[dict[str, bool]]) -> dict[str, Any]:
    n = len(decisions)
    correct = {m: sum(d[m] for d in decisions) for m in (*MAIN, *FINER)}
    return {"n": n, **{m: _pct(k, n) for m, k in correct.items()}, "correct": correct}


def _by_category(items: list[tuple[str, Any]], scorer: Callable[[list[Any]], dict[str, Any]]) -> tuple[dict, dict]:
    by_type = {t: [x for c, x in items if c.split("-")[0] == t] for t in TYPES}
    by_sub = {c: [x for cc, x in items if cc == c] for c in CATEGORIES}
    return ({t: scorer(v) for t, v in by_type.items() if v}, {c: scorer(v) for c, v in by_sub.items() if v})


def _score_bivlc_instances(path: Path, header: list[str], rows: list[Row]) -> dict[str, Any]:
    require(path, header, ("type", "subtype"), "bivlc-instances")
    has_sims = any(c in header for c in SIM_COLUMNS)
    has_bools = any(c in header for c in BOOL_COLUMNS.values())
    if has_sims:
        require(path, header, SIM_COLUMNS, "bivlc-instances (similarities)")
    if has_bools or not has_sims:
        require(path, header, tuple(BOOL_COLUMNS.values()), "bivlc-instances")
    ties = {m: 0 for m in FINER}
    items: list[tuple[str, dict[str, bool]]] = []
    for row in rows:
        cat = _category(path, row)
        d: dict[str, bool] = {}
        if has_sims:
            s = {c: number(path, row, c) for c in SIM_COLUMNS}
            pairs = {"Ipos2T": (s["sim_C0_I0"], s["sim_C1_I0"]), "Ineg2T": (s["sim_C1_I1"], s["sim_C0_I1"]),
                     "Tpos2I": (s["sim_C0_I0"], s["sim_C0_I1"]), "Tneg2I": (s["sim_C1_I1"], s["sim_C1_I0"])}
            for m, (right, wrong) in pairs.items():
                d[m] = right > wrong
                ties[m] += right == wrong
        if has_bools:
            for m, col in BOOL_COLUMNS.items():
                given = _bool(path, row, col)
                if has_sims and given != d[m]:
                    raise ReleasedFileError(f"{path}:{row.line}: column {col!r} = {given} disagrees with the "
                                            f"similarities ({m} under {STRICT_RULE})")
                d[m] = given
        d["I2T"] = d["Ipos2T"] and d["Ineg2T"]
        d["T2I"] = d["Tpos2I"] and d["Tneg2I"]
        d["Group"] = d["I2T"] and d["T2I"]
        for m, col in DERIVED_COLUMNS.items():
            if col in header and _bool(path, row, col) != d[m]:
                parts = {"I2T": "text_score_i0 and text_score_i1", "T2I": "image_score_c0 and image_score_c1",
                         "Group": "text_score and image_score"}[m]
                raise ReleasedFileError(f"{path}:{row.line}: column {col!r} = {row.values[col].strip()} disagrees "
                                        f"with {parts} ({d[m]})")
        items.append((cat, d))
    decisions = [d for _, d in items]
    by_type, by_sub = _by_category(items, _group_scores)
    n = len(items)
    return {
        "format": "bivlc-instances",
        "file": str(path),
        "n_instances": n,
        "decision_rule": STRICT_RULE,
        "decided_from": "similarities" if has_sims else "released decisions (True/False)",
        "ties": ties if has_sims else None,
        "ties_note": ("ties counted per retrieval example and scored as wrong" if has_sims else
                      "the file holds decisions, not similarities: ties are not observable here (the released "
                      "code scores a tie as wrong)"),
        "overall": _group_scores(decisions),
        "by_type": by_type,
        "by_subcategory": by_sub,
        "retrieval_examples": {**{c: 4 * v["n"] for c, v in by_sub.items()}, "total": 4 * n},
        "retrieval_examples_note": "Table 1 counts: 4 retrieval examples per instance (2 I2T + 2 T2I)",
    }


def _accuracy(values: list[bool]) -> dict[str, Any]:
    return {"n": len(values), "accuracy": _pct(sum(values), len(values)), "correct": sum(values)}


def _score_sugarcrepe_examples(path: Path, header: list[str], rows: list[Row]) -> dict[str, Any]:
    require(path, header, ("type", "subtype", "correct"), "sugarcrepe-examples")
    items = [(_category(path, row), _bool(path, row, "correct")) for row in rows]
    by_type, by_sub = _by_category(items, _accuracy)
    values = [x for _, x in items]
    sub_accs = [v["accuracy"] for v in by_sub.values()]
    type_accs = [v["accuracy"] for v in by_type.values()]
    return {
        "format": "sugarcrepe-examples",
        "file": str(path),
        "n_examples": len(values),
        "correct": sum(values),
        "micro": _pct(sum(values), len(values)),
        "macro_subcategory": sum(sub_accs) / len(sub_accs),
        "macro_type": sum(type_accs) / len(type_accs),
        "paper_column": "micro",
        "paper_column_note": "BiVLC's SugarCrepe column is the accuracy over all examples (micro average)",
        "decision_rule": "released 'correct' = 1 if s(pos caption, image) > s(neg caption, image) (strict; ties "
                         "not observable in the file)",
        "by_type": by_type,
        "by_subcategory": by_sub,
        "retrieval_examples": {**{c: v["n"] for c, v in by_sub.items()}, "total": len(values)},
    }


def _score_sugarcrepe_benchmark(path: Path, header: list[str], rows: list[Row]) -> dict[str, Any]:
    require(path, header, ("type", "subtype"), "sugarcrepe-benchmark")
    cats = [_category(path, row) for row in rows]
    counts = {c: cats.count(c) for c in CATEGORIES if c in cats}
    return {"format": "sugarcrepe-benchmark", "file": str(path), "n_examples": len(cats),
            "retrieval_examples": {**counts, "total": len(cats)},
            "note": "no scores in this file: SugarCrepe examples counted per subcategory (1 retrieval example each)"}


def _detection(rows_by_label: tuple[list, list], index: int) -> dict[str, Any]:
    natural, synthetic = rows_by_label
    # round(p) == 1 with round-half-to-even, as np.round/torch.round do (0.5 -> natural): every profile's rule
    ok_nat = [not bool(is_synthetic(p[index])) for _, p in natural]
    ok_syn = [bool(is_synthetic(p[index])) for _, p in synthetic]
    wrong = [{"line": line, "label": lab, "p_synthetic": p[index]}
             for lab, group, oks in ((0, natural, ok_nat), (1, synthetic, ok_syn))
             for (line, p), ok in zip(group, oks) if not ok]
    n = len(ok_nat) + len(ok_syn)
    k = sum(ok_nat) + sum(ok_syn)
    return {"accuracy": _pct(k, n), "correct": k, "n": n, "natural_only": _pct(sum(ok_nat), len(ok_nat)),
            "synthetic_only": _pct(sum(ok_syn), len(ok_syn)),
            "at_threshold": sum(p[index] == 0.5 for _, p in natural + synthetic),
            "misclassified": wrong if len(wrong) <= 20 else f"{len(wrong)} rows"}


def _score_bivlc_detector(path: Path, header: list[str], rows: list[Row]) -> dict[str, Any]:
    natural, synthetic = split_pairs(path, header, rows, ("text_pred", "img_pred"), "bivlc-detector")
    # the k-th natural row (C0, I0) with the k-th synthetic row (C1, I1); the decision rule is shared
    text_p, image_p = paired(natural, synthetic, 0), paired(natural, synthetic, 1)
    outcome = score_detectors(image_p, text_p)
    decisions = [{**{m: bool(outcome.decisions[m][k]) for m in (*FINER, "I2T", "T2I")},
                  "Group": bool(outcome.decisions["group"][k])} for k in range(len(text_p))]
    ties = {"text": outcome.text_ties, "image": outcome.image_ties}
    text, img = _detection((natural, synthetic), 0), _detection((natural, synthetic), 1)
    overall = _group_scores(decisions)
    return {
        "format": "bivlc-detector",
        "file": str(path),
        "n_instances": len(decisions),
        "n_rows": len(rows),
        "text_detection_acc": text["accuracy"],
        "img_detection_acc": img["accuracy"],
        "text_detection": text,
        "img_detection": img,
        **{m: overall[m] for m in (*MAIN, *FINER)},
        "correct": overall["correct"],
        "ties": ties,
        "decision_rule": ("Sec. 5.3: the query's detector must classify it correctly (p > 0.5 = synthetic, 0.5 -> "
                          "natural as np.round), then the candidate whose probability is strictly closer to the "
                          "query's type is chosen; a tie counts as wrong. Rows paired k-th natural with k-th "
                          "synthetic, as the released detector evaluation does "
                          '(IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_evaluation_BiVLC.py:164 "for c0, i0, c1 , i1")'),
    }


def _score_sugarcrepe_detector(path: Path, header: list[str], rows: list[Row]) -> dict[str, Any]:
    natural, synthetic = split_pairs(path, header, rows, ("text_pred",), "sugarcrepe-detector")
    wins = [c0 < c1 for (_, (c0,)), (_, (c1,)) in zip(natural, synthetic)]
    text = _detection((natural, synthetic), 0)
    return {
        "format": "sugarcrepe-detector",
        "file": str(path),
        "n_examples": len(wins),
        "accuracy": _pct(sum(wins), len(wins)),
        "correct": sum(wins),
        "ties": sum(c0 == c1 for (_, (c0,)), (_, (c1,)) in zip(natural, synthetic)),
        "text_detection_acc": text["accuracy"],
        "text_detection": text,
        "decision_rule": "the positive caption is chosen when the text detector finds it strictly less likely to be "
                         "synthetic than the negative one (p(C0) < p(C1), as the released SugarCrepe detector "
                         'evaluation: IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_evaluation_SugarCrepe.py:120 "if (c0 < c1):"); '
                         "a tie counts as wrong",
    }


_SCORERS = {
    "bivlc-instances": _score_bivlc_instances,
    "sugarcrepe-examples": _score_sugarcrepe_examples,
    "bivlc-detector": _score_bivlc_detector,
    "sugarcrepe-detector": _score_sugarcrepe_detector,
    "sugarcrepe-benchmark": _score_sugarcrepe_benchmark,
}
FORMATS = tuple(_SCORERS)


def score_released_file(path: Path, fmt: str = "auto") -> dict[str, Any]:
    """Scores of one file in a released BiVLC format (``FORMATS``; ``auto``: ``detect_format``), as a JSON-able dict
    (percentages unrounded); malformed input raises ``ReleasedFileError`` naming the file and the line."""
    path = Path(path)
    header, rows = read_csv(path)
    if fmt == "auto":
        detected = detect_format(header)
        if detected is None:
            raise ReleasedFileError(
                f"{path}:1: unrecognised columns {header}: expected a BiVLC per-instance file (type, subtype, "
                f"{', '.join(BOOL_COLUMNS.values())}), a SugarCrepe per-example file (type, subtype, correct) or a "
                "detector output (text_pred[, img_pred], label)")
        fmt = detected
    if fmt not in _SCORERS:
        raise ReleasedFileError(f"{path}: unknown format {fmt!r} (known: {', '.join(FORMATS)})")
    if fmt not in ("bivlc-detector", "sugarcrepe-detector"):
        _no_row_twice(path, header, rows)
    return _SCORERS[fmt](path, header, rows)


# -- recompute: released files -> published cells ------------------------------------------------------------------
_Cell = tuple[str, str, str, Callable[[dict[str, Any]], float], Callable[[dict[str, Any]], str]]


def _no_note(_: dict[str, Any]) -> str:
    return ""


def _bivlc_cells(row2: str | None, row3: str) -> list[_Cell]:
    cells: list[_Cell] = [("Table 2", row2, f"BiVLC | {m}", lambda r, m=m: r["overall"][m], _no_note)
                          for m in MAIN if row2 is not None]
    cells += [("Table 3", row3, column, lambda r, m=m: r["overall"][m], _no_note)
              for m, column in TABLE3_COLUMNS.items()]
    return cells + [("Table 4", row3, f"{t.capitalize()} | {m}", lambda r, t=t, m=m: r["by_type"][t][m],
                     lambda r, t=t, m=m: f"{r['by_type'][t]['correct'][m]} / {r['by_type'][t]['n']} instances")
                    for t in TYPES for m in MAIN]


def _sugarcrepe_cells(row2: str | None, row3: str) -> list[_Cell]:
    def note(r: dict[str, Any]) -> str:
        return (f"micro average {r['correct']} / {r['n_examples']} (macro over subcategories "
                f"{r['macro_subcategory']:.2f}, over categories {r['macro_type']:.2f})")

    rows = [("Table 2", row2)] if row2 is not None else []
    return [(table, row, "SugarCrepe", lambda r: r["micro"], note) for table, row in rows + [("Table 3", row3)]]


def _detector_cells(row: str) -> list[_Cell]:
    def det_note(kind: str) -> Callable[[dict[str, Any]], str]:
        def note(r: dict[str, Any]) -> str:
            d = r[f"{kind}_detection"]
            wrong = d["misclassified"]
            listed = ("; wrong: " + ", ".join(f"line {w['line']} label {w['label']} p={w['p_synthetic']:.3f}"
                                              for w in wrong)) if isinstance(wrong, list) and wrong else ""
            return (f"{d['correct']} / {d['n']} {'captions' if kind == 'text' else 'images'} with round(p) == label "
                    f"(natural only {d['natural_only']:.2f}, synthetic only {d['synthetic_only']:.2f}){listed}")
        return note

    notes = {"text_detection_acc": det_note("text"), "img_detection_acc": det_note("img")}
    return [("Table 5", row, column, lambda r, k=k: r[k], notes.get(k, _no_note)) for k, column in TABLE5_COLUMNS.items()]


def _table1_cells(row: str) -> list[_Cell]:
    cells: list[_Cell] = [("Table 1", row, column, lambda r, c=c: float(r["retrieval_examples"].get(c, 0)), _no_note)
                          for c, column in TABLE1_COLUMNS.items()]
    cells.append(("Table 1", row, "Total", lambda r: float(r["retrieval_examples"]["total"]), _no_note))
    return cells


def recompute(fetcher: Callable[[str], Path] | None = None) -> list[Recomputed]:
    """Every published BiVLC number recomputable from the released files (profile ``released``); a file that cannot
    be fetched yields NaN recomputations ("not recomputed yet", the reason in the note)."""
    fetch_path = fetcher or quiet_fetch
    scored: dict[str, dict[str, Any] | str] = {}

    def score(key: str) -> dict[str, Any] | str:
        if key not in scored:
            try:
                path = fetch_path(key)
            except (FetchError, RegistryError) as exc:
                first = (str(exc).splitlines() or [""])[0].removeprefix(f"{key}: ").split(". Tried:")[0]
                scored[key] = f"{type(exc).__name__}: {first[:300]}"
            else:
                scored[key] = score_released_file(path)
        return scored[key]

    recs: list[Recomputed] = []
    # (registry key, cells it fills, unit) for every released file the audit reads
    plan: list[tuple[str, list[_Cell], str]] = [
        *((key, _bivlc_cells(row2, row3), "percent") for key, (row2, row3) in BIVLC_FILES.items()),
        *((key, _sugarcrepe_cells(row2, row3), "percent") for key, (row2, row3) in SUGARCREPE_FILES.items()),
        *((key, _detector_cells(row), "percent") for key, row in DETECTOR_FILES.items()),
        *((key, [(CLAIM_TABLE, claim, "value", lambda r: r["accuracy"],
                  lambda r: f"{r['correct']} / {r['n_examples']} SugarCrepe examples with p(C0) < p(C1)")], "percent")
          for key, claim in SUGARCREPE_DETECTOR_FILES.items()),
        (TABLE1_BIVLC_FILE, _table1_cells("BiVLC (ours)"), "count"),
        (TABLE1_SUGARCREPE_FILE, _table1_cells("SugarCrepe"), "count")]
    for key, cells, unit in plan:
        result = score(key)
        extra = ""
        if key == TABLE1_BIVLC_FILE and isinstance(result, dict):
            other = score(TABLE1_BIVLC_CROSSCHECK)
            if isinstance(other, dict):
                same = other["retrieval_examples"] == result["retrieval_examples"]
                extra = (f"; identical counts in {TABLE1_BIVLC_CROSSCHECK}" if same else
                         f"; {TABLE1_BIVLC_CROSSCHECK} has other counts: {other['retrieval_examples']}")
        for table, row, column, value_of, note_of in cells:
            if isinstance(result, str):
                recs.append(Recomputed(PAPER, table, row, column, math.nan, unit, key, "released", "exact",
                                       note=f"not recomputed yet: released file {key} could not be fetched ({result})"))
                continue
            note = f"retrieval examples counted in {Path(key).name}" + extra if unit == "count" else note_of(result)
            recs.append(Recomputed(PAPER, table, row, column, float(value_of(result)), unit, key, "released",
                                   "exact", note=note))
    return recs


__all__ = ["ReleasedFileError", "score_released_file", "detect_format", "recompute", "FORMATS",
           "CATEGORIES", "BIVLC_FILES", "SUGARCREPE_FILES", "DETECTOR_FILES", "SUGARCREPE_DETECTOR_FILES"]
