"""SugarCrepe's audit: every published number against what was recomputed here (stage ``audit``: ``python -m
common audit sugarcrepe --strict``), from the authors' released files (``released``), the paper's own tables (claims)
and this profile's runs, compared in the full profile and marked "not comparable" in the mini one: what each covers
is in the README's stage table. A row of a run trained here names the recipe it ran with.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Mapping, Sequence

from common.audit import audit_stage, main as audit_main
from common.audit.core import Recomputed
from common.audit.runs import (
    MINI_NOTE, context_recipe_notes, read_run_table, recipe_of_row, require_rows, run_rows_recomputations, run_value,
    table_recomputations)
from common.paths import RESULTS
from common.pipeline.params import read_params, section, stage_params
from common.zoo import get_spec, registry
from papers.sugarcrepe import released

DATA_FILES = ("results/published/sugarcrepe.csv", "results/published/sugarcrepe_claims.csv",
              "results/oracle/sugarcrepe.json")
"""The published numbers this audit reads and its oracle record (``common.pipeline.stage_deps``)."""

PAPER = "sugarcrepe"
TABLE6_COLUMNS = {**released.COLUMNS, "average": "Average"}
"""Table 6 column of each column of the run's table6.csv."""


TABLE5_COLUMNS = {f"{ours}_{kind}": f"{theirs} | {kind.upper()}" for ours, theirs, kinds in (
    ("aro_crepe", "ARO+CREPE", ("replace", "swap", "negate", "shuffle")),
    ("sugarcrepe", "SUGARCREPE", ("replace", "swap", "add"))) for kind in kinds}
TABLE10_COLUMNS = {k: v for k, v in TABLE5_COLUMNS.items() if k.startswith("sugarcrepe_")}
FINETUNED_KIND = {"replace": "REPLACE", "swap": "SWAP", "negate": "NEGATE"}
SCRATCH_KIND = {"replace": "REPLACE", "swap": "Swap", "negate": "Negate", "all": "Rep + Sw + Neg"}
"""Table 5 prints the from-scratch rows' kinds in its own spelling."""
TABLE4_TYPES = {"REPLACE": "Replace", "SWAP": "SWAP", "NEGATE / ADD": "NEGATE / ADD"}
TABLE4_SCORERS = {"vera": "Commonsense", "grammar": "Grammar", "ngram-lm": "Grammar"}
"""Table 4's metric rows: Vera is its commonsense score, the grammar model its grammar score; the mini run's n-gram
LM stands in for the grammar model (never compared)."""
MINI_EXPECTED: dict[str, frozenset[str]] = {
    "Table 5": frozenset({"ViT-B/32 | Pretrained | N/A", "ViT-B/32 | CLIP finetuned | N/A",
                          *(f"ViT-B/32 | NEGCLIP finetuned | {k}" for k in ("REPLACE", "SWAP", "NEGATE"))}),
    "Table 10": frozenset({"CLIP without hard negatives | N/A",
                           *(f"NEGCLIP with template hard negatives | {k}" for k in ("REPLACE", "SWAP", "NEGATE")),
                           *(f"NEGCLIP with adversarial refined hard negatives | {k}" for k in ("REPLACE", "SWAP"))}),
    "Table 4": frozenset(f"{form} | Grammar" for form in TABLE4_TYPES.values()),
}
"""The published rows the mini runs write (``negclip_tables --profile mini``, the mini blind attacks): one missing is a
damaged table, not a smaller audit. A full run may leave out a run it could not train."""


def table6_row(model: str) -> str:
    """Table 6's row label of a zoo model ("OpenAI | ViT-B-32"); a variant's (``ModelSpec.variant_of``) is its
    model's row: both are compared with it."""
    spec = get_spec(model)
    if spec.variant_of is not None:
        return table6_row(spec.variant_of)
    return f"{spec.family} | {spec.label}"


