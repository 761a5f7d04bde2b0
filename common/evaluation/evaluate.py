"""Evaluate a list of zoo models on task items: the loop every paper's table script shares; and ``eval``'s outputs
(``eval_outputs``: what ``--out`` names, checked before any work; ``write_eval_outputs``: one output group)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import torch

from common.errors import SettingError
from common.evaluation.engine import Engine, EngineConfig
from common.evaluation.results import ModelRow, write_predictions
from common.evaluation.scoring import selection
from common.evaluation.scoring.selection import STRICT, DecisionRule, SelectionResult
from common.files.io import write_json_atomic, write_output_group
from common.files.tasks import ImageToTextItem, TextToImageItem
from common.paths import refuse_workspace_outputs
from common.zoo import checkpoint_metadata, create_model, get_spec


def model_row(name: str) -> ModelRow:
    """How the results table describes a model: the zoo's entry, or the training record for ours."""
    spec = get_spec(name)
    record = checkpoint_metadata(name)
    if record:
        data_size = str(record["config"]["n_images"])
        params_m = f"{record['parameters'] / 1e6:.2f}"
    else:
        data_size = spec.data_size or ""
        params_m = "" if spec.params_m is None else f"{spec.params_m:g}"
    return ModelRow(name=name, family=spec.family, label=spec.label, data_size=data_size, params_m=params_m)


def engine_config(params: dict) -> EngineConfig:
    """The ``engine`` section of a stage's parameters (defaults where absent)."""
    engine = params.get("engine", {})
    workers = engine.get("num_workers", "auto")
    return EngineConfig(
        image_batch_size=int(engine.get("image_batch_size", 64)),
        text_batch_size=int(engine.get("text_batch_size", 256)),
        num_workers=None if workers == "auto" else int(workers),
        precision=engine.get("precision", "fp32"),
    )


def evaluate_selection(
    model_names: Sequence[str], items: Sequence[ImageToTextItem] | Sequence[TextToImageItem],
    config: EngineConfig, predictions_dir: Path | None = None, device: str = "cpu", rule: DecisionRule = STRICT,
) -> list[tuple[ModelRow, SelectionResult]]:
    """Score every model on the same items; per-example predictions go to ``predictions_dir``."""
    results = []
    for name in model_names:
        result = selection.evaluate(Engine(create_model(name, device=device), config), items, rule)
        if predictions_dir is not None:
            write_predictions(predictions_dir / f"{name.replace('/', '__')}.csv", result)
        results.append((model_row(name), result))
    return results


def best_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def eval_outputs(out: str | os.PathLike, model: str, option: str = "--out") -> tuple[Path, Path]:
    """(summary JSON, per-example CSV) that ``eval --out`` names, checked before any work is done: a value ending in
    ``.json`` (any case) is the summary file, its predictions ``<stem>.predictions.csv`` beside it; anything else is a
    folder holding ``<model>.json`` and ``<model>.predictions.csv``."""
    text = os.fspath(out)
    if not text.strip():
        raise SettingError(f"{option} is empty: give a folder (for <model>.json and <model>.predictions.csv) or a "
                           f"FILE.json")
    path = Path(text).expanduser()
    if path.suffix.lower() == ".json":
        summary, predictions = path, path.with_name(f"{path.stem}.predictions.csv")
    else:
        if path.exists() and not path.is_dir():
            raise SettingError(f"{option} {path} is a file, not a folder: give a folder or a FILE.json")
        stem = model.replace("/", "__")
        summary, predictions = path / f"{stem}.json", path / f"{stem}.predictions.csv"
    for target in (summary, predictions):
        if target.is_dir():
            raise SettingError(f"{option} would write {target}, which is a folder: remove it or give another "
                               f"{option}")
    refuse_workspace_outputs((summary, predictions), option)
    return summary, predictions


def write_eval_outputs(summary_path: Path, predictions_path: Path, summary: dict,
                       result: SelectionResult) -> tuple[Path, Path]:
    """Write an ``eval``'s summary (with the predictions' path) and per-example predictions as one output group."""
    if summary_path.parent != predictions_path.parent:
        raise ValueError(f"{summary_path} and {predictions_path} are not in one folder")

    def write(staging: Path) -> dict[str, Path]:
        return {"predictions": write_predictions(staging / predictions_path.name, result),
                "summary": write_json_atomic(staging / summary_path.name,
                                             {**summary, "predictions": str(predictions_path)})}

    written = write_output_group(summary_path.parent, write)
    return written["summary"], written["predictions"]
