"""The model zoo: one factory over a registry of models kept as data (``models.toml``).

Every model, whatever its origin (open_clip pretrained tag, a downloaded checkpoint, or a tiny CLIP
trained here), is served through one interface, ``EmbeddingModel``: normalized image and text
embeddings plus a fingerprint of its weights and preprocessing that keys the embedding cache.
A model whose weights cannot be obtained raises ``ModelUnavailable`` naming the model and how to get
it; nothing ever falls back to random weights.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Protocol, Sequence

import torch
from PIL import Image

from common.paths import build_root, data_root

ZOO_DIR = Path(__file__).resolve().parent
MODEL_CONFIG_DIR = ZOO_DIR / "model_configs"
REGISTRY_FILE = ZOO_DIR / "models.toml"


class ModelUnavailable(RuntimeError):
    """The weights of a registered model cannot be obtained here; the message says how to get them."""


@dataclass(frozen=True)
class ModelSpec:
    name: str
    arch: str
    family: str
    label: str
    backend: str = "open_clip"
    pretrained: str | None = None
    checkpoint: str | None = None
    source: str | None = None
    data_size: str | None = None
    params_m: float | None = None

    def checkpoint_path(self) -> Path | None:
        """Resolve ``build:``/``data:`` checkpoint references against the workspace roots."""
        if self.checkpoint is None:
            return None
        scheme, _, rel = self.checkpoint.partition(":")
        roots = {"build": build_root, "data": data_root}
        if scheme not in roots or not rel:
            raise ValueError(f"{REGISTRY_FILE}: model {self.name!r}: checkpoint must be build:<path> or data:<path>")
        return roots[scheme]() / rel


@lru_cache(maxsize=None)
def registry(path: Path = REGISTRY_FILE) -> dict[str, ModelSpec]:
    """All registered models by name, validated."""
    with open(path, "rb") as fh:
        raw = tomllib.load(fh)
    specs: dict[str, ModelSpec] = {}
    for entry in raw.get("model", []):
        try:
            spec = ModelSpec(**entry)
        except TypeError as exc:
            raise ValueError(f"{path}: model entry {entry.get('name', '?')!r}: {exc}") from None
        if spec.name in specs:
            raise ValueError(f"{path}: duplicate model name {spec.name!r}")
        if (spec.pretrained is None) == (spec.checkpoint is None):
            raise ValueError(f"{path}: model {spec.name!r} needs exactly one of pretrained / checkpoint")
        specs[spec.name] = spec
    return specs


def get_spec(name: str) -> ModelSpec:
    specs = registry()
    if name not in specs:
        raise KeyError(f"unknown model {name!r}; registered: {', '.join(sorted(specs))}")
    return specs[name]


def models_in_family(family: str) -> list[ModelSpec]:
    return [s for s in registry().values() if s.family == family]


class EmbeddingModel(Protocol):
    """What the scoring engine needs from a model, whatever its backend."""

    name: str
    fingerprint: str
    load_image: Callable[[Path], torch.Tensor]

    def encode_images(self, pixels: torch.Tensor) -> torch.Tensor: ...
    def tokenize(self, texts: Sequence[str]) -> torch.Tensor: ...
    def encode_tokens(self, tokens: torch.Tensor) -> torch.Tensor: ...


def register_local_configs() -> None:
    """Make the tiny architectures in ``model_configs/`` known to open_clip (idempotent)."""
    import open_clip

    known = set(open_clip.list_models())
    for config in sorted(MODEL_CONFIG_DIR.glob("*.json")):
        if config.stem not in known:
            open_clip.add_model_config(config)


def _describe_transform(transform: Callable) -> str:
    return repr(transform)


def fingerprint_model(arch: str, model: torch.nn.Module, transform: Callable, tokenizer: object) -> str:
    """sha256 over architecture, every weight tensor, the image transform and the tokenizer setup."""
    digest = hashlib.sha256()
    digest.update(arch.encode())
    for key, tensor in sorted(model.state_dict().items()):
        t = tensor.detach().cpu().contiguous()
        digest.update(f"{key}:{t.dtype}:{tuple(t.shape)}".encode())
        digest.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    digest.update(_describe_transform(transform).encode())
    context_length = getattr(tokenizer, "context_length", None)
    digest.update(f"{type(tokenizer).__name__}:{context_length}".encode())
    return digest.hexdigest()[:32]


class OpenClipModel:
    """An open_clip model behind the ``EmbeddingModel`` interface."""

    def __init__(self, spec: ModelSpec, model: torch.nn.Module, transform: Callable, tokenizer, device: str):
        self.spec = spec
        self.name = spec.name
        self.model = model.eval().to(device)
        self.transform = transform
        self.tokenizer = tokenizer
        self.device = device
        self.fingerprint = fingerprint_model(spec.arch, self.model, transform, tokenizer)
        self.truncates_padding = padding_is_inert(self.model)

    def load_image(self, path: Path) -> torch.Tensor:
        with Image.open(path) as image:
            return self.transform(image)

    def tokenize(self, texts: Sequence[str]) -> torch.Tensor:
        return self.tokenizer(list(texts))

    @torch.no_grad()
    def encode_images(self, pixels: torch.Tensor) -> torch.Tensor:
        features = self.model.encode_image(pixels.to(self.device), normalize=True)
        return features.float().cpu()

    @torch.no_grad()
    def encode_tokens(self, tokens: torch.Tensor) -> torch.Tensor:
        """Text embeddings; trailing padding is dropped first when that is exact (see below)."""
        tokens = tokens.to(self.device)
        if self.truncates_padding:
            features = encode_text_unpadded(self.model, tokens)
        else:
            features = self.model.encode_text(tokens, normalize=True)
        return features.float().cpu()

    def encode_texts(self, texts: Sequence[str]) -> torch.Tensor:
        return self.encode_tokens(self.tokenize(texts))


def padding_is_inert(model: torch.nn.Module) -> bool:
    """True for CLIP text towers where trailing padding cannot change the pooled output.

    With a causal attention mask, position i attends only to positions <= i, and pooling at the
    end-of-text token (``argmax``/``eos``) or the first token reads a position before any padding.
    Dropping the padding columns therefore gives the same embedding (up to float rounding of
    smaller matrix products) at a fraction of the cost: SugarCrepe captions use ~16 of 77 positions.
    """
    mask = getattr(model, "attn_mask", None)
    if not (hasattr(model, "token_embedding") and isinstance(mask, torch.Tensor) and mask.ndim == 2):
        return False
    upper = torch.ones_like(mask, dtype=torch.bool).triu(1)
    causal = torch.equal(torch.isneginf(mask), upper) and bool((mask[~upper] == 0).all())
    return (
        causal
        and getattr(model, "text_pool_type", None) in ("argmax", "eos", "first")
        and getattr(model, "cls_emb", None) is None
    )


def encode_text_unpadded(model: torch.nn.Module, tokens: torch.Tensor) -> torch.Tensor:
    """open_clip's ``CLIP.encode_text`` on tokens cut after the batch's longest sequence."""
    from open_clip.transformer import text_global_pool

    nonpad = (tokens != 0).to(torch.long)
    length = int((nonpad * torch.arange(1, tokens.shape[1] + 1, device=tokens.device)).max())
    text = tokens[:, :max(length, 1)]
    cast_dtype = model.transformer.get_cast_dtype()
    x = model.token_embedding(text).to(cast_dtype)
    x = x + model.positional_embedding[: text.shape[1]].to(cast_dtype)
    x = model.transformer(x, attn_mask=model.attn_mask[: text.shape[1], : text.shape[1]])
    x = model.ln_final(x)
    x = text_global_pool(x, text, model.text_pool_type, eos_token_id=getattr(model, "text_eos_id", None))
    if model.text_projection is not None:
        x = model.text_projection(x) if isinstance(model.text_projection, torch.nn.Linear) else x @ model.text_projection
    return torch.nn.functional.normalize(x, dim=-1)


def _how_to_get(spec: ModelSpec) -> str:
    if spec.pretrained is not None:
        import open_clip

        cfg = open_clip.get_pretrained_cfg(spec.arch, spec.pretrained) or {}
        where = cfg.get("hf_hub") or cfg.get("url") or "open_clip's pretrained registry"
        return (
            f"open_clip downloads ({spec.arch!r}, {spec.pretrained!r}) from {where}; run on a machine "
            "with internet once (weights are cached under ~/.cache/huggingface or open_clip's cache_dir), "
            "or copy that cache here"
        )
    if spec.checkpoint and spec.checkpoint.startswith("build:"):
        return "it is trained by this workspace's pipeline: run `dvc repro papers/sugarcrepe` (mini profile)"
    return f"download it with `python -m common fetch {spec.source}` (see its instructions) to {spec.checkpoint_path()}"


def create_model(name: str, device: str = "cpu", cache_dir: str | None = None) -> OpenClipModel:
    """Build a registered model with its weights, or raise ``ModelUnavailable``."""
    import open_clip

    spec = get_spec(name)
    if spec.backend != "open_clip":
        raise ModelUnavailable(f"model {name!r}: backend {spec.backend!r} is not supported yet")
    register_local_configs()
    if spec.pretrained is not None:
        if spec.pretrained not in open_clip.list_pretrained_tags_by_model(spec.arch):
            raise ModelUnavailable(
                f"model {name!r}: open_clip {open_clip.__version__} has no pretrained tag "
                f"{spec.pretrained!r} for {spec.arch!r}"
            )
        try:
            model, _, transform = open_clip.create_model_and_transforms(
                spec.arch, pretrained=spec.pretrained, device=device, cache_dir=cache_dir
            )
        except Exception as exc:  # network, hub or file errors all mean: weights not obtainable here
            raise ModelUnavailable(f"model {name!r}: weights could not be loaded ({exc}); {_how_to_get(spec)}") from exc
    else:
        path = spec.checkpoint_path()
        assert path is not None
        if not path.is_file():
            raise ModelUnavailable(f"model {name!r}: checkpoint {path} not found; {_how_to_get(spec)}")
        with quiet_random_init_warning():  # the weights are loaded (strictly) right below
            model, _, transform = open_clip.create_model_and_transforms(
                spec.arch, pretrained=None, load_weights=False, device=device)
        load_state_dict(model, path, name)
    tokenizer = open_clip.get_tokenizer(spec.arch)
    return OpenClipModel(spec, model, transform, tokenizer, device)


@contextlib.contextmanager
def quiet_random_init_warning():
    """open_clip warns that a model 'initialized randomly' before we load its checkpoint; drop that line."""
    class _Drop(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            return "No pretrained weights loaded" not in record.getMessage()

    drop, root = _Drop(), logging.getLogger()
    root.addFilter(drop)
    try:
        yield
    finally:
        root.removeFilter(drop)


def load_state_dict(model: torch.nn.Module, path: Path, name: str) -> None:
    """Load weights strictly (every tensor must be present): safetensors or a weights-only torch file."""
    try:
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file

            state = load_file(str(path))
        else:
            state = torch.load(path, map_location="cpu", weights_only=True)
            if isinstance(state, dict) and "state_dict" in state:
                state = state["state_dict"]
            state = {k.removeprefix("module."): v for k, v in state.items()}
        model.load_state_dict(state, strict=True)
    except Exception as exc:
        raise ModelUnavailable(f"model {name!r}: checkpoint {path} could not be loaded: {exc}") from exc


def checkpoint_metadata(name: str) -> dict:
    """The training record saved next to a checkpoint trained here (empty for downloaded weights)."""
    path = get_spec(name).checkpoint_path()
    sidecar = path.with_suffix(".json") if path else None
    if sidecar and sidecar.is_file():
        return json.loads(sidecar.read_text())
    return {}
