"""The zoo's open_clip backend: models behind ``EmbeddingModel``, their fingerprints, strict checkpoint loading."""
from __future__ import annotations

import contextlib
import hashlib
import logging
from pathlib import Path
from typing import Callable, Mapping, Sequence

import torch
from PIL import Image

from common.files.image_transforms import to_rgb
from common.zoo.interface import ModelUnavailable, digest_weights
from common.zoo.specs import ModelSpec, register_local_configs


def fingerprint_model(arch: str, model: torch.nn.Module, transform: Callable, tokenizer: object) -> str:
    """sha256 over architecture, every weight tensor, the image transform and the tokenizer setup."""
    digest = hashlib.sha256()
    digest.update(arch.encode())
    digest_weights(digest, model)
    digest.update(repr(transform).encode())
    context_length = getattr(tokenizer, "context_length", None)
    digest.update(f"{type(tokenizer).__name__}:{context_length}".encode())
    return digest.hexdigest()[:32]


def arch_identity(spec: ModelSpec) -> str:
    """The architecture as built: ``arch``, marked when open_clip's ``force_quick_gelu`` changes its activation (the
    same weights under another activation are another model, cached apart)."""
    return spec.arch + ("+force_quick_gelu" if spec.force_quick_gelu else "")


FP16_WHY = ("open_clip's precision 'fp16' (its factory's 'manual mixed precision that matches original OpenAI "
            "behaviour'): Conv/Linear/attention weights and the projections in fp16, LayerNorm computed in fp32 "
            "(LayerNormFp32), as OpenAI clip.load's convert_weights does on CUDA")
"""Where open_clip says so: ``mlfoundations/open_clip@a09d519f src/open_clip/factory.py:194-196`` "manual mixed
precision that matches original OpenAI behaviour"."""


class OpenClipModel:
    """An open_clip model behind the ``EmbeddingModel`` interface."""

    def __init__(self, spec: ModelSpec, model: torch.nn.Module, transform: Callable, tokenizer, device: str,
                 fingerprint: str | None = None):
        self.spec = spec
        self.name = spec.name
        self.model = model.eval().to(device)
        self.transform = transform
        self.tokenizer = tokenizer
        self.device = device
        self.fingerprint = fingerprint or fingerprint_model(arch_identity(spec), self.model, transform, tokenizer)
        self.truncates_padding = padding_is_inert(self.model)
        self.input_dtype = torch.float32
        """What pixels are cast to before the image tower (fp16 for a half-precision copy, as clip.load's
        ``image.type(self.dtype)``)."""

    def at_precision(self, precision: str) -> "OpenClipModel":
        """This model rebuilt by open_clip at ``precision`` 'fp16' (``FP16_WHY``: as OpenAI's ``clip.load`` casts on
        CUDA) with its weights loaded (a copy); the fingerprint stays this model's, as the engine keys the cache by
        precision too."""
        if precision != "fp16":
            raise ValueError(f"model {self.name!r}: at_precision knows 'fp16' only, not {precision!r}")
        open_clip = register_local_configs()
        with quiet_random_init_warning():  # the weights are loaded (strictly) right below
            net = open_clip.create_model(self.spec.arch, pretrained=None, precision="fp16", device=self.device,
                                         force_quick_gelu=self.spec.force_quick_gelu)
        net.load_state_dict(self.model.state_dict(), strict=True)
        half = OpenClipModel(self.spec, net, self.transform, self.tokenizer, self.device, self.fingerprint)
        half.input_dtype = torch.float16
        return half

    def load_image(self, path: Path) -> torch.Tensor:
        """The preprocessed pixels of an image file, decoded to RGB first (``to_rgb``: open_clip's transform converts
        with ``.convert("RGB")``, which clips 16-bit images to white)."""
        with Image.open(path) as image:
            return self.transform(to_rgb(image, path))

    def tokenize(self, texts: Sequence[str]) -> torch.Tensor:
        return self.tokenizer(list(texts))

    @torch.no_grad()
    def encode_images(self, pixels: torch.Tensor) -> torch.Tensor:
        features = self.model.encode_image(pixels.to(self.device, self.input_dtype, non_blocking=True), normalize=True)
        return features.float().cpu()

    @torch.no_grad()
    def encode_tokens(self, tokens: torch.Tensor) -> torch.Tensor:
        """Text embeddings; trailing padding is dropped first when that is exact (see below)."""
        return encode_text(self.model, tokens.to(self.device), self.truncates_padding).float().cpu()

    def encode_texts(self, texts: Sequence[str]) -> torch.Tensor:
        return self.encode_tokens(self.tokenize(texts))


def padding_is_inert(model: torch.nn.Module) -> bool:
    """True for CLIP text towers where trailing padding cannot change the pooled output: with a causal mask, pooling at
    the end-of-text token or the first token reads a position before any padding, so dropping the padding columns
    gives the same embedding (up to float rounding) at a fraction of the cost (SugarCrepe captions use ~16 of 77
    positions)."""
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


def encode_text(model: torch.nn.Module, tokens: torch.Tensor, unpadded: bool, normalize: bool = True) -> torch.Tensor:
    """``model.encode_text``, or ``encode_text_unpadded`` where ``padding_is_inert(model)`` (``unpadded``)."""
    if unpadded:
        return encode_text_unpadded(model, tokens, normalize)
    return model.encode_text(tokens, normalize=normalize)


def encode_text_unpadded(model: torch.nn.Module, tokens: torch.Tensor, normalize: bool = True) -> torch.Tensor:
    """open_clip's ``CLIP.encode_text(tokens, normalize)`` on tokens cut after the batch's longest sequence."""
    # deferred: loads open_clip only when called
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
    return torch.nn.functional.normalize(x, dim=-1) if normalize else x


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


