"""What each DVC stage's code really depends on, derived from its imports, to check ``dvc.yaml`` against.

A stage's command names an entry module (``python -m papers.sugarcrepe.table6``, ``python -m common train xs-2k``,
``torchrun ... -m common train ...``). Its code dependencies are every module of this repository that the entry
module imports, directly or through other modules (imports inside functions included: they run when the stage
does), with the ``__init__.py`` of every package on the way, plus the data files those modules declare they read
(a module-level ``DATA_FILES`` tuple of repository-relative paths; a path ending in "/" is a folder, of which a
stage may list only the files it uses). ``python -m common <command>`` resolves the command to the module of its
handler; the dispatcher files (``common/__main__.py``, ``common/cli.py``) count themselves but not their imports.

``python -m common deps`` prints, per stage, what its ``dvc.yaml`` lacks or lists in excess; the test suite fails
on either, so a stage can neither miss an edit that changes its result nor re-run for an edit that cannot.
"""
from __future__ import annotations

import argparse
import ast
import shlex
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Sequence

from common.paths import ROOT

PACKAGES = ("common", "papers")
"""Top-level packages of this repository; imports of anything else are third-party."""
CODE_DIRS = PACKAGES
"""Folders whose files a stage's ``deps`` must derive from its imports."""
DISPATCHER = ("common/__main__.py", "common/cli.py")


def module_file(name: str, root: Path = ROOT) -> Path | None:
    """The source file of a repository module (``pkg/mod.py`` or ``pkg/__init__.py``), or None."""
    parts = name.split(".")
    if parts[0] not in PACKAGES:
        return None
    base = root.joinpath(*parts)
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    return None


def _imported_names(path: Path) -> tuple[set[str], tuple[str, ...]]:
    """Modules named by every import in ``path`` (anywhere in the file), and its ``DATA_FILES``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    data: tuple[str, ...] = ()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)  # submodules imported by name
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "DATA_FILES" for t in node.targets):
            data = tuple(ast.literal_eval(node.value))
    return names, data


@dataclass
class Closure:
    modules: set[str] = field(default_factory=set)
    files: set[str] = field(default_factory=set)
    data: set[str] = field(default_factory=set)


def closure(entry_modules: Iterable[str], root: Path = ROOT) -> Closure:
    """Every repository module reachable by imports from ``entry_modules``, with package ``__init__`` files."""
    out = Closure()
    todo = list(entry_modules)
    while todo:
        name = todo.pop()
        path = module_file(name, root)
        if path is None or name in out.modules:
            continue
        out.modules.add(name)
        out.files.add(path.relative_to(root).as_posix())
        parts = name.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))  # parent packages run their __init__
        imported, data = _imported_names(path)
        out.data.update(data)
        todo.extend(n for n in imported if n.split(".")[0] in PACKAGES)
    return out


def entry_modules(cmd: str) -> tuple[list[str], list[str]]:
    """(entry modules, dispatcher files) of a stage command; empty when it runs no repository module."""
    words = shlex.split(cmd)
    while words and "=" in words[0] and not words[0].startswith("-"):
        words = words[1:]  # VAR=value prefixes
    if "-m" not in words:
        return [], []
    module, args = words[words.index("-m") + 1], words[words.index("-m") + 2:]
    if module != "common":
        return [module], []
    from common.cli import build_parser

    handler = build_parser().parse_args(args).func
    return [handler.__module__], list(DISPATCHER)


@dataclass(frozen=True)
class StageCheck:
    stage: str
    dvc_file: str
    missing: tuple[str, ...]
    extra: tuple[str, ...]
    expected: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.missing and not self.extra


def _covers(declared: str, dep: str) -> bool:
    """Whether a declared data path is the dep, or a folder ("x/") holding it."""
    return dep == declared.rstrip("/") or (declared.endswith("/") and dep.startswith(declared))


def check_stage(name: str, dvc_file: str, cmd: str, deps: Sequence[str], root: Path = ROOT) -> StageCheck:
    modules, dispatcher = entry_modules(cmd)
    found = closure(modules, root)
    code = found.files | set(dispatcher)
    listed = {d.rstrip("/") for d in deps}
    missing = sorted(code - listed) + sorted(d for d in found.data if not any(_covers(d, x) for x in listed))
    extra = sorted(d for d in listed - code if d.split("/")[0] in CODE_DIRS
                   and not any(_covers(x, d) for x in found.data))
    return StageCheck(name, dvc_file, tuple(missing), tuple(extra), tuple(sorted(code) + sorted(found.data)))


@lru_cache(maxsize=1)
def _stages(root: Path = ROOT) -> tuple[tuple[str, str, str, tuple[str, ...]], ...]:
    """(address, dvc file, command, non-parameter deps) of every stage with a command, as DVC resolves them."""
    from dvc.dependency.param import ParamsDependency
    from dvc.repo import Repo

    with Repo(str(root)) as repo:
        out = []
        for stage in repo.index.stages:
            if not stage.cmd:
                continue
            deps = tuple(str(d.def_path) for d in stage.deps if not isinstance(d, ParamsDependency))
            out.append((stage.addressing, stage.path_in_repo, stage.cmd, deps))
    return tuple(out)


def check_all(root: Path = ROOT) -> list[StageCheck]:
    return [check_stage(name, dvc_file, cmd, deps, root) for name, dvc_file, cmd, deps in _stages(root)]


def _cmd_deps(args: argparse.Namespace) -> int:
    status = 0
    for check in check_all():
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


def register_cli(subparsers) -> None:
    p = subparsers.add_parser("deps", help="check every DVC stage's code deps against its imports")
    p.add_argument("--verbose", action="store_true", help="print every stage's expected deps")
    p.set_defaults(func=_cmd_deps)
