"""The stage map: the workspace's DVC stages with the command each runs, and which of them is running now
(``current_stage``: ``--stage``, else ``DVC_STAGE``, else the one stage whose command runs this module with these
arguments; docs/layout.md, "No module names its stage").

The map is cheap to consult: only the stage files whose text names the module are resolved by DVC, and ``DVC_STAGE``
costs one YAML parse of a file's stage names.
"""
from __future__ import annotations

import itertools
import os
import posixpath
import shlex
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Sequence

import yaml

from common.errors import LookupFailed
from common.paths import ROOT

DISPATCHER = ("common/__main__.py", "common/cli.py")
"""The files of ``python -m common``'s dispatch: a stage that runs it depends on them, not on all they import."""
DVC_STAGE = "DVC_STAGE"
"""The variable DVC sets to the address of the stage whose command it runs."""

CommandResolver = Callable[[Sequence[str]], str]
"""Maps the arguments of ``python -m common ARGS`` to the module of the function that runs them
(``common.cli.handler_module``)."""


class StageNotFound(LookupFailed):
    """No stage, or more than one, fits what is running: pass ``--stage`` (a ``KeyError``, like the ``ParamsError``
    of an unknown stage address)."""


@dataclass(frozen=True)
class Command:
    """What a stage's command runs: the module after ``-m`` and the words after it."""

    module: str
    args: tuple[str, ...]

    @classmethod
    def of(cls, cmd: str) -> Command | None:
        """The command's module and arguments; None when it runs no module (``VAR=value`` prefixes skipped)."""
        words = shlex.split(cmd)
        while words and "=" in words[0] and not words[0].startswith("-"):
            words = words[1:]
        if "-m" not in words:
            return None
        at = words.index("-m")
        return cls(words[at + 1], tuple(words[at + 2:]))


def entry_modules(cmd: str, resolve_common: CommandResolver) -> tuple[list[str], list[str]]:
    """(entry modules, dispatcher files) of a stage command; empty when it runs no repository module."""
    command = Command.of(cmd)
    if command is None:
        return [], []
    if command.module != "common":
        return [command.module], []
    return [resolve_common(command.args)], list(DISPATCHER)


@dataclass(frozen=True)
class ResolvedStage:
    """One stage as DVC resolves it (each item of a ``foreach`` is one), with what its check needs."""

    address: str
    """How ``dvc`` names it from the workspace root: ``papers/aro/dvc.yaml:audit``, ``mini/train@xs-2k``."""
    dvc_file: str
    """Repository-relative path of its ``dvc.yaml``."""
    name: str
    """Its name within that file: the key under ``stages:``, plus ``@<item>`` for a ``foreach`` item."""
    cmd: str
    deps: tuple[str, ...]
    """Its non-parameter deps, interpolated, in the order of the file's list."""
    params: tuple[Any, ...] = ()
    """Its ``params:`` entries, interpolated: a key of ``params.yaml``, or ``{file: [keys]}`` (no keys: all)."""
    wdir: str = "."
    """Its ``wdir:``, relative to the folder of its stage file (where its params files and deps are)."""

    @property
    def definition(self) -> str:
        """The key under ``stages:`` that defines it (a ``foreach`` stage defines one stage per item)."""
        return self.name.split("@", 1)[0]


def address(dvc_file: str, name: str) -> str:
    """A stage's DVC address from the workspace root (a root ``dvc.yaml`` stage is named alone)."""
    return name if dvc_file == "dvc.yaml" else f"{dvc_file}:{name}"


def _stage_file(dvc_file: str, root: Path) -> dict[str, Any]:
    """A stage file's YAML, read with libyaml (DVC's own reader, pure Python, takes about a second on one of these)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    data = yaml.load((root / dvc_file).read_text(encoding="utf-8"), Loader=loader)
    return data if isinstance(data, dict) else {}


def _resolved(dvc_file: str, name: str, definition: dict[str, Any]) -> ResolvedStage:
    cmd = definition.get("cmd") or ""
    return ResolvedStage(address(dvc_file, name), dvc_file, name, cmd if isinstance(cmd, str) else " && ".join(cmd),
                         tuple(str(d) for d in definition.get("deps") or ()), tuple(definition.get("params") or ()),
                         str(definition.get("wdir") or "."))


@lru_cache(maxsize=16)
def stages_in(dvc_file: str, root: Path = ROOT) -> tuple[ResolvedStage, ...]:
    """The stages with a command of one stage file (repository-relative): DVC's resolver (``foreach`` expanded,
    ``${...}`` interpolated) on that file alone. Not DVC's stage loader, which also parses the lock file: every stage
    paid seconds for it at start-up, finding its own parameters."""
    # deferred: loads dvc only when called
    from dvc.parsing import DataResolver
    from dvc.repo import Repo

    with Repo(str(root)) as repo:  # the path given: DVC would read a bare target relative to the cwd
        resolver = DataResolver(repo, str((Path(root) / dvc_file).parent), _stage_file(dvc_file, Path(root)))
        resolved = [(name, resolver.resolve_one(name)[name]) for name in resolver.get_keys()]
    return tuple(_resolved(dvc_file, name, definition) for name, definition in resolved if definition.get("cmd"))


def all_stages(root: Path = ROOT) -> tuple[ResolvedStage, ...]:
    """Every stage with a command of every stage file (``dvc_files``), as ``stages_in`` resolves them."""
    return tuple(stage for dvc_file in dvc_files(root) for stage in stages_in(dvc_file, root))


def forget_stages() -> None:
    """Drop the cached resolutions (a stage file changed, or may have): the next look-up reads the files afresh."""
    stages_in.cache_clear()


def dvc_files(root: Path = ROOT) -> list[str]:
    """The workspace's stage files: the root ``dvc.yaml`` and every ``papers/<paper>/dvc.yaml``."""
    found = [root / "dvc.yaml", *sorted((root / "papers").glob("*/dvc.yaml"))]
    return [p.relative_to(root).as_posix() for p in found if p.is_file()]


