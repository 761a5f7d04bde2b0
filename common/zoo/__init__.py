"""The model zoo: one factory (``create_model``) over a registry of models kept as data (``models.toml``), each served
through ``EmbeddingModel`` (normalized embeddings plus a fingerprint of weights and preprocessing that keys the
embedding cache); a model whose weights cannot be had raises ``ModelUnavailable`` saying how to get them, never a
fallback to random weights.

This package only re-exports (``_SUBMODULE_OF`` says from where), importing a submodule on first use (PEP 562), so
that ``common.zoo.specs``' constants cost no torch; ``hf``, ``available`` and ``trained`` are imported by their
callers. Tests that stand in for a name patch it where it is used (``common.zoo.specs.get_spec``)."""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the submodules __getattr__ serves: import_closure counts these imports (a stage may run them)
    from common.zoo import cli, factory, hub, interface, openclip, specs

    SERVED = (cli, factory, hub, interface, openclip, specs)

_SUBMODULE_OF = {
    **dict.fromkeys(("EmbeddingModel", "ModelFactory", "ModelUnavailable"), "interface"),
    **dict.fromkeys((
        "DATA_FILES", "MODEL_CONFIG_DIR", "REGISTRY_FILE", "ZOO_DIR", "ModelSpec", "activation_mismatch",
        "checkpoint_metadata", "get_spec", "read_models_file", "register_local_configs", "registry",
        "runs_quick_gelu", "trained_with_quick_gelu", "uses_quick_gelu", "with_variants"), "specs"),
    **dict.fromkeys((
        "FP16_WHY", "TRAINING_DICT_KEYS", "OpenClipModel", "arch_identity",
        "encode_text", "encode_text_unpadded", "fingerprint_model", "load_state_dict", "padding_is_inert",
        "quiet_random_init_warning", "random_model", "unwrap_training_dict"), "openclip"),
    **dict.fromkeys((
        "HUB_HOST", "HUB_PROBE_SECONDS", "fail_if_weights_absent", "hub_cache_dir", "hub_offline_mode",
        "offline_message", "hub_offline"), "hub"),
    "create_model": "factory",
    "register_cli": "cli",
}
"""Each public name this package serves, and the submodule that defines it."""

__all__ = list(_SUBMODULE_OF)


def __getattr__(name: str) -> Any:
    """``common.zoo.<name>``: the name of the submodule that defines it, that submodule imported now (a submodule
    not listed, ``common.zoo.trained``, is imported by the import system as usual)."""
    if name not in _SUBMODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_SUBMODULE_OF[name]}"), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
