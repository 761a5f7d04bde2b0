"""``python -m common``: the workspace's command line (some pipeline stages call it too).

Shared commands are registered by the modules that implement them (``register_cli``); a paper adds its own
subcommands from ``papers/<paper>/cli.py`` (``register(groups)``, see ``common.plugins``), under the shared groups
of ``CommandGroups`` or at the top level. ``main(argv)`` takes a list, so tests call it.

Every mistake of the user's (a bad file, an unknown name, malformed input) ends as one ``error: <message>`` line
on stderr and exit status 1 (``run_entry_point``, ``common.errors``); argparse's usage errors exit 2; ``--debug``
(or ``VLC_DEBUG=1``) shows the traceback instead. Anything else is a bug and shows its traceback.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Sequence

from common import plugins
from common.errors import WorkspaceError, run_entry_point

__all__ = ["CommandGroups", "build_parser", "handler_module", "main", "run_entry_point"]


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


def _cmd_audit(args: argparse.Namespace) -> int:
    audit = plugins.paper_module(args.paper, "audit")
    if audit is None:
        raise WorkspaceError(f"papers/{args.paper} has no audit.py")
    return int(audit.main(["--strict"] if args.strict else []) or 0)


def build_parser() -> argparse.ArgumentParser:
    from common import citations, data_dvc, docnumbers, download, report, stage_deps
    from common.card import run as card_run
    from common.training import bench as train_bench, family, recipes
    from common.zoo import cli as zoo_cli
    from common.miniworld import build as world_build
    from common.oracle import run as oracle_run
    from common.rehearsal import run as rehearsal_run
    from common.site import build as site_build

    parser = argparse.ArgumentParser(prog="python -m common", description=__doc__.splitlines()[0])
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of an expected error (bad input) too (also: VLC_DEBUG=1)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    data = sub.add_parser("data", help="the fetched inputs (data.dvc, make fetch), a DVC remote, benchmark data")
    data_sub = data.add_subparsers(dest="data_command", required=True, metavar="ACTION")
    describe = data_sub.add_parser("describe", help="per-category example counts as JSON")
    describe_sub = describe.add_subparsers(dest="dataset", required=True, metavar="DATASET")
    data_dvc.register_cli(data_sub)

    world = sub.add_parser("world", help="build mini-world data sets (pipeline stages)")
    world_sub = world.add_subparsers(dest="world_set", required=True, metavar="SET")
    world_build.register_cli(world_sub)

    prepare = sub.add_parser("prepare", help="full profile: fetch and verify a benchmark's data")
    prepare_sub = prepare.add_subparsers(dest="dataset", required=True, metavar="DATASET")

    bench = sub.add_parser("bench", help="benchmarks: ratios measured side by side in one run (eval, train)")
    bench_sub = bench.add_subparsers(dest="bench", required=True, metavar="WHAT")
    train_bench.register_cli(bench_sub)

    family.register_cli(sub)
    recipes.register_cli(sub)
    zoo_cli.register_cli(sub)

    report.register_cli(sub)
    card_run.register_cli(sub)
    docnumbers.register_cli(sub)
    citations.register_cli(sub)

    audit = sub.add_parser("audit", help="published vs recomputed numbers of a paper (results/audit/)",
                           description="`audit <paper>` writes results/audit/<paper>.*; `audit released <paper> "
                                       "FILE...` scores files in that paper's released format.")
    audit_sub = audit.add_subparsers(dest="target", required=True, metavar="PAPER|released")
    for paper in plugins.paper_names():
        one = audit_sub.add_parser(paper, help=f"audit {paper} (same as `python -m papers.{paper}.audit`)")
        one.add_argument("--strict", action="store_true",
                         help="exit 3 when a pinned released source could not be fetched (pipelines: never cache a "
                              "partial audit)")
        one.set_defaults(func=_cmd_audit, paper=paper)
    released = audit_sub.add_parser("released", help="score a file in a paper's released format")
    released_sub = released.add_subparsers(dest="paper", required=True, metavar="PAPER")

    download.register_cli(sub)
    stage_deps.register_cli(sub, resolve_common=handler_module)
    rehearsal_run.register_cli(sub)
    oracle_run.register_cli(sub)
    site_build.register_cli(sub)

    groups = CommandGroups(root=sub, data_describe=describe_sub, world=world_sub, prepare=prepare_sub,
                           audit_released=released_sub, bench=bench_sub)
    for paper in plugins.paper_names():
        cli = plugins.paper_module(paper, "cli")
        if cli is not None and hasattr(cli, "register"):
            cli.register(groups)
    return parser


def handler_module(argv: Sequence[str]) -> str:
    """The module of the function that runs ``python -m common ARGV``: where a stage that runs it starts importing
    (``common.stage_deps`` gets it from here rather than importing this module, which registers its command)."""
    return build_parser().parse_args(list(argv)).func.__module__


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and run its command; an expected error is one ``error:`` line and exit status 1."""
    args = build_parser().parse_args(argv)
    return run_entry_point(lambda: args.func(args), debug=True if args.debug else None)


if __name__ == "__main__":  # pragma: no cover - `python -m common` goes through __main__.py
    raise SystemExit(main())
