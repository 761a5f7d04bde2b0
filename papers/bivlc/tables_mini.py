"""BiVLC (Miranda et al.), Tables 2-5 in the mini profile: the mini family, ARO's mini NegCLIP and the three
fine-tunes of ``papers.bivlc.train_mini`` on the rendered bidirectional benchmark (``papers.bivlc.sets_mini``),
SugarCrepe's mini set beside it, and the natural-vs-synthetic detectors (``papers.bivlc.detectors_mini``).

Every model is scored once per benchmark:

* **BiVLC analog** (Tables 2-4): the group scorer (``common.scoring.group``: Ipos2T, Ineg2T, Tpos2I, Tneg2I, I2T,
  T2I, group; strict comparisons, as the authors' ``evaluate_BiVLC``) on the unambiguous instances (replace, swap);
  Table 4's Add column on the add instances, which the world makes ambiguous by construction (``sets_mini``).
* **SugarCrepe** (Table 2's SugarCrepe column): SugarCrepe's mini set through SugarCrepe's own loader
  (``common.benchmarks.caption_negatives``), its strict rule, the micro average over all examples (as BiVLC reports it).
* **Detectors** (Table 5): P(synthetic) of every image and caption from the heads of ``mini-detectors`` on the frozen
  towers' raw outputs (``papers.bivlc.detector_heads``, as the authors' probes); detection accuracy at 0.5 and retrieval by the authors' procedure (``papers.bivlc.detection``:
  no image-caption similarity at all), on the BiVLC analog and on SugarCrepe's mini set (I2T only).

Outputs in ``results/bivlc/mini/`` (stage ``tables-mini``): ``table2.csv`` (every model: SugarCrepe, I2T, T2I, group
and the finer metrics; Table 3 is its rows of one size), ``table4.csv`` (per type), ``table5.csv`` (detectors),
``table2_plot.csv`` (DVC plot), ``comparisons.json`` (the paper's findings with paired-bootstrap intervals),
``summary.json`` (DVC metrics: twelve numbers), ``context.json``.
"""
from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from common.io import sha256_file, write_csv_atomic, write_json_atomic, write_output_group
from common.jsonl import read_json
from common.paths import build_dir
from common.scoring.group import GroupResult
from common.scoring.selection import STRICT, SelectionResult
from common.tasks import GroupItem, ImageToTextItem
from common.training.records import training_context
from common.zoo.trained import served
from papers.bivlc import detector_heads, findings
from papers.bivlc.detection import head_run
from papers.bivlc.detection import score_detectors
from papers.bivlc.detector_heads import Head
from papers.bivlc.runs import DETECTOR_ENCODERS, DETECTOR_TOWERS, RUNS
from papers.bivlc.sets_mini import CATEGORIES, BivlcMiniError, load_test_items, type_of

FINER = ("Ipos2T", "Ineg2T", "Tpos2I", "Tneg2I")
MAIN = ("I2T", "T2I", "group")
TYPES = ("replace", "swap", "add")
SUMMARY_KEYS: tuple[str, ...] = (
    "clip_i2t", "clip_t2i", "clip_group", "clip_i2t_minus_t2i_ci_low", "trohn_img_t2i", "trohn_img_group",
    "trohn_img_gap_closed", "trohn_text_sugarcrepe", "clip_coco_group", "clipdet_image_detection",
    "clipdet_i2t", "clipdet_group")
"""The DVC metrics (flat numbers, in points except the share of the gap closed): CLIP's three scores and the lower
end of its I2T - T2I gap, TROHN-Img's T2I and group and the share of CLIP's I2T - T2I gap it closes, TROHN-Text's
SugarCrepe, CLIP_COCO's group, and CLIPDet's image detection, I2T and group."""


@dataclass(frozen=True)
class ModelEntry:
    """A table row: its id (the audit's key), zoo name, label, kind and (a fine-tune) its weights."""

    row: str
    name: str
    label: str
    kind: str
    checkpoint: Path | None = None


def entries_for(base: str, family: Sequence[str], negclip: str, models_dir: Path) -> list[ModelEntry]:
    """CLIP (the base), the rest of the family, ARO's mini NegCLIP, then the three fine-tunes (best weights)."""
    rows = [ModelEntry("clip", base, f"CLIP ({base}, the mini family's ViT-B/32)", "pretrained")]
    rows += [ModelEntry(name.replace("/", "-"), name, f"{name} (the mini family)", "pretrained")
             for name in family if name != base]
    rows.append(ModelEntry("negclip", negclip, f"NegCLIP ({negclip}: ARO's mini NegCLIP of {base})", "negclip"))
    rows += [ModelEntry(run, f"bivlc/mini-{run}", spec.label, "finetune",
                        Path(models_dir) / f"{run}.best.safetensors") for run, spec in RUNS.items()]
    return rows


