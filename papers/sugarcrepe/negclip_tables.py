"""SugarCrepe Tables 5 and 10, both profiles (stages ``table5-mini``, ``table5-full``): every model scored on
ARO+CREPE and SugarCrepe.

Scored with SugarCrepe's strict rule (a tie is wrong); SugarCrepe's seven categories pooled into REPLACE/SWAP/ADD by
micro average as Table 5 groups them. Gains are over the matching baseline: fine-tuned rows (and the pretrained and
released rows) over CLIP-FT, scratch rows over CLIP from scratch. The profiles differ only in their inputs and rows
(``Profile``). The paper's setup and the outputs: the README's stage table and its "Tables 5 and 10" sections. No
training stage imports this module.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from common.benchmarks.caption_negatives import PreparedSet
from common.evaluation.engine import Engine
from common.evaluation.evaluate import best_device, engine_config
from common.evaluation.scoring import selection
from common.evaluation.scoring.selection import STRICT, SelectionResult
from common.files.io import write_csv_atomic, write_json_atomic, write_output_group
from common.files.jsonl import read_json
from common.files.tasks import DatasetError
from common.paths import RESULTS, build_dir
from common.pipeline import reproducible
from common.pipeline.cli import print_written, stage_parser
from common.pipeline.params import own_section
from common.reporting.figures import grouped_bars
from common.training.records import training_context
from common.zoo import get_spec
from common.zoo.trained import served
from papers.sugarcrepe.aro_crepe import load_template_set
from papers.sugarcrepe.runs import ALL, FULL_RUNS, KINDS, REFINED_KINDS, RUNS, RunSpec

TEMPLATE_GROUPS: dict[str, tuple[str, ...]] = {k: (k,) for k in ("replace", "swap", "negate", "shuffle")}
"""ARO+CREPE's columns: one template kind each."""
SUGARCREPE_GROUPS: dict[str, tuple[str, ...]] = {
    "replace": ("replace_obj", "replace_att", "replace_rel"),
    "swap": ("swap_obj", "swap_att"),
    "add": ("add_obj", "add_att"),
}
"""SugarCrepe's columns in Table 5: its seven categories pooled (micro average) by type."""
COLUMNS: tuple[str, ...] = (*(f"aro_crepe_{g}" for g in TEMPLATE_GROUPS),
                            *(f"sugarcrepe_{g}" for g in SUGARCREPE_GROUPS))
MATCHING_SUGARCREPE = {"replace": "replace", "swap": "swap", "negate": "add"}
"""The SugarCrepe type each training kind is meant to help: NEGATE probes existence as ADD does (App. B.1)."""

TABLE5_FIELDS = ("model", "label", "training", "hard_negative", *COLUMNS, *(f"gain_{c}" for c in COLUMNS), "ties")
TABLE10_FIELDS = ("model", "label", "hard_negative", "negatives", "negatives_kept",
                  *(f"sugarcrepe_{g}" for g in SUGARCREPE_GROUPS), *(f"gain_sugarcrepe_{g}" for g in SUGARCREPE_GROUPS),
                  *(f"aro_crepe_{k}" for k in KINDS), "ties")

RELEASED_NEGCLIP = "aro/negclip"
"""ARO's released NegCLIP in the zoo (a shared entry of ``common/zoo/models.toml``)."""
OUT = "sugarcrepe_negclip"
"""``build/<profile>/<OUT>``: the refinement's ``refined.json`` and the runs' weights (``models/``)."""
TRAINING = {"finetuned": ("clip-ft", "negclip"), "scratch": ("scratch-clip", "scratch-negclip")}
"""Each family's trainings: its baseline (gains are measured against it), then NegCLIP."""


@dataclass(frozen=True)
class Profile:
    """What the profiles' tables differ in: their runs and inputs, the families in their rows, and how the mini
    tables always were written (no ``arch`` column, a ``reference`` in the context, its figure's title)."""

    name: str
    runs: Mapping[str, RunSpec]
    section: str
    """The ``params.yaml`` section of the runs (``base``, the full profile's ``scratch_arch``)."""
    families: tuple[str, ...]
    """The families of ``TRAINING`` among the rows; Table 10 compares the last one's runs."""
    refined_kinds: tuple[str, ...]
    refined: str
    """``refined.json``, under ``build/<profile>/<OUT>``."""
    aro_crepe: str
    """The ARO+CREPE set's folder under ``build/<profile>``."""
    zoo_family: str
    released: str | None
    """The released NegCLIP's zoo name, a row beside the runs (None: no such row)."""
    arch_column: bool
    """The tables and the context name each row's architecture and family (the full profile mixes them)."""
    pinned: bool
    """Scored on the pinned CPU profile (``common.pipeline.reproducible``), unless ``--device`` says otherwise."""
    title: str
    note: str = ""


