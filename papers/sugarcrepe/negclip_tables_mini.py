"""SugarCrepe Tables 5 and 10 in the mini profile (stage ``table5-mini``): the base and the fine-tuned models scored.

The paper (Sec. 5.2, Table 5, App. A.3) fine-tunes CLIP ViT-B/32 on COCO with hard negative captions of one type
(REPLACE, SWAP or NEGATE, from CREPE's templates) added to the CLIP loss, against CLIP fine-tuned without negatives,
and scores all of them on ARO+CREPE and on SugarCrepe: the gains are large on the template benchmark (largest where
training and test type match) and much smaller on SugarCrepe, whose negatives lack the templates' artifacts.
App. D.3 (Table 10) trains NegCLIP on template negatives that adversarial refinement kept instead.

Mini analog: the set (``negclip_sets_mini``), the runs (``negclip_train_mini``, ``runs.RUNS``), then here the base
and the fine-tuned models on the mini ARO+CREPE set (``build/mini/sugarcrepe_templates``: the mini SugarCrepe
positives with template negatives, kinds replace/swap/negate/shuffle) and on the mini SugarCrepe set, scored and
tabulated as ``negclip_tables`` does for both profiles.

Outputs in ``results/sugarcrepe/mini/``: ``table5.csv`` (a row per model; accuracies and gains over CLIP-FT, in
points), ``table5_metrics.json`` (the comparison the paper draws), ``table5_context.json``, ``table5.png``,
``table10.csv`` and ``table10_metrics.json`` (template vs refined negatives).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Mapping, Sequence

from common.io import write_json_atomic, write_output_group
from common.jsonl import read_json
from common.training.records import training_context
from papers.sugarcrepe.negclip_tables import (
    COLUMNS, SUGARCREPE_GROUPS, TABLE5_FIELDS, TABLE10_FIELDS, ModelEntry, mean2, score_models, summary, table_csv,
    table_rows, tables_context)
from papers.sugarcrepe.runs import REFINED_KINDS, RUNS

OUT = "sugarcrepe_negclip"
"""``build/mini/<OUT>``: the set (``set/``, its ``refined.json``) and the runs' weights (``models/``)."""


def entries_for(base: str, models_dir: Path) -> list[ModelEntry]:
    """Every row in the paper's order: pretrained, CLIP-FT, NegCLIP with each kind, then the refined runs."""
    rows = [ModelEntry(base, "pretrained")]
    for run, spec in RUNS.items():
        kind = spec.hard_negative
        rows.append(ModelEntry(f"sugarcrepe/mini-{run}", "clip-ft" if kind is None else "negclip", kind or "N/A",
                               "N/A" if kind is None else ("refined" if spec.refined else "template"),
                               Path(models_dir) / f"{run}.safetensors"))
    return rows


def table10_summary(rows: Sequence[Mapping]) -> dict[str, float]:
    """Table 10's comparison over the kinds trained both ways (``REFINED_KINDS``): mean gain over CLIP-FT on
    SugarCrepe (its three columns) and on the matching template column, template vs refined negatives."""
    pick = {(r["hard_negative"], r["negatives"]): r for r in rows if r["training"] == "negclip"}
    missing = [(k, n) for k in REFINED_KINDS for n in ("template", "refined") if (k, n) not in pick]
    if missing:
        raise ValueError(f"Table 10 needs a NegCLIP row for each of {missing}")
    out = {}
    for negatives in ("template", "refined"):
        out[f"gain_sugarcrepe_{negatives}"] = mean2(pick[k, negatives][f"gain_sugarcrepe_{g}"]
                                                    for k in REFINED_KINDS for g in SUGARCREPE_GROUPS)
        out[f"gain_template_matching_{negatives}"] = mean2(pick[k, negatives][f"gain_aro_crepe_{k}"]
                                                           for k in REFINED_KINDS)
    return out


def draw(table_csv: Path, out_png: Path) -> Path:
    from common.figures import grouped_bars

    return grouped_bars(table_csv, COLUMNS, out_png,
                        "SugarCrepe Table 5 (mini): ARO+CREPE-style templates vs SugarCrepe", label_column="label")