def pct(x: float) -> float:
    return round(100.0 * float(x), 2)


@dataclass(frozen=True)
class DetectorScores:
    """P(synthetic) per test instance (columns: positive, negative) and of each SugarCrepe item's two captions."""

    image: np.ndarray
    text: np.ndarray
    ambiguous_image: np.ndarray
    ambiguous_text: np.ndarray
    sugarcrepe_text: np.ndarray


@dataclass(frozen=True)
class ModelScores:
    bivlc: GroupResult
    ambiguous: GroupResult
    sugarcrepe: SelectionResult
    fingerprint: str
    detectors: DetectorScores | None = None


def load_head(path: Path, tower: str) -> Head:
    """A detector's head (``DetectorLoss.head``) from the trainer's ``<stem>.loss.safetensors``."""
    if not Path(path).is_file():
        raise BivlcMiniError(f"{path}: no detector head; run the mini-detectors stage")
    return detector_heads.load_head(path, tower)


def detector_scores(model, heads: Mapping[str, Head], items: Sequence[GroupItem], ambiguous: Sequence[GroupItem],
                    sugarcrepe: Sequence[ImageToTextItem]) -> DetectorScores:
    """P(synthetic) of every image and caption through the heads, on the towers' raw outputs (the features the heads
    were trained on, ``detector_heads.tower_outputs``)."""
    def pairs(group_items):
        img, txt = detector_heads.tower_outputs(model, [i for it in group_items for i in it.images],
                                                [c for it in group_items for c in it.captions])
        return (detector_heads.probabilities(heads["image"], img).reshape(len(group_items), 2),
                detector_heads.probabilities(heads["text"], txt).reshape(len(group_items), 2))

    image, text = pairs(items)
    amb_image, amb_text = pairs(ambiguous)
    _, features = detector_heads.tower_outputs(model, (), [c for it in sugarcrepe for c in it.captions[:2]])
    sc_text = detector_heads.probabilities(heads["text"], features).reshape(-1, 2)
    return DetectorScores(image, text, amb_image, amb_text, sc_text)


def score_models(entries: Sequence[ModelEntry], arch_of: Mapping[str, str], items: Sequence[GroupItem],
                 ambiguous: Sequence[GroupItem], sugarcrepe: Sequence[ImageToTextItem],
                 detector_heads: Mapping[str, Mapping[str, Head]], engine_config=None,
                 device: str = "cpu") -> dict[str, ModelScores]:
    """Every model on both benchmarks; the detectors' heads (by the row of their encoder) on that row's embeddings."""
    from common.engine import Engine
    from common.scoring import group, selection

    out = {}
    for e in entries:
        engine = Engine(served(e, arch_of[e.row], device, family="bivlc-mini"), engine_config)
        heads = detector_heads.get(e.row)
        out[e.row] = ModelScores(group.evaluate(engine, items), group.evaluate(engine, ambiguous),
                                 selection.evaluate(engine, sugarcrepe, STRICT), engine.model.fingerprint,
                                 detector_scores(engine.model, heads, items, ambiguous, sugarcrepe) if heads else None)
    return out


def _sugarcrepe_micro(result: SelectionResult) -> float:
    return float(np.mean([o.correct for o in result.outcomes]))


def model_row(e: ModelEntry, s: ModelScores) -> dict:
    acc = s.bivlc.accuracy()
    row = {"row": e.row, "model": e.name, "label": e.label, "kind": e.kind,
           "sugarcrepe": pct(_sugarcrepe_micro(s.sugarcrepe)),
           **{m: pct(acc[m]) for m in MAIN}, **{m: pct(acc[m]) for m in FINER}, "n": len(s.bivlc.outcomes)}
    return row


def _by_type(result: GroupResult) -> dict[str, dict[str, float]]:
    by_type: dict[str, list] = {}
    for o in result.outcomes:
        by_type.setdefault(type_of(o.group), []).append(o)
    return {t: result.accuracy(v) for t, v in by_type.items()}


