"""``python -m common``: the workspace's command line (some pipeline stages call it too).

Shared commands are registered by the modules that implement them (``register_cli``), a paper's through its ``cli``
plug-in (``common.paper.CliPlugIn``). Many of those modules import torch at their top, which takes seconds; so
``main`` builds the parser of the command it is given only, and lists the others from ``COMMANDS``: ``--help`` and a
misspelt command answer at once. A user's mistake, or a package this Python lacks, is one ``error:`` line and exit
status 1 (``common.errors``).
"""
from __future__ import annotations

import argparse
import importlib
import sys
from dataclasses import dataclass, fields
from typing import Callable, Sequence

from common.errors import debug_enabled, run_entry_point
from common.paper import AuditPlugIn, PlugIn, PlugInCommand, load_papers
from common.pipeline.import_closure import PACKAGES

__all__ = ["COMMANDS", "Command", "CommandGroups", "RegisterCli", "build_parser", "handler_module", "main",
           "not_installed", "run_entry_point"]

Subparsers = argparse._SubParsersAction  # type: ignore[type-arg]
"""What ``add_subparsers`` returns: where commands are added."""


@dataclass(frozen=True)
class CommandGroups:
    """Where a paper's ``register`` may add subcommands."""

    root: argparse._SubParsersAction  # type: ignore[type-arg]
    """Top-level commands (``python -m common <command>``)."""
    data_describe: argparse._SubParsersAction  # type: ignore[type-arg]
    """``python -m common data describe <dataset>``."""
    world: argparse._SubParsersAction  # type: ignore[type-arg]
    """``python -m common world <set> --out DIR``: data sets rendered from the mini world."""
    prepare: argparse._SubParsersAction  # type: ignore[type-arg]
    """``python -m common prepare <dataset>``: full-profile data, fetched and checked."""
    audit_released: argparse._SubParsersAction  # type: ignore[type-arg]
    """``python -m common audit released <paper> FILE...``: score files in a paper's released format."""
    bench: argparse._SubParsersAction  # type: ignore[type-arg]
    """``python -m common bench <what>``: benchmarks that print ratios measured side by side in one run."""


@dataclass(frozen=True)
class Command:
    """A top-level command: its line in ``--help``, and what adds its parser when it is the one that runs."""

    name: str
    help: str
    """As its parser says it (``tests/common/test_cli_startup.py`` checks that the two agree)."""
    add: Callable[[Subparsers, Command], dict[str, Subparsers]]
    """Adds the command's parser (and those of the other commands of its module) to the top-level subparsers;
    returns the subparsers it made for papers to add to, by ``CommandGroups`` field."""


@dataclass(frozen=True)
class RegisterCli:
    """A module's ``register_cli(subparsers)``, imported only when one of its commands runs."""

    module: str

    def __call__(self, sub: Subparsers, command: Command) -> dict[str, Subparsers]:
        importlib.import_module(self.module).register_cli(sub)
        return {}


def _group(sub: Subparsers, command: Command, dest: str, metavar: str, **kwargs) -> Subparsers:
    """A shared group's parser and the subparsers under it."""
    parser = sub.add_parser(command.name, help=command.help, **kwargs)
    return parser.add_subparsers(dest=dest, required=True, metavar=metavar)


def _data(sub: Subparsers, command: Command) -> dict[str, Subparsers]:
    # deferred: loads yaml only when called
    from common.pipeline import data_dvc

    actions = _group(sub, command, "data_command", "ACTION")
    describe = actions.add_parser("describe", help="per-category example counts as JSON")
    describe_sub = describe.add_subparsers(dest="dataset", required=True, metavar="DATASET")
    data_dvc.register_cli(actions)
    return {"data_describe": describe_sub}


@dataclass(frozen=True)
class GroupCli:
    """A shared group (``dest``, ``metavar``) whose commands ``module``'s ``register_cli(group)`` adds, imported only
    when it runs (None: only papers add to it); papers add theirs to the ``CommandGroups`` field ``field``."""

    module: str | None
    dest: str
    metavar: str
    field: str

    def __call__(self, sub: Subparsers, command: Command) -> dict[str, Subparsers]:
        group = _group(sub, command, self.dest, self.metavar)
        if self.module is not None:
            importlib.import_module(self.module).register_cli(group)
        return {self.field: group}


def _audit_command(audit: PlugIn[AuditPlugIn]) -> PlugInCommand:
    """``audit <paper> [--strict]``: the paper's audit stage (what ``papers/<paper>/dvc.yaml``'s ``audit`` runs)."""
    return PlugInCommand(audit.module, lambda args: int(audit.load().main(["--strict"] if args.strict else []) or 0))


def _audit(sub: Subparsers, command: Command) -> dict[str, Subparsers]:
    targets = _group(sub, command, "target", "PAPER|released",
                     description="`audit <paper>` writes results/audit/<paper>.*; `audit released <paper> FILE...` "
                                 "scores files in that paper's released format.")
    for paper in load_papers():
        if paper.audit is None:
            continue
        one = targets.add_parser(paper.name, help=f"audit {paper.name} (the audit stage of {paper.dvc_file})")
        one.add_argument("--strict", action="store_true",
                         help="exit 3 when a pinned released source could not be fetched (pipelines: never cache a "
                              "partial audit)")
        one.set_defaults(func=_audit_command(paper.audit))
    released = targets.add_parser("released", help="score a file in a paper's released format")
    return {"audit_released": released.add_subparsers(dest="paper", required=True, metavar="PAPER")}