def _definitions(dvc_file: str, root: Path) -> set[str]:
    """The keys under ``stages:`` of a stage file (YAML only: no interpolation needed to know the names)."""
    stages = _stage_file(dvc_file, root).get("stages")
    return set(stages) if isinstance(stages, dict) else set()


def from_dvc_stage(value: str, root: Path = ROOT, module: str | None = None) -> str:
    """The workspace address of the stage ``DVC_STAGE`` names: DVC writes the stage file relative to the folder
    ``dvc`` ran in, so the one stage file whose path ends with that path (``..`` dropped) and that defines the stage
    (where several do, the one whose stage runs ``module``); a path naming a stage file from the root wins outright."""
    file, _, name = value.rpartition(":")
    written = posixpath.normpath(file or "dvc.yaml")
    tail = [part for part in written.split("/") if part not in ("..", ".")]
    definition = name.split("@", 1)[0]
    defining = [f for f in dvc_files(root) if f.split("/")[-len(tail):] == tail and definition in _definitions(f, root)]
    if written in defining:
        return address(written, name)
    if len(defining) > 1 and module is not None:
        defining = [f for f in defining if any(s.name == name and _runs(s, module) for s in stages_in(f, root))]
    if len(defining) == 1:
        return address(defining[0], name)
    raise StageNotFound(f"{DVC_STAGE}={value}: " + (f"stage files {', '.join(defining)} all define {definition!r}"
                                                    if defining else f"no stage file here defines {definition!r}")
                        + "; pass --stage ADDRESS")


def _runs(stage: ResolvedStage, module: str) -> bool:
    command = Command.of(stage.cmd)
    return command is not None and command.module == module


def _leading(words: Sequence[str]) -> tuple[str, ...]:
    """The words before the first option: the subcommand and positional arguments that pick a ``foreach`` item."""
    return tuple(itertools.takewhile(lambda word: not word.startswith("-"), words))


def stage_running(module: str, argv: Sequence[str], root: Path = ROOT, files: Sequence[str] | None = None) -> str:
    """The address of the one stage whose command runs ``module`` with ``argv`` (the same arguments, else the same
    leading words before the first option); ``files``: only these stage files (default: those naming the module)."""
    named = [f for f in (dvc_files(root) if files is None else files) if module in (root / f).read_text(encoding="utf-8")]
    runs = [(s, Command.of(s.cmd)) for f in named for s in stages_in(f, root) if _runs(s, module)]
    if len(runs) == 1:
        return runs[0][0].address
    for fits in (lambda c: c.args == tuple(argv), lambda c: _leading(c.args) == _leading(argv)):
        chosen = [s for s, c in runs if fits(c)]
        if len(chosen) == 1:
            return chosen[0].address
    shown = " ".join(map(shlex.quote, [module, *argv]))
    if not runs:
        raise StageNotFound(f"no DVC stage runs `python -m {module}` (stage files: {', '.join(dvc_files(root))});"
                            " pass --stage ADDRESS")
    raise StageNotFound(f"`python -m {shown}`: {len(runs)} DVC stages run {module} ("
                        + ", ".join(s.address for s, _ in runs) + "), none with these arguments alone; pass --stage "
                        "ADDRESS")


def running_module() -> str | None:
    """The module this process runs (``python -m M``: ``M``; ``python -m common``: ``common``), or None."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    name = getattr(spec, "name", None)
    return name.removesuffix(".__main__") if name else None


def current_stage(stage: str | None = None, module: str | None = None, argv: Sequence[str] | None = None,
                  root: Path = ROOT) -> str:
    """The address of the stage whose parameters the running code reads: ``stage`` (``--stage``), else
    ``DVC_STAGE``, else the stage map. ``module``: the module whose stage is meant, where it is not the one this
    process runs (``DVC_STAGE`` is then used only if its stage runs that module). ``argv``: default this process's."""
    if stage:
        return stage
    words = sys.argv[1:] if argv is None else list(argv)
    running = os.environ.get(DVC_STAGE)
    if running and module is None:
        return from_dvc_stage(running, root, running_module())
    if running:  # another module's stage: DVC's only if DVC runs that module
        try:
            found = from_dvc_stage(running, root, module)
        except StageNotFound:
            found = None
        dvc_file, _, name = (found or "").rpartition(":")
        if found and any(s.name == name and _runs(s, module) for s in stages_in(dvc_file or "dvc.yaml", root)):
            return found
    module = module or running_module()
    if module is None:
        raise StageNotFound("cannot tell which DVC stage is running (no DVC_STAGE, no `python -m` module); "
                            "pass --stage ADDRESS")
    return stage_running(module, words, root)
