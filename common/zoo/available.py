"""Loading a table's models one by one, with the reason a model cannot be had: apart from ``common.zoo`` because the
reason reads the download registry, and stages that only build a model should not rerun when the registry changes."""
from __future__ import annotations

from typing import Iterator, Mapping

from common.registry.errors import RegistryError
from common.registry.sources import get_source
from common.zoo import EmbeddingModel, ModelFactory, ModelUnavailable, create_model, get_spec


def why_unavailable(name: str, exc: ModelUnavailable) -> str:
    """The zoo's message, with the note of the model's download entry where it says why (manual, not released,
    LoRA weights)."""
    try:
        source = get_spec(name).source
        note = get_source(source).note if source else None
    except (KeyError, RegistryError):
        note = None
    return f"{exc}" + (f" ({note})" if note else "")


def each_model(models: Mapping[str, str], skipped: dict[str, str], *, create: ModelFactory | None = None,
               device: str = "cpu", skip_unavailable: bool = False,
               what: str = "row") -> Iterator[tuple[str, str, EmbeddingModel]]:
    """(row, zoo name, loaded model) for each row of a ``row -> zoo model`` map, one model held at a time; one that
    cannot be loaded raises, naming ``what`` and the row (``skip_unavailable``: recorded in ``skipped`` instead)."""
    create = create or create_model
    for row, name in models.items():
        try:
            model = create(name, device=device)
        except ModelUnavailable as exc:
            if not skip_unavailable:
                raise ModelUnavailable(f"{what} {row!r}: {why_unavailable(name, exc)}") from exc
            skipped[row] = why_unavailable(name, exc)
            continue
        yield row, name, model