PROFILES = {
    "mini": Profile("mini", RUNS, "sugarcrepe.negclip_mini", ("finetuned",), REFINED_KINDS, "set/refined.json",
                    "sugarcrepe_templates", "mini", None, False, True,
                    "SugarCrepe Table 5 (mini): ARO+CREPE-style templates vs SugarCrepe",
                    "mini profile: mini/xs-32k fine-tuned on rendered scenes; not comparable to the paper's numbers"),
    "full": Profile("full", FULL_RUNS, "sugarcrepe.negclip_full", ("finetuned", "scratch"), KINDS, "refined.json",
                    "sugarcrepe_aro_crepe", "sugarcrepe-full", RELEASED_NEGCLIP, True, False,
                    "SugarCrepe Table 5 (full): ARO+CREPE-style negatives vs SugarCrepe"),
}


@dataclass(frozen=True)
class ModelEntry:
    """One row of Tables 5 and 10: ``training`` one of ``TRAINING``'s or 'pretrained'; ``hard_negative`` a kind,
    'all', 'released' or 'N/A'; ``negatives`` 'template', 'refined' (those refinement keeps), 'released' or 'N/A'."""

    name: str
    training: str
    hard_negative: str = "N/A"
    negatives: str = "N/A"
    checkpoint: Path | None = None
    """None: the zoo model ``name``."""
    arch: str = ""
    """What ``checkpoint`` is built as."""
    family: str = "finetuned"
    """A family of ``TRAINING``: the baseline its gains are over."""

    @property
    def label(self) -> str:
        """How the figure's legend names the row (Table 5's "Model" and "Hard Negative Used" in one)."""
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


def model_entries(profile: Profile, base: str, base_arch: str, models_dir: Path, scratch_arch: str = "",
            released_arch: str = "") -> list[ModelEntry]:
    """Every row in the paper's order: pretrained, CLIP-FT, NegCLIP per kind, the released NegCLIP, then the rest."""
    rows = [ModelEntry(base, "pretrained", arch=base_arch)]
    for run, spec in profile.runs.items():
        family = "scratch" if spec.scratch else "finetuned"
        kind = spec.hard_negative
        rows.append(ModelEntry(
            f"sugarcrepe/{profile.name}-{run}", TRAINING[family][kind is not None], kind or "N/A",
            "N/A" if kind is None else ("refined" if spec.refined else "template"),
            Path(models_dir) / f"{run}.safetensors", scratch_arch if spec.scratch else base_arch, family))
        if run == f"negclip-{KINDS[-1]}" and profile.released:
            rows.append(ModelEntry(profile.released, "negclip", "released", "released",
                                   arch=released_arch or base_arch))
    return rows
@dataclass(frozen=True)
class ModelScores:
    templates: SelectionResult
    sugarcrepe: SelectionResult
    fingerprint: str


def grouped_accuracy(result: SelectionResult, groups: Mapping[str, Sequence[str]], where: str) -> dict[str, float]:
    """Accuracy (%) of each group of categories, pooled over their examples (micro average)."""
    by = result.by_group()
    out = {}
    for name, members in groups.items():
        missing = [m for m in members if m not in by]
        if missing:
            raise DatasetError(f"{where}: no examples of {missing} (needed for column {name!r})")
        n = sum(by[m].n for m in members)
        out[name] = 100.0 * sum(by[m].correct for m in members) / n
    return out


