"""The zoo's registry as data: one ``ModelSpec`` per ``[[model]]`` entry of ``models.toml``, the tiny architectures of
``model_configs/*.json`` registered with open_clip, and the activation checks (QuickGELU or GELU) of each entry.

The shared ``common/zoo/models.toml`` holds the models no paper owns and those two or more papers use;
``papers/<paper>/models.toml`` the rest of a paper's (``common.plugins``). ``get_spec`` reads the shared file first,
so a stage that uses another paper's released model never reads that paper's file."""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import ModuleType

from common import plugins
from common.errors import SettingError, unknown_name
from common.files.jsonl import read_json
from common.files.utf8 import read_toml
from common.paths import build_root, data_root
from common.registry.errors import RegistryError

DATA_FILES = ("common/zoo/models.toml", "common/zoo/model_configs/")
"""Read at run time (``common.pipeline.stage_deps``): the shared models and the architectures registered with open_clip (a
paper's own ``models.toml`` is declared by the paper module that looks its models up)."""
ZOO_DIR = Path(__file__).resolve().parent
REGISTRY_FILE = ZOO_DIR / "models.toml"
MODEL_CONFIG_DIR = ZOO_DIR / "model_configs"


@dataclass(frozen=True)
class ModelSpec:
    """One ``[[model]]`` entry; what each field means: the header of ``common/zoo/models.toml``."""

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
    force_quick_gelu: bool = False
    variant_of: str | None = None
    variant_note: str | None = None

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
    """The models of one ``models.toml``, validated; a paper's file holds only that paper's names."""
    raw = read_toml(path, RegistryError)[1]  # a ValueError too, as the file's other faults are
    specs: dict[str, ModelSpec] = {}
    # a registry file of this workspace (not a test's own file)
    placed = Path(path).resolve() in {p.resolve() for p in plugins.registry_files(REGISTRY_FILE.name, REGISTRY_FILE)}
    for entry in raw.get("model", []):
        try:
            spec = ModelSpec(**entry)
        except TypeError as exc:
            raise ValueError(f"{path}: model entry {entry.get('name', '?')!r}: {exc}") from None
        if spec.name in specs:
            raise ValueError(f"{path}: duplicate model name {spec.name!r}")
        if (spec.pretrained is None) == (spec.checkpoint is None):
            raise ValueError(f"{path}: model {spec.name!r} needs exactly one of pretrained / checkpoint")
        if (spec.variant_of is None) != (spec.variant_note is None):
            raise ValueError(f"{path}: model {spec.name!r}: variant_of and variant_note go together (the note says "
                             f"which authors' line built the model that way)")
        if placed and not plugins.may_hold(Path(path), spec.name, REGISTRY_FILE):
            raise ValueError(f"{path}: model {spec.name!r} "
                             f"{plugins.where_it_belongs(spec.name, REGISTRY_FILE.name, REGISTRY_FILE)}")
        specs[spec.name] = spec
    return specs


def registry(path: Path | None = None) -> dict[str, ModelSpec]:
    """Registered models by name: one file's, or (default) the shared file's and every paper's ``models.toml``; a
    name in two files is an error naming both."""
    if path is not None:
        return read_models_file(path)
    specs: dict[str, ModelSpec] = {}
    found_in: dict[str, Path] = {}
    for file in plugins.registry_files(REGISTRY_FILE.name, REGISTRY_FILE):
        for name, spec in read_models_file(file).items():
            if name in specs:
                raise ValueError(f"{file}: model {name!r} is also in {found_in[name]}; keep one entry (in "
                                 f"{REGISTRY_FILE} if several papers use it, else in its owner's models.toml)")
            specs[name] = spec
            found_in[name] = file
    return specs


def get_spec(name: str) -> ModelSpec:
    """One model's entry: from the shared file, else from its owner paper's ``models.toml`` (``common.plugins``)."""
    for file in plugins.lookup_files(name, REGISTRY_FILE.name, REGISTRY_FILE):
        specs = read_models_file(file) if file.is_file() else {}
        if name in specs:
            return specs[name]
    # an UnknownName is a KeyError too; `python -m common zoo list` lists every model
    raise unknown_name("model", name, registry())


def with_variants(names: list[str] | tuple[str, ...]) -> list[str]:
    """``names``, each followed by its registered variants (``ModelSpec.variant_of``, in registry order): what a
    table scores when it shows how each published cell was computed (a name already listed is not repeated)."""
    by_base: dict[str, list[str]] = {}
    for spec in registry().values():
        if spec.variant_of is not None:
            by_base.setdefault(spec.variant_of, []).append(spec.name)
    out: list[str] = []
    for name in names:
        out += [n for n in (name, *by_base.get(name, ())) if n not in out]
    return out


def checkpoint_metadata(name: str) -> dict:
    """The training record saved next to a checkpoint trained here (empty for downloaded weights)."""
    path = get_spec(name).checkpoint_path()
    sidecar = path.with_suffix(".json") if path else None
    if sidecar and sidecar.is_file():
        return read_json(sidecar, dict, "retrain the checkpoint (its training record is damaged)")
    return {}


