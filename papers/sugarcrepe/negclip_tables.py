"""What the two NegCLIP table stages (``table5-mini``, ``table5-full``) share: Table 5's columns, the models'
rows, scoring on ARO+CREPE and SugarCrepe, the gains and their summary, the CSV and context writers.

Every model is scored on both sets with SugarCrepe's strict rule (the positive must score strictly above the
negative; ties are wrong); SugarCrepe's seven categories are pooled into REPLACE/SWAP/ADD by micro average as
Table 5 groups them. The profile's own rows, tables and figure are in ``negclip_tables_mini`` and
``negclip_tables_full``; no training stage imports this module.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from common.io import write_csv_atomic
from common.scoring.selection import STRICT, SelectionResult
from common.tasks import DatasetError, ImageToTextItem
from common.zoo.trained import served
from papers.sugarcrepe.runs import KINDS

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


@dataclass(frozen=True)
class ModelEntry:
    """One row of Tables 5 and 10: a model and how it was trained."""

    name: str
    training: str
    """'pretrained', 'clip-ft' or 'negclip'."""
    hard_negative: str = "N/A"
    """The kind it trained with, or 'N/A'."""
    negatives: str = "N/A"
    """'template' (every rule-based negative), 'refined' (those adversarial refinement keeps) or 'N/A'."""
    checkpoint: Path | None = None
    """None: the zoo model ``name``."""

    @property
    def label(self) -> str:
        """How the figure's legend names the row (Table 5's "Model" and "Hard Negative Used" in one)."""
        if self.training == "pretrained":
            return f"{self.name} (pretrained)"
        if self.training == "clip-ft":
            return "CLIP fine-tuned"
        refined = " (refined)" if self.negatives == "refined" else ""
        return f"NegCLIP fine-tuned, {self.hard_negative.upper()}{refined}"


@dataclass(frozen=True)
class ModelScores:
    templates: SelectionResult
    sugarcrepe: SelectionResult
    fingerprint: str


def score_models(entries: Sequence[ModelEntry], arch: str, template_items: Sequence[ImageToTextItem],
                 sugarcrepe_items: Sequence[ImageToTextItem], engine_config=None, device: str = "cpu",
                 family: str = "mini") -> dict[str, ModelScores]:
    """Every model on both sets, SugarCrepe's strict rule (a tie is wrong). An entry with an ``arch`` of its own
    (the full profile's rows mix architectures) is built as that; the others as ``arch``."""
    from common.engine import Engine
    from common.scoring import selection

    out = {}
    for e in entries:
        engine = Engine(served(e, getattr(e, "arch", "") or arch, device, family), engine_config)
        out[e.name] = ModelScores(selection.evaluate(engine, template_items, STRICT),
                                  selection.evaluate(engine, sugarcrepe_items, STRICT), engine.model.fingerprint)
    return out


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
    """One row per model: the 7 accuracies, then each one's gain over ``reference`` (the CLIP-FT run), in points."""
    accuracy = {}
    for e in entries:
        acc = {f"aro_crepe_{g}": v for g, v in grouped_accuracy(scores[e.name].templates, TEMPLATE_GROUPS,
                                                                "the mini ARO+CREPE set").items()}
        acc.update({f"sugarcrepe_{g}": v for g, v in grouped_accuracy(scores[e.name].sugarcrepe, SUGARCREPE_GROUPS,
                                                                      "the mini SugarCrepe set").items()})
        accuracy[e.name] = acc
    if reference not in accuracy:
        raise ValueError(f"reference model {reference!r} is not among the rows")
    rows = []
    for e in entries:
        acc = accuracy[e.name]
        rows.append({"model": e.name, "label": e.label, "training": e.training, "hard_negative": e.hard_negative,
                     "negatives": e.negatives, **{c: round(acc[c], 2) for c in COLUMNS},
                     **{f"gain_{c}": round(acc[c] - accuracy[reference][c], 2) for c in COLUMNS},
                     "ties": scores[e.name].templates.ties + scores[e.name].sugarcrepe.ties})
    return rows


def mean2(values) -> float:
    """Mean to 2 decimals (the tables' precision)."""
    return round(float(np.mean(list(values))), 2)


def summary(rows: Sequence[Mapping]) -> dict[str, float]:
    """Table 5's comparison in eight numbers (points over CLIP-FT; means over the three NegCLIP runs on template
    negatives)."""
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


def _cell(value) -> str:
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def table_csv(path: Path, rows: Sequence[Mapping], fields: Sequence[str]) -> Path:
    """A results table, floats to 2 decimals."""
    return write_csv_atomic(path, [{k: _cell(v) for k, v in r.items()} for r in rows], fields)


def tables_context(context: Mapping | None, head: Mapping, entries: Sequence[ModelEntry],
                   scores: Mapping[str, ModelScores], refined: Mapping[str, Mapping] | None,
                   model_fields: Callable[[ModelEntry], dict] = lambda e: {}) -> dict:
    """``table5_context.json``: the caller's context, the rule, ``head`` (what the gains are measured against), the
    columns' categories, the examples per category, the refinement counts, and per model how it was trained
    (``model_fields``: extra fields first), its fingerprint and its ties."""
    first = scores[entries[0].name]
    return {
        **dict(context or {}), "rule": STRICT.name, **head,
        "columns": {**{f"aro_crepe_{g}": list(m) for g, m in TEMPLATE_GROUPS.items()},
                    **{f"sugarcrepe_{g}": list(m) for g, m in SUGARCREPE_GROUPS.items()}},
        "n": {"aro_crepe": {g: s.n for g, s in first.templates.by_group().items()},
              "sugarcrepe": {g: s.n for g, s in first.sugarcrepe.by_group().items()}},
        "refined": {k: {f: v[f] for f in ("n_in", "n_kept", "blind_accuracy_before", "blind_accuracy_after") if f in v}
                    for k, v in (refined or {}).items()},
        "models": {e.name: {**model_fields(e), "training": e.training, "hard_negative": e.hard_negative,
                            "negatives": e.negatives, "fingerprint": scores[e.name].fingerprint,
                            "ties_aro_crepe": scores[e.name].templates.ties,
                            "ties_sugarcrepe": scores[e.name].sugarcrepe.ties} for e in entries},
    }