def table4_row(e: ModelEntry, s: ModelScores) -> dict:
    types = {**_by_type(s.bivlc), **_by_type(s.ambiguous)}
    row = {"row": e.row, "model": e.name, "label": e.label}
    for t in TYPES:
        row.update({f"{t}_{m}": pct(types[t][m]) for m in MAIN})
    return row


DETECTOR_ROWS = {"clip": ("clipdet", "CLIPDet (heads on the base's frozen towers)"),
                 "trohn-img": ("trohn-img-det", "CLIPTROHN-Img/Det (heads on the TROHN-Img run's frozen towers)")}


def detector_row(e: ModelEntry, d: DetectorScores) -> tuple[dict, dict]:
    """Table 5's row and the per-type detector scores."""
    outcome = score_detectors(d.image, d.text)
    decisions = outcome.decisions
    row_id, label = DETECTOR_ROWS[e.row]
    # SugarCrepe: the positive caption must look strictly more natural than the negative one (the released SugarCrepe
    # detector evaluation reads text predictions only, its images being all natural:
    # IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_evaluation_SugarCrepe.py:119-120 "for c0, c1 in
    # zip(positives['text_pred'], negatives['text_pred']): if (c0 < c1):")
    sugarcrepe = d.sugarcrepe_text[:, 0] < d.sugarcrepe_text[:, 1]
    row = {"row": row_id, "model": e.name, "label": label,
           "text_detection": pct(outcome.text_detection), "image_detection": pct(outcome.image_detection),
           **{m: pct(np.mean(decisions[m])) for m in MAIN}, "sugarcrepe": pct(np.mean(sugarcrepe))}
    return row, decisions


def comparisons(rows: Mapping[str, Mapping], scores: Mapping[str, ModelScores], detectors: Mapping[str, Mapping]) -> dict:
    """The paper's findings against the mini runs (``papers.bivlc.findings.compare``, the full profile's code too):
    T2I below I2T for the pretrained models (Finding 1, with CLIP's paired interval), CLIP's I2T above its group score
    (Finding 2, with its paired interval), TROHN-Img closing much of that gap (Sec. 5.3) and gaining over CLIP on T2I
    and group, TROHN-Text best on SugarCrepe but not on BiVLC (Finding 3's example), and the detectors (Table 5)."""
    return findings.compare(rows, {row: s.bivlc for row, s in scores.items()}, detectors, runs=tuple(RUNS),
                            pretrained=[row for row, r in rows.items() if r["kind"] == "pretrained"],
                            gains=("trohn-img",))


TABLE2_FIELDS = ("row", "model", "label", "kind", "sugarcrepe", *MAIN, *FINER, "n")
TABLE4_FIELDS = ("row", "model", "label", *(f"{t}_{m}" for t in TYPES for m in MAIN))
TABLE5_FIELDS = ("row", "model", "label", "text_detection", "image_detection", *MAIN, "sugarcrepe")


def write_tables(out_dir: Path, entries: Sequence[ModelEntry], scores: Mapping[str, ModelScores],
                 context: Mapping) -> dict[str, Path]:
    rows = {e.row: model_row(e, scores[e.row]) for e in entries}
    detectors = {}
    for e in entries:
        if scores[e.row].detectors is not None:
            row, _ = detector_row(e, scores[e.row].detectors)
            detectors[row["row"]] = row
    metrics = comparisons(rows, scores, detectors)
    ordered = [rows[e.row] for e in entries]
    plot = [{"bar": f"{r['row']} {m}", "model": r["row"], "metric": m, "value": r[m]}
            for r in ordered for m in ("sugarcrepe", *MAIN)]
    return {
        "table2": write_csv_atomic(out_dir / "table2.csv", ordered, TABLE2_FIELDS),
        "table4": write_csv_atomic(out_dir / "table4.csv", [table4_row(e, scores[e.row]) for e in entries],
                                   TABLE4_FIELDS),
        "table5": write_csv_atomic(out_dir / "table5.csv", list(detectors.values()), TABLE5_FIELDS),
        "table2_plot": write_csv_atomic(out_dir / "table2_plot.csv", plot, ("bar", "model", "metric", "value")),
        "comparisons": write_json_atomic(out_dir / "comparisons.json", metrics),
        "summary": write_json_atomic(out_dir / "summary.json", {k: metrics[k] for k in SUMMARY_KEYS}),
        "context": write_json_atomic(out_dir / "context.json", dict(context)),
    }


