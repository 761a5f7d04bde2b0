"""What each DVC stage's code really depends on, derived from its imports, to check ``dvc.yaml`` against (and write).

A stage's command names an entry module (``python -m papers.sugarcrepe.table6``, ``python -m common train xs-2k``,
``torchrun ... -m common train ...``). Its code dependencies are every module of this repository that the entry
module imports, directly or through other modules (imports inside functions included: they run when the stage
does), with the ``__init__.py`` of every package on the way, plus the data files those modules declare they read
(a module-level ``DATA_FILES`` tuple of repository-relative paths; a path ending in "/" is a folder, of which a
stage may list only the files it uses): ``common.import_closure``. ``python -m common <command>`` resolves the
command to the module of its handler; the dispatcher files (``common/__main__.py``, ``common/cli.py``) count
themselves but not their imports. The resolution is the command line's own parser, handed in by ``common.cli``
(``CommandResolver``), so that this module never imports the command line that registers it.

``python -m common deps`` prints, per stage, what its ``dvc.yaml`` lacks or lists in excess; the test suite fails
on either, so a stage can neither miss an edit that changes its result nor re-run for an edit that cannot.
``python -m common deps --write`` rewrites the lists of the stages that are wrong (``write_deps``), line by line:
every other byte of the file stays as it is.
"""
from __future__ import annotations

import argparse
import json
import shlex
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterable, Sequence

import yaml

from common.errors import WorkspaceError
from common.import_closure import PACKAGES, Closure, closure, module_file
from common.io import write_bytes_atomic
from common.paths import ROOT

__all__ = ["CODE_DIRS", "DISPATCHER", "PACKAGES", "Closure", "CommandResolver", "DepsRewrite", "DepsWriteError",
           "ResolvedStage", "StageCheck", "check_all", "check_stage", "closure", "dvc_files", "entry_modules",
           "module_file", "plan_file", "register_cli", "write_deps"]

CODE_DIRS = PACKAGES
"""Folders whose files a stage's ``deps`` must derive from its imports."""
DISPATCHER = ("common/__main__.py", "common/cli.py")
"""The files of ``python -m common``'s dispatch: a stage that runs it depends on them, not on all they import."""

CommandResolver = Callable[[Sequence[str]], str]
"""Maps the arguments of ``python -m common ARGS`` to the module of the function that runs them
(``common.cli.handler_module``)."""


def entry_modules(cmd: str, resolve_common: CommandResolver) -> tuple[list[str], list[str]]:
    """(entry modules, dispatcher files) of a stage command; empty when it runs no repository module."""
    words = shlex.split(cmd)
    while words and "=" in words[0] and not words[0].startswith("-"):
        words = words[1:]  # VAR=value prefixes
    if "-m" not in words:
        return [], []
    module, args = words[words.index("-m") + 1], words[words.index("-m") + 2:]
    if module != "common":
        return [module], []
    return [resolve_common(args)], list(DISPATCHER)


@dataclass(frozen=True)
class StageCheck:
    stage: str
    dvc_file: str
    missing: tuple[str, ...]
    extra: tuple[str, ...]
    expected: tuple[str, ...]
    """The code files (sorted), then the declared data files (sorted; a folder ends in "/")."""

    @property
    def ok(self) -> bool:
        return not self.missing and not self.extra


def _covers(declared: str, dep: str) -> bool:
    """Whether a declared data path is the dep, or a folder ("x/") holding it."""
    return dep == declared.rstrip("/") or (declared.endswith("/") and dep.startswith(declared))


CodeStamp = tuple[tuple[str, int, int], ...]
"""(path, modification time, size) of every source file under the code folders."""


def _code_stamp(root: Path) -> CodeStamp:
    """The tree's ``CodeStamp``: a closure is reused only while it is the same (one stage file's foreach items
    share closures, and so do a check and the write after it)."""
    out = []
    for folder in CODE_DIRS:
        for path in sorted((root / folder).rglob("*.py")):
            stat = path.stat()
            out.append((path.relative_to(root).as_posix(), stat.st_mtime_ns, stat.st_size))
    return tuple(out)