def write_tables(out_dir: Path, rows: Sequence[Mapping], context: Mapping,
                 refined: Mapping[str, Mapping] | None = None) -> dict[str, Path]:
    """Table 5 (every row on template negatives: csv, metrics, figure), the context, and, when the refined runs are
    among the rows, Table 10 (CLIP-FT and NegCLIP on template vs refined negatives; ``refined``: ``refined.json``'s
    counts per kind)."""
    table5 = [r for r in rows if r["negatives"] != "refined"]
    paths = {"table5": table_csv(out_dir / "table5.csv", table5, TABLE5_FIELDS),
             "metrics5": write_json_atomic(out_dir / "table5_metrics.json", summary(table5)),
             "context": write_json_atomic(out_dir / "table5_context.json", dict(context))}
    paths["figure5"] = draw(paths["table5"], out_dir / "table5.png")
    if any(r["negatives"] == "refined" for r in rows):
        refined = refined or {}
        table10 = [{**r, "negatives_kept": "" if r["negatives"] == "N/A" else
                    (f"{refined[r['hard_negative']]['n_kept']}/{refined[r['hard_negative']]['n_in']}"
                     if r["negatives"] == "refined" else "all")}
                   for r in rows if r["training"] == "clip-ft" or r["negatives"] in ("template", "refined")]
        paths["table10"] = table_csv(out_dir / "table10.csv", table10, TABLE10_FIELDS)
        paths["metrics10"] = write_json_atomic(out_dir / "table10_metrics.json", table10_summary(rows))
    return paths


def evaluate_tables(entries: Sequence[ModelEntry], arch: str, sugarcrepe_manifest: Path, templates_dir: Path,
                    out_dir: Path, engine_config=None, device: str = "cpu", context: Mapping | None = None,
                    refined: Mapping[str, Mapping] | None = None) -> dict[str, Path]:
    """Score every model on both sets (``sugarcrepe_manifest``: a ``PreparedSet``; ``templates_dir``:
    ``papers.sugarcrepe.mini_templates``' output) and write the tables, metrics, context and figure as one output
    group."""
    from common.benchmarks.caption_negatives import PreparedSet
    from papers.sugarcrepe.aro_crepe import load_template_set

    scores = score_models(entries, arch, load_template_set(Path(templates_dir)).items(),
                          PreparedSet.load(Path(sugarcrepe_manifest)).items(), engine_config, device)
    reference = next(e.name for e in entries if e.training == "clip-ft")
    rows = table_rows(entries, scores, reference)
    full_context = tables_context(context, {"reference": reference}, entries, scores, refined)
    return write_output_group(out_dir, lambda staging: write_tables(staging, rows, full_context, refined))


def main(argv: Sequence[str] | None = None) -> int:
    from common import reproducible
    from common.evaluate import engine_config
    from common.params import own_section
    from common.paths import RESULTS, build_dir
    from common.zoo import get_spec

    parser = argparse.ArgumentParser(prog="python -m papers.sugarcrepe.negclip_tables_mini",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=None, help="default: build/mini/sugarcrepe_negclip/models")
    parser.add_argument("--set", default=None, help="default: build/mini/sugarcrepe_negclip/set (its refined.json)")
    args = parser.parse_args(argv)
    reproducible.reexec_pinned()
    reproducible.fix_threads()
    params, section = own_section("sugarcrepe.negclip_mini")
    models_dir = Path(args.models or build_dir("mini", OUT) / "models")
    set_dir = Path(args.set or build_dir("mini", OUT) / "set")
    entries = entries_for(section["base"], models_dir)
    refined_path = set_dir / "refined.json"
    refined = {k: {f: v[f] for f in v if f != "kept"}
               for k, v in read_json(refined_path, dict, "run the negclip-mini-set stage")["kinds"].items()}
    context = {"profile": "mini", "base": section["base"], **reproducible.describe(),
               "training": training_context({e.name: e.checkpoint for e in entries}),
               "note": "mini profile: mini/xs-32k fine-tuned on rendered scenes; not comparable to the paper's numbers"}
    paths = evaluate_tables(
        entries, get_spec(section["base"]).arch, build_dir("mini", "sugarcrepe") / "manifest.json",
        build_dir("mini", "sugarcrepe_templates"), RESULTS / "sugarcrepe" / "mini",
        engine_config(params), context=context, refined=refined)
    for name, path in paths.items():
        print(f"{name}: {path}")
    for name in ("metrics5", "metrics10"):
        print(json.dumps(json.loads(paths[name].read_text()), indent=2))
    return 0


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