def table_rows(entries: Sequence[ModelEntry], scores: Mapping[str, ModelScores], reference: str) -> list[dict]:
    """One row per model: the 7 accuracies, then each one's gain in points over ``reference``, its family's baseline."""
    accuracy = {}
    for e in entries:
        acc = {f"aro_crepe_{g}": v for g, v in grouped_accuracy(scores[e.name].templates, TEMPLATE_GROUPS,
                                                                "the ARO+CREPE set").items()}
        acc.update({f"sugarcrepe_{g}": v for g, v in grouped_accuracy(scores[e.name].sugarcrepe, SUGARCREPE_GROUPS,
                                                                      "the SugarCrepe set").items()})
        accuracy[e.name] = acc
    if reference not in accuracy:
        raise ValueError(f"reference model {reference!r} is not among the rows")
    return [{"model": e.name, "label": e.label, "training": e.training, "hard_negative": e.hard_negative,
             "negatives": e.negatives, "arch": e.arch, **{c: round(accuracy[e.name][c], 2) for c in COLUMNS},
             **{f"gain_{c}": round(accuracy[e.name][c] - accuracy[reference][c], 2) for c in COLUMNS},
             "ties": scores[e.name].templates.ties + scores[e.name].sugarcrepe.ties} for e in entries]


def mean2(values) -> float:
    """Mean to 2 decimals (the tables' precision)."""
    return round(float(np.mean(list(values))), 2)


def summary(rows: Sequence[Mapping]) -> dict[str, float]:
    """Table 5's comparison in eight numbers: points over CLIP-FT, means over the NegCLIP runs on templates."""
    by_kind = {r["hard_negative"]: r for r in rows if r["training"] == "negclip" and r["negatives"] == "template"}
    if set(by_kind) != set(KINDS):
        raise ValueError(f"summary needs one NegCLIP row per kind {KINDS}, has {sorted(by_kind)}")
    template_all = [by_kind[k][f"gain_aro_crepe_{g}"] for k in KINDS for g in TEMPLATE_GROUPS]
    sugar_all = [by_kind[k][f"gain_sugarcrepe_{g}"] for k in KINDS for g in SUGARCREPE_GROUPS]
    clip_ft = next(r for r in rows if r["training"] == "clip-ft")
    return {
        "gain_template_matching": mean2(by_kind[k][f"gain_aro_crepe_{k}"] for k in KINDS),
        "gain_template_all": mean2(template_all),
        "gain_sugarcrepe_matching": mean2(by_kind[k][f"gain_sugarcrepe_{MATCHING_SUGARCREPE[k]}"] for k in KINDS),
        "gain_sugarcrepe_all": mean2(sugar_all),
        "max_gain_template": round(float(np.max(template_all)), 2),
        "max_gain_sugarcrepe": round(float(np.max(sugar_all)), 2),
        "clip_ft_template_mean": mean2(clip_ft[f"aro_crepe_{g}"] for g in TEMPLATE_GROUPS),
        "clip_ft_sugarcrepe_mean": mean2(clip_ft[f"sugarcrepe_{g}"] for g in SUGARCREPE_GROUPS),
    }


def table_csv(path: Path, rows: Sequence[Mapping], fields: Sequence[str]) -> Path:
    """A results table, floats to 2 decimals."""
    return write_csv_atomic(path, [{k: f"{v:.2f}" if isinstance(v, float) else str(v) for k, v in r.items()}
                                   for r in rows], fields)


def table5_summary(rows: Sequence[Mapping]) -> dict[str, float]:
    """``summary``'s eight numbers for the fine-tuned runs, the same prefixed ``scratch_`` for the runs from scratch,
    and the mean gains of the released NegCLIP and of the mixed-kind scratch run (each where its rows are)."""
    finetuned = [r for r in rows if r["training"] in TRAINING["finetuned"] and r["negatives"] in ("N/A", "template")]
    scratch = [r for r in rows if r["training"] in TRAINING["scratch"] and r["negatives"] != "refined"]
    out = dict(summary(finetuned))
    if scratch:
        role = dict(zip(TRAINING["scratch"], TRAINING["finetuned"]))  # summary reads the fine-tuned roles
        out.update({f"scratch_{k}": v for k, v in summary([{**r, "training": role[r["training"]]} for r in scratch
                                                           if r["hard_negative"] in ("N/A", *KINDS)]).items()})
    extra = {"released": [r for r in rows if r["negatives"] == "released"],
             "scratch_all": [r for r in scratch if r["hard_negative"] == ALL]}
    for name, picked in extra.items():
        if picked:
            out[f"{name}_gain_template_all"] = mean2(picked[0][f"gain_aro_crepe_{g}"] for g in TEMPLATE_GROUPS)
            out[f"{name}_gain_sugarcrepe_all"] = mean2(picked[0][f"gain_sugarcrepe_{g}"] for g in SUGARCREPE_GROUPS)
    return out


