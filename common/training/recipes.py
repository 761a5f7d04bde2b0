"""A family of runs' training recipe as data: the optimiser, its weight-decay rule, the schedule, the logit-scale
clamp, the augmentation, and the authors' numbers, each setting with the authors' ``file:line`` it comes from. The
file format, and which settings the trainer builds from or takes from ``params.yaml``: docs/training.md, "Recipes"."""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field, fields
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Mapping

import torch

from common.errors import WorkspaceError
from common.files.utf8 import decode_utf8, parse_toml
from common.paths import ROOT
from common.text.markdown import md_cell
from common.training.optim import exclude_from_wd

DATA_FILES = ("common/training/recipes.toml",)
"""The mini recipe's file: a stage that trains reruns when it changes."""
MINI_FILE = Path(__file__).with_name("recipes.toml")

OPTIMIZERS = ("adamw", "adam")
SCHEDULES = ("warmup_cosine", "constant")
PRECISIONS = ("fp32", "bf16", "fp16")
AUGMENTATIONS = ("center_crop", "random_resized_crop")


class RecipeError(WorkspaceError):
    """A recipes file that is not what ``load_recipes`` expects (the message names the file and the key)."""


def _exclude_open_clip_names(name: str, p: torch.Tensor) -> bool:
    """open_clip's 2022 rule, kept by NegCLIP's fork (``vinid/neg_clip@e680f8e4 src/training/main.py:165``
    "exclude = lambda n, p: p.ndim < 2 or") and by BiVLC (``IMirandaM/BiVLC@84f0d175
    src/CLIP_fine_tuning/CLIP_fine_tuning.py:68`` "exclude = lambda n, p: p.ndim < 2 or"): <= 1-D, or a name
    holding bn, ln, bias or logit_scale; token and positional embeddings (2-D, no such name) are decayed."""
    return p.ndim < 2 or "bn" in name or "ln" in name or "bias" in name or "logit_scale" in name


DECAY_RULES: dict[str, Callable[[str, torch.Tensor], bool]] = {
    "clip": exclude_from_wd, "open_clip_names": _exclude_open_clip_names, "all": lambda name, p: False}
"""Named weight-decay rules: name -> ``exclude(name, tensor)`` (True: not decayed); "clip" is this workspace's
(``exclude_from_wd``: <= 1-D, embeddings, the logit scale), "all" decays every trainable tensor
(``AdamW(filter(requires_grad, model.parameters()), weight_decay=wd)``)."""

_RULES: dict[str, tuple[type | tuple[type, ...], tuple | None]] = {
    # setting -> (accepted TOML types, allowed values or None)
    "optimizer": (str, OPTIMIZERS),
    "betas": (list, None),
    "eps": ((float, int), None),
    "decay_rule": (str, tuple(DECAY_RULES)),
    "schedule": (str, SCHEDULES),
    "clamp_logit_scale": (bool, None),
    "augmentation": (str, AUGMENTATIONS),
    "crop_scale": (list, None),
    "lr": ((float, int), None),
    "weight_decay": ((float, int), None),
    "warmup_steps": (int, None),
    "epochs": (int, None),
    "batch_size": (int, None),
    "precision": (str, PRECISIONS),
    "mini_profile": (str, ("mini", "this")),
}
RULE_FIELDS = ("optimizer", "betas", "eps", "decay_rule", "schedule", "clamp_logit_scale", "augmentation",
               "crop_scale")
NUMBER_FIELDS = ("lr", "weight_decay", "warmup_steps", "epochs", "batch_size", "precision")
REQUIRED = ("optimizer", "betas", "eps", "decay_rule", "schedule", "clamp_logit_scale", "augmentation")


_NOT_SETTINGS = ("name", "sources", "quotes", "notes", "conflicts", "file", "mini_profile")
_ENTRY_KEYS = {"value", "source", "quote", "note", "paper"}


@dataclass(frozen=True)
class Conflict:
    """Where the paper states another value than the authors' code: the paper's value and its citation."""

    value: Any
    source: str
    quote: str


