"""CoN-CLIP (Singh et al.), SugarCrepe (Tables 5, 13, 14 and Table 6's SugarCrepe columns) in the full profile.

Stage ``sugarcrepe-full`` (``python -m papers.conclip.sugarcrepe_full``): the rows of ``conclip.full.sugarcrepe_rows``
on SugarCrepe's released set (SugarCrepe's stage ``full-set``), read by SugarCrepe's own loader and decided by
SugarCrepe's own rule (``STRICT``, a tie is wrong:
RAIVNLab/sugar-crepe@0047054b main_eval.py:54 "return 1 if pos_score.item() > neg_score.item() else 0"); how the
CoN-CLIP authors ran it is not in the release (the paper, Sec. 5.3.1: "We evaluate CoN-CLIP on SugarCREPE and use
CLIP as baseline for zero-shot image-text matching"). Its files: the README's "Outputs and notebooks"
(``papers.conclip.table6_full`` computes CoN-CLIP minus CLIP from its predictions).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from common.benchmarks.caption_negatives import PreparedSet
from common.errors import WorkspaceError
from common.evaluation.engine import Engine
from common.evaluation.evaluate import best_device, engine_config
from common.evaluation.results import write_predictions
from common.evaluation.scoring import selection
from common.evaluation.scoring.selection import STRICT, SelectionResult
from common.files.io import write_csv_atomic, write_json_atomic, write_output_group
from common.paths import RESULTS, build_dir
from common.pipeline.cli import DEVICE_HELP, print_written, stage_parser
from common.pipeline.params import own_section
from common.zoo import ModelFactory, create_model as zoo_create
from common.zoo.available import each_model
from papers.conclip.columns import (
    SUGARCREPE_CATEGORIES, SUGARCREPE_FIELDS, SUGARCREPE_FOLDS, model_label, sugarcrepe_cells)

DATA_FILES = ("papers/conclip/models.toml", "papers/conclip/sources.toml")
"""Read at run time (``common.pipeline.stage_deps``): the zoo entries and their download entries' notes."""
PREDICTIONS_DIR = "sugarcrepe_predictions"
"""Not ``predictions/``: that folder of the same results folder is ``tables-full``'s (CC-Neg)."""
PAPER_VS_CODE: dict[str, str] = {
    "rule": "not in the release: how the CoN-CLIP authors scored SugarCrepe (the paper, Sec. 5.3.1: 'a VLM must "
            "match a given image to its true caption by correctly rejecting the provided false caption'). "
            "SugarCrepe's own evaluation: correct iff s(I, caption) > s(I, negative_caption), a tie wrong, "
            'RAIVNLab/sugar-crepe@0047054b main_eval.py:54 "return 1 if pos_score.item() > neg_score.item() else 0"'
            "; the same here (STRICT), ties counted in the context",
    "r_at_1": "the paper's 'R@1' over one image and two captions is this accuracy (the true caption ranked first)",
    "folds": "Table 6's Replace / Add / Swap are plain means of Table 14's categories (L1: Replace 79.36 = "
             "mean(91.71, 80.58, 65.79)); the same here (papers.conclip.columns.SUGARCREPE_FOLDS)",
    "precision": "not in the release: the precision the authors ran SugarCrepe at. Here every row runs at the "
                 "engine's precision (params.yaml engine.precision)",
    "backbones": "Tables 5 and 13 also list ViT-B/16 and ViT-L/14 (and LaCLIP); conclip.full.sugarcrepe_rows scores "
                 "the ViT-B/32 rows of conclip.full.models: CLIP, the released CoN-CLIP and this workspace's "
                 "fine-tunes (Table 14's ablations are ViT-B/32)",
}


class SugarcrepeFullError(WorkspaceError):
    """Nothing to score, a row not in ``conclip.full.models``, or a set without all seven categories."""


@dataclass(frozen=True)
class ScoredRow:
    row: str
    model: str
    label: str
    result: SelectionResult


def rows_to_score(models: Mapping[str, str], rows: Sequence[str]) -> dict[str, str]:
    if not rows:
        raise SugarcrepeFullError("conclip.full.sugarcrepe_rows is empty: no SugarCrepe row to score")
    unknown = [r for r in rows if r not in models]
    if unknown:
        raise SugarcrepeFullError(f"conclip.full.sugarcrepe_rows: {unknown} not in conclip.full.models "
                                  f"(its rows: {list(models)})")
    if len(set(rows)) != len(rows):
        raise SugarcrepeFullError(f"conclip.full.sugarcrepe_rows lists a row twice: {list(rows)}")
    return {r: models[r] for r in rows}


