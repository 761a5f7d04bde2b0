"""Each paper's part of the rehearsal: ``tests/rehearsal/papers/<paper>.py``, a module that satisfies ``StandIns``.

They live here, beside the tests, not in the paper's package: no production module asks whether it is rehearsing,
and a paper's ``PAPER`` (``common.paper.Paper``) names only what production runs. A paper without such a module is
not rehearsed (``rehearsed_papers``); ``tests/test_rehearsal_failures.py`` checks every module against the protocol.
"""
from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Protocol, runtime_checkable

from common import plugins


@runtime_checkable
class StandIns(Protocol):
    """A paper's stand-ins, models and parameters for the rehearsal (``make rehearse``)."""

    CHECKPOINT_LAYOUTS: dict[str, str]
    """The release layout of each of its ``data:`` checkpoints (zoo name -> layout; ``state_dict`` when absent)."""

    def params(self, params: dict[str, Any]) -> None:
        """Shrink the paper's own section of the rehearsal's ``params.yaml``, in place."""

    def models(self, params: dict[str, Any]) -> list[str]:
        """The zoo models its stages load that need a stand-in."""

    def prepare(self, data_root: Path, fetch: Callable[[str], Path]) -> list[str]:
        """Write its stand-ins under ``data_root``; the registry keys its DVC data deps need fetched."""


def module_name(paper: str) -> str:
    return f"{__name__}.{paper}"


def has_standins(paper: str) -> bool:
    """Whether ``tests/rehearsal/papers/<paper>.py`` exists."""
    return importlib.util.find_spec(module_name(paper)) is not None


def standins(paper: str) -> ModuleType:
    """The paper's stand-ins module (a paper without one raises ``ModuleNotFoundError``)."""
    return importlib.import_module(module_name(paper))


def rehearsed_papers() -> list[str]:
    """The papers that take part in a rehearsal: those with stand-ins here, in ``common.plugins.paper_names`` order."""
    return [paper for paper in plugins.paper_names() if has_standins(paper)]
