"""A paper as ``common`` sees it: one typed ``Paper``, exported as ``PAPER`` by ``papers/<paper>/__init__.py``.

``common`` never imports a paper by name; it reads each paper's ``PAPER`` (``load_paper``) and, through it, the
paper's plug-ins, each a module satisfying one ``Protocol`` below (or ``None``), named by its dotted path and imported
only when used. ``papers/<paper>/__init__.py`` runs before every stage of its paper, so this module imports only the
standard library, ``common.errors`` and ``common.plugins``, and the protocols name the workspace's own types in their
docstrings, not in imports every stage would then depend on (``TYPE_CHECKING`` ones count too).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable, Generic, Protocol, Sequence, TypeVar, cast, runtime_checkable

from common.errors import WorkspaceError, unknown_name
from common.plugins import PAPERS_PACKAGE, paper_names

P = TypeVar("P")


@runtime_checkable
class AuditPlugIn(Protocol):
    """``papers/<paper>/audit.py``: the recomputation of the paper's numbers (the audit stage: ``python -m common
    audit <paper> --strict``). May also define ``draw_figures(out_dir) -> dict[str, Path]``, which its ``main``
    passes to ``common.audit.main``."""

    def recompute(self, profile: str) -> list[Any]:
        """The numbers recomputed from the authors' released files and this profile's runs
        (``common.audit.core.Recomputed``); the text's claims are recomputed by ``common.audit`` itself."""

    def main(self, argv: Sequence[str] | None = None) -> int:
        """The audit stage with its arguments (``--strict``): ``common.audit.stage_main`` or ``main``."""


@runtime_checkable
class ReportPlugIn(Protocol):
    """``papers/<paper>/report.py``: what ``python -m common report <paper>`` (its aggregate stage in the root
    ``dvc.yaml``) prints of the paper before the audit's line, as data that ``common.reporting.report.print_report`` prints."""

    REPORT: Any
    """Which results files it shows and what each file holds (``common.reporting.report.PaperReport``)."""


@runtime_checkable
class CardPlugIn(Protocol):
    """``papers/<paper>/card.py``: the paper's benchmarks on the report card (``python -m common card``)."""

    def benchmarks(self, profile: str) -> list[Any]:
        """The benchmarks of ``profile`` (``common.card.core.CardBenchmark``)."""

    def trends(self, profile: str) -> list[Any]:
        """Published trends a model's residual is measured against (``common.card.trend.Trend``); often none."""

    def published(self) -> list[Any]:
        """The published tables that hold the card's numbers (``common.card.published.PublishedColumns``)."""


@runtime_checkable
class OraclePlugIn(Protocol):
    """``papers/<paper>/oracle.py``: the authors' evaluation code run beside this workspace's
    (``python -m common oracle``)."""

    def run(self, ctx: Any) -> Any:
        """Run it in ``ctx`` (``common.oracle.run.OracleContext``); the comparison
        (``common.oracle.core.PaperOracle``)."""


@runtime_checkable
class CliPlugIn(Protocol):
    """``papers/<paper>/cli.py``: the paper's subcommands of ``python -m common``."""

    def register(self, groups: Any) -> None:
        """Add them under the shared groups (``common.cli.CommandGroups``) or at the top level."""


@dataclass(frozen=True)
class PlugIn(Generic[P]):
    """A plug-in module, by its dotted path, imported on first use (``load``)."""

    module: str

    def load(self) -> P:
        return cast(P, importlib.import_module(self.module))


@dataclass(frozen=True)
class Paper:
    """One paper package's plug-ins: everything of a paper that ``common`` runs (its ``dvc.yaml`` runs the rest)."""

    name: str
    """The package's name under ``papers/`` (the first segment of its registry keys and zoo names). Its title,
    authors and venue are in ``papers/<paper>/scorecard.toml``'s ``[paper]`` table, which the site reads."""
    audit: PlugIn[AuditPlugIn] | None = None
    report: PlugIn[ReportPlugIn] | None = None
    card: PlugIn[CardPlugIn] | None = None
    oracle: PlugIn[OraclePlugIn] | None = None
    cli: PlugIn[CliPlugIn] | None = None

    @property
    def dvc_file(self) -> str:
        """Its pipeline, relative to the repository root."""
        return f"papers/{self.name}/dvc.yaml"


def load_paper(name: str) -> Paper:
    """The ``PAPER`` that ``papers/<name>/__init__.py`` exports (an unknown name, or a package without one, raises)."""
    if name not in paper_names():
        raise unknown_name("paper", name, paper_names())
    declared = getattr(importlib.import_module(f"{PAPERS_PACKAGE}.{name}"), "PAPER", None)
    if not isinstance(declared, Paper) or declared.name != name:
        raise WorkspaceError(f"papers/{name}/__init__.py: PAPER must be a common.paper.Paper named {name!r} (what "
                             f"common runs of the paper: its audit, report, card, ...), not {declared!r:.80}")
    return declared


def load_papers() -> list[Paper]:
    """Every paper's ``PAPER``, in ``common.plugins.paper_names`` order."""
    return [load_paper(name) for name in paper_names()]


@dataclass(frozen=True)
class PlugInCommand:
    """A ``python -m common`` command that runs a paper's plug-in without importing it; ``module`` is where the
    command's code starts, so a stage that runs it depends on the plug-in's imports (``common.cli.handler_module``)."""

    module: str
    run: Callable[[Any], int]

    def __call__(self, args: Any) -> int:
        return self.run(args)
