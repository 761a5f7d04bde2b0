"""Evaluate a list of zoo models on task items: the loop every paper's table script shares."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from common.engine import Engine, EngineConfig
from common.results import ModelRow, write_predictions
from common.scoring import selection
from common.scoring.selection import STRICT, DecisionRule, SelectionResult
from common.tasks import ImageToTextItem, TextToImageItem
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
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"
