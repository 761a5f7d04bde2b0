"""The workspace's DVC parameters (``params.yaml`` at the root), read by every stage and validated when read
(``read_params``). What a value must be follows from its key's name, wherever the key sits (``PARAM_RULES``:
``seed``, ``*_images``, ``lr``), so every paper's section, a new paper's included, is checked without a schema here.
"""
from __future__ import annotations

import argparse
import math
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import yaml
from pydantic import Field, StrictBool, TypeAdapter, ValidationError

from common.errors import LookupFailed
from common.paths import ROOT
from common.pipeline.stage_map import current_stage, stages_in

PARAMS_FILE = ROOT / "params.yaml"
PROFILES = ("mini", "full")


class ParamsError(LookupFailed):
    """``params.yaml`` cannot be read, lacks a key a stage declares, or holds a value of the wrong kind."""


# ----------------------------------------------------------------------------------------------------------------
# What each key must hold
# ----------------------------------------------------------------------------------------------------------------
MAX_COUNT = 10 ** 9
"""The largest count any key may hold (examples, images, steps, resamples): more than any real data set here, and a
bound, so that a typo of a few digits is refused rather than run for years."""
MAX_MINI_COUNT = 100_000
"""The largest count of a mini-world set rendered here on a CPU (``mini_*`` keys): the world's largest is 32,000."""
_PositiveInt = Annotated[int, Field(strict=True, gt=0)]
_NonNegativeInt = Annotated[int, Field(strict=True, ge=0)]
_Name = Annotated[str, Field(strict=True, min_length=1, pattern=r"\S")]


def _number(**bounds: float) -> Any:
    """A finite number (an integer too: ``lr: 1`` means 1.0) within ``bounds`` (pydantic's gt/ge/lt/le)."""
    return Annotated[float, Field(strict=True, allow_inf_nan=False, **bounds)]


@dataclass(frozen=True)
class Rule:
    """Every key whose name matches ``pattern`` (the whole name), anywhere in the file, holds a ``must_be``."""

    pattern: str
    must_be: str
    """How the message completes "must be ...": ``a positive integer``."""
    kind: Any
    """The type (pydantic) a value must validate as; validation only checks, the value is kept as written."""
    at_most: int | None = MAX_COUNT
    """The largest integer the value (or each integer in it) may be: a count has a stated maximum; None: none."""
    why_at_most: str = "larger than any data set here: a typo?"

    @cached_property
    def _adapter(self) -> TypeAdapter:
        return TypeAdapter(self.kind)

    def matches(self, key: str) -> bool:
        return re.fullmatch(self.pattern, key) is not None

    def accepts(self, value: Any) -> bool:
        try:
            self._adapter.validate_python(value)
        except ValidationError:
            return False
        return True

    def within(self, value: Any) -> bool:
        """Every integer in ``value`` at most ``at_most`` (a value of the right type can still be too large)."""
        if self.at_most is None:
            return True
        if isinstance(value, bool) or not isinstance(value, (int, list, dict)):
            return True
        if isinstance(value, int):
            return value <= self.at_most
        return all(self.within(v) for v in (value.values() if isinstance(value, dict) else value))

    def message(self, value: Any) -> str:
        """What follows "key: " for a value this rule refuses."""
        if self.accepts(value) and not self.within(value):
            return f"must be at most {self.at_most:,} ({self.why_at_most}), got {_short(value)}"
        return f"must be {self.must_be}, got {_short(value)}"


PROFILE_RULE = Rule("profile", "one of " + ", ".join(map(repr, PROFILES)), Literal[PROFILES])
"""The one switch, at the top level only (``profile: mini``)."""

