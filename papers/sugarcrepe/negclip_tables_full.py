"""SugarCrepe Tables 5 and 10 in the full profile (stage ``table5-full``): every model on ARO+CREPE and SugarCrepe.

The paper (Sec. 5.2, Table 5; App. D.3, Table 10) fine-tunes CLIP ViT-B/32 on COCO with REPLACE, SWAP or NEGATE
hard negative captions (CREPE's generator) against CLIP fine-tuned without them, trains RN50 from scratch the same
way (plus one run mixing the three kinds), and scores every model on ARO+CREPE (SugarCrepe's positives with the old
benchmarks' rule-based negatives) and on SugarCrepe. Table 10 trains from scratch on the negatives that adversarial
refinement (Algorithm 1 with Vera and the grammar model) keeps.

The stages before this one: ``aro-crepe-full-set`` (``aro_crepe_sets_full``), ``negclip-full-set``
(``negclip_sets_full``), ``negclip-full-refine`` (``negclip_refine_full``), ``negclip-full@<run>`` and
``negclip-full-refined@<run>`` (``negclip_train_full``). Here: the pretrained, fine-tuned, released (``aro/negclip``,
Table 5's "Released in [49]") and scratch models, SugarCrepe's strict rule; Table 5 and Table 10 with the mini
tables' columns (``negclip_tables``) plus ``arch``. Gains are over the matching baseline: fine-tuned rows (and the
pretrained and released rows) over ``clip-ft``, scratch rows over ``scratch-clip``.

Outputs in ``results/sugarcrepe/full/``: ``table5.csv``, ``table5_metrics.json``, ``table5_context.json``,
``table5.png``, ``table10.csv``, ``table10_metrics.json``.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from common.io import write_json_atomic, write_output_group
from common.jsonl import read_json
from common.training.records import training_context
from papers.sugarcrepe.negclip_tables import (
    COLUMNS, SUGARCREPE_GROUPS, TABLE5_FIELDS, TABLE10_FIELDS, TEMPLATE_GROUPS, ModelEntry, ModelScores, mean2,
    score_models, summary, table_csv, table_rows, tables_context)
from papers.sugarcrepe.runs import ALL, FULL_RUNS, KINDS

RELEASED_NEGCLIP = "aro/negclip"
"""ARO's released NegCLIP in the zoo (a shared entry of ``common/zoo/models.toml``)."""
OUT = "sugarcrepe_negclip"
"""``build/full/<OUT>``: ``refined.json`` and the runs' weights (``models/``)."""

FULL_TABLE5_FIELDS = (TABLE5_FIELDS[0], "arch", *TABLE5_FIELDS[1:])
FULL_TABLE10_FIELDS = (TABLE10_FIELDS[0], "arch", *TABLE10_FIELDS[1:])
FAMILY = "sugarcrepe-full"
"""The zoo family the runs' specs are filed under."""
BASELINE = {"finetuned": "clip-ft", "scratch": "scratch-clip"}
"""Each family's baseline (its row's ``training``): gains are measured against it."""


@dataclass(frozen=True)
class FullModelEntry(ModelEntry):
    """A row of the full Tables 5/10: ``ModelEntry`` plus its architecture and family.

    ``training``: 'pretrained', 'clip-ft', 'negclip' (fine-tuned or released), 'scratch-clip' or 'scratch-negclip';
    ``hard_negative``: a kind, 'all', 'released' or 'N/A'; ``negatives``: 'template', 'refined', 'released', 'N/A'.
    """

    arch: str = ""
    family: str = "finetuned"
    """'finetuned' (gains over CLIP-FT) or 'scratch' (gains over CLIP from scratch)."""

    @property
    def label(self) -> str:
        if self.training == "pretrained":
            return f"{self.name} (pretrained)"
        if self.negatives == "released":
            return "NegCLIP, released in [49]"
        if self.training in ("clip-ft", "scratch-clip"):
            return "CLIP fine-tuned" if self.training == "clip-ft" else f"CLIP from scratch ({self.arch})"
        how = "fine-tuned" if self.family == "finetuned" else f"from scratch ({self.arch})"
        kind = "REP + SW + NEG" if self.hard_negative == ALL else self.hard_negative.upper()
        refined = " (refined)" if self.negatives == "refined" else ""
        return f"NegCLIP {how}, {kind}{refined}"


