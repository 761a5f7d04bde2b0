"""Kamath et al. (hard positives), Tables 1-3 in the full profile: the released REPLACE and SWAP benchmarks on Visual
Genome images, every obtainable model of Table 1 and the COCO fine-tunes run here, scored as
``papers.hard_positives.evaluation`` scores them.

The data comes prepared by stage ``full-data`` (``python -m papers.hard_positives.sets_full``: the released files
fetched or verified, SWAP's boxes cropped, every row checked; ``sets_full.FullSet``); the fine-tunes by stages
``finetune-full@<run>`` (``papers.hard_positives.train_full``: CLIP ViT-B/32 on COCO train captions with rule-made
hard positives and CREPE-style hard negatives, the runs of ``papers.hard_positives.runs``). Stage ``table1-full``
(``python -m papers.hard_positives.tables_full``) scores every model of ``hard_positives.full.models`` (Table 1's
row, as the audit names it -> zoo model) and every run, one scoring pass each, and writes
``results/hard_positives/full/`` (``papers.hard_positives.tables``): ``table1.csv`` (Table 1's cells: the released
models, then the runs), ``table2.csv`` (the mean scores of c, c_n, c_p on REPLACE), ``table3.csv`` (the
hard-negative weight sweep), ``groups.csv`` (every cell and count per group), ``comparisons.json`` (the paper's
comparisons with paired-bootstrap intervals), ``summary.json`` (DVC metrics: twelve of them), ``context.json`` (data,
counts, fingerprints, ties, training records, models left out) and ``predictions/`` (per-item scores).

A model that cannot be loaded stops the stage with the zoo's message and its download entry's note (why: not
released, or released in a format the zoo cannot load; ``papers/hard_positives/models.toml``); with
``skip_unavailable`` it is left out of the tables and named in ``context.json`` (the base model cannot be: the
comparisons are against it). The paper's numbers are in ``results/published/hard_positives.csv``; the audit
(``papers/hard_positives/audit.py``) compares Tables 1-3's rows by the ``row`` column.

Precision: a model of ``hard_positives.full.authors_precision`` (OpenAI's CLIP, which the authors' evaluator loads
with ``clip.load`` on CUDA: ``amitakamath/hard_positives@33addaae run_eval.py:46`` "get_model(model_name=model_name,
device=" and ``amitakamath/hard_positives@33addaae model_zoo/__init__.py:16`` "clip.load(variant, device=device,
download_root=root_dir)": fp16 weights and scores, since ``openai/CLIP@d05afc43 clip/model.py:434``
"convert_weights(model)" builds it in fp16 and ``openai/CLIP@d05afc43 clip/clip.py:140-141`` "model.float()" casts
it back to fp32 only on the CPU) is scored at that precision, its row the one Table 1 and the audit use, and at
``engine.precision`` beside it (row ``<row>@fp32``, audited against the same published cells). The comparisons
(``summary.json``: the fine-tunes against the base) use the base at ``engine.precision``, the precision the
fine-tunes are scored at: fp16's extra ties (never correct) would otherwise favour the fine-tunes. ``context.json``
gives each row's precision and its ties per group.

Activation: the authors' evaluator builds NegCLIP and the CREPE models as open_clip ``'ViT-B-32'``, i.e. GELU
(``amitakamath/hard_positives@33addaae model_zoo/__init__.py:81`` "open_clip.create_model_and_transforms('ViT-B-32',
pretrained=path, device=device)" for NegCLIP, ``amitakamath/hard_positives@33addaae model_zoo/__init__.py:101``
"open_clip.create_model_and_transforms('ViT-B-32', pretrained=path, device=device)" for the CREPE models), although
their weights were fine-tuned from OpenAI's QuickGELU CLIP. A listed model of ``AUTHORS_BUILD`` is therefore scored
both ways: its GELU build (a zoo variant) is the row (the authors' configuration: Table 1's row, the one the audit
names so), and the model as trained, QuickGELU, is reported beside it (row ``<row>@quickgelu``, audited against the
same published cells, as ``papers.aro.tables`` scores ARO's NegCLIP), so the audit shows which activation reproduces
the paper's numbers.
"""
from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Mapping, Sequence

