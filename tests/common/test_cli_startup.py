"""``python -m common`` answers at once (issue 48): ``--help``, a misspelt command and a misspelt model name import
neither torch, open_clip nor transformers (the parser of only the command given is built, the others are listed from
``common.cli.COMMANDS``; the card checks a SPEC against names read from files); what it lists is what the full parser
says; a package this Python lacks is one line naming ``make install``; ``make`` checks its arguments before it installs.

Speed itself is measured, not timed here: what is checked is what makes it slow (the imports).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys

import pytest

from common.cli import COMMANDS, build_parser, not_installed
from common.paths import ROOT

HEAVY = ("torch", "open_clip", "transformers")
TORCH_AT_IMPORT = {"bench", "train", "recipes", "zoo"}
"""Commands whose modules import torch at their top (training benchmarks and models; the last three are code deps
of pipeline stages, left as they are): their ``--help`` waits for it."""

PROBE = """
import json, sys
from common.cli import main
try:
    code = main(json.loads(sys.argv[1]))
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "heavy": [m for m in json.loads(sys.argv[2]) if m in sys.modules]}))
"""


def _probe(argv: list[str], env: dict[str, str] | None = None) -> tuple[int, list[str], str]:
    """(exit status, which of ``HEAVY`` got imported, stderr) of ``python -m common ARGV`` in a fresh interpreter."""
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(argv), json.dumps(HEAVY)], cwd=ROOT,
                          capture_output=True, text=True, env=env, timeout=300)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return result["code"], result["heavy"], done.stderr


@pytest.mark.parametrize("argv, code", [
    (["--help"], 0),
    (["crad"], 2),  # a misspelt command: argparse's usage error, listing the commands
    ([], 2),
    (["card", "--help"], 0),
    (["card", "--model", "mini/xs-32"], 1),  # a misspelt zoo name
    (["card", "--model", "ViT-B-32x:openai"], 1),  # a misspelt architecture
], ids=lambda v: " ".join(v) if isinstance(v, list) else str(v))
def test_help_and_misspelt_names_import_nothing_heavy(argv, code):
    got, heavy, err = _probe(argv)
    assert (got, heavy) == (code, []), err[-2000:]
    if code == 1:
        assert len(err.strip().splitlines()) == 1 and "close matches:" in err, err


@pytest.mark.parametrize("name", [c.name for c in COMMANDS if c.name not in TORCH_AT_IMPORT])
def test_a_commands_help_imports_nothing_heavy(name):
    assert _probe([name, "--help"])[:2] == (0, [])


def _tree(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _tree(sub, (*path, name))


@pytest.fixture
def full() -> dict[tuple[str, ...], argparse.ArgumentParser]:
    """Every parser of the whole tree, by path (built in the test: some defaults name the test's own folders)."""
    return dict(_tree(build_parser()))


def test_the_list_of_commands_is_what_their_parsers_say(full):
    """``COMMANDS``'s names and help lines, in order, are those the modules register (a stale line fails here)."""
    assert build_parser([]).format_help() == full[()].format_help()
    listed = [(c.name, c.help) for c in COMMANDS]
    (sub,) = [a for a in full[()]._actions if isinstance(a, argparse._SubParsersAction)]
    assert [(c.dest, c.help) for c in sub._choices_actions][:len(listed)] == listed


@pytest.mark.parametrize("name", [c.name for c in COMMANDS] + ["eval"])
def test_a_command_built_alone_is_the_command_of_the_full_parser(name, full):
    alone = dict(_tree(build_parser([name])))
    mine = {path: parser for path, parser in full.items() if path[:1] == (name,)}
    assert mine and {p: alone[p].format_help() for p in mine} == {p: q.format_help() for p, q in mine.items()}
    assert alone[()].format_help() == full[()].format_help()  # the other commands listed as in the full parser


def test_no_help_text_shows_a_doubled_percent(full):
    """argparse %-formats help lines but prints a description or an epilog as written: ``95%%`` there is printed."""
    assert [" ".join(path) for path, parser in full.items() if "%%" in parser.format_help()] == []


# ---- a package this Python lacks -------------------------------------------------------------------------------
HIDE_TORCH = "import sys; sys.modules['torch'] = None; from common.cli import main; sys.exit(main(sys.argv[1:]))"


def test_a_missing_package_is_one_line_naming_make_install():
    done = subprocess.run([sys.executable, "-c", HIDE_TORCH, "zoo", "list"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 1 and done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: ") and "torch" in line and "make install" in line
    debug = subprocess.run([sys.executable, "-c", HIDE_TORCH, "--debug", "zoo", "list"], cwd=ROOT,
                           capture_output=True, text=True, timeout=300)
    assert debug.returncode == 1 and "Traceback" in debug.stderr and "ModuleNotFoundError" in debug.stderr


@pytest.mark.parametrize("name, installable", [
    ("torch", True), ("open_clip.factory", True), ("common.nowhere", False), ("papers.x.y", False),
    ("tomllib", False), (None, False),
])
def test_only_a_package_the_install_provides_is_blamed_on_the_install(name, installable):
    """A module of this repository or of the standard library that is missing is a bug: its traceback stays."""
    message = not_installed(ModuleNotFoundError(f"No module named {name!r}", name=name))
    assert (message is not None) == installable
    assert message is None or "make install" in message and "\n" not in message


# ---- the card's names, read without the zoo and open_clip ------------------------------------------------------
def test_the_cards_names_are_the_zoos_and_open_clips():
    import open_clip

    from common.card import models
    from common.zoo import specs

    assert models.zoo_names() == set(specs.registry())
    if os.environ.get(specs.ARCH_OVERRIDES_ENV):
        pytest.skip("a rehearsal's architecture overrides: open_clip is asked")
    specs.register_local_configs()
    assert models.open_clip_archs() == set(open_clip.list_models())


def test_a_misspelt_pretrained_tag_names_the_close_one():
    from common.card.core import CardError
    from common.card.models import resolve

    with pytest.raises(CardError, match=r"no pretrained tag 'laion2b_s34b_b79kk'.*close matches: laion2b_s34b_b79k "):
        resolve("ViT-B-32:laion2b_s34b_b79kk")


# ---- make ------------------------------------------------------------------------------------------------------
@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
@pytest.mark.parametrize("args, says", [
    (["card"], "give MODEL=SPEC"),
    (["card", "MODEL= "], "give MODEL=SPEC"),
    (["repro", "PAPER=nope"], "no papers/nope/dvc.yaml"),
    (["rehearse", "PAPER=aro nope"], "no papers/nope/dvc.yaml"),
])
def test_make_checks_its_arguments_before_installing(tmp_path, args, says):
    venv = f"VENV={tmp_path / 'venv'}"  # not installed: the install would be the first thing to run
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}  # under make test
    refused = subprocess.run(["make", "-n", *args, venv], cwd=ROOT, capture_output=True, text=True, timeout=60,
                             env=env)
    assert refused.returncode == 2 and refused.stdout == ""
    (line,) = refused.stderr.strip().splitlines()
    assert says in line
    fine = subprocess.run(["make", "-n", args[0], "MODEL=x", "PAPER=aro", venv], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, env=env)
    assert fine.returncode == 0 and "pip install" in fine.stdout  # the same target with good arguments installs first