@lru_cache(maxsize=512)
def _closure(modules: tuple[str, ...], root: Path, stamp: CodeStamp) -> Closure:
    return closure(modules, root)


def check_stage(name: str, dvc_file: str, cmd: str, deps: Sequence[str], resolve_common: CommandResolver,
                root: Path = ROOT, stamp: CodeStamp | None = None) -> StageCheck:
    """``stamp``: ``_code_stamp(root)``, where the caller checks many stages of one unchanged tree."""
    modules, dispatcher = entry_modules(cmd, resolve_common)
    found = _closure(tuple(modules), root, _code_stamp(root) if stamp is None else stamp)
    code = found.files | set(dispatcher)
    listed = {d.rstrip("/") for d in deps}
    missing = sorted(code - listed) + sorted(d for d in found.data if not any(_covers(d, x) for x in listed))
    extra = sorted(d for d in listed - code if d.split("/")[0] in CODE_DIRS
                   and not any(_covers(x, d) for x in found.data))
    return StageCheck(name, dvc_file, tuple(missing), tuple(extra), tuple(sorted(code) + sorted(found.data)))


@dataclass(frozen=True)
class ResolvedStage:
    """One stage as DVC resolves it (each item of a ``foreach`` is one), with what its check needs."""

    address: str
    """How ``dvc`` names it: ``papers/aro/dvc.yaml:audit``, ``mini/train@xs-2k``."""
    dvc_file: str
    """Repository-relative path of its ``dvc.yaml``."""
    name: str
    """Its name within that file: the key under ``stages:``, plus ``@<item>`` for a ``foreach`` item."""
    cmd: str
    deps: tuple[str, ...]
    """Its non-parameter deps, interpolated, in the order of the file's list."""

    @property
    def definition(self) -> str:
        """The key under ``stages:`` that defines it (a ``foreach`` stage defines one stage per item)."""
        return self.name.split("@", 1)[0]


@lru_cache(maxsize=4)
def _stages(root: Path = ROOT) -> tuple[ResolvedStage, ...]:
    """Every stage with a command, as DVC resolves them (parameters interpolated, ``foreach`` expanded)."""
    from dvc.dependency.param import ParamsDependency
    from dvc.repo import Repo

    with Repo(str(root)) as repo:
        out = []
        for stage in repo.index.stages:
            if not stage.cmd:
                continue
            deps = tuple(str(d.def_path) for d in stage.deps if not isinstance(d, ParamsDependency))
            cmd = stage.cmd if isinstance(stage.cmd, str) else " && ".join(stage.cmd)
            out.append(ResolvedStage(stage.addressing, stage.path_in_repo, stage.name, cmd, deps))
    return tuple(out)


def check_all(resolve_common: CommandResolver, root: Path = ROOT) -> list[StageCheck]:
    stamp = _code_stamp(root)
    return [check_stage(s.address, s.dvc_file, s.cmd, s.deps, resolve_common, root, stamp) for s in _stages(root)]


# ----------------------------------------------------------------------------------------------------------------
# --write: the same derivation, written into the dvc.yaml files
# ----------------------------------------------------------------------------------------------------------------
class DepsWriteError(WorkspaceError):
    """A ``deps`` list that ``python -m common deps --write`` cannot rewrite without changing something else."""


class _Kind(Enum):
    """What a ``deps`` entry is to the writer."""

    DERIVED = "derived"  # a code file or a declared data path of the stage: written from the derivation
    IN_FOLDER = "in folder"  # a file inside a declared data folder: the stage's choice, kept as written
    EXCESS = "excess"  # under common/ or papers/ but neither of the above: removed
    OTHER = "other"  # a build output, a result, a data folder: not the writer's business, kept where it is


def _kind(dep: str, expected: Sequence[str]) -> _Kind:
    if dep.rstrip("/") in {e.rstrip("/") for e in expected}:
        return _Kind.DERIVED
    if any(e.endswith("/") and dep.startswith(e) for e in expected):
        return _Kind.IN_FOLDER
    if dep.split("/")[0] in CODE_DIRS:
        return _Kind.EXCESS
    return _Kind.OTHER