def table6_note(model: str) -> str:
    """How a Table 6 row was built where the table scores its published row two ways: a variant's note (the authors'
    line), and for the model it varies, that it loads as open_clip registers it."""
    spec = get_spec(model)
    if spec.variant_of is not None:
        return f"variant of {spec.variant_of}: {spec.variant_note}"
    varied = [s.name for s in registry().values() if s.variant_of == model]
    return f"as open_clip registers it ({spec.arch}); compare variant(s) {', '.join(varied)}" if varied else ""


def table5_row(run: Mapping[str, str]) -> str | None:
    """Table 5's row of a run of table5.csv: the fine-tuned ViT-B/32 rows, the released NegCLIP, the RN50 runs
    trained from scratch. Runs on refined negatives belong to Table 10 (None)."""
    training, kind = run.get("training", ""), run.get("hard_negative", "N/A")
    baselines = {"pretrained": "ViT-B/32 | Pretrained", "clip-ft": "ViT-B/32 | CLIP finetuned",
                 "scratch-clip": "RN50 | CLIP from scratch"}
    head, spelled = {"negclip": ("ViT-B/32 | NEGCLIP finetuned", {**FINETUNED_KIND, "released": "Released in [49]"}),
                     "scratch-negclip": ("RN50 | NEGCLIP from scratch", SCRATCH_KIND)}.get(training, ("", {}))
    if run.get("negatives") == "refined":
        return None
    if training in baselines:
        return f"{baselines[training]} | N/A"
    return f"{head} | {spelled[kind]}" if kind in spelled else None


def table10_row(run: Mapping[str, str]) -> str | None:
    """Table 10's row of a run of table10.csv: CLIP without hard negatives, NegCLIP on template or refined ones."""
    kind, negatives = run.get("hard_negative", "N/A"), run.get("negatives", "N/A")
    if kind == "N/A":
        return "CLIP without hard negatives | N/A"
    if kind not in FINETUNED_KIND:
        return None
    form = {"template": "template", "refined": "adversarial refined"}.get(negatives)
    return f"NEGCLIP with {form} hard negatives | {FINETUNED_KIND[kind]}" if form else None


def table4_recomputations(profile: str, table4_csv: Path, source: str) -> list[Recomputed]:
    """Table 4's cells from a blind run's paired table (``papers.sugarcrepe.table4``): each negative type's mean
    score of ARO+CREPE's and SugarCrepe's negatives (x100, unit 'score' as printed) and the pairwise better ratio."""
    if not table4_csv.is_file():
        return []
    cells = (("mean_aro_crepe", "Average | ARO+CREPE", "score"), ("mean_sugarcrepe", "Average | SUGARCREPE", "score"),
             ("sugarcrepe_more_fluent_share", "Pairwise Better Ratio", "percent"))
    rows = read_run_table(table4_csv, ("type", "scorer", *(ours for ours, _, _ in cells)), key=("type", "scorer"))
    note = (f"{MINI_NOTE}; an n-gram LM stands in for the grammar model" if profile == "mini" else
            "ARO+CREPE regenerated here with CREPE-style rules (common.text.crepe_style), not CREPE's own code")
    recs, found = [], []
    for row in rows:
        form, metric = TABLE4_TYPES.get(row.get("type", "")), TABLE4_SCORERS.get(row.get("scorer", ""))
        if form is None or metric is None or (row["scorer"] == "ngram-lm") != (profile == "mini"):
            continue
        found.append(f"{form} | {metric}")
        for ours, column, unit in cells:
            value = run_value(row, ours, table4_csv, optional=profile == "full")
            if profile == "mini" or value is not None:
                recs.append(Recomputed(PAPER, "Table 4", f"{form} | {metric}", column,
                                       math.nan if profile == "mini" else value, unit, source, profile, "default",
                                       note=note))
    require_rows(table4_csv, found, MINI_EXPECTED["Table 4"] if profile == "mini" else ())
    return recs