def evaluate_sugarcrepe(models: Mapping[str, str], manifest: Path, out_dir: Path, engine_config=None,
                        device: str = "cpu", create: ModelFactory = zoo_create, skip_unavailable: bool = False,
                        context: Mapping | None = None) -> dict[str, Path]:
    """Every row on SugarCrepe as one output group; with ``skip_unavailable`` a model that cannot load is left out."""
    if not models:
        raise SugarcrepeFullError("no SugarCrepe row to score")
    # SugarCrepe's own loader (every example or a DatasetError); Table 6's folds average all seven categories
    prepared = PreparedSet.load(Path(manifest))
    missing = [c for c in SUGARCREPE_CATEGORIES if c not in prepared.categories]
    if missing:
        raise SugarcrepeFullError(f"{prepared.path}: categories {missing} are not in this set; sugarcrepe.csv needs "
                                  f"all seven ({list(SUGARCREPE_CATEGORIES)})")
    items, described = prepared.items(), prepared.describe()
    scored, skipped = [], {}
    for row, name, model in each_model(models, skipped, create=create, device=device,
                                       skip_unavailable=skip_unavailable, what="SugarCrepe row"):
        result = selection.evaluate(Engine(model, engine_config), items, STRICT)
        if [o.item_id for o in result.outcomes] != [it.item_id for it in items]:
            raise SugarcrepeFullError(f"SugarCrepe row {row!r}: the outcomes of {name!r} are not in the items' order")
        scored.append(ScoredRow(row, name, model_label(name), result))
        del model
    if not scored:
        raise SugarcrepeFullError(f"no row of conclip.full.sugarcrepe_rows could be loaded: {skipped}")
    n = {c: sum(it.group == c for it in items) for c in SUGARCREPE_CATEGORIES}
    full_context = {
        **dict(context or {}), "profile": "full",
        "rule": "strict (SugarCrepe's own evaluation): the true caption must score strictly above the false one; a "
                "tie is wrong (counted per category under models.<row>.ties)",
        "folds": {fold: list(cats) for fold, cats in SUGARCREPE_FOLDS.items()},
        "data": described, "n": n,
        "models": {s.row: {"model": s.model, "label": s.label, "fingerprint": s.result.fingerprint,
                           "rule": s.result.rule, "n": len(s.result.outcomes),
                           "ties": {g: v.ties for g, v in s.result.by_group().items()}} for s in scored},
        "skipped": skipped,
        "paper_vs_code": dict(PAPER_VS_CODE),
    }

    def write(staging: Path) -> dict[str, Path]:
        for s in scored:
            write_predictions(staging / PREDICTIONS_DIR / f"{s.model.replace('/', '__')}.csv", s.result)
        # the seven categories and Table 6's folds, in points, as the mini profile builds them
        rows = [{"row": s.row, "model": s.model, "label": s.label,
                 **sugarcrepe_cells({g: v.accuracy for g, v in s.result.by_group().items()})} for s in scored]
        return {"sugarcrepe": write_csv_atomic(staging / "sugarcrepe.csv", rows, SUGARCREPE_FIELDS),
                "context": write_json_atomic(staging / "sugarcrepe_context.json", full_context),
                "predictions": staging / PREDICTIONS_DIR}
    return write_output_group(out_dir, write)


def main(argv: Sequence[str] | None = None) -> int:
    parser = stage_parser(__spec__.name, __doc__, out="the results folder (default: results/conclip/full)",
                          device=DEVICE_HELP)
    parser.add_argument("--sugarcrepe", default=None,
                        help="SugarCrepe's prepared set (default: build/full/sugarcrepe/manifest.json)")
    args = parser.parse_args(argv)
    params, section = own_section("conclip.full")
    device = args.device or best_device()
    manifest = Path(args.sugarcrepe or build_dir("full", "sugarcrepe") / "manifest.json")
    models = rows_to_score(dict(section["models"]), list(section["sugarcrepe_rows"]))
    context = {"device": device, "engine": params.get("engine", {}), "rows_from": "conclip.full.sugarcrepe_rows"}
    paths = evaluate_sugarcrepe(models, manifest, Path(args.out or RESULTS / "conclip" / "full"), engine_config(params),
                                device, create=zoo_create, skip_unavailable=bool(section["skip_unavailable"]),
                                context=context)
    return print_written(paths, "sugarcrepe")


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
