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

Tests that stand in for a name patch it where it is used (``common.zoo.specs.get_spec``, ``common.zoo.hub``'s
constants): this package's names are bindings made at import.
"""
from __future__ import annotations

from common.zoo.interface import EmbeddingModel, ModelFactory, ModelUnavailable
from common.zoo.specs import (
    DATA_FILES,
    MODEL_CONFIG_DIR,
    REGISTRY_FILE,
    ZOO_DIR,
    ModelSpec,
    _known_files,
    activation_mismatch,
    checkpoint_metadata,
    get_spec,
    models_in_family,
    read_models_file,
    register_local_configs,
    registry,
    runs_quick_gelu,
    trained_with_quick_gelu,
    uses_quick_gelu,
    with_variants,
)
from common.zoo.openclip import (
    FP16_WHY,
    TRAINING_DICT_KEYS,
    OpenClipModel,
    arch_identity,
    _describe_transform,
    encode_text_unpadded,
    fingerprint_model,
    load_state_dict,
    padding_is_inert,
    quiet_random_init_warning,
    random_model,
    unwrap_training_dict,
)
from common.zoo.hub import (
    HUB_HOST,
    HUB_PROBE_SECONDS,
    _fail_if_weights_absent,
    _hub_cache_dir,
    _hub_offline_mode,
    _offline_message,
    _probe_hub,
    _quiet_logger,
    hub_offline,
)
from common.zoo.factory import _how_to_get, create_model
from common.zoo.cli import _cmd_zoo, register_cli

__all__ = [
    "DATA_FILES", "EmbeddingModel", "HUB_HOST", "HUB_PROBE_SECONDS", "MODEL_CONFIG_DIR", "ModelFactory", "ModelSpec",
    "ModelUnavailable", "OpenClipModel", "REGISTRY_FILE", "TRAINING_DICT_KEYS", "ZOO_DIR", "_cmd_zoo",
    "_describe_transform", "_fail_if_weights_absent", "_how_to_get", "_hub_cache_dir", "_hub_offline_mode",
    "_known_files", "_offline_message", "_probe_hub", "_quiet_logger", "activation_mismatch", "checkpoint_metadata",
    "create_model", "encode_text_unpadded", "fingerprint_model", "get_spec", "hub_offline", "load_state_dict",
    "models_in_family", "padding_is_inert", "quiet_random_init_warning", "random_model", "read_models_file",
    "register_cli", "register_local_configs", "registry", "runs_quick_gelu", "trained_with_quick_gelu",
    "unwrap_training_dict", "uses_quick_gelu", "with_variants", "FP16_WHY", "arch_identity",
]
