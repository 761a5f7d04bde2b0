"""What a tables stage copies from the training records (each checkpoint's sidecar) into its results context, so that
the audit names each trained run's recipe from the results alone (its DVC deps stay results files, not ``build/``);
apart from the trainer, so that these readers are no dependency of every training stage."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

from common.files.jsonl import read_json

RECIPE_FIELDS = ("recipe", "epochs")
"""The keys of a training record that ``common.audit.runs.recipe_note`` reads (the recipe and the epochs the job ran)."""


def recipe_fields(record: Mapping) -> dict:
    """The recipe keys of a run's sidecar (``RECIPE_FIELDS``) that a tables stage copies (``training.<run>``)."""
    return {key: record[key] for key in RECIPE_FIELDS if key in record}


WEIGHT_SUFFIXES = (".best.loss", ".best", ".loss")
"""What ``common.training.trainer.train`` puts between a run's stem and ``.safetensors`` for the weights it writes
beside the main ones."""


def sidecar_of(weights: Path) -> Path:
    """The training record of any weights file a run wrote (``<stem>[.best][.loss].safetensors`` -> ``<stem>.json``,
    ``common.training.trainer.train``)."""
    name = Path(weights).name.removesuffix(".safetensors")
    name = next((name.removesuffix(suffix) for suffix in WEIGHT_SUFFIXES if name.endswith(suffix)), name)
    return Path(weights).with_name(name + ".json")


def training_context(weights: Mapping[str, "Path | None"],
                     keys: tuple[str, ...] = ("trainer", "loss", "data", "final_loss"),
                     remedies: Mapping[str, str] | None = None) -> dict[str, dict]:
    """Run -> its sidecar's ``keys`` and its recipe (``recipe_fields``), for the audit to name. Rows without weights
    trained here (none, or no sidecar: released ones) are left out; a run of ``remedies`` (run -> what to do) must have
    its record, and its remedy is what a missing or damaged one says."""
    out = {}
    for run, path in weights.items():
        sidecar = sidecar_of(path) if path is not None else None
        required = remedies is not None and run in remedies
        if sidecar is not None and (required or sidecar.is_file()):
            remedy = remedies[run] if required else f"retrain {run} (its training record is damaged)"
            record = read_json(sidecar, dict, remedy)
            out[run] = {**{k: record.get(k) for k in keys}, **recipe_fields(record)}
    return out