TRAINING_DICT_KEYS = ("state_dict", "model", "model_state_dict")
"""Where a training dict keeps the model's weights: open_clip's trainer, OpenAI-``clip`` fine-tuning scripts, then
PyTorch's save-a-checkpoint recipe (``{"epoch", "model_state_dict", "optimizer_state_dict", "loss"}``)."""


def unwrap_training_dict(state: object) -> dict:
    """The state dict inside a saved training dict, or ``state`` itself when it already is one (all tensors)."""
    if not isinstance(state, dict):
        raise ValueError(f"expected a state dict or a training dict, found {type(state).__name__}")
    if all(isinstance(v, torch.Tensor) for v in state.values()):
        return state
    for key in TRAINING_DICT_KEYS:
        if isinstance(state.get(key), dict):
            return state[key]
    raise ValueError(f"a dict with non-tensor entries and none of {list(TRAINING_DICT_KEYS)} holding the weights "
                     f"(top-level keys: {sorted(map(str, state))[:8]})")


def not_a_checkpoint(path: Path) -> str | None:
    """Why ``path`` cannot be a checkpoint file ("not found", "a folder", "not a regular file"), or None: one cause,
    named, rather than "not found" for a folder or a device."""
    if path.is_dir():
        return "is a folder, not a checkpoint file"
    if path.exists() and not path.is_file():
        return "is not a regular file (a device, a pipe or a socket)"
    if not path.exists():
        return "not found"
    return None


def load_state_dict(model: torch.nn.Module, path: Path, name: str, arch: str | None = None,
                    remedy: str | None = None) -> None:
    """Load weights strictly: safetensors, or a weights-only torch file holding a state dict or a training dict
    (``TRAINING_DICT_KEYS``: CoN-CLIP's and BiVLC's releases), ``module.`` prefixes (DDP) dropped. Any failure is one
    ``ModelUnavailable`` line naming the file, ended by ``remedy`` (how to get the right file)."""
    fix = f"; {remedy}" if remedy else ""
    why = not_a_checkpoint(Path(path))
    if why is not None:
        raise ModelUnavailable(f"model {name!r}: checkpoint {path} {why}{fix}")
    try:
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file

            state = load_file(str(path))
        else:
            state = torch.load(path, map_location="cpu", weights_only=True)
            state = unwrap_training_dict(state)
            state = {k.removeprefix("module."): v for k, v in state.items()}
    except Exception as exc:
        raise ModelUnavailable(f"model {name!r}: checkpoint {path} could not be loaded: {one_line(exc)}{fix}") \
            from exc
    for key, value in state.items():  # NaN or infinite weights: every score NaN, every decision a silent 0
        if isinstance(value, torch.Tensor) and value.is_floating_point() and not torch.isfinite(value).all():
            bad = int((~torch.isfinite(value)).sum())
            raise ModelUnavailable(f"model {name!r}: checkpoint {path} holds non-finite weights: {key} ({bad} of "
                                   f"{value.numel()} values NaN or infinite); its scores would be NaN"
                                   f"{fix or '; replace it with an intact file'}")
    mismatch = weights_mismatch(model.state_dict(), state)
    if mismatch:
        expected = f"{arch} " if arch else ""
        raise ModelUnavailable(f"model {name!r}: checkpoint {path} holds no {expected}weights, it was saved from "
                               f"another architecture ({mismatch}){fix or '; replace it with the right file'}")
    try:
        model.load_state_dict(state, strict=True)
    except Exception as exc:
        raise ModelUnavailable(f"model {name!r}: checkpoint {path} could not be loaded: {one_line(exc)}{fix}") \
            from exc


def one_line(exc: BaseException, limit: int = 300) -> str:
    """An exception's message on one line, shortened: what an error line can carry of a library's report."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def weights_mismatch(expected: Mapping[str, torch.Tensor], found: Mapping[str, torch.Tensor]) -> str:
    """Why ``found`` (a checkpoint's tensors) cannot load strictly into a model whose state dict is ``expected``, in a
    few words with one example of each kind; "" when the keys and shapes agree."""
    missing = [k for k in expected if k not in found]
    unexpected = [k for k in found if k not in expected]
    shaped = [k for k in expected if k in found and tuple(found[k].shape) != tuple(expected[k].shape)]
    parts = []
    if missing:
        parts.append(f"{len(missing)} of the model's {len(expected)} tensors missing, e.g. {missing[0]!r}")
    if unexpected:
        parts.append(f"{len(unexpected)} of the file's {len(found)} unknown to the model, e.g. {unexpected[0]!r}")
    if shaped:
        k = shaped[0]
        parts.append(f"{len(shaped)} of another shape, e.g. {k!r} {list(found[k].shape)} where the model has "
                     f"{list(expected[k].shape)}")
    return "; ".join(parts)


def random_model(arch: str, seed: int = 0, device: str = "cpu") -> OpenClipModel:
    """An open_clip architecture with random weights behind the ``EmbeddingModel`` interface: for timing and tests
    only (its name says so, and it is never registered in the zoo)."""
    open_clip = register_local_configs()
    torch.manual_seed(seed)
    with quiet_random_init_warning():
        net, _, transform = open_clip.create_model_and_transforms(arch, pretrained=None)
    spec = ModelSpec(name=f"random/{arch}-seed{seed}", arch=arch, family="random", label=f"{arch} (random weights)")
    return OpenClipModel(spec, net, transform, open_clip.get_tokenizer(arch), device)