ARCH_OVERRIDES_ENV = "VLC_ARCH_OVERRIDES"
"""A folder of open_clip configs (``<architecture>.json``) that replace open_clip's own of those names in every process
started with it. Only a rehearsal sets it (``tests/rehearsal/archs.py``: the full profile's architectures shrunk, so its
stand-in checkpoints are megabytes); nothing built with it is the papers' architecture."""
APPLIED_OVERRIDES: list[Path] = []
"""The override folders handed to open_clip in this process (once each)."""


def register_local_configs() -> ModuleType:
    """Make the tiny architectures in ``model_configs/`` known to open_clip (idempotent), and the architectures of
    ``VLC_ARCH_OVERRIDES`` when it is set (a rehearsal's processes); returns open_clip, which callers import so."""
    # deferred: loads open_clip only when called
    import open_clip

    known = set(open_clip.list_models())
    for config in sorted(MODEL_CONFIG_DIR.glob("*.json")):
        if config.stem not in known:
            open_clip.add_model_config(config)
    folder = os.environ.get(ARCH_OVERRIDES_ENV, "").strip()
    if folder and Path(folder) not in APPLIED_OVERRIDES:
        if not Path(folder).is_dir():
            raise SettingError(f"{ARCH_OVERRIDES_ENV}={folder}: not a folder (unset it: only a rehearsal sets it)")
        open_clip.add_model_config(Path(folder))  # later paths win: these replace open_clip's configs of the name
        APPLIED_OVERRIDES.append(Path(folder))
    return open_clip


# ---- activations: every entry loads with the activation its weights were trained with --------------------------
def uses_quick_gelu(arch: str) -> bool:
    """Whether open_clip builds ``arch`` with QuickGELU (the OpenAI CLIPs' activation) rather than GELU."""
    open_clip = register_local_configs()
    config = open_clip.get_model_config(arch)
    if config is None:
        raise KeyError(f"open_clip has no architecture {arch!r}")
    return bool(config.get("quick_gelu", False))


def runs_quick_gelu(spec: ModelSpec) -> bool:
    """Whether ``spec`` is built with QuickGELU: its architecture's config, or open_clip's ``force_quick_gelu``."""
    return spec.force_quick_gelu or uses_quick_gelu(spec.arch)


def trained_with_quick_gelu(spec: ModelSpec) -> bool | None:
    """The activation the weights were trained with, where something states it: the pretrained tag's flag in
    open_clip's pretrained table, or the fine-tuning base's (recursively). None where nothing does (tags without the
    flag were trained with their architecture config, e.g. LAION's roberta-ViT-B-32; checkpoints trained here from
    scratch): then the architecture is right by definition."""
    # deferred: loads open_clip only when called
    import open_clip

    if spec.pretrained is not None:
        flag = (open_clip.get_pretrained_cfg(spec.arch, spec.pretrained) or {}).get("quick_gelu")
        return None if flag is None else bool(flag)
    if spec.finetuned_from is not None:
        return trained_with_quick_gelu(get_spec(spec.finetuned_from))
    return None


def activation_mismatch(spec: ModelSpec) -> str | None:
    """Why ``spec`` would load with another activation than its weights were trained with, or None.

    open_clip only warns for a pretrained tag and says nothing for a checkpoint file: ``ViT-B-32`` given a file of
    weights trained with QuickGELU silently runs GELU, the pitfall of ARO's evaluation of NegCLIP
    (``mertyg/vision-language-models-are-bows@81fdd20d model_zoo/__init__.py:71``
    "open_clip.create_model_and_transforms('ViT-B-32', pretrained=path, device=device)"). SugarCrepe's evaluation
    pairs ``ViT-B-32`` with the tag ``'openai'`` (``RAIVNLab/sugar-crepe@0047054b main_eval.py:15``
    "('ViT-B-32', 'openai')", loaded by ``RAIVNLab/sugar-crepe@0047054b main_eval.py:33-38``
    "model, _, transform = open_clip.create_model_and_transforms("); under the open_clip of its time (v2.20.0) that
    built QuickGELU, as trained: up to v2.28 ``pretrained='openai'`` took its own path
    (``mlfoundations/open_clip@a09d519f src/open_clip/factory.py:143-150``
    "if pretrained and pretrained.lower() == 'openai':" -> ``mlfoundations/open_clip@a09d519f
    src/open_clip/openai.py:73`` "model = build_model_from_openai_state_dict(state_dict or model.state_dict()",
    whose ``build_model_from_openai_state_dict`` defaults to ``quick_gelu=True``, ``mlfoundations/open_clip@a09d519f
    src/open_clip/model.py:366-368`` "quick_gelu=True,"); only from v2.29 does the same line build GELU, with a
    warning. Here the architecture must say so (``ViT-B-32-quickgelu``), unless the entry is a declared variant
    (``variant_of``, with the authors' line in ``variant_note``) that loads the weights as an evaluator did.
    """
    if spec.backend != "open_clip" or spec.variant_of is not None:  # other backends: their checkpoint's config
        return None
    trained = trained_with_quick_gelu(spec)
    if trained is None or trained == runs_quick_gelu(spec):
        return None
    wanted = "QuickGELU" if trained else "GELU"
    return (f"model {spec.name!r}: its weights were trained with {wanted} but architecture {spec.arch!r} uses "
            f"{'QuickGELU' if not trained else 'GELU'}; use "
            f"{spec.arch + '-quickgelu' if trained else spec.arch.removesuffix('-quickgelu')!r}")