@dataclass(frozen=True)
class Recipe:
    """One run family's recipe; ``sources`` maps each given setting to the authors' ``file:line`` (or this
    workspace's reason where the authors give none). A number left out (None) is one the authors do not state."""

    name: str
    optimizer: str
    betas: tuple[float, float]
    eps: float
    decay_rule: str
    schedule: str
    clamp_logit_scale: bool
    augmentation: str
    crop_scale: tuple[float, float] | None = None
    lr: float | None = None
    weight_decay: float | None = None
    warmup_steps: int | None = None
    epochs: int | None = None
    batch_size: int | None = None
    precision: str | None = None
    mini_profile: str = "mini"
    """Which rules the family's mini runs train with: "mini" (``mini_recipe()``, the default) or "this" (these)."""
    sources: Mapping[str, str] = field(default_factory=dict, compare=False)
    quotes: Mapping[str, str] = field(default_factory=dict, compare=False)
    """Per setting, the verbatim words of its source (``common.docs.citations`` checks them)."""
    notes: Mapping[str, str] = field(default_factory=dict, compare=False)
    conflicts: Mapping[str, Conflict] = field(default_factory=dict, compare=False)
    """Per setting, what the paper says where it disagrees with the code (the value is the code's)."""
    file: str = ""
    """Where it was read (repository-relative), for messages and the record."""

    def settings(self) -> dict[str, Any]:
        """The settings a run trains with (no name, file, sources or ``mini_profile``), JSON-able."""
        return {f.name: (list(v) if isinstance(v, tuple) else v) for f in fields(self)
                if f.name not in _NOT_SETTINGS and (v := getattr(self, f.name)) is not None}

    @property
    def digest(self) -> str:
        """sha256 (16 hex) of the settings: two runs with one digest ran one recipe. The citations (sources, quotes,
        notes) are left out: correcting where a setting comes from changes no run."""
        blob = json.dumps({"settings": self.settings()}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    @property
    def train_crop_scale(self) -> tuple[float, float] | None:
        """The training crop's area range when the recipe augments (``random_resized_crop``), else None: what a batch
        source crops with (``FileImages.crop_scale``), so the images are what the record's augmentation says."""
        return self.crop_scale if self.augmentation == "random_resized_crop" else None

    def exclude_from_decay(self, name: str, p: torch.Tensor) -> bool:
        return DECAY_RULES[self.decay_rule](name, p)

    def deviations(self, run: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        """The authors' numbers that the run (``{setting: value}``) does not use: setting -> {authors, run}."""
        out = {}
        for key in NUMBER_FIELDS:
            mine, theirs = run.get(key), getattr(self, key)
            if theirs is None or mine is None:
                continue
            same = math.isclose(float(mine), float(theirs), rel_tol=1e-12) if key != "precision" else mine == theirs
            if not same:
                out[key] = {"authors": theirs, "run": mine}
        return out

    def describe(self, run: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """What the training record keeps: name, file, digest, settings, and the run's deviations."""
        out = {"name": self.name, "file": self.file, "digest": self.digest, "settings": self.settings(),
               "deviations": self.deviations(run or {})}
        if self.conflicts:
            out["paper_differs"] = {k: {"code": _jsonable(getattr(self, k)), "paper": _jsonable(c.value),
                                        "paper_source": c.source} for k, c in self.conflicts.items()}
        return out


_RANGES: dict[str, tuple[Callable[[Any], bool], str]] = {
    # setting -> (accepts the checked value, what it expects): what torch and the batch source would refuse later,
    # or silently misread, refused where the file is read
    "betas": (lambda b: all(0 <= x < 1 for x in b), "each 0 <= beta < 1"),
    "eps": (lambda v: v > 0, "> 0"),
    "lr": (lambda v: v > 0, "> 0"),
    "weight_decay": (lambda v: v >= 0, ">= 0"),
    "warmup_steps": (lambda v: v >= 0, ">= 0"),
    "epochs": (lambda v: v >= 1, ">= 1"),
    "batch_size": (lambda v: v >= 1, ">= 1"),
    "crop_scale": (lambda s: 0 < s[0] <= s[1] <= 1, "0 < min <= max <= 1"),
}


def _jsonable(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


@dataclass(frozen=True)
class _Entry:
    value: Any
    source: str
    quote: str | None
    note: str | None
    conflict: Conflict | None


def _text(where: str, entry: Mapping[str, Any], key: str, required: bool) -> str | None:
    value = entry.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        if key == "source":
            raise RecipeError(f"{where}: the source must name the authors' OWNER/REPO@COMMIT path:line, the paper's "
                              f"section, or this workspace's reason")
        raise RecipeError(f"{where}: {key} must be text")
    return value


def _check(path: str, table: str, key: str, entry: Any) -> _Entry:
    where = f"{path}: [{table}].{key}"
    if key not in _RULES:
        raise RecipeError(f"{where}: unknown setting; a recipe has {', '.join(_RULES)}")
    if not isinstance(entry, dict) or not {"value", "source"} <= set(entry) or set(entry) - _ENTRY_KEYS:
        raise RecipeError(f"{where}: expected {{value = ..., source = \"OWNER/REPO@COMMIT path:line\", quote = "
                          f"\"...\"}} (optional: note, paper), got {entry!r}")
    source = _text(where, entry, "source", True)
    quote = _text(where, entry, "quote", False)
    note = _text(where, entry, "note", False)
    conflict = None
    if "paper" in entry:
        other = entry["paper"]
        if not isinstance(other, dict) or set(other) != {"value", "source", "quote"}:
            raise RecipeError(f"{where}.paper: expected {{value = ..., source = \"paper, <section>\", quote = "
                              f"\"the paper's words\"}}, got {other!r}")
        theirs = _value(f"{where}.paper", key, other["value"])
        conflict = Conflict(theirs, _text(f"{where}.paper", other, "source", True),
                            _text(f"{where}.paper", other, "quote", True))
    return _Entry(_value(where, key, entry["value"]), source, quote, note, conflict)


def _value(where: str, key: str, value: Any) -> Any:
    types, allowed = _RULES[key]
    if isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
        raise RecipeError(f"{where}: {value!r} is not a {key} value")
    if not isinstance(value, types):
        raise RecipeError(f"{where}: {value!r} has the wrong type for {key}")
    if allowed is not None and value not in allowed:
        raise RecipeError(f"{where}: {value!r} is not one of {', '.join(allowed)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise RecipeError(f"{where}: {value!r} is not a finite number")
    if isinstance(value, list):
        if len(value) != 2 or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            raise RecipeError(f"{where}: expected two numbers, got {value!r}")
        if not all(math.isfinite(v) for v in value):
            raise RecipeError(f"{where}: {value!r} holds a number that is not finite")
        value = (float(value[0]), float(value[1]))
    elif key in ("eps", "lr", "weight_decay"):
        value = float(value)
    if key in _RANGES and not _RANGES[key][0](value):
        raise RecipeError(f"{where}: {value!r} is out of range (expected {_RANGES[key][1]})")
    return value


def parse_recipes(text: str, path: str) -> dict[str, Recipe]:
    """Every table of a recipes file, checked (``RecipeError`` on the first problem)."""
    doc = parse_toml(text, path, RecipeError)
    recipes = {}
    for table, entries in doc.items():
        if not isinstance(entries, dict):
            raise RecipeError(f"{path}: {table}: expected a table of settings ([{table}])")
        values: dict[str, Any] = {}
        cited: dict[str, dict] = {"sources": {}, "quotes": {}, "notes": {}, "conflicts": {}}
        if "extends" in entries:  # every setting of a table above: runs that differ in one number state only it
            base = entries["extends"]
            if not isinstance(base, str) or base not in recipes:
                raise RecipeError(f"{path}: [{table}].extends: {base!r} is not a table above it (a table extends one "
                                  f"of {', '.join(recipes) or 'none'})")
            values = {key: getattr(recipes[base], key) for key in _RULES if getattr(recipes[base], key) is not None}
            cited = {name: dict(getattr(recipes[base], name)) for name in cited}
        for key, entry in entries.items():
            if key == "extends":
                continue
            checked = _check(path, table, key, entry)
            values[key] = checked.value
            cited["sources"][key] = checked.source
            for name, part in (("quotes", checked.quote), ("notes", checked.note), ("conflicts", checked.conflict)):
                if part is None:
                    cited[name].pop(key, None)
                else:
                    cited[name][key] = part
        missing = [k for k in REQUIRED if k not in values]
        if missing:
            raise RecipeError(f"{path}: [{table}].{missing[0]}: missing; a recipe needs {', '.join(REQUIRED)}")
        if values["augmentation"] == "random_resized_crop" and "crop_scale" not in values:
            raise RecipeError(f"{path}: [{table}].crop_scale: missing; random_resized_crop needs it")
        if values["augmentation"] != "random_resized_crop" and "crop_scale" in values:
            raise RecipeError(f"{path}: [{table}].crop_scale: only random_resized_crop crops; augmentation is "
                              f"{values['augmentation']!r}")
        if values["schedule"] == "constant" and values.get("warmup_steps", 0) > 0:
            raise RecipeError(f"{path}: [{table}].warmup_steps: a constant schedule has no warmup; "
                              f"{values['warmup_steps']} warmup steps would be ignored")
        recipes[table] = Recipe(table, **values, **cited, file=path)
    return recipes


@lru_cache(maxsize=None)
def _load(path: Path, mtime_ns: int) -> dict[str, Recipe]:
    try:
        shown = path.resolve().relative_to(ROOT.resolve()).as_posix()
    except ValueError:
        shown = str(path)
    return parse_recipes(decode_utf8(path.read_bytes(), shown, RecipeError), shown)


def load_recipes(path: Path) -> dict[str, Recipe]:
    """The recipes of ``path`` by table name."""
    path = Path(path)
    if not path.is_file():
        raise RecipeError(f"{path}: no such recipes file")
    return _load(path, path.stat().st_mtime_ns)


def load_recipe(path: Path, name: str) -> Recipe:
    """The table ``name`` of ``path``; an unknown name lists the known ones."""
    recipes = load_recipes(path)
    if name not in recipes:
        raise RecipeError(f"{path}: no recipe [{name}]; it has {', '.join(recipes) or 'none'}")
    return recipes[name]


def mini_recipe() -> Recipe:
    """The mini profile's recipe: CLIP's AdamW (betas 0.9/0.98, eps 1e-6), no decay on <= 1-D tensors, embeddings
    or the logit scale, warmup + cosine, the clamp, no augmentation (``common/training/recipes.toml``)."""
    return load_recipe(MINI_FILE, "mini")


def _shown(value: Any) -> str:
    if isinstance(value, tuple):
        return "(" + ", ".join(f"{v:g}" for v in value) + ")"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def markdown(path: Path) -> str:
    """The README's "Recipe" table of a recipes file: per setting of each table, the authors' value and its source,
    and what the full and the mini profile (``mini_recipe()``, or the table's own where ``mini_profile`` is "this") use."""
    lines = []
    for name, recipe in load_recipes(Path(path)).items():
        mini = recipe if recipe.mini_profile == "this" else mini_recipe()
        lines += [f"`[{name}]` ({recipe.file})", "",
                  "| setting | authors | source | full profile here | mini profile here |",
                  "|---|---|---|---|---|"]
        for key in _RULES:
            value = getattr(recipe, key)
            if value is None or key == "mini_profile":
                continue
            theirs = getattr(mini, key)
            if key not in RULE_FIELDS:
                mine = "params.yaml (mini)"
            elif theirs is not None:
                mine = _shown(theirs)
            else:  # the one optional rule, crop_scale: the mini's augmentation has no crop
                mine = f"none ({mini.augmentation})"
            source = recipe.sources[key]
            if key in recipe.quotes:
                source += " " + quoted(recipe.quotes[key])
            if key in recipe.notes:
                source += f" ({recipe.notes[key]})"
            authors = _shown(value)
            if key in recipe.conflicts:
                authors = f"{authors} (code); **the paper: {_shown(recipe.conflicts[key].value)}**"
                source += f"; **the paper differs**: {recipe.conflicts[key].source} {quoted(recipe.conflicts[key].quote)}"
            here = _shown(value) if key in RULE_FIELDS else "params.yaml (full): the authors' by default"
            lines.append(f"| {key} | {authors} | {md_cell(source)} | {here} | {mine} |")
        lines.append("")
    return "\n".join(lines)


def quoted(text: str) -> str:
    """A quote as prose shows it (``common.docs.citations`` reads it back): in double quotes, or in backticks when it holds
    a double quote itself."""
    return f"`{text}`" if '"' in text else f'"{text}"'


def _cmd_recipes(args) -> int:
    print(markdown(ROOT / "papers" / args.paper / "recipes.toml"), end="")
    return 0


def register_cli(subparsers) -> None:
    """Add ``recipes PAPER``: print the README's "Recipe" table of ``papers/<PAPER>/recipes.toml``."""
    p = subparsers.add_parser("recipes", help="print a paper's training recipes as the README's markdown table")
    p.add_argument("paper", help="a folder under papers/")
    p.set_defaults(func=_cmd_recipes)