def table10_summary(profile: Profile, rows: Sequence[Mapping]) -> dict[str, float]:
    """Table 10's comparison over ``profile.refined_kinds``: mean gain of its NegCLIP runs over their baseline on
    SugarCrepe (its three columns) and on the matching template column, template vs refined negatives."""
    negclip = TRAINING[profile.families[-1]][1]
    pick = {(r["hard_negative"], r["negatives"]): r for r in rows if r["training"] == negclip}
    missing = [(k, n) for k in profile.refined_kinds for n in ("template", "refined") if (k, n) not in pick]
    if missing:
        raise ValueError(f"Table 10 needs a {negclip} row for each of {missing}")
    out = {}
    for negatives in ("template", "refined"):
        out[f"gain_sugarcrepe_{negatives}"] = mean2(pick[k, negatives][f"gain_sugarcrepe_{g}"]
                                                    for k in profile.refined_kinds for g in SUGARCREPE_GROUPS)
        out[f"gain_template_matching_{negatives}"] = mean2(pick[k, negatives][f"gain_aro_crepe_{k}"]
                                                           for k in profile.refined_kinds)
    return out


def write_tables(profile: Profile, out_dir: Path, rows: Sequence[Mapping], context: Mapping,
                 refined: Mapping[str, Mapping] | None = None) -> dict[str, Path]:
    """Table 5 (every row on template negatives: csv, metrics, figure), the context, and, when the refined runs are
    among the rows, Table 10 (``refined``: ``refined.json``'s counts per kind)."""
    arch = ("arch",) if profile.arch_column else ()
    table5 = [r for r in rows if r["negatives"] != "refined"]
    paths = {"table5": table_csv(out_dir / "table5.csv", table5, (TABLE5_FIELDS[0], *arch, *TABLE5_FIELDS[1:])),
             "metrics5": write_json_atomic(out_dir / "table5_metrics.json", table5_summary(table5)),
             "context": write_json_atomic(out_dir / "table5_context.json", dict(context))}
    paths["figure5"] = grouped_bars(paths["table5"], COLUMNS, out_dir / "table5.png", profile.title)
    if any(r["negatives"] == "refined" for r in rows):
        refined = refined or {}

        def kept(r: Mapping) -> str:
            if r["negatives"] == "N/A":
                return ""
            if r["negatives"] != "refined":
                return "all"
            counts = refined.get(r["hard_negative"], {})
            return f"{counts.get('n_kept', '?')}/{counts.get('n_in', '?')}"

        baseline, negclip = TRAINING[profile.families[-1]]
        table10 = [{**r, "negatives_kept": kept(r)} for r in rows
                   if r["training"] == baseline or (r["training"] == negclip and r["hard_negative"] in KINDS)]
        paths["table10"] = table_csv(out_dir / "table10.csv", table10, (TABLE10_FIELDS[0], *arch, *TABLE10_FIELDS[1:]))
        paths["metrics10"] = write_json_atomic(out_dir / "table10_metrics.json", table10_summary(profile, rows))
    return paths


