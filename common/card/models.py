"""What ``card --model SPEC`` accepts (docs/card.md), and the model it builds. The zoo's names and open_clip's
architectures are read from the files that define them (``zoo_names``, ``open_clip_archs``), not through modules that
import torch (seconds): a misspelt name is answered at once.
"""
from __future__ import annotations

import difflib
import importlib.util
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from common import plugins
from common.card.core import CardError
from common.files.io import sha256_file
from common.files.utf8 import read_toml
from common.zoo import ModelSpec, get_spec, register_local_configs
from common.zoo.specs import ARCH_OVERRIDES_ENV, MODEL_CONFIG_DIR, REGISTRY_FILE

if TYPE_CHECKING:
    from common.zoo.interface import EmbeddingModel

CHECKPOINT_SUFFIXES = (".safetensors", ".pt", ".pth", ".bin", ".ckpt")


@dataclass(frozen=True)
class CardModel:
    """A resolved SPEC: its name in the card's files, how it was given, and the zoo entry it stands for."""

    spec_text: str
    kind: str
    """"zoo", "open_clip", "checkpoint" or "transformers"."""
    spec: ModelSpec

    @property
    def file_stem(self) -> str:
        """The card's file name: the SPEC with every character outside ``[A-Za-z0-9._-]`` written ``_``."""
        return (re.sub(r"[^A-Za-z0-9._-]+", "_", self.spec_text.replace("/", "__")).strip("._") or "model")[:120]

    def provenance(self) -> dict:
        out = {"spec": self.spec_text, "kind": self.kind, "arch": self.spec.arch, "backend": self.spec.backend}
        if self.kind == "zoo":
            out["zoo_entry"] = {k: v for k, v in vars(self.spec).items() if v not in (None, False, "")}
        if self.kind == "checkpoint":
            path = Path(self.spec.checkpoint or "")
            out.update(checkpoint=str(path), checkpoint_sha256=sha256_file(path))
        if self.kind == "open_clip":
            out["pretrained"] = self.spec.pretrained
        return out


OPEN_CLIP_CONFIG_KEYS = ("embed_dim", "vision_cfg", "text_cfg")
"""What makes a JSON file an architecture for open_clip (``open_clip.factory._rescan_model_configs``)."""


def is_mini_world(model: CardModel) -> bool:
    """A model of the mini world (the zoo's ``mini`` family or the workspace's own open_clip configs)."""
    return model.spec.family == "mini" or model.spec.arch in {path.stem for path in MODEL_CONFIG_DIR.glob("*.json")}


def zoo_names() -> set[str]:
    """The zoo's names, read from its ``models.toml`` files alone (the registry's checks run at look-up)."""
    return {entry["name"] for file in plugins.registry_files(REGISTRY_FILE.name, REGISTRY_FILE)
            for entry in read_toml(file)[1].get("model", []) if "name" in entry}


def open_clip_archs() -> set[str]:
    """open_clip's architectures and this workspace's, from their JSON files (``VLC_ARCH_OVERRIDES``: open_clip's)."""
    installed = importlib.util.find_spec("open_clip")
    if os.environ.get(ARCH_OVERRIDES_ENV, "").strip() or installed is None or not installed.origin:
        # deferred: loads open_clip only when called
        import open_clip

        register_local_configs()
        return set(open_clip.list_models())
    folders = (Path(installed.origin).parent / "model_configs", MODEL_CONFIG_DIR)
    return {path.stem for folder in folders for path in folder.glob("*.json") if _is_arch(path)}


def _is_arch(path: Path) -> bool:
    config = json.loads(path.read_text(encoding="utf-8"))
    return isinstance(config, dict) and all(key in config for key in OPEN_CLIP_CONFIG_KEYS)


def resolve(spec_text: str) -> CardModel:
    """The model a SPEC names, checked before any data is read; an unknown SPEC is one line with close matches."""
    text = spec_text.strip()
    if not text:
        raise CardError("--model is empty: give a zoo name, ARCH:TAG, ARCH:FILE or hf:REPO")
    if text in zoo_names():
        return CardModel(text, "zoo", get_spec(text))
    if text.startswith("hf:"):
        return _transformers(text)
    arch, sep, rest = text.partition(":")
    if sep and rest:
        if arch not in open_clip_archs():
            raise _unknown(text, arch)

        path = Path(rest).expanduser()
        if path.suffix.lower() in CHECKPOINT_SUFFIXES or path.exists():
            # deferred: loads PIL, torch only when called
            from common.zoo.openclip import not_a_checkpoint

            why = not_a_checkpoint(path)
            if why is not None:
                raise CardError(f"--model {text}: checkpoint {path} {why}")
            spec = ModelSpec(name=text, arch=arch, family="card", label=f"{arch} ({path.name})",
                             checkpoint=str(path.resolve()))
            return CardModel(text, "checkpoint", spec)
        # deferred: loads open_clip only when called
        import open_clip

        tags = open_clip.list_pretrained_tags_by_model(arch)
        if rest not in tags:
            close = difflib.get_close_matches(rest, tags, n=3, cutoff=0.6)
            hint = f"; close matches: {', '.join(close)}" if close else ""
            raise CardError(f"--model {text}: open_clip has no pretrained tag {rest!r} for {arch!r} and no file "
                            f"{path} exists{hint} (tags: {', '.join(tags) or 'none'})")
        spec = ModelSpec(name=text, arch=arch, family="card", label=f"{arch} ({rest})", pretrained=rest)
        return CardModel(text, "open_clip", spec)
    raise _unknown(text, arch)