from common.errors import WorkspaceError
from common.io import output_group, sha256_file, staged_to_final
from common.tasks import ImageToTextItem
from common.training.records import training_context
from common.zoo import ModelFactory
from common.zoo.available import each_model
from common.zoo import create_model as _zoo_create
from papers.hard_positives import evaluation, tables
from papers.hard_positives.sets_full import FullSet
from papers.hard_positives.runs import RUNS
from papers.hard_positives.tables import ModelEntry, Scored

DATA_FILES = ("papers/hard_positives/models.toml",)
"""Read at run time (``common.stage_deps``): the zoo entries of hard_positives.full.models' names (this paper's
models; ARO's NegCLIP and its GELU build, ``aro/negclip-gelu`` of ``AUTHORS_BUILD``, are in the shared zoo file,
``common/zoo/models.toml``)."""
RUN_PREFIX = "hard_positives/full"
"""The runs' model names: ``hard_positives/full-<run>``."""
AUTHORS_BUILD: dict[str, str] = {
    "aro/negclip": "aro/negclip-gelu",
    "hard_positives/crepe-swap": "hard_positives/crepe-swap-gelu",
    "hard_positives/crepe-replace": "hard_positives/crepe-replace-gelu",
}
"""A listed zoo model (as trained: QuickGELU) -> the zoo variant that builds the same weights as the authors'
evaluator does, open_clip 'ViT-B-32' (GELU; module docstring). NegCLIP's is ARO's entry (ARO's evaluator builds it
the same way); the CREPE ones are this paper's (``papers/hard_positives/models.toml``)."""
AUTHORS_ACTIVATION = ("the authors' evaluator builds NegCLIP and the CREPE models as open_clip 'ViT-B-32' (GELU) "
                      "although they are fine-tunes of OpenAI's QuickGELU CLIP: each is scored both ways, its row "
                      "(Table 1's, the authors' configuration) with GELU and <row>@quickgelu, as trained, beside it "
                      "(each row's why cites the authors' lines)")
ACTIVATION_WHY = {
    "GELU": ("GELU, the authors' configuration: their evaluator builds NegCLIP "
             '''(amitakamath/hard_positives@33addaae model_zoo/__init__.py:81 "create_model_and_transforms('ViT-B-32'")'''
             " and the CREPE models "
             '''(amitakamath/hard_positives@33addaae model_zoo/__init__.py:101 "create_model_and_transforms('ViT-B-32'")'''
             " as open_clip 'ViT-B-32', whose config is GELU"),
    "QuickGELU": "QuickGELU, as the weights were trained (a fine-tune of OpenAI's CLIP), beside the authors' "
                 "configuration (GELU)"}
"""The audit's note of each activation (``context.json``'s ``why``)."""


class HardPositivesFullError(WorkspaceError):
    """Nothing to score: no model listed, or none that loads."""


AUTHORS_PRECISION_WHY = {
    "fp16": ("the authors' evaluator loads OpenAI's CLIP with clip.load on CUDA: fp16 weights and scores "
             '(amitakamath/hard_positives@33addaae run_eval.py:46 "get_model(model_name=model_name, device=", '
             'amitakamath/hard_positives@33addaae model_zoo/__init__.py:16 "clip.load(variant, device=device")')}


@dataclasses.dataclass(frozen=True)
class Way:
    """One scoring of a listed model: the zoo name loaded, the row it stands for when it is a reference beside the
    authors' configuration, and its activation when the model is scored under both."""

    name: str
    stands_for: str | None = None
    activation: str | None = None


def ways(models: Mapping[str, str]) -> dict[str, Way]:
    """Row -> how it is scored, in table order: a model of ``AUTHORS_BUILD`` as two rows, its GELU build under its
    own row (the authors' configuration) and itself, QuickGELU, as ``<row>@quickgelu`` right after; any other model
    as itself."""
    out: dict[str, Way] = {}
    for row, name in models.items():
        if name in AUTHORS_BUILD:
            out[row] = Way(AUTHORS_BUILD[name], activation="GELU")
            out[f"{row}@quickgelu"] = Way(name, stands_for=row, activation="QuickGELU")
        else:
            out[row] = Way(name)
    return out