PARAM_RULES: tuple[Rule, ...] = (
    Rule("seed", "a non-negative integer", _NonNegativeInt, 2 ** 63 - 1, "torch's seeds are below 2**64"),
    Rule("seeds", "a non-empty list of non-negative integers", Annotated[list[_NonNegativeInt], Field(min_length=1)],
         2 ** 63 - 1, "torch's seeds are below 2**64"),
    Rule("lr", "a positive number", _number(gt=0)),
    Rule("lrs", "a non-empty list of positive numbers", Annotated[list[_number(gt=0)], Field(min_length=1)]),
    Rule("weight_decay", "a non-negative number", _number(ge=0)),
    Rule("warmup_steps|checkpoint_every|min_chars|vocabulary_min_count", "a non-negative integer", _NonNegativeInt),
    Rule("batch_size", "a positive integer (or a table of names to positive integers)",
         Union[_PositiveInt, Annotated[dict[str, _PositiveInt], Field(min_length=1)]]),
    Rule(r"mini_.+_per_.+|mini_.+_images|mini_.+_cases", "a positive integer", _PositiveInt, MAX_MINI_COUNT,
         "a mini-world set, rendered here on a CPU"),
    Rule(r"steps|epochs|accum|gpus|nproc_per_node|image_size|n|top_k|folds|bins|validations|images"
         r"|.+_images|.+_per_.+|.+_cases|.+_bins|.+_batch_size|.+_resamples|n_.+",
         "a positive integer", _PositiveInt),
    Rule("quantile", "a number from 0 to 1", _number(ge=0, le=1)),
    Rule(".+_fraction", "a number between 0 and 1 (exclusive)", _number(gt=0, lt=1)),
    Rule("precision", "one of 'fp32', 'bf16', 'fp16'", Literal["fp32", "bf16", "fp16"]),
    Rule("authors_precision", "a table of model names to 'fp16' or 'fp32' (the precision the authors scored each in)",
         dict[_Name, Literal["fp16", "fp32"]]),
    Rule("num_workers", "'auto' or a non-negative integer", Union[Literal["auto"], _NonNegativeInt]),
    Rule("shuffle|skip_.+", "true or false", StrictBool),
    Rule("base|arch|scratch_arch|model", "a non-empty string (a model or architecture name)", _Name),
    Rule("models|family", "a list of model names, or a table of them",
         Union[list[_Name], dict[str, Union[_Name, list[_Name]]]]),
)
"""First match wins; a key no rule names is free (its section's stage checks it), and a mapping under such a key is
walked for keys that a rule names."""


# ----------------------------------------------------------------------------------------------------------------
# Reading
# ----------------------------------------------------------------------------------------------------------------
class _Duplicate(Exception):
    def __init__(self, key: Any, line: int, first: int, node: yaml.Node) -> None:
        super().__init__(key)
        self.key, self.line, self.first, self.node = key, line, first, node


MAX_ALIASES = 64
"""YAML aliases (``*name``) a parameters file may use: params.yaml uses none; an alias is a reference, and a few
nested ones (a "billion laughs" file) make every reader that walks the values run for ever."""


