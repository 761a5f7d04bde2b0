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

from common.errors import WorkspaceError
from common import plugins
from common.paths import build_root, data_root

DATA_FILES = ("common/zoo/models.toml", "common/zoo/model_configs/")
"""Read at run time (``common.stage_deps``): the shared models and the architectures registered with open_clip."""
ZOO_DIR = Path(__file__).resolve().parent
MODEL_CONFIG_DIR = ZOO_DIR / "model_configs"
REGISTRY_FILE = ZOO_DIR / "models.toml"


class ModelUnavailable(WorkspaceError, RuntimeError):
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
    finetuned_from: str | None = None
    """The zoo name of the model this checkpoint was fine-tuned from: it must load with that model's activation."""

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
def read_models_file(path: Path) -> dict[str, ModelSpec]:
    """The models of one ``models.toml``, validated."""
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
        owner_file = plugins.owned_file(spec.name, REGISTRY_FILE.name, REGISTRY_FILE)
        if owner_file.resolve() != Path(path).resolve() and Path(path).resolve() in _known_files():
            raise ValueError(f"{path}: model {spec.name!r} belongs in {owner_file} (a name's first segment names "
                             "the paper whose models.toml holds it; shared models name no paper)")
        specs[spec.name] = spec
    return specs


def _known_files() -> set[Path]:
    return {p.resolve() for p in plugins.registry_files(REGISTRY_FILE.name, REGISTRY_FILE)}


def registry(path: Path | None = None) -> dict[str, ModelSpec]:
    """Registered models by name: one file's, or (default) the shared file's and every paper's ``models.toml``."""
    if path is not None:
        return read_models_file(path)
    specs: dict[str, ModelSpec] = {}
    for file in plugins.registry_files(REGISTRY_FILE.name, REGISTRY_FILE):
        for name, spec in read_models_file(file).items():
            if name in specs:
                raise ValueError(f"{file}: duplicate model name {name!r}")
            specs[name] = spec
    return specs


def get_spec(name: str) -> ModelSpec:
    """One model's entry, read from the file that owns its name (``common.plugins``)."""
    from common.errors import unknown_name

    specs = read_models_file(plugins.owned_file(name, REGISTRY_FILE.name, REGISTRY_FILE))
    if name not in specs:  # an UnknownName is a KeyError too; `python -m common zoo list` lists every model
        raise unknown_name("model", name, registry())
    return specs[name]


def models_in_family(family: str) -> list[ModelSpec]:
    return [s for s in registry().values() if s.family == family]


def uses_quick_gelu(arch: str) -> bool:
    """Whether open_clip builds ``arch`` with QuickGELU (the OpenAI CLIPs' activation) rather than GELU."""
    import open_clip

    register_local_configs()
    config = open_clip.get_model_config(arch)
    if config is None:
        raise KeyError(f"open_clip has no architecture {arch!r}")
    return bool(config.get("quick_gelu", False))


def trained_with_quick_gelu(spec: ModelSpec) -> bool | None:
    """The activation the weights were trained with, where something states it: the pretrained tag's flag in
    open_clip's pretrained table, or the fine-tuning base's (recursively). None where nothing does (tags without the
    flag were trained with their architecture config, e.g. LAION's roberta-ViT-B-32; checkpoints trained here from
    scratch): then the architecture is right by definition."""
    import open_clip

    if spec.pretrained is not None:
        flag = (open_clip.get_pretrained_cfg(spec.arch, spec.pretrained) or {}).get("quick_gelu")
        return None if flag is None else bool(flag)
    if spec.finetuned_from is not None:
        return trained_with_quick_gelu(get_spec(spec.finetuned_from))
    return None


def activation_mismatch(spec: ModelSpec) -> str | None:
    """Why ``spec`` would load with another activation than its weights were trained with, or None.

    open_clip only warns for a pretrained tag (and says nothing for a checkpoint file): ``ViT-B-32`` with OpenAI
    weights silently runs GELU where CLIP was trained with QuickGELU, the pitfall of NegCLIP's and SugarCrepe's
    evaluation code. Here the architecture must say so (``ViT-B-32-quickgelu``).
    """
    if spec.backend != "open_clip":  # other backends build what their checkpoint's config says
        return None
    trained = trained_with_quick_gelu(spec)
    if trained is None or trained == uses_quick_gelu(spec.arch):
        return None
    wanted = "QuickGELU" if trained else "GELU"
    return (f"model {spec.name!r}: its weights were trained with {wanted} but architecture {spec.arch!r} uses "
            f"{'QuickGELU' if not trained else 'GELU'}; use "
            f"{spec.arch + '-quickgelu' if trained else spec.arch.removesuffix('-quickgelu')!r}")


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
        features = self.model.encode_image(pixels.to(self.device, non_blocking=True), normalize=True)
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
    if spec.backend != "open_clip":
        from common.zoo.hf import how_to_get

        return how_to_get(spec)
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


HUB_HOST = ("huggingface.co", 443)
HUB_PROBE_SECONDS = 3.0


