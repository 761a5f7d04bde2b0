"""How ``common`` finds the papers without naming any: the packages under ``papers/`` (``paper_names``; each exports
``PAPER``, ``common.paper``) and their ``sources.toml`` and ``models.toml``.

A registry key (or model name) belongs to the paper whose name is its first segment (``bivlc/released/...``); an
entry that several papers use sits in the shared file (``common/registry/sources.toml``, ``common/zoo/models.toml``)
under the releasing paper's name. A lookup reads the shared file first and the owner's file only when the shared file
lacks the key (``lookup_files``), so no paper's stage reads another paper's registry, and an edit in one paper's
registry re-runs only that paper's stages. A key in another paper's file is refused (``may_hold``).
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

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


def owner(key: str) -> str | None:
    """The paper that owns a registry key or model name (its first ``/`` segment), or None for shared entries."""
    head = key.split("/", 1)[0]
    return head if head in paper_names() else None


def owned_file(key: str, filename: str, shared: Path) -> Path:
    """The owner's file of ``key``: ``papers/<owner>/<filename>`` for a paper's key, else the shared file (where a
    paper's key used by several papers also sits, see ``lookup_files``)."""
    paper = owner(key)
    return paper_dir(paper) / filename if paper is not None else shared


def lookup_files(key: str, filename: str, shared: Path) -> tuple[Path, ...]:
    """The files a lookup of ``key`` reads, in order: the shared file, then (for a paper's key) the owner's
    ``filename``, read only when the shared file lacks the key."""
    paper = owner(key)
    return (shared,) if paper is None else (shared, paper_dir(paper) / filename)


def may_hold(file: Path, key: str, shared: Path) -> bool:
    """Whether ``file`` (the shared file or a paper's) may hold ``key``: the shared file holds any key, a paper's file
    only that paper's keys."""
    return file.resolve() in {shared.resolve(), owned_file(key, file.name, shared).resolve()}


def where_it_belongs(key: str, filename: str, shared: Path) -> str:
    """The remedy for a key in a file that may not hold it (``may_hold``), for one-line errors."""
    if owner(key) is None:
        return f"belongs in {shared} (its first segment names no paper)"
    return (f"belongs in {owned_file(key, filename, shared)} or, if several papers use it, in {shared} (never in "
            f"another paper's {filename})")


def registry_files(filename: str, shared: Path) -> list[Path]:
    """The shared registry file and every paper's ``filename`` (those that exist), in a stable order."""
    return [shared, *(paper_dir(p) / filename for p in paper_names() if (paper_dir(p) / filename).is_file())]