class _TooManyAliases(yaml.YAMLError):
    def __init__(self, line: int) -> None:
        super().__init__(f"more than {MAX_ALIASES} aliases (*name): refused before anything expands them")
        self.line = line


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a key that appears twice in one mapping (PyYAML keeps the last silently) and
    more than ``MAX_ALIASES`` aliases."""

    aliases = 0

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                raise _TooManyAliases(self.peek_event().start_mark.line + 1)
        return super().compose_node(parent, index)


def _construct_mapping(loader: _Loader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            first = seen.setdefault(key, key_node.start_mark.line + 1)
        except TypeError:  # an unhashable key: the constructor below says so, with its line
            continue
        if first != key_node.start_mark.line + 1:
            raise _Duplicate(key, key_node.start_mark.line + 1, first, node)
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _hint(value: Any) -> str:
    """How to write a number that YAML read as text (``1e-3`` has no dot: YAML 1.1 reads a string)."""
    if not isinstance(value, str):
        return ""
    try:
        number = float(value)
    except ValueError:
        return ""
    if not math.isfinite(number):
        return ""
    if re.fullmatch(r"\s*[-+]?\d+\s*", value):
        return f"; a quoted number is text: write {value.strip()} without quotes"
    mantissa, _, exponent = value.strip().lower().partition("e")
    written = f"{mantissa if '.' in mantissa else mantissa + '.0'}e{exponent}" if exponent else value.strip()
    return f"; YAML reads {value.strip()} as text: write {written}"


def _line_of(text: str, parts: list[str]) -> int | None:
    """The line of the key ``parts`` (a dotted path) in the YAML ``text``, for the message; None if not found."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, RecursionError):
        return None
    line = None
    for part in parts:
        if not isinstance(node, yaml.MappingNode):
            return line
        match = next(((k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == part), None)
        if match is None:
            return line
        line, node = match[0].start_mark.line + 1, match[1]
    return line


def _problems(params: dict[str, Any]) -> list[tuple[list[str], Rule, Any]]:
    """(key path, rule, value) of every value that breaks its rule, in file order."""
    found: list[tuple[list[str], Rule, Any]] = []

    def walk(node: Any, path: list[str]) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                rule = next((rule for rule in PARAM_RULES if rule.matches(str(key))), None)
                if rule is not None:
                    if not rule.accepts(value) or not rule.within(value):
                        found.append(([*path, str(key)], rule, value))
                else:
                    walk(value, [*path, str(key)])
        elif isinstance(node, list):
            for item in node:
                if isinstance(item, dict):
                    walk(item, path)

    if "profile" in params and not PROFILE_RULE.accepts(params["profile"]):
        found.append((["profile"], PROFILE_RULE, params["profile"]))
    walk({k: v for k, v in params.items() if k != "profile"}, [])
    return found


def read_yaml(path: Path, error: type[Exception], missing: str, *, restore: str | None = None) -> tuple[str, Any]:
    """The text and the document of a YAML file the workspace keeps in git (``_Loader``: safe, no key twice, at most
    ``MAX_ALIASES`` aliases); any failure is one ``error`` line naming the file, the key or line, and what is wrong
    (``missing``: what to say of a missing file). ``restore``: the remedy every other fault ends with, for a file
    nobody edits (``data.dvc``: restore it from git), instead of the hints to edit it (``params.yaml``'s)."""
    path = Path(path)

    def fault(message: str, edit: str = "") -> Exception:
        return error(f"{message}; {restore}" if restore is not None else message + edit)

    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise error(f"{path}: missing; {missing}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise fault(f"{path}: line {line}: not UTF-8 text (byte {data[exc.start]:#04x})",
                    "; save it as UTF-8") from None
    try:
        return text, yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
    except _Duplicate as dup:
        where = _path_of(text, dup.node)
        key = ".".join([*where, str(dup.key)]) if where is not None else str(dup.key)
        raise fault(f"{path}: {key}: duplicate key (line {dup.line}; first on line {dup.first})",
                    "; keep one") from None
    except _TooManyAliases as exc:
        raise fault(f"{path}: line {exc.line}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"line {mark.line + 1} column {mark.column + 1}: " if mark is not None else ""
        reason = " ".join(str(getattr(exc, "problem", None) or exc).split())
        raise fault(f"{path}: {where}not valid YAML ({reason})") from None
    except RecursionError:
        raise fault(f"{path}: nested too deeply to parse (a damaged file?)") from None


def read_params(path: Path = PARAMS_FILE) -> dict[str, Any]:
    """The parameters in ``path``, checked: valid UTF-8 and YAML, a mapping with a ``profile`` of ``PROFILES``, no key
    twice in a mapping, and every value its key's ``PARAM_RULES`` entry accepts. Otherwise a one-line ``ParamsError``
    naming the file, the key (and its line) and what the value must be. Values are returned as written."""
    text, params = read_yaml(path, ParamsError, "every stage reads its parameters there (restore it: "
                                                "`git checkout params.yaml`)")
    if params is None:
        raise ParamsError(f"{path}: empty; it needs at least `profile: mini` (or full)")
    if not isinstance(params, dict):
        raise ParamsError(f"{path}: expected a YAML mapping at the top level (`profile: mini`, sections), "
                          f"found {type(params).__name__}")
    if "profile" not in params:
        raise ParamsError(f"{path}: profile: missing; add `profile: mini` (or full) at the top level")
    problems = _problems(params)
    if problems:
        parts, rule, value = problems[0]
        line = _line_of(text, parts)
        more = f"; {len(problems) - 1} more bad value(s) after it" if len(problems) > 1 else ""
        raise ParamsError(f"{path}: {'.'.join(parts)}: {rule.message(value)}"
                          + (f" (line {line})" if line is not None else "") + _hint(value) + more)
    return params


def _path_of(text: str, target: yaml.Node) -> list[str] | None:
    """The key path of the mapping ``target`` (a node of a composition of ``text``), by its position."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, RecursionError):
        return None
    mark = (target.start_mark.line, target.start_mark.column)

    def find(node: yaml.Node, path: list[str]) -> list[str] | None:
        if (node.start_mark.line, node.start_mark.column) == mark and isinstance(node, yaml.MappingNode):
            return path
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                found = find(v, [*path, str(getattr(k, "value", k))])
                if found is not None:
                    return found
        return None

    return find(root, []) if root is not None else None


def section(params: dict[str, Any], dotted: str, path: Path = PARAMS_FILE) -> Any:
    """``params['a']['b']`` for ``'a.b'``, with an error naming the file and the missing key."""
    node: Any = params
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            raise ParamsError(f"{path}: missing parameter {dotted!r}; add it (see the comments in params.yaml)")
        node = node[part]
    return node


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def stage_params(stage: str, repo: Path = ROOT, *, checked: dict[str, Any] | None = None) -> dict[str, Any]:
    """The parameters the DVC stage ``stage`` (an address: ``mini/train@xs-2k``) declares, and only those (what
    ``dvc.api.params_show(stages=[stage])`` returns), so a stage cannot read one its ``params:`` does not list. Only
    its own dvc.yaml is resolved (``stage_map.stages_in``), not every pipeline and lock file as ``params_show``
    does: paid by every stage. ``params.yaml`` is validated first (``checked``: already), as DVC's errors name
    neither line nor key."""
    files: dict[str, dict[str, Any]] = {}
    default = Path(repo) / "params.yaml"
    if checked is not None:
        files[str(default.resolve())] = checked
    elif default.is_file():
        files[str(default.resolve())] = read_params(default)
    dvcfile, _, name = stage.rpartition(":")
    dvcfile = dvcfile or "dvc.yaml"
    try:
        found = [s for s in stages_in(dvcfile, Path(repo)) if s.name == name]
    except Exception as exc:  # dvc raises its own exception types for unreadable files and bad interpolations
        raise ParamsError(f"{repo}: cannot read the parameters of DVC stage {stage!r}: {_one_line(exc)} (the stages: "
                          "`dvc stage list`)") from exc
    if not found:
        raise ParamsError(f"{repo}: cannot read the parameters of DVC stage {stage!r}: {dvcfile} defines no such "
                          "stage (the stages: `dvc stage list`)")
    wdir = (Path(repo) / dvcfile).parent / found[0].wdir
    params: dict[str, Any] = {}
    for file, keys in _declared(found[0].params, stage):
        path = str((wdir / file).resolve())
        if path not in files:
            files[path] = read_params(Path(path))
        values = files[path]
        for key in keys or list(values):
            node, target, parts = values, params, key.split(".")
            for part in parts:
                if not isinstance(node, dict) or part not in node:
                    raise ParamsError(f"{wdir / file}: missing parameter {key!r} (declared by DVC stage {stage!r}); "
                                      "add it")
                node = node[part]
            for part in parts[:-1]:
                target = target.setdefault(part, {})
            target[parts[-1]] = node
    return params


def _declared(entries: tuple[Any, ...], stage: str) -> list[tuple[str, list[str]]]:
    """A stage's ``params:`` as (file, keys) pairs, as DVC reads them: a bare key is one of ``params.yaml``; a file
    with no keys is the whole file."""
    pairs: list[tuple[str, list[str]]] = []
    for entry in entries:
        if isinstance(entry, str):
            pairs.append(("params.yaml", [entry]))
            continue
        if not isinstance(entry, dict) or not all(k is None or isinstance(k, list) for k in entry.values()):
            raise ParamsError(f"DVC stage {stage!r}: params entry {entry!r} is neither a key nor {{file: [keys]}}")
        pairs.extend((str(file), [str(k) for k in keys or []]) for file, keys in entry.items())
    whole = {file for file, keys in pairs if not keys}
    return [(file, [] if file in whole else keys) for file, keys in pairs]


def add_stage_option(parser: argparse.ArgumentParser) -> None:
    """``--stage``, the stage whose parameters ``own_params`` and ``own_section`` read (default: the running one)."""
    parser.add_argument("--stage", default=None,
                        help="the DVC stage whose parameters to read (default: the one running this module)")


def own_params(stage: str | None = None, *, module: str | None = None) -> dict[str, Any]:
    """The parameters of the stage running this code (``stage_params``), found without naming it
    (``common.pipeline.stage_map.current_stage``). ``module``: for code that ``python -m common`` also runs
    (``common report aro``), the module whose stage is meant (``papers.aro.report``); by default this process's."""
    # validated first: the stage map resolves stages through DVC, whose errors for a bad file name neither the line
    # nor the key (as in stage_params), which then reuses this read
    checked = read_params(ROOT / "params.yaml")
    return stage_params(current_stage(stage, module), checked=checked)


def own_section(dotted: str, stage: str | None = None, *, module: str | None = None) -> tuple[dict[str, Any], Any]:
    """``own_params`` and the section ``dotted`` of them (``conclip.mini``): what a stage's command reads."""
    params = own_params(stage, module=module)
    return params, section(params, dotted)