@dataclass(frozen=True)
class _DepsBlock:
    """Where a stage's ``deps`` list sits in the file's text: one entry a line, comment lines between kept."""

    definition: str
    values: tuple[str, ...]
    """The entries as written (before interpolation)."""
    first_line: int
    last_line: int
    """0-based line numbers of the first and the last entry."""
    prefix: str
    """The text before a value on an entry's line (``"      - "``), for a new entry."""


def _mapping(node: yaml.Node | None) -> dict[str, yaml.Node]:
    return {k.value: v for k, v in node.value} if isinstance(node, yaml.MappingNode) else {}


def _block(definition: str, deps: yaml.Node, lines: Sequence[str], dvc_file: str) -> _DepsBlock:
    where = f"{dvc_file}: stage {definition}"
    if not isinstance(deps, yaml.SequenceNode) or deps.flow_style or not deps.value:
        raise DepsWriteError(f"{where}: deps is not a block list; write it one '- path' a line, then rerun")
    entry_lines = [item.start_mark.line for item in deps.value]
    for item in deps.value:
        line = lines[item.start_mark.line]
        if (not isinstance(item, yaml.ScalarNode) or item.end_mark.line != item.start_mark.line
                or not line[:item.start_mark.column].lstrip().startswith("-")
                or entry_lines.count(item.start_mark.line) > 1):
            raise DepsWriteError(f"{where}: deps entry on line {item.start_mark.line + 1} is not one path on its "
                                 f"own line; write it as '- path', then rerun")
    first, last = deps.value[0], deps.value[-1]
    return _DepsBlock(definition, tuple(item.value for item in deps.value), first.start_mark.line,
                      last.end_mark.line, lines[first.start_mark.line][:first.start_mark.column])


def _deps_blocks(text: str, dvc_file: str) -> dict[str, _DepsBlock | DepsWriteError]:
    """The ``deps`` list of every stage of a ``dvc.yaml`` (the ``do:`` block's for a ``foreach`` stage), or why
    it cannot be rewritten line by line (raised only if that stage needs rewriting)."""
    lines = text.splitlines()
    blocks: dict[str, _DepsBlock | DepsWriteError] = {}
    for definition, stage in _mapping(_mapping(yaml.compose(text, Loader=yaml.SafeLoader)).get("stages")).items():
        body = _mapping(stage)
        if "foreach" in body:
            body = _mapping(body.get("do"))
        if "deps" in body:
            try:
                blocks[definition] = _block(definition, body["deps"], lines, dvc_file)
            except DepsWriteError as exc:
                blocks[definition] = exc
    return blocks


def _entry_line(prefix: str, value: str) -> str:
    """A new entry's line: the value plain where YAML reads it back unchanged, else double-quoted."""
    try:
        plain = yaml.safe_load(f"- {value}") == [value]
    except yaml.YAMLError:
        plain = False
    return prefix + (value if plain else json.dumps(value)) + "\n"


