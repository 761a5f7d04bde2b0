"""``--help`` works at every level of ``python -m common``: each subcommand prints its own usage line and exits 0.

The tree is walked from ``common.cli.build_parser()``, so a subcommand a paper adds (``papers/<paper>/cli.py``) is
covered as soon as it is registered.
"""
from __future__ import annotations

import argparse
import ast
import importlib
import re
import sys
from pathlib import Path

import pytest

from common.cli import build_parser, main
from common.paths import ROOT


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


def _stage_modules() -> list[str]:
    """Every module a paper's dvc.yaml runs as ``python -m <module>`` (``python -m common`` is the tree above)."""
    commands = "\n".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "papers").glob("*/dvc.yaml")))
    return sorted(set(re.findall(r"python -m (papers\.[\w.]+)", commands)))


STAGE_MODULES = _stage_modules()


@pytest.mark.parametrize("module", STAGE_MODULES)
def test_every_stage_names_its_command_and_words_an_error_in_one_line(module, capsys, monkeypatch):
    """``--help`` shows the command the stage's dvc.yaml runs, and its ``__main__`` block is ``run_entry_point``
    (bad input is one ``error:`` line, Ctrl-C and SIGTERM clean up; ``common.errors``)."""
    imported = importlib.import_module(module)
    monkeypatch.setattr(sys, "argv", [module, "--help"])  # as DVC runs it: not every main takes argv
    with pytest.raises(SystemExit) as exc:
        imported.main()
    assert exc.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: python -m {module} "), module
    tree = ast.parse(Path(imported.__file__).read_text(encoding="utf-8"))
    main_blocks = [node for node in tree.body if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)]
    assert len(main_blocks) == 1 and "run_entry_point(main)" in ast.unparse(main_blocks[0]), module


def test_the_stage_modules_are_found():
    assert len(STAGE_MODULES) >= 40 and "papers.sugarcrepe.blind_real" in STAGE_MODULES