def full_entries(base: str, base_arch: str, scratch_arch: str, models_dir: Path,
                 released: str | None = RELEASED_NEGCLIP, released_arch: str = "") -> list[FullModelEntry]:
    """Every row in the paper's order: pretrained, CLIP-FT, NegCLIP per kind, the released NegCLIP, then the
    scratch runs (Table 5's bottom, then Table 10's refined runs)."""
    rows = [FullModelEntry(base, "pretrained", arch=base_arch)]
    for run, spec in FULL_RUNS.items():
        kind = spec.hard_negative
        if spec.scratch:
            training = "scratch-clip" if kind is None else "scratch-negclip"
        else:
            training = "clip-ft" if kind is None else "negclip"
        rows.append(FullModelEntry(
            f"sugarcrepe/full-{run}", training, kind or "N/A",
            "N/A" if kind is None else ("refined" if spec.refined else "template"),
            Path(models_dir) / f"{run}.safetensors", arch=scratch_arch if spec.scratch else base_arch,
            family="scratch" if spec.scratch else "finetuned"))
        if run == f"negclip-{KINDS[-1]}" and released:
            rows.append(FullModelEntry(released, "negclip", "released", "released", arch=released_arch or base_arch))
    return rows


def full_table_rows(entries: Sequence[FullModelEntry], scores: Mapping[str, ModelScores]) -> list[dict]:
    """``negclip_tables.table_rows`` per family, each against its baseline, with the ``arch`` column added."""
    rows = []
    for family, baseline in BASELINE.items():
        members = [e for e in entries if e.family == family]
        if not members:
            continue
        reference = next((e.name for e in members if e.training == baseline), None)
        if reference is None:
            raise ValueError(f"the {family} rows need their baseline ({baseline!r}) row")
        arch = {e.name: e.arch for e in members}
        rows += [{**r, "arch": arch[r["model"]]} for r in table_rows(members, scores, reference)]
    return rows


def _as_mini(rows: Sequence[Mapping]) -> list[dict]:
    """Scratch rows renamed to the mini roles (``summary`` reads 'clip-ft' and 'negclip' rows), kinds only."""
    role = {"scratch-clip": "clip-ft", "scratch-negclip": "negclip"}
    return [{**r, "training": role[r["training"]]} for r in rows
            if r["training"] in role and r["hard_negative"] in ("N/A", *KINDS)]


def full_summary(rows: Sequence[Mapping]) -> dict[str, float]:
    """Table 5's comparison: the mini's eight numbers for the fine-tuned runs, the same prefixed ``scratch_`` for
    the runs from scratch, and the mean gains of the released NegCLIP and of the mixed-kind scratch run."""
    finetuned = [r for r in rows if r["training"] in ("clip-ft", "negclip") and r["negatives"] in ("N/A", "template")]
    scratch = [r for r in rows if r["training"].startswith("scratch-") and r["negatives"] != "refined"]
    out = dict(summary(finetuned))
    out.update({f"scratch_{k}": v for k, v in summary(_as_mini(scratch)).items()})
    extra = {"released": [r for r in rows if r["negatives"] == "released"],
             "scratch_all": [r for r in scratch if r["hard_negative"] == ALL]}
    for name, picked in extra.items():
        if picked:
            out[f"{name}_gain_template_all"] = mean2(picked[0][f"gain_aro_crepe_{g}"] for g in TEMPLATE_GROUPS)
            out[f"{name}_gain_sugarcrepe_all"] = mean2(picked[0][f"gain_sugarcrepe_{g}"] for g in SUGARCREPE_GROUPS)
    return out


def full_table10_summary(rows: Sequence[Mapping]) -> dict[str, float]:
    """Table 10's comparison over the three kinds, from scratch: mean gain over CLIP from scratch on SugarCrepe
    and on the matching ARO+CREPE column, template vs refined negatives (the mini's four keys)."""
    pick = {(r["hard_negative"], r["negatives"]): r for r in rows if r["training"] == "scratch-negclip"}
    missing = [(k, n) for k in KINDS for n in ("template", "refined") if (k, n) not in pick]
    if missing:
        raise ValueError(f"Table 10 needs a scratch NegCLIP row for each of {missing}")
    out = {}
    for negatives in ("template", "refined"):
        out[f"gain_sugarcrepe_{negatives}"] = mean2(pick[k, negatives][f"gain_sugarcrepe_{g}"]
                                                    for k in KINDS for g in SUGARCREPE_GROUPS)
        out[f"gain_template_matching_{negatives}"] = mean2(pick[k, negatives][f"gain_aro_crepe_{k}"] for k in KINDS)
    return out


