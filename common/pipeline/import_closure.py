"""Which files of this repository a module runs: its import closure, read from the source (nothing is imported).

A DVC stage's code dependencies (``common.pipeline.stage_deps``) and a training run's resume key
(``common.training.job``) are both keyed by it, so that they agree. Every import counts, inside functions too; a
package's ``__init__.py`` counts for every module under it. A module-level ``DATA_FILES`` tuple declares the
repository-relative data files a module reads (a path ending in "/" is a folder).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from common.paths import ROOT

PACKAGES = ("common", "papers")
"""Top-level packages of this repository; imports of anything else are third-party."""


def module_file(name: str, root: Path = ROOT) -> Path | None:
    """The source file of a repository module (``common.files.io``: the file ``io.py`` of the folder ``common``, or a
    package's ``__init__.py``), or None."""
    parts = name.split(".")
    if parts[0] not in PACKAGES:
        return None
    base = root.joinpath(*parts)
    return next((path for path in (base / "__init__.py", base.with_suffix(".py")) if path.is_file()), None)


def imported_names(path: Path) -> tuple[set[str], tuple[str, ...]]:
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
    """Repository-relative source files."""
    data: set[str] = field(default_factory=set)
    """Declared ``DATA_FILES`` of those modules."""


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
        imported, data = imported_names(path)
        out.data.update(data)
        todo.extend(n for n in imported if n.split(".")[0] in PACKAGES)
    return out