def hub_offline() -> str | None:
    """Why the model hub cannot be reached from here, or None when it can.

    ``HF_HUB_OFFLINE=1`` (or ``TRANSFORMERS_OFFLINE=1``) says so without asking; otherwise a TCP connection to
    huggingface.co:443 that does not open within ``HUB_PROBE_SECONDS`` (name lookup included) means offline (probed
    once per process). Behind an HTTPS proxy (``HTTPS_PROXY``) the hub is assumed reachable: the proxy decides.
    """
    import os

    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(var, "").strip().upper() in ("1", "ON", "YES", "TRUE"):
            return f"{var}={os.environ[var]}"
    if any(os.environ.get(v) for v in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return None
    return _probe_hub()


@lru_cache(maxsize=1)
def _probe_hub() -> str | None:
    import socket
    import threading

    outcome: list[BaseException | None] = []

    def probe() -> None:
        try:
            socket.create_connection(HUB_HOST, timeout=HUB_PROBE_SECONDS).close()
            outcome.append(None)
        except OSError as exc:
            outcome.append(exc)

    thread = threading.Thread(target=probe, daemon=True)  # a thread: the name lookup has no timeout of its own
    thread.start()
    thread.join(HUB_PROBE_SECONDS)
    if not outcome:
        return f"{HUB_HOST[0]}:{HUB_HOST[1]} did not answer within {HUB_PROBE_SECONDS:g} s"
    if outcome[0] is not None:
        return f"{HUB_HOST[0]}:{HUB_HOST[1]} unreachable ({outcome[0]})"
    return None


@contextlib.contextmanager
def _hub_offline_mode(offline: bool):
    """huggingface_hub in offline mode for the block (its flag is read at import, so it is set on the module too)."""
    if not offline:
        yield
        return
    import os

    try:
        from huggingface_hub import constants
    except ImportError:  # no hub client: open_clip can only use URLs and files
        constants = None
    before_env = os.environ.get("HF_HUB_OFFLINE")
    before = getattr(constants, "HF_HUB_OFFLINE", None)
    os.environ["HF_HUB_OFFLINE"] = "1"
    if constants is not None:
        constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        if before_env is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = before_env
        if constants is not None:
            constants.HF_HUB_OFFLINE = before


def _hub_cache_dir(cache_dir: str | None) -> str:
    if cache_dir:
        return cache_dir
    try:
        from huggingface_hub import constants

        return constants.HF_HUB_CACHE
    except ImportError:
        return "~/.cache/huggingface/hub"


def _offline_message(spec: ModelSpec, reason: str, cache_dir: str | None, exc: BaseException | None) -> str:
    import open_clip

    cfg = open_clip.get_pretrained_cfg(spec.arch, spec.pretrained) or {}
    where = cfg.get("hf_hub") or cfg.get("url") or "open_clip's pretrained registry"
    detail = f" ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})" if exc is not None else ""
    return (
        f"model {spec.name!r}: offline ({reason}) and its weights ({spec.arch!r}, {spec.pretrained!r}, from {where}) "
        f"are not in the local cache {_hub_cache_dir(cache_dir)}{detail}. Run `python -m common zoo check {spec.name}` "
        "once on a machine with internet, then copy its Hugging Face cache (HF_HOME, default ~/.cache/huggingface; "
        "open_clip URL downloads: ~/.cache/clip) here; with the weights in place, HF_HUB_OFFLINE=1 skips the "
        "connectivity check"
    )


def _fail_if_weights_absent(spec: ModelSpec, cache_dir: str | None, reason: str) -> None:
    """Offline: raise ``ModelUnavailable`` now unless the weights file is already in the local cache.

    Before the model is built (seconds to minutes for the large towers): open_clip builds it first and only then
    looks for the weights. URL-only weights are fetched with urllib, which has no offline mode, so their file is
    looked up directly.
    """
    import os

    import open_clip
    from open_clip.pretrained import download_pretrained, has_hf_hub

    cfg = open_clip.get_pretrained_cfg(spec.arch, spec.pretrained) or {}
    if not cfg or "file" in cfg:
        return
    if cfg.get("url") and not (cfg.get("hf_hub") and has_hf_hub()):
        target = Path(cache_dir or os.path.expanduser("~/.cache/clip")) / os.path.basename(cfg["url"])
        if not target.is_file():
            raise ModelUnavailable(_offline_message(spec, reason, cache_dir, None))
        return
    try:
        with _hub_offline_mode(True), _quiet_logger("root"):
            download_pretrained(cfg, cache_dir=cache_dir)  # offline: the cached file's path, or an error at once
    except Exception as exc:
        raise ModelUnavailable(_offline_message(spec, reason, cache_dir, exc)) from exc


@contextlib.contextmanager
def _quiet_logger(name: str):
    logger = logging.getLogger(None if name == "root" else name)
    before = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(before)


def create_model(name: str, device: str = "cpu", cache_dir: str | None = None) -> EmbeddingModel:
    """Build a registered model with its weights, or raise ``ModelUnavailable``."""
    import open_clip

    spec = get_spec(name)
    if spec.backend in ("transformers", "xvlm"):
        from common.zoo.hf import create_hf_model

        return create_hf_model(spec, device, cache_dir)
    if spec.backend != "open_clip":
        raise ModelUnavailable(f"model {name!r}: backend {spec.backend!r} is not supported yet")
    register_local_configs()
    mismatch = activation_mismatch(spec)
    if mismatch:
        raise ValueError(f"{REGISTRY_FILE.name}: {mismatch}")
    if spec.pretrained is not None:
        if spec.pretrained not in open_clip.list_pretrained_tags_by_model(spec.arch):
            raise ModelUnavailable(
                f"model {name!r}: open_clip {open_clip.__version__} has no pretrained tag "
                f"{spec.pretrained!r} for {spec.arch!r}"
            )
        offline = hub_offline()
        if offline:
            _fail_if_weights_absent(spec, cache_dir, offline)
        try:
            with _hub_offline_mode(bool(offline)):  # offline: only the local cache is read, no retries
                model, _, transform = open_clip.create_model_and_transforms(
                    spec.arch, pretrained=spec.pretrained, device=device, cache_dir=cache_dir
                )
                tokenizer = open_clip.get_tokenizer(spec.arch)  # hf tokenizers are fetched from the hub too
        except Exception as exc:  # network, hub or file errors all mean: weights not obtainable here
            if offline:
                raise ModelUnavailable(_offline_message(spec, offline, cache_dir, exc)) from exc
            raise ModelUnavailable(f"model {name!r}: weights could not be loaded ({exc}); {_how_to_get(spec)}") from exc
        return OpenClipModel(spec, model, transform, tokenizer, device)
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


ModelFactory = Callable[..., EmbeddingModel]
"""``create_model(name, device=...)``: the zoo's, or a stand-in in tests."""


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


def load_state_dict(model: torch.nn.Module, path: Path, name: str) -> None:
    """Load weights strictly (every tensor must be present): safetensors or a weights-only torch file.

    A torch file is a state dict, or a training dict holding it: open_clip's ``{"state_dict": ...}``, the
    OpenAI-``clip`` fine-tuning scripts' ``{"model": ..., "optimizer": ...}`` (CoN-CLIP's release) or PyTorch's
    recipe ``{"model_state_dict": ..., "optimizer_state_dict": ...}`` (BiVLC's release); ``module.`` prefixes
    (DistributedDataParallel) are dropped."""
    try:
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file

            state = load_file(str(path))
        else:
            state = torch.load(path, map_location="cpu", weights_only=True)
            state = unwrap_training_dict(state)
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


def random_model(arch: str, seed: int = 0, device: str = "cpu") -> OpenClipModel:
    """An open_clip architecture with random weights behind the ``EmbeddingModel`` interface: for timing and tests
    only (its name says so, and it is never registered in the zoo)."""
    import open_clip

    register_local_configs()
    torch.manual_seed(seed)
    with quiet_random_init_warning():
        net, _, transform = open_clip.create_model_and_transforms(arch, pretrained=None)
    spec = ModelSpec(name=f"random/{arch}-seed{seed}", arch=arch, family="random", label=f"{arch} (random weights)")
    return OpenClipModel(spec, net, transform, open_clip.get_tokenizer(arch), device)


def _cmd_zoo(args) -> int:
    """``zoo list`` / ``zoo check NAME... [--from-params KEY] [--manifest FILE]``."""
    import sys

    if args.action == "list":
        for spec in registry().values():
            weights = spec.pretrained and f"{spec.backend}:{spec.pretrained}" or spec.checkpoint
            print(f"{spec.name:40s} {spec.family:9s} {spec.arch:28s} {weights}")
        return 0
    names = list(args.models)
    if args.from_params:
        from common.params import load_params, section, stage_params

        params = stage_params(args.stage) if args.stage else load_params()
        names += list(section(params, args.from_params))
    status, manifest = 0, {}
    for name in names:
        try:
            model = create_model(name)
            manifest[name] = {"fingerprint": model.fingerprint, "arch": model.spec.arch,
                              "pretrained": model.spec.pretrained, "checkpoint": model.spec.checkpoint}
            print(f"{name}: ok, fingerprint {model.fingerprint}")
        except ModelUnavailable as exc:
            print(f"{name}: UNAVAILABLE: {exc}", file=sys.stderr)
            status = 1
    if args.manifest:
        if status:
            raise SystemExit(f"not writing {args.manifest}: some models are unavailable (see above)")
        from common.io import write_json_atomic

        write_json_atomic(Path(args.manifest), manifest)
    return status


def register_cli(subparsers) -> None:
    """Add ``zoo`` to ``python -m common``."""
    p = subparsers.add_parser("zoo", help="list models, or check that models load")
    p.add_argument("action", choices=["list", "check"])
    p.add_argument("models", nargs="*")
    p.add_argument("--from-params", help="also check the model list at this params.yaml key")
    p.add_argument("--stage", help="read --from-params through this DVC stage's declared parameters")
    p.add_argument("--manifest", help="write name -> fingerprint JSON here (all must load)")
    p.set_defaults(func=_cmd_zoo)
