"""Stand-ins for the zoo's models: the real architectures at random init, saved where and how each release is read.

* A model with an open_clip ``pretrained`` tag (``openai/ViT-B-32``: ``ViT-B-32-quickgelu``, tag ``openai``) loads
  its weights from the Hugging Face hub through open_clip; offline (``HF_HUB_OFFLINE=1``) only from the hub cache.
  ``write_pretrained`` writes random weights of the architecture into that cache's layout (``<HF_HOME>/hub/
  models--<org>--<name>/snapshots/<revision>/<file>`` with ``refs/main``), under the repository and file name
  open_clip's pretrained table gives the tag (``open_clip.pretrained``: ``hf_hub``, safetensors first), so the zoo
  loads it exactly as it would load the real weights.
* A model whose ``checkpoint`` is ``data:<path>`` (a released fine-tune such as ``hard_positives/crepe-swap``) is a
  file under the data root; ``write_checkpoint`` saves random weights there in the release's layout
  (``CHECKPOINT_LAYOUTS``: open_clip's ``{"state_dict": {"module.<key>": ...}}``, the OpenAI-``clip`` scripts'
  ``{"model": ...}``, PyTorch's ``{"model_state_dict": ...}``, a plain state dict), which
  ``common.zoo.openclip.load_state_dict`` reads strictly. A model whose registry source pins a sha256 gets none.

``build:`` checkpoints are the pipeline's own outputs (its fine-tunes): nothing to write.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Literal

from common.rehearsal.standins import StandInError

Layout = Literal["state_dict", "model", "model_state_dict", "plain"]
CHECKPOINT_LAYOUTS: tuple[str, ...] = ("state_dict", "model", "model_state_dict", "plain")
REVISION = hashlib.sha1(b"vlc-rehearsal stand-in").hexdigest()
"""The commit a stand-in hub snapshot claims (any 40 hex digits: offline, ``refs/main`` is all the hub reads)."""


def random_openclip(arch: str, seed: int = 0):
    """The open_clip architecture ``arch`` (the zoo's local configs included) with open_clip's own random init."""
    import open_clip
    import torch

    from common.zoo.openclip import quiet_random_init_warning
    from common.zoo.specs import register_local_configs

    register_local_configs()
    torch.manual_seed(seed)
    with quiet_random_init_warning():
        return open_clip.create_model(arch, pretrained=None)


def hub_location(arch: str, tag: str) -> tuple[str, str]:
    """(hub repository, file name) open_clip reads the weights of (``arch``, ``tag``) from, offline: the safetensors
    alternative of its file first, as ``open_clip.pretrained.download_pretrained_from_hf`` tries it."""
    import open_clip
    from open_clip.constants import HF_WEIGHTS_NAME
    from open_clip.pretrained import _get_safe_alternatives

    cfg = open_clip.get_pretrained_cfg(arch, tag) or {}
    if not cfg.get("hf_hub"):
        raise StandInError(f"open_clip has no hub location for ({arch!r}, {tag!r}) (URL-only weights go to "
                           "~/.cache/clip: not written by the rehearsal)")
    repo, filename = os.path.split(cfg["hf_hub"])  # as download_pretrained splits it: "org/name/" -> no file name
    filename = filename or HF_WEIGHTS_NAME
    safe = list(_get_safe_alternatives(filename))
    return repo, (safe[0] if safe else filename)


def write_pretrained(hf_home: Path, name: str, seed: int = 0) -> Path:
    """Random weights of zoo model ``name`` (an open_clip ``pretrained`` tag) in the hub cache under ``hf_home``;
    returns the file."""
    from huggingface_hub.file_download import repo_folder_name

    from common.zoo import get_spec

    spec = get_spec(name)
    if spec.pretrained is None or spec.backend != "open_clip":
        raise StandInError(f"{name}: not an open_clip model with a pretrained tag")
    repo, filename = hub_location(spec.arch, spec.pretrained)
    folder = Path(hf_home) / "hub" / repo_folder_name(repo_id=repo, repo_type="model")
    target = folder / "snapshots" / REVISION / filename
    _save(random_openclip(spec.arch, seed).state_dict(), target, "plain")
    (folder / "refs").mkdir(parents=True, exist_ok=True)
    (folder / "refs" / "main").write_text(REVISION)
    return target


def write_checkpoint(data_root: Path, name: str, layout: Layout = "state_dict", seed: int = 0) -> Path:
    """Random weights of zoo model ``name`` (a ``data:`` checkpoint) at its path under ``data_root``, in the
    release's ``layout``; returns the file."""
    from common.download import RegistryError, get_source
    from common.zoo import get_spec

    spec = get_spec(name)
    if not (spec.checkpoint or "").startswith("data:"):
        raise StandInError(f"{name}: its checkpoint {spec.checkpoint!r} is not a data: file (build: checkpoints are "
                           "the pipeline's own)")
    if spec.source:
        try:
            pinned = get_source(spec.source).sha256
        except RegistryError:
            pinned = None
        if pinned:
            raise StandInError(f"{name}: its source {spec.source} pins sha256 {pinned}: no stand-in can satisfy it")
    target = Path(data_root) / spec.checkpoint.removeprefix("data:")
    _save(random_openclip(spec.arch, seed).state_dict(), target, layout)
    return target


def _save(state: dict, target: Path, layout: str) -> None:
    import torch

    from common.io import atomic_path

    if layout not in CHECKPOINT_LAYOUTS:
        raise ValueError(f"layout must be one of {CHECKPOINT_LAYOUTS}, got {layout!r}")
    state = {k: v.detach().contiguous() for k, v in state.items()}
    with atomic_path(target) as tmp:
        if target.suffix == ".safetensors":
            from safetensors.torch import save_file

            if layout != "plain":
                raise ValueError(f"{target}: a safetensors file holds a plain state dict, not layout {layout!r}")
            save_file(state, str(tmp))
        elif layout == "plain":
            torch.save(state, tmp)
        elif layout == "state_dict":  # open_clip's trainer under DistributedDataParallel
            torch.save({"epoch": 1, "name": "rehearsal", "state_dict": {f"module.{k}": v for k, v in state.items()}},
                       tmp)
        else:
            torch.save({"epoch": 1, layout: state}, tmp)
