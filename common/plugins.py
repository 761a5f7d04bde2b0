"""How ``common`` finds a paper's pieces without naming any paper: by convention, not by a dict here.

A paper is a package ``papers/<paper>/`` (a folder with ``__init__.py``). What ``common`` looks for in it,
each optional:

* ``papers/<paper>/audit.py``: ``recompute(profile) -> list[Recomputed]`` (released artifacts and this
  workspace's runs; the text's claims are recomputed by ``common.audit`` itself), optional
  ``draw_figures(out_dir) -> dict[str, Path]``, and ``main(argv)``, its pipeline stage;
* ``papers/<paper>/cli.py``: ``register(groups: CommandGroups)`` adds the paper's subcommands to
  ``python -m common`` (under shared groups such as ``data describe`` or ``audit released``), and
  ``report(profile)`` prints the paper's reproduced tables for ``python -m common report <paper>``;
* ``papers/<paper>/sources.toml`` and ``papers/<paper>/models.toml``: the paper's entries of the download
  registry and of the model zoo. An entry belongs to the paper whose name is the first segment of its key
  (``bivlc/released/...``, ``aro/negclip``), so a lookup reads only the file that owns the key, and an edit
  in one paper's registry re-runs only the stages that read it.

Adding a paper therefore edits no file in ``common/``.
"""
from __future__ import annotations

import importlib
from functools import lru_cache
from pathlib import Path
from types import ModuleType

from common.paths import ROOT

PAPERS_DIR = ROOT / "papers"
PAPERS_PACKAGE = "papers"


@lru_cache(maxsize=1)
def paper_names() -> tuple[str, ...]:
    """Every paper package under ``papers/``, sorted."""
    if not PAPERS_DIR.is_dir():
        return ()
    return tuple(sorted(p.name for p in PAPERS_DIR.iterdir()
                        if (p / "__init__.py").is_file() and not p.name.startswith(("_", "."))))


def paper_dir(paper: str) -> Path:
    return PAPERS_DIR / paper


def paper_module(paper: str, name: str) -> ModuleType | None:
    """``papers.<paper>.<name>``, or None when the paper has no such module (an import error inside it raises)."""
    if paper not in paper_names():
        from common.errors import unknown_name

        raise unknown_name("paper", paper, paper_names())
    qualified = f"{PAPERS_PACKAGE}.{paper}.{name}"
    if not (paper_dir(paper) / f"{name}.py").is_file() and not (paper_dir(paper) / name / "__init__.py").is_file():
        return None
    return importlib.import_module(qualified)


def owner(key: str) -> str | None:
    """The paper that owns a registry key or model name (its first ``/`` segment), or None for shared entries."""
    head = key.split("/", 1)[0]
    return head if head in paper_names() else None


def owned_file(key: str, filename: str, shared: Path) -> Path:
    """The file holding ``key``: ``papers/<owner>/<filename>`` for a paper's key, else the shared file."""
    paper = owner(key)
    return paper_dir(paper) / filename if paper is not None else shared


def registry_files(filename: str, shared: Path) -> list[Path]:
    """The shared registry file and every paper's ``filename`` (those that exist), in a stable order."""
    return [shared, *(paper_dir(p) / filename for p in paper_names() if (paper_dir(p) / filename).is_file())]
