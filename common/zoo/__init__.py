"""The model zoo: one factory over a registry of models kept as data (``models.toml``).

Every model, whatever its origin (open_clip pretrained tag, a downloaded checkpoint, or a tiny CLIP
trained here), is served through one interface, ``EmbeddingModel``: normalized image and text
embeddings plus a fingerprint of its weights and preprocessing that keys the embedding cache.
A model whose weights cannot be obtained raises ``ModelUnavailable`` naming the model and how to get
it; nothing ever falls back to random weights.

This package only re-exports; the code lives in:

* ``specs``: the registry as data (``ModelSpec``, ``get_spec``: shared ``models.toml`` first, then the owner
  paper's; ``model_configs/``, ``register_local_configs``) and the activation checks (QuickGELU or GELU);
* ``interface``: ``EmbeddingModel``, ``ModelFactory``, ``ModelUnavailable``;
* ``openclip``: the open_clip backend (``OpenClipModel``, fingerprints, strict checkpoint loading, ``random_model``);
* ``hub``: whether the model hub is reachable, and failing fast offline;
* ``factory``: ``create_model``, the one entry point, and how to get a model's weights;
* ``cli``: ``python -m common zoo``;
* ``hf`` (the transformers backend), ``available`` (a table's models one by one) and ``trained`` (checkpoints
  trained here), imported by their callers.

This package imports its submodules on first use (PEP 562 ``__getattr__``): ``common.zoo.specs``' constants cost
no torch (``common.card.models`` reads them to check a name at once). The imports under ``TYPE_CHECKING`` say which
submodules it serves, for type checkers and for ``common.pipeline.import_closure``, which counts them.

Tests that stand in for a name patch it where it is used (``common.zoo.specs.get_spec``, ``common.zoo.hub``'s
constants): a caller's ``from common.zoo import get_spec`` is a binding made when it runs.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the submodules __getattr__ serves: import_closure counts these imports (a stage may run them)
    from common.zoo import cli, factory, hub, interface, openclip, specs

    SERVED = (cli, factory, hub, interface, openclip, specs)

_SUBMODULE_OF = {
    **dict.fromkeys(("EmbeddingModel", "ModelFactory", "ModelUnavailable"), "interface"),
    **dict.fromkeys((
        "DATA_FILES", "MODEL_CONFIG_DIR", "REGISTRY_FILE", "ZOO_DIR", "ModelSpec", "_known_files",
        "activation_mismatch", "checkpoint_metadata", "get_spec", "read_models_file",
        "register_local_configs", "registry", "runs_quick_gelu", "trained_with_quick_gelu", "uses_quick_gelu",
        "with_variants"), "specs"),
    **dict.fromkeys((
        "FP16_WHY", "TRAINING_DICT_KEYS", "OpenClipModel", "arch_identity",
        "encode_text_unpadded", "fingerprint_model", "load_state_dict", "padding_is_inert",
        "quiet_random_init_warning", "random_model", "unwrap_training_dict"), "openclip"),
    **dict.fromkeys((
        "HUB_HOST", "HUB_PROBE_SECONDS", "_fail_if_weights_absent", "_hub_cache_dir", "_hub_offline_mode",
        "_offline_message", "_probe_hub", "_quiet_logger", "hub_offline"), "hub"),
    **dict.fromkeys(("_how_to_get", "create_model"), "factory"),
    **dict.fromkeys(("_cmd_zoo", "register_cli"), "cli"),
}
"""Each name this package serves, and the submodule that defines it."""

__all__ = list(_SUBMODULE_OF)


def __getattr__(name: str) -> Any:
    """``common.zoo.<name>``: the name of the submodule that defines it, that submodule imported now (a submodule
    not listed, ``common.zoo.trained``, is imported by the import system as usual)."""
    if name not in _SUBMODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_SUBMODULE_OF[name]}"), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