def _new_deps(block: _DepsBlock, items: Sequence[ResolvedStage], checks: Sequence[StageCheck]) -> list[str]:
    """The stage's rewritten list: the derived entries in ``expected``'s order, as one block where the first of
    them was (at the end when there was none); every other entry where it was."""
    where = f"{items[0].dvc_file}: stage {block.definition}"
    expected = checks[0].expected
    for item, check in zip(items, checks):
        if check.expected != expected:
            first = sorted(set(expected) ^ set(check.expected))[0]
            raise DepsWriteError(
                f"{where}: its foreach items need different code or data deps ({items[0].name} vs {item.name}: "
                f"{first}), which one do: block cannot list; split the stage or run one module for every item")
        if len(item.deps) != len(block.values):
            raise DepsWriteError(f"{where}: DVC resolves {len(item.deps)} deps for {item.name} but the file lists "
                                 f"{len(block.values)}; list one path per entry, then rerun")
    kinds = []
    for i, value in enumerate(block.values):
        per_item = {_kind(item.deps[i], expected) for item in items}
        if len(per_item) > 1:
            raise DepsWriteError(f"{where}: deps entry {value!r} is code for some foreach items and not for others; "
                                 f"split the stage, then rerun")
        kinds.append(per_item.pop())
    others = [v for v, k in zip(block.values, kinds) if k is _Kind.OTHER]
    mine = [k is not _Kind.OTHER for k in kinds]
    insert_at = kinds[:mine.index(True)].count(_Kind.OTHER) if any(mine) else len(others)

    derived = []
    for wanted in expected:
        in_folder = [v for i, (v, k) in enumerate(zip(block.values, kinds))
                     if k is _Kind.IN_FOLDER and wanted.endswith("/") and items[0].deps[i].startswith(wanted)]
        as_written = [v for i, (v, k) in enumerate(zip(block.values, kinds))
                      if k is _Kind.DERIVED and items[0].deps[i].rstrip("/") == wanted.rstrip("/")]
        derived.extend(in_folder + as_written[:1] or [wanted])
    return others[:insert_at] + derived + others[insert_at:]


def _rewrite_lines(lines: list[str], block: _DepsBlock, new_values: Sequence[str]) -> list[str]:
    """The block's lines for ``new_values``: a kept entry keeps its line (and the comment lines above it), a new
    one gets a plain ``<prefix><value>`` line; comment lines above a removed entry move to the next kept one."""
    span = lines[block.first_line:block.last_line + 1]
    entries: list[tuple[str, list[str], str]] = []  # (value, comment lines above, its line)
    pending: list[str] = []
    values = iter(block.values)
    for line in span:
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            pending.append(line)
        else:
            entries.append((next(values), pending, line))
            pending = []
    kept = list(new_values)
    orphans: list[str] = []
    by_value: dict[str, list[tuple[list[str], str]]] = {}
    for value, comments, line in entries:
        if value in kept:
            by_value.setdefault(value, []).append((orphans + comments, line))
            orphans = []
        else:
            orphans += comments
    out = []
    for value in new_values:
        if by_value.get(value):
            comments, line = by_value[value].pop(0)
            out += comments + [line]
        else:
            out.append(_entry_line(block.prefix, value))
    return out + orphans


@dataclass(frozen=True)
class DepsRewrite:
    """One ``dvc.yaml`` with the deps lists of its wrong stages rewritten (``text`` is the whole new file)."""

    dvc_file: str
    stages: tuple[str, ...]
    """The stages (keys under ``stages:``) whose list changed."""
    text: str

    @property
    def changed(self) -> bool:
        return bool(self.stages)


def dvc_files(root: Path = ROOT) -> list[str]:
    """The workspace's stage files: the root ``dvc.yaml`` and every ``papers/<paper>/dvc.yaml``."""
    found = [root / "dvc.yaml", *sorted((root / "papers").glob("*/dvc.yaml"))]
    return [p.relative_to(root).as_posix() for p in found if p.is_file()]


def plan_file(dvc_file: str, resolve_common: CommandResolver, root: Path = ROOT) -> DepsRewrite:
    """The new text of ``dvc_file`` (repository-relative) with every wrong stage's deps derived afresh.

    A stage whose check passes is left exactly as it is, even where its list is in another order than the one
    written here, so that writing a correct tree changes nothing and writing twice is writing once.
    """
    text = (root / dvc_file).read_bytes().decode("utf-8")
    lines = text.splitlines(keepends=True)
    blocks = _deps_blocks(text, dvc_file)
    by_definition: dict[str, list[ResolvedStage]] = {}
    for stage in _stages(root):
        if stage.dvc_file == dvc_file:
            by_definition.setdefault(stage.definition, []).append(stage)
    rewrites: list[tuple[_DepsBlock, list[str]]] = []
    stamp = _code_stamp(root)
    for definition, items in by_definition.items():
        checks = [check_stage(s.address, s.dvc_file, s.cmd, s.deps, resolve_common, root, stamp) for s in items]
        if all(c.ok for c in checks):
            continue
        block = blocks.get(definition)
        if block is None:
            raise DepsWriteError(f"{dvc_file}: stage {definition} has no deps list; add 'deps:' with one entry "
                                 f"(its command's module), then rerun")
        if isinstance(block, DepsWriteError):
            raise block
        rewrites.append((block, _new_deps(block, items, checks)))
    for block, new_values in sorted(rewrites, key=lambda r: r[0].first_line, reverse=True):
        lines[block.first_line:block.last_line + 1] = _rewrite_lines(lines, block, new_values)
    new_text = "".join(lines)
    written = _deps_blocks(new_text, dvc_file)
    for block, new_values in rewrites:  # the lines say what was meant, or this writer has a bug
        assert getattr(written[block.definition], "values", None) == tuple(new_values), (dvc_file, block.definition)
    return DepsRewrite(dvc_file, tuple(sorted(b.definition for b, _ in rewrites)), new_text)