def _unknown(text: str, arch: str) -> CardError:
    zoo_close = difflib.get_close_matches(text, sorted(zoo_names()), n=3, cutoff=0.5)
    arch_close = difflib.get_close_matches(arch, sorted(open_clip_archs()), n=3, cutoff=0.6)
    hints = [f"zoo: {', '.join(zoo_close)}" if zoo_close else "",
             f"open_clip architectures: {', '.join(arch_close)}" if arch_close else ""]
    hint = "; ".join(h for h in hints if h)
    return CardError(f"unknown model {text!r}: not a zoo name (`python -m common zoo list`), an open_clip "
                     f"ARCH:TAG or ARCH:FILE, or hf:REPO{f'; close matches: {hint}' if hint else ''}")


def _transformers(text: str) -> CardModel:
    """``hf:REPO|DIR``: its architecture read from the model's config (BLIP or FLAVA)."""
    # deferred: loads PIL, torch only when called
    from common.zoo import ModelUnavailable
    from common.zoo.hf import ARCHS, refuse_custom_code

    source = text[3:]
    if not source:
        raise CardError("--model hf: needs a repository id or a folder (hf:Salesforce/blip-itm-base-coco)")
    try:
        import transformers
    except ImportError as exc:
        raise CardError(f"--model {text}: transformers is not installed; pip install -e '.[hf]'") from exc
    local = Path(source).expanduser().is_dir()
    if local:
        refuse_custom_code(Path(source).expanduser(), f"--model {text}")
    try:
        # never the model's own code: transformers then refuses a config that needs it, and asks nothing
        config = transformers.AutoConfig.from_pretrained(source, local_files_only=True, trust_remote_code=False)
    except Exception as exc:  # not cached or not a model folder: the factory says how to get it
        from common.zoo.openclip import one_line

        why = ("folder without config.json" if local and not (Path(source).expanduser() / "config.json").is_file()
               else f"its config could not be read: {one_line(exc, 160)}" if local else "not in the hub cache")
        raise ModelUnavailable(f"--model {text}: no transformers config for {source!r} here ({why}); download it "
                               f"once on a machine with internet (HF_HOME) or give a save_pretrained folder") from exc
    model_type = str(getattr(config, "model_type", ""))
    if model_type not in ARCHS:
        vision_only = getattr(config, "text_config", None) is None
        why = "has no text tower (a vision-only model)" if vision_only else "is not a BLIP or FLAVA model"
        raise CardError(f"--model {text}: {source} is a {model_type or 'unknown'!r} model, which {why}; the card "
                        f"scores image-text models: open_clip CLIPs, BLIP and FLAVA")
    spec = ModelSpec(name=text, arch=model_type, family="card", label=f"{model_type} ({source})",
                     backend="transformers", pretrained=source)
    return CardModel(text, "transformers", spec)


def build(model: CardModel, device: str = "cpu") -> EmbeddingModel:
    """The model with its weights, or ``ModelUnavailable`` (one line: how to get them)."""
    # deferred: loads PIL, torch only when called
    from common.zoo import create_model
    from common.zoo.hf import create_hf_model

    if model.kind == "zoo":
        return create_model(model.spec_text, device=device)
    if model.kind == "transformers":
        return create_hf_model(model.spec, device)
    return _build_open_clip(model.spec, device)


def _build_open_clip(spec: ModelSpec, device: str) -> EmbeddingModel:
    """An ad-hoc open_clip model (a pretrained tag, or a checkpoint loaded strictly): the zoo's factory takes names."""
    # deferred: loads open_clip only when called
    import open_clip

    # deferred: loads PIL, torch only when called
    from common.zoo import ModelUnavailable, OpenClipModel, load_state_dict, quiet_random_init_warning
    from common.zoo.hub import fail_if_weights_absent, hub_offline, hub_offline_mode, offline_message

    register_local_configs()
    if spec.pretrained is not None:
        offline = hub_offline()
        if offline:
            fail_if_weights_absent(spec, None, offline)
        try:
            with hub_offline_mode(bool(offline)):
                net, _, transform = open_clip.create_model_and_transforms(spec.arch, pretrained=spec.pretrained,
                                                                          device=device)
                tokenizer = open_clip.get_tokenizer(spec.arch)
        except Exception as exc:  # network, hub or file errors: weights not obtainable here
            if offline:
                raise ModelUnavailable(offline_message(spec, offline, None, exc)) from exc
            raise ModelUnavailable(f"model {spec.name!r}: weights could not be loaded ({exc})") from exc
        return OpenClipModel(spec, net, transform, tokenizer, device)
    with quiet_random_init_warning():  # the weights are loaded (strictly) right below
        net, _, transform = open_clip.create_model_and_transforms(spec.arch, pretrained=None, load_weights=False,
                                                                  device=device)
    load_state_dict(net, Path(spec.checkpoint or ""), spec.name, arch=spec.arch,
                    remedy=f"give the architecture the checkpoint was saved from (ARCH:{spec.checkpoint})")
    return OpenClipModel(spec, net, transform, open_clip.get_tokenizer(spec.arch), device)