def evaluate_tables(entries: Sequence[ModelEntry], arch_of: Mapping[str, str], test_dir: Path,
                    sugarcrepe_manifest: Path, detectors_dir: Path, out_dir: Path, engine_config=None,
                    device: str = "cpu", context: Mapping | None = None) -> dict[str, Path]:
    """Score every model and detector, and write the tables as one output group."""
    from common.benchmarks.caption_negatives import PreparedSet

    items, ambiguous = load_test_items(Path(test_dir))
    sugarcrepe = PreparedSet.load(Path(sugarcrepe_manifest)).items()
    heads = {encoder: {tower: load_head(Path(detectors_dir) / f"{encoder}-{tower}.loss.safetensors", tower)
                       for tower in DETECTOR_TOWERS} for encoder in DETECTOR_ENCODERS}
    scores = score_models(entries, arch_of, items, ambiguous, sugarcrepe, heads, engine_config, device)
    full_context = {
        **dict(context or {}),
        "rules": {"bivlc": "strict '>' in every comparison (Eqs. 1-3; the authors' evaluate_BiVLC): a tie is wrong",
                  "ambiguous": "add_obj / add_att instances: the negative scene also shows the caption; scored only "
                               "in table4's add columns",
                  "sugarcrepe": "strict (SugarCrepe's rule), micro average over all examples (BiVLC's column)",
                  "detectors": "P(synthetic) = sigmoid(head(the tower's raw output)); judged synthetic above 0.5 (0.5 is "
                               "natural, as np.round); SugarCrepe: the positive's P(synthetic) strictly below the "
                               "negative's (the released code reads text predictions only); "
                               "retrieval by papers.bivlc.detection (no image-caption similarity)"},
        "n": {"bivlc": len(items), "ambiguous": len(ambiguous), "sugarcrepe": len(sugarcrepe),
              "by_category": {c: sum(it.group == c for it in (*items, *ambiguous)) for c in CATEGORIES}},
        "ties": {e.row: scores[e.row].bivlc.tie_counts() for e in entries},
        "models": {e.row: {"model": e.name, "label": e.label, "kind": e.kind,
                           "fingerprint": scores[e.row].fingerprint,
                           "checkpoint_sha256": sha256_file(e.checkpoint) if e.checkpoint else None}
                   for e in entries},
    }
    return write_output_group(out_dir, lambda staging: write_tables(staging, entries, scores, full_context))


def training_records(entries: Sequence[ModelEntry], detectors_dir: Path) -> dict[str, dict]:
    """The context's ``training``: each fine-tune's (by row id) and each detector head's (``detection.head_run``)
    sidecar record and recipe, for the audit's notes."""
    heads = {head_run(DETECTOR_ROWS[encoder][0], tower): Path(detectors_dir) / f"{encoder}-{tower}.loss.safetensors"
             for encoder in DETECTOR_ENCODERS for tower in DETECTOR_TOWERS}
    return training_context({**{e.row: e.checkpoint for e in entries if e.checkpoint is not None}, **heads})


def _cmd_tables(args) -> int:
    from common import reproducible
    from common.evaluate import engine_config
    from common.params import own_section
    from common.paths import RESULTS
    from common.zoo import get_spec

    reproducible.reexec_pinned()
    reproducible.fix_threads()
    params, section = own_section("bivlc.mini")
    root = build_dir("mini", "bivlc")
    entries = entries_for(section["base"], section["family"], section["negclip"], root / "models")
    base_arch = get_spec(section["base"]).arch
    arch_of = {e.row: base_arch if e.checkpoint else get_spec(e.name).arch for e in entries}
    detectors = Path(args.detectors or root / "detectors")
    paths = evaluate_tables(entries, arch_of, Path(args.test or root / "test"),
                            Path(args.sugarcrepe or build_dir("mini", "sugarcrepe") / "manifest.json"), detectors,
                            Path(args.out or RESULTS / "bivlc" / "mini"), engine_config(params),
                            context={"profile": "mini", "params": section, **reproducible.describe(),
                                     "training": training_records(entries, detectors)})
    print(json.dumps(read_json(paths["summary"]), indent=2))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m papers.bivlc.tables_mini", description=__doc__.splitlines()[0])
    parser.add_argument("--test", default=None, help="default: build/mini/bivlc/test")
    parser.add_argument("--sugarcrepe", default=None, help="default: build/mini/sugarcrepe/manifest.json")
    parser.add_argument("--detectors", default=None, help="default: build/mini/bivlc/detectors")
    parser.add_argument("--out", default=None, help="default: results/bivlc/mini")
    parser.set_defaults(func=_cmd_tables)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