def _relative_dvc_file(path: str | Path, root: Path) -> str:
    resolved = Path(path).resolve()
    try:
        relative = resolved.relative_to(root.resolve()).as_posix()
    except ValueError:
        relative = None
    if relative not in dvc_files(root):
        raise DepsWriteError(f"{path}: not a stage file of this workspace; pass dvc.yaml or papers/<paper>/dvc.yaml")
    return relative


def write_deps(resolve_common: CommandResolver, files: Iterable[str | Path] | None = None,
               root: Path = ROOT) -> list[DepsRewrite]:
    """Rewrite the wrong stages' deps in ``files`` (paths; default every stage file); the files that changed.

    Each file is replaced atomically, and only when its text changes.
    """
    chosen = dvc_files(root) if files is None else [_relative_dvc_file(f, root) for f in files]
    _stages.cache_clear()  # a write reads the files as they are now
    plans = [plan_file(f, resolve_common, root) for f in chosen]
    for plan in plans:
        if plan.changed:
            write_bytes_atomic(root / plan.dvc_file, plan.text.encode("utf-8"))
    if any(plan.changed for plan in plans):
        _stages.cache_clear()
    return [plan for plan in plans if plan.changed]


# ----------------------------------------------------------------------------------------------------------------
# python -m common deps
# ----------------------------------------------------------------------------------------------------------------
def _cmd_deps(args: argparse.Namespace) -> int:
    resolve_common: CommandResolver = args.resolve_common
    chosen = None if not args.dvc_files else {_relative_dvc_file(f, ROOT) for f in args.dvc_files}
    if args.write:
        for plan in write_deps(resolve_common, sorted(chosen) if chosen else None):
            print(f"wrote {plan.dvc_file}: " + ", ".join(plan.stages))
    status = 0
    for check in check_all(resolve_common):
        if chosen is not None and check.dvc_file not in chosen:
            continue
        if check.ok and not args.verbose:
            continue
        print(f"{check.stage} ({check.dvc_file}): " + ("ok" if check.ok else "WRONG"))
        for dep in check.missing:
            print(f"  missing  {dep}")
        for dep in check.extra:
            print(f"  extra    {dep}")
        if args.verbose or not check.ok:
            print("  expected code and data deps:\n" + "".join(f"    - {d}\n" for d in check.expected), end="")
        status |= not check.ok
    if not status:
        print("every stage lists exactly the code and data it uses")
    return int(status)


def register_cli(subparsers, resolve_common: CommandResolver) -> None:
    """Add ``deps``; ``resolve_common`` is how it reads stages that run ``python -m common`` itself."""
    p = subparsers.add_parser("deps", help="check every DVC stage's code deps against its imports (--write: fix them)")
    p.add_argument("dvc_files", nargs="*", metavar="DVC_FILE",
                   help="the stage files to check or write (default: dvc.yaml and every papers/*/dvc.yaml)")
    p.add_argument("--write", action="store_true",
                   help="rewrite the deps of every wrong stage (only those lines; everything else is kept)")
    p.add_argument("--verbose", action="store_true", help="print every stage's expected deps")
    p.set_defaults(func=_cmd_deps, resolve_common=resolve_common)