def write_full_tables(out_dir: Path, rows: Sequence[Mapping], context: Mapping,
                      refined: Mapping[str, Mapping] | None = None) -> dict[str, Path]:
    """Table 5 (every row but the refined runs), its metrics, context and figure; Table 10 (CLIP and NegCLIP from
    scratch on template vs refined negatives) when the refined runs are among the rows."""
    from common.figures import grouped_bars

    table5 = [r for r in rows if r["negatives"] != "refined"]
    paths = {"table5": table_csv(out_dir / "table5.csv", table5, FULL_TABLE5_FIELDS),
             "metrics5": write_json_atomic(out_dir / "table5_metrics.json", full_summary(table5)),
             "context": write_json_atomic(out_dir / "table5_context.json", dict(context))}
    paths["figure5"] = grouped_bars(paths["table5"], COLUMNS, out_dir / "table5.png",
                                    "SugarCrepe Table 5 (full): ARO+CREPE-style negatives vs SugarCrepe")
    if any(r["negatives"] == "refined" for r in rows):
        refined = refined or {}

        def kept(r: Mapping) -> str:
            if r["negatives"] == "N/A":
                return ""
            if r["negatives"] != "refined":
                return "all"
            counts = refined.get(r["hard_negative"], {})
            return f"{counts.get('n_kept', '?')}/{counts.get('n_in', '?')}"

        table10 = [{**r, "negatives_kept": kept(r)} for r in rows
                   if r["training"] == "scratch-clip"
                   or (r["training"] == "scratch-negclip" and r["hard_negative"] in KINDS)]
        paths["table10"] = table_csv(out_dir / "table10.csv", table10, FULL_TABLE10_FIELDS)
        paths["metrics10"] = write_json_atomic(out_dir / "table10_metrics.json", full_table10_summary(rows))
    return paths


def evaluate_full_tables(entries: Sequence[FullModelEntry], sugarcrepe_manifest: Path, aro_crepe_dir: Path,
                         out_dir: Path, engine_config=None, device: str = "cpu", context: Mapping | None = None,
                         refined: Mapping[str, Mapping] | None = None) -> dict[str, Path]:
    """Score every model on ARO+CREPE (``aro_crepe_dir``) and SugarCrepe (``sugarcrepe_manifest``), write the tables,
    metrics, context and figure as one output group."""
    from common.benchmarks.caption_negatives import PreparedSet
    from papers.sugarcrepe.aro_crepe import load_template_set

    scores = score_models(entries, "", load_template_set(Path(aro_crepe_dir)).items(),
                          PreparedSet.load(Path(sugarcrepe_manifest)).items(), engine_config, device, FAMILY)
    rows = full_table_rows(entries, scores)
    full_context = tables_context(context, {"baselines": BASELINE}, entries, scores, refined,
                                  lambda e: {"arch": e.arch, "family": e.family})
    return write_output_group(out_dir, lambda staging: write_full_tables(staging, rows, full_context, refined))


def main(argv: Sequence[str] | None = None) -> int:
    from common import reproducible
    from common.evaluate import best_device, engine_config
    from common.params import own_section
    from common.paths import RESULTS, build_dir
    from common.zoo import get_spec

    parser = argparse.ArgumentParser(prog="python -m papers.sugarcrepe.negclip_tables_full",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=None, help="default: build/full/sugarcrepe_negclip/models")
    parser.add_argument("--refined", default=None, help="default: build/full/sugarcrepe_negclip/refined.json")
    parser.add_argument("--sugarcrepe", default=None, help="default: build/full/sugarcrepe/manifest.json")
    parser.add_argument("--aro-crepe", default=None, help="default: build/full/sugarcrepe_aro_crepe")
    parser.add_argument("--out", default=None, help="default: results/sugarcrepe/full")
    parser.add_argument("--device", default=None, help="default: cuda when available")
    args = parser.parse_args(argv)
    params, section = own_section("sugarcrepe.negclip_full")
    models_dir = Path(args.models or build_dir("full", OUT) / "models")
    refined_path = Path(args.refined or build_dir("full", OUT) / "refined.json")
    entries = full_entries(section["base"], get_spec(section["base"]).arch, section["scratch_arch"], models_dir,
                           RELEASED_NEGCLIP, get_spec(RELEASED_NEGCLIP).arch)
    refined = {k: {f: v[f] for f in v if f != "kept"}
               for k, v in read_json(refined_path, dict, "run the negclip-full-refine stage")["kinds"].items()}
    context = {"profile": "full", "base": section["base"], "scratch_arch": section["scratch_arch"],
               "released": RELEASED_NEGCLIP, **reproducible.describe(),
               "training": training_context({e.name: e.checkpoint for e in entries})}
    out = evaluate_full_tables(entries, Path(args.sugarcrepe or build_dir("full", "sugarcrepe") / "manifest.json"),
                               Path(args.aro_crepe or build_dir("full", "sugarcrepe_aro_crepe")),
                               Path(args.out or RESULTS / "sugarcrepe" / "full"),
                               engine_config(params), args.device or best_device(), context, refined)
    for name, path in out.items():
        print(f"{name}: {path}")
    return 0


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