def score_models(models: Mapping[str, str], items: Sequence[ImageToTextItem], engine_config=None,
                 device: str = "cpu", create: ModelFactory = _zoo_create, skip_unavailable: bool = False,
                 authors_precision: Mapping[str, str] | None = None) -> tuple[list[Scored], dict[str, str]]:
    """Every (row -> zoo model) on the items, in the given order, each model of ``AUTHORS_BUILD`` under both
    activations (``ways``); models that cannot be loaded raise ``ModelUnavailable`` (with the reason), or with
    ``skip_unavailable`` are returned by row with the reason. A model of ``authors_precision`` is scored at that
    precision and, right after, at the engine's (row ``<row>@<p>``)."""
    from common.engine import Engine, EngineConfig
    from common.zoo import get_spec

    config = engine_config or EngineConfig()
    plan = ways(models)
    scored, skipped = [], {}
    for row, name, model in each_model({row: way.name for row, way in plan.items()}, skipped, create=create,
                                       device=device, skip_unavailable=skip_unavailable, what="Table 1 row"):
        way = plan[row]
        precision = (authors_precision or {}).get(name, config.precision)
        result = evaluation.evaluate(Engine(model, dataclasses.replace(config, precision=precision)), items)
        label = get_spec(name).label + (f" [{way.activation}]" if way.stands_for else "")
        scored.append(Scored(row, name, label, result, precision, stands_for=way.stands_for,
                             reference="activation" if way.stands_for else None, activation=way.activation))
        if precision != config.precision:
            reference = evaluation.evaluate(Engine(model, config), items)
            scored.append(Scored(f"{row}@{config.precision}", name, f"{label} [{config.precision}]",
                                 reference, config.precision, stands_for=row, reference="precision",
                                 activation=way.activation))
    return scored, skipped


def score_runs(runs: Sequence[ModelEntry], arch: str, items: Sequence[ImageToTextItem], engine_config=None,
               device: str = "cpu") -> list[Scored]:
    """Every run's checkpoint (an ``arch`` model) on the items."""
    from common.engine import Engine, EngineConfig
    from common.zoo.trained import served

    config = engine_config or EngineConfig()
    return [Scored(e.run or e.name, e.name, e.label,
                   evaluation.evaluate(Engine(served(e, arch, device, family=RUN_PREFIX), config), items),
                   config.precision)
            for e in runs]


def at_one_precision(scored: Sequence[Scored]) -> list[Scored]:
    """The scorings the comparisons use: every row at the engine's precision. A row scored at the authors' precision
    is replaced by its reference scoring (``<row>@<precision>``, renamed back to the row), so that a fine-tune is
    compared with the base as both were scored; the other references (``<row>@quickgelu``) are left out."""
    references = {s.stands_for: s for s in scored if s.reference == "precision"}
    return [dataclasses.replace(references[s.row], row=s.row, stands_for=None, reference=None)
            if s.row in references else s for s in scored if not s.stands_for]


def prediction_stem(s: Scored) -> str:
    """A scoring's file name in ``predictions/`` (without ``.csv``): the zoo name, and the precision for a reference
    beside the authors' precision (the same model twice)."""
    return s.model.replace('/', '__') + (f"@{s.precision}" if s.reference == "precision" else "")


def write_outputs(out_dir: Path, scored: Sequence[Scored], zoo_rows: Sequence[str], context: Mapping
                  ) -> dict[str, Path]:
    """Tables 1-3, groups, comparisons, summary, context and per-item predictions, as one output group."""
    from common.results import write_predictions

    rows = tables.model_rows(scored)
    compared = at_one_precision(scored)
    results = {s.row: s.result for s in compared}
    missing = [r for r in ("base", *RUNS) if r not in results]
    if missing:
        raise HardPositivesFullError(f"the comparisons need the base model and every run; missing {missing}")
    groups = [{"row": s.row, **g} for s in scored
              for g in evaluation.group_rows(s.model, evaluation.group_cells(s.result))]
    out_dir = Path(out_dir)
    with output_group(out_dir) as staging:
        summary = tables.summary(tables.model_rows(compared), results)
        paths = tables.write_tables(staging, rows, groups, summary, context,
                                    (*zoo_rows, *tables.TABLE1_RUNS))
        for s in scored:
            write_predictions(staging / "predictions" / f"{prediction_stem(s)}.csv", s.result)
        paths["predictions"] = staging / "predictions"
    return {k: staged_to_final(p, staging, out_dir) for k, p in paths.items()}


def why(s: Scored) -> str:
    """How a row was scored, for ``context.json`` and the audit's notes: its precision's reason, its activation's
    where it was scored under both."""
    parts = ["reference beside the authors' precision" if s.reference == "precision"
             else AUTHORS_PRECISION_WHY.get(s.precision, "the engine's precision")]
    if s.activation is not None:
        parts.insert(0, ACTIVATION_WHY[s.activation])
        parts = [p for p in parts if p != "the engine's precision"]
    return "; ".join(parts)