def text_only_recomputations(accuracy_csv: Path, source: str) -> list[Recomputed]:
    """Table 6's Vera and Grammar rows from the paper's own blind models run here on the released SugarCrepe (full
    profile only): per category, and the mean of the seven categories as Table 6's Average."""
    if not accuracy_csv.is_file():
        return []
    rows = [r for r in read_run_table(accuracy_csv, ("benchmark", "category", "scorer", "accuracy"),
                                      key=("benchmark", "category", "scorer"))
            if r.get("benchmark") == "sugarcrepe"]
    recs = []
    for scorer, label in (("vera", "Vera"), ("grammar", "Grammar")):
        mine = {r["category"]: run_value(r, "accuracy", accuracy_csv) for r in rows if r.get("scorer") == scorer}
        if not all(c in mine for c in released.COLUMNS):
            continue
        row = f"Text-only model | {label}"
        recs += [Recomputed(PAPER, "Table 6", row, column, mine[c], "percent", source, "full", "default")
                 for c, column in released.COLUMNS.items()]
        recs.append(Recomputed(PAPER, "Table 6", row, TABLE6_COLUMNS["average"],
                               round(sum(mine[c] for c in released.COLUMNS) / len(released.COLUMNS), 2),
                               "percent", source, "full", "default", note="mean of the seven categories"))
    return recs


def run_recomputations(profile: str, results: Path = RESULTS) -> list[Recomputed]:
    """Tables 4, 5 and 10 (and, in the full profile, Table 6's text-only rows) from this profile's runs."""
    out = results / PAPER / profile
    where = lambda path: f"run {path.relative_to(results.parent)}"  # noqa: E731
    # each trained run's recipe (the tables stage copied it from the run's sidecar into its context, keyed by zoo name)
    recipes = recipe_of_row(context_recipe_notes(out / "table5_context.json", "rerun the negclip tables stage"),
                            "model")
    recs = []
    for table, name, columns, row_of in (("Table 5", "table5.csv", TABLE5_COLUMNS, table5_row),
                                         ("Table 10", "table10.csv", TABLE10_COLUMNS, table10_row)):
        path = out / name
        recs += run_rows_recomputations(PAPER, table, path, profile, columns, row_of, where(path), note=recipes,
                                        expected=MINI_EXPECTED[table] if profile == "mini" else ())
    recs += table4_recomputations(profile, out / "table4.csv", where(out / "table4.csv"))
    if profile == "full":  # the blind-released stage's (the mini profile's blind_accuracy.csv is the mini world's)
        recs += text_only_recomputations(out / "blind_accuracy.csv", where(out / "blind_accuracy.csv"))
    return recs


def recompute(profile: str, model_names: Sequence[str] | None = None, results: Path = RESULTS) -> list[Recomputed]:
    """Released-artifact recomputations and this profile's Table 6 run (default models: ``sugarcrepe.models.full``)."""
    if model_names is None:
        model_names = section(read_params(), "sugarcrepe.models.full")
    table = results / PAPER / profile / "table6.csv"
    run = table_recomputations(PAPER, "Table 6", table, profile, TABLE6_COLUMNS, table6_row, model_names,
                               f"run {table.relative_to(results.parent)}", note=table6_note)
    return released.recompute(model_names=model_names) + run + run_recomputations(profile, results)


def draw_figures(out_dir: Path, model_names: Sequence[str] | None = None) -> dict[str, Path]:
    """Figure 5 redrawn from the published Table 6 and open_clip's ImageNet results."""
    matches, table6, _ = released.figure5_inputs(model_names=model_names)
    return {"figure5": released.draw_figure5(out_dir / "sugarcrepe_figure5.png", matches, table6)}


def main(argv: Sequence[str] | None = None) -> int:
    params = stage_params(audit_stage(PAPER))  # this module's stage, also when `python -m common audit` runs it
    models = params["sugarcrepe"]["models"]["full"]
    return audit_main(PAPER, argv, recompute=lambda profile: recompute(profile, models),
                      figures=lambda out: draw_figures(out, models), profile=params["profile"])
