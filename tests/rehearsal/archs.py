"""The rehearsal's architectures: open_clip's own, shrunk, so a stand-in or a fine-tune is megabytes, not 605 MB.

A rehearsal checks that every full-profile stage runs; what it writes is never a result. At the real sizes its ~40
checkpoints took 25 GB and most of its 40 minutes on two CPU cores. ``shrunk`` keeps an architecture's family, its
weights' key scheme (fewer blocks, the same names), the image size, the tokenizer and the activation, and makes it
small (about 14 MB). The joint space keeps its real width (512 for ViT-B-32): BiVLC's released detector heads are
``Linear(512, 1)`` on it (``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_evaluation_BiVLC.py:28`` "self.classifier =
torch.nn.Linear(in_features=512,"), and the oracle runs that code on these stand-ins. Attention heads are one per
64 channels, as OpenAI's loader infers them from a checkpoint's shapes (``openai/CLIP@d05afc43 clip/model.py:421``
"transformer_heads = transformer_width // 64", ``:272`` "vision_heads = vision_width // 64"): with heads of 32
channels the oracle's ``clip.load`` rebuilt other models from the same weights (scores 0.07 apart). The copy's
processes get ``common.zoo.specs.ARCH_OVERRIDES_ENV`` naming the folder ``write_shrunk`` filled, so every stage
builds these through its usual calls.
"""
from __future__ import annotations

import contextlib
import copy
import json
import os
from pathlib import Path
from typing import Any, Iterator

from common.files.io import write_text_atomic
from common.zoo import specs
from common.zoo.specs import MODEL_CONFIG_DIR, register_local_configs

VIT = {"layers": 2, "width": 64, "head_width": 64}
RESNET = {"layers": [1, 1, 1, 1], "width": 8}
TEXT = {"layers": 2, "width": 64, "heads": 1}


def shrinkable(config: dict[str, Any]) -> bool:
    """An open_clip CLIP whose towers are its own ViT or ModifiedResNet and its own text transformer (not a timm or
    Hugging Face tower, whose sizes live elsewhere; not CoCa, whose decoder's width follows the towers')."""
    vision, text = config.get("vision_cfg", {}), config.get("text_cfg", {})
    own_vision = not any(vision.get(k) for k in ("timm_model_name", "hf_model_name"))
    own_text = not any(text.get(k) for k in ("hf_model_name", "timm_model_name"))
    layers = vision.get("layers")
    tower = isinstance(layers, int) or (isinstance(layers, list) and len(layers) == 4)  # ViT or ModifiedResNet
    return own_vision and own_text and "multimodal_cfg" not in config and tower


def shrunk(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` with the sizes above; every other key (joint width, image size, patch size, context length,
    vocabulary, activation, pooling) as it was."""
    out = copy.deepcopy(config)
    vision = out["vision_cfg"]
    vision.update(copy.deepcopy(VIT if isinstance(vision["layers"], int) else RESNET))
    out["text_cfg"].update(copy.deepcopy(TEXT))
    return out


def write_shrunk(folder: Path) -> list[str]:
    """Every shrinkable architecture of open_clip's, shrunk, as ``<folder>/<name>.json``; returns the names."""
    # deferred: loads open_clip only when called
    import open_clip

    local = {path.stem for path in MODEL_CONFIG_DIR.glob("*.json")}  # the mini profile's: already tiny, left alone
    with arch_overrides(None):  # open_clip's own configs, whatever this process was started with
        register_local_configs()
        names = [name for name in open_clip.list_models()
                 if name not in local and shrinkable(open_clip.get_model_config(name) or {})]
        configs = {name: shrunk(open_clip.get_model_config(name)) for name in names}
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name, config in configs.items():
        write_text_atomic(folder / f"{name}.json", json.dumps(config, indent=2, sort_keys=True) + "\n")
    return names


@contextlib.contextmanager
def arch_overrides(folder: Path | None) -> Iterator[None]:
    """This process with ``folder``'s architectures (None: open_clip's own) until the block ends, then as it was, so
    a rehearsal run inside a test process leaves the other tests' architectures alone."""
    # deferred: loads open_clip only when called
    import open_clip.factory as factory

    saved_env = os.environ.get(specs.ARCH_OVERRIDES_ENV)
    saved = (copy.deepcopy(factory._MODEL_CONFIGS), list(factory._MODEL_CONFIG_PATHS),
             list(specs.APPLIED_OVERRIDES))
    if folder is None:
        os.environ.pop(specs.ARCH_OVERRIDES_ENV, None)
        if specs.APPLIED_OVERRIDES:  # undo the overrides of the process for the block
            factory._MODEL_CONFIG_PATHS[:] = [p for p in factory._MODEL_CONFIG_PATHS
                                              if p not in specs.APPLIED_OVERRIDES]
            factory._MODEL_CONFIGS.clear()
            factory._rescan_model_configs()
            specs.APPLIED_OVERRIDES.clear()
    else:
        os.environ[specs.ARCH_OVERRIDES_ENV] = str(folder)
    try:
        yield
    finally:
        if saved_env is None:
            os.environ.pop(specs.ARCH_OVERRIDES_ENV, None)
        else:
            os.environ[specs.ARCH_OVERRIDES_ENV] = saved_env
        factory._MODEL_CONFIGS.clear()
        factory._MODEL_CONFIGS.update(saved[0])
        factory._MODEL_CONFIG_PATHS[:] = saved[1]
        specs.APPLIED_OVERRIDES[:] = saved[2]