def evaluate_tables(models: Mapping[str, str], runs: Sequence[ModelEntry], run_arch: str, full: FullSet,
                    out_dir: Path, engine_config=None, device: str = "cpu", create: ModelFactory = _zoo_create,
                    skip_unavailable: bool = False, context: Mapping | None = None,
                    authors_precision: Mapping[str, str] | None = None) -> dict[str, Path]:
    """Score every zoo model and every run (``run_arch`` checkpoints) on the prepared set and write the tables
    (nothing is written when a model fails)."""
    if not models:
        raise HardPositivesFullError("hard_positives.full.models is empty: no Table 1 row to score")
    items = full.items()
    scored, skipped = score_models(models, items, engine_config, device, create, skip_unavailable, authors_precision)
    zoo_rows = [s.row for s in scored]
    if "base" in skipped:
        raise HardPositivesFullError(f"the base model cannot be left out (every comparison is against it): "
                                     f"{skipped['base']}")
    scored += score_runs(runs, run_arch, items, engine_config, device)
    cells = {s.row: evaluation.group_cells(s.result) for s in scored}
    full_context = {
        **dict(context or {}), "profile": "full",
        "rule": "strict comparisons (evaluation.py); ties are neither correct nor brittle; REPLACE = mean of "
                "attributes and relations",
        "data": {"manifest": str(full.path), "sha256": full.info["sha256"], "counts": full.counts(items),
                 "crops": full.info.get("crops"), "cap": full.cap},
        "equal_captions": "rows with two equal captions are scored as released, as the authors' code scores them "
                          "(counted per group under data.counts)",
        "models": {s.row: {"model": s.model, "label": s.label, "fingerprint": s.result.fingerprint,
                           "precision": s.precision, "stands_for": s.stands_for, "reference": s.reference,
                           "activation": s.activation, "why": why(s),
                           "n": {g: c.n for g, c in cells[s.row].items()},
                           "ties": {g: c.ties for g, c in cells[s.row].items()}} for s in scored},
        "checkpoints": {e.run: {"path": str(e.checkpoint), "sha256": sha256_file(e.checkpoint)} for e in runs
                        if e.checkpoint is not None},
        "ratio": "Table 3's ratio is the hard-negative loss weight with the hard-positive weight fixed at 1 (the "
                 "paper's Sec. 4.3), not a share of rows",
        "skipped": skipped,
        "activation": AUTHORS_ACTIVATION,
    }
    return write_outputs(out_dir, scored, zoo_rows, full_context)


# ------------------------------------------------------------------------------------------------------------------
# Entry points
# ------------------------------------------------------------------------------------------------------------------
def run_tables(args: argparse.Namespace) -> int:
    from common.evaluate import best_device, engine_config
    from common.params import own_section
    from common.paths import RESULTS, build_dir
    from common.zoo import get_spec

    params, section = own_section("hard_positives.full")
    full = FullSet.load(Path(args.data or build_dir("full", "hard_positives")))
    device = args.device or best_device()
    runs = tables.run_entries(RUN_PREFIX, Path(args.models or build_dir("full", "hard_positives_ft") / "models"))
    base = section["finetune"]["base"]
    context = {"device": device, "engine": params.get("engine", {}), "finetune_base": base,
               "training": training_context({e.run: e.checkpoint for e in runs})}
    paths = evaluate_tables(dict(section["models"]), runs, get_spec(base).arch, full,
                            Path(args.out or RESULTS / "hard_positives" / "full"), engine_config(params), device,
                            create=_zoo_create, skip_unavailable=bool(section["skip_unavailable"]), context=context,
                            authors_precision=dict(section["authors_precision"]))
    for name, path in paths.items():
        print(f"{name}: {path}")
    print(paths["table1"].read_text(), paths["table3"].read_text(), sep="\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m papers.hard_positives.tables_full",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None, help="the prepared set (default: build/full/hard_positives)")
    parser.add_argument("--models", default=None,
                        help="the runs' weights (default: build/full/hard_positives_ft/models)")
    parser.add_argument("--out", default=None, help="default: results/hard_positives/full")
    parser.add_argument("--device", default=None, help="default: cuda when available, else cpu")
    return run_tables(parser.parse_args(argv))


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