def _deps(sub: Subparsers, command: Command) -> dict[str, Subparsers]:
    # deferred: loads yaml only when called
    from common.pipeline import stage_deps

    stage_deps.register_cli(sub, resolve_common=handler_module)
    return {}


COMMANDS: tuple[Command, ...] = (
    Command("data", "the fetched inputs (data.dvc, make fetch), a DVC remote, benchmark data", _data),
    Command("world", "build mini-world data sets (pipeline stages)",
            GroupCli("common.miniworld.build", "world_set", "SET", "world")),
    Command("prepare", "full profile: fetch and verify a benchmark's data",
            GroupCli(None, "dataset", "DATASET", "prepare")),
    Command("bench", "benchmarks: ratios measured side by side in one run (eval, train)",
            GroupCli("common.training.bench", "bench", "WHAT", "bench")),
    Command("train", "train one tiny CLIP of the mini family (params.yaml train.<name>)",
            RegisterCli("common.training.family")),
    Command("recipes", "print a paper's training recipes as the README's markdown table",
            RegisterCli("common.training.recipes")),
    Command("zoo", "list models, or check that models load", RegisterCli("common.zoo.cli")),
    Command("report", "print a paper's reproduced tables and where its files are", RegisterCli("common.reporting.report")),
    Command("metrics", "`dvc metrics show` over one paper's metrics (a short table per paper)",
            RegisterCli("common.reporting.report")),
    Command("card", "a report card: any model on every benchmark of the five papers", RegisterCli("common.card.run")),
    Command("docs", "the documentation's generated parts", RegisterCli("common.docs.docnumbers")),
    Command("citations", "check every reference to the authors' code and the papers", RegisterCli("common.docs.citations")),
    Command("audit", "published vs recomputed numbers of a paper (results/audit/)", _audit),
    Command("fetch", "download registry entries (by key or group), verified", RegisterCli("common.registry.cli")),
    Command("sources", "list registry entries", RegisterCli("common.registry.cli")),
    Command("deps", "check every DVC stage's code deps against its imports (--write: fix them)", _deps),
    Command("oracle", "each paper's released evaluation code run beside this workspace's on the full profile's "
                      "inputs: numbers and decisions compared", RegisterCli("common.oracle.run")),
    Command("site", "a static HTML site of results/: papers, audits, correlations, cards",
            RegisterCli("common.site.build")),
)
"""The shared top-level commands, in ``--help``'s order (papers' own follow)."""


def _split(argv: Sequence[str]) -> tuple[list[str], str | None]:
    """(the top level's options, the command): the first word that is not an option (those options take no value)."""
    for i, word in enumerate(argv):
        if not word.startswith("-"):
            return list(argv[:i]), word
    return list(argv), None


def _unused() -> Subparsers:
    """Where papers add their subcommands of a group that is not built (another command runs): nowhere used."""
    return argparse.ArgumentParser(add_help=False).add_subparsers()


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser of ``python -m common``: every command's, or with ``argv`` only that of the command it names, the
    others listed from ``COMMANDS`` by name and help line (their modules are not imported)."""
    wanted = None if argv is None else _split(argv)[1]
    parser = argparse.ArgumentParser(prog="python -m common", description=__doc__.splitlines()[0])
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of an expected error (bad input) too (also: VLC_DEBUG=1)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    made: dict[str, Subparsers] = {}
    added: list[Callable] = []
    for command in COMMANDS:
        if command.add in added:  # added with an earlier command of its module
            continue
        if argv is None or wanted in {c.name for c in COMMANDS if c.add == command.add}:
            made.update(command.add(sub, command))
            added.append(command.add)
        else:
            sub.add_parser(command.name, help=command.help)
    groups = CommandGroups(root=sub, **{f.name: made[f.name] if f.name in made else _unused()
                                        for f in fields(CommandGroups) if f.name != "root"})
    for paper in load_papers():
        if paper.cli is not None:
            paper.cli.load().register(groups)
    return parser


def handler_module(argv: Sequence[str]) -> str:
    """The module of the function that runs ``python -m common ARGV`` (for a paper's plug-in, the plug-in's): where a
    stage that runs it starts importing (``common.pipeline.stage_deps``)."""
    func = build_parser(argv).parse_args(list(argv)).func
    return func.module if isinstance(func, PlugInCommand) else func.__module__


def not_installed(exc: ModuleNotFoundError) -> str | None:
    """The one line for a package that this Python lacks and ``make install`` installs, or None for a module of this
    repository or of the standard library (a bug, whose traceback is the report)."""
    top = (exc.name or "").partition(".")[0]
    if not top or top in PACKAGES or top in sys.stdlib_module_names:
        return None
    return f"{exc} ({sys.executable} lacks the workspace's packages): run make install, then source .venv/bin/activate"


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and run its command; an expected error, or a missing package that ``make install`` installs,
    is one ``error:`` line and exit status 1."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        args = build_parser(argv).parse_args(argv)
        return run_entry_point(lambda: args.func(args), debug=True if args.debug else None)
    except ModuleNotFoundError as exc:
        message = not_installed(exc)
        if message is None or debug_enabled() or "--debug" in _split(argv)[0]:
            raise
        print(f"error: {message}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover - `python -m common` goes through __main__.py
    raise SystemExit(main())