def evaluate_tables(profile: Profile, entries: Sequence[ModelEntry], sugarcrepe_manifest: Path, aro_crepe_dir: Path,
                    out_dir: Path, engine_config=None, device: str = "cpu", context: Mapping | None = None,
                    refined: Mapping[str, Mapping] | None = None) -> dict[str, Path]:
    """Score every model on ARO+CREPE and SugarCrepe; write the tables, metrics, context and figure as one group."""
    template_items = load_template_set(Path(aro_crepe_dir)).items()
    sugarcrepe_items = PreparedSet.load(Path(sugarcrepe_manifest)).items()
    scores = {}
    for e in entries:  # SugarCrepe's strict rule (a tie is wrong)
        engine = Engine(served(e, e.arch, device, profile.zoo_family), engine_config)
        scores[e.name] = ModelScores(selection.evaluate(engine, template_items, STRICT),
                                     selection.evaluate(engine, sugarcrepe_items, STRICT), engine.model.fingerprint)
    rows = []
    for family in profile.families:  # ``table_rows`` per family, each against its baseline's row
        members = [e for e in entries if e.family == family]
        if not members:
            continue
        reference = next((e.name for e in members if e.training == TRAINING[family][0]), None)
        if reference is None:
            raise ValueError(f"the {family} rows need their baseline ({TRAINING[family][0]!r}) row")
        rows += table_rows(members, scores, reference)
    if len(profile.families) > 1:
        head = {"baselines": {f: TRAINING[f][0] for f in profile.families}}
    else:
        head = {"reference": next(r["model"] for r in rows if r["training"] == TRAINING[profile.families[0]][0])}
    first = scores[entries[0].name]
    full_context = {  # table5_context.json; head: what the gains are measured against
        **dict(context or {}), "rule": STRICT.name, **head,
        "columns": {**{f"aro_crepe_{g}": list(m) for g, m in TEMPLATE_GROUPS.items()},
                    **{f"sugarcrepe_{g}": list(m) for g, m in SUGARCREPE_GROUPS.items()}},
        "n": {"aro_crepe": {g: s.n for g, s in first.templates.by_group().items()},
              "sugarcrepe": {g: s.n for g, s in first.sugarcrepe.by_group().items()}},
        "refined": {k: {f: v[f] for f in ("n_in", "n_kept", "blind_accuracy_before", "blind_accuracy_after") if f in v}
                    for k, v in (refined or {}).items()},
        "models": {e.name: {**({"arch": e.arch, "family": e.family} if profile.arch_column else {}),
                            "training": e.training, "hard_negative": e.hard_negative, "negatives": e.negatives,
                            "fingerprint": scores[e.name].fingerprint, "ties_aro_crepe": scores[e.name].templates.ties,
                            "ties_sugarcrepe": scores[e.name].sugarcrepe.ties} for e in entries},
    }
    return write_output_group(out_dir, lambda staging: write_tables(profile, staging, rows, full_context, refined))


def main(argv: Sequence[str] | None = None) -> int:
    parser = stage_parser(__spec__.name, __doc__)
    parser.add_argument("--profile", required=True, choices=sorted(PROFILES))
    parser.add_argument("--models", default=None, help="default: build/<profile>/sugarcrepe_negclip/models")
    parser.add_argument("--refined", default=None, help="default: build/mini/sugarcrepe_negclip/set/refined.json, "
                                                        "build/full/sugarcrepe_negclip/refined.json")
    parser.add_argument("--sugarcrepe", default=None, help="default: build/<profile>/sugarcrepe/manifest.json")
    parser.add_argument("--aro-crepe", default=None, help="default: build/mini/sugarcrepe_templates, "
                                                          "build/full/sugarcrepe_aro_crepe")
    parser.add_argument("--out", default=None, help="default: results/sugarcrepe/<profile>")
    parser.add_argument("--device", default=None, help="default: cpu (mini), cuda when available (full)")
    args = parser.parse_args(argv)
    profile = PROFILES[args.profile]
    if profile.pinned:
        reproducible.pin()
    params, section = own_section(profile.section)
    build = build_dir(profile.name, OUT)
    scratch_arch = section.get("scratch_arch", "")
    rows = model_entries(profile, section["base"], get_spec(section["base"]).arch,
                         Path(args.models or build / "models"), scratch_arch, get_spec(profile.released).arch if profile.released else "")
    refined_path = Path(args.refined or build / profile.refined)
    refined = {k: {f: v[f] for f in v if f != "kept"}
               for k, v in read_json(refined_path, dict, "run the stage that writes it")["kinds"].items()}
    context = {"profile": profile.name, "base": section["base"],
               **({"scratch_arch": scratch_arch, "released": profile.released} if profile.released else {}),
               **reproducible.describe(), "training": training_context({e.name: e.checkpoint for e in rows}),
               **({"note": profile.note} if profile.note else {})}
    paths = evaluate_tables(
        profile, rows, Path(args.sugarcrepe or build_dir(profile.name, "sugarcrepe") / "manifest.json"),
        Path(args.aro_crepe or build_dir(profile.name, profile.aro_crepe)),
        Path(args.out or RESULTS / "sugarcrepe" / profile.name), engine_config(params),
        args.device or ("cpu" if profile.pinned else best_device()), context, refined)
    return print_written(paths, "metrics5", "metrics10")


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
