"""``--help`` works at every level of ``python -m common``: each subcommand prints its own usage line and exits 0.

The tree is walked from ``common.cli.build_parser()``, so a subcommand a paper adds (``papers/<paper>/cli.py``) is
covered as soon as it is registered.
"""
from __future__ import annotations

import argparse

import pytest

from common.cli import build_parser, main


def _subcommands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(argv path, parser) of every parser in the tree, the root included."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            seen: set[int] = set()
            for name, sub in action.choices.items():
                if id(sub) in seen:  # an alias
                    continue
                seen.add(id(sub))
                yield from _subcommands(sub, (*path, name))


TREE = list(_subcommands(build_parser()))


def test_the_tree_has_every_level():
    paths = {" ".join(p) for p, _ in TREE}
    assert {"", "audit", "audit released", "audit released bivlc", "eval", "data describe sugarcrepe"} <= paths
    assert len(TREE) >= 20


@pytest.mark.parametrize("path", [p for p, _ in TREE], ids=lambda p: " ".join(p) or "<root>")
def test_help_prints_the_subcommands_own_usage(path, capsys):
    prog = dict(TREE)[path].prog
    assert prog == " ".join(("python -m common", *path))
    with pytest.raises(SystemExit) as exc:
        main([*path, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: {prog} ") or out.startswith(f"usage: {prog}\n"), out[:300]
