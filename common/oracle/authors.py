"""The authors' code: fetched byte-exact into its upstream layout (``fetch_code``), and run as released
(``run_script``: in this process, so that an ``observe`` hook and a model-construction replacement can be in place).
"""
from __future__ import annotations

import contextlib
import csv
import io
import runpy
import shlex
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence
from unittest import mock

from common.errors import WorkspaceError
from common.registry.errors import DownloadError
from common.registry.fetch import fetch
from common.registry.sources import sources_in_group

GROUP = "authors-code"


class OracleError(WorkspaceError):
    """The oracle cannot run (no full-profile results yet, the authors' code not obtainable)."""


@dataclass(frozen=True)
class AuthorsCode:
    repo: str
    """``owner/name`` on GitHub."""
    commit: str
    root: Path
    """The fetched files, in the repository's layout."""
    unfetched: tuple[str, ...] = ()
    """Registered files (paths in the repository) that could not be fetched here: neither in the mirror nor
    downloadable (offline). A plug-in runs what does not need them and says what it did not run."""

    @property
    def pinned(self) -> str:
        return f"{self.repo}@{self.commit[:8]}"

    def path(self, relative: str) -> Path:
        path = self.root / relative
        if not path.is_file():
            raise OracleError(f"{self.pinned}: {relative} is not among the fetched files (registry group {GROUP})")
        return path

    def module_file(self, module: str) -> Path:
        """The file of the release's module ``module`` (dotted, as their imports name it: ``model_zoo.clip_models``)."""
        return self.path(module_path(module))


def module_path(module: str) -> str:
    """Where a release's module ``module`` (dotted) lies in its repository, whether fetched or not: its file's path
    relative to the root, as a report names it."""
    return module.replace(".", "/") + ".py"


def fetch_code(repo: str, data_root: Path | None = None) -> AuthorsCode:
    """Every registered file of ``repo``'s release, fetched (verified) under ``<data root>/code/<repo>/``; a file that
    cannot be fetched (offline, and not in the mirror) is listed in ``unfetched`` rather than stopping the others, as
    long as one file was fetched."""
    prefix = f"code/{repo}/"
    sources = [s for s in sources_in_group(GROUP) if s.key.startswith(prefix)]
    if not sources:
        raise OracleError(f"no file of {repo} is registered in group {GROUP} (common/registry/sources.toml)")
    commits = {s.url.split("/")[5] for s in sources if s.url and "raw.githubusercontent.com" in s.url}
    if len(commits) != 1:
        raise OracleError(f"{repo}: its registered files name {len(commits)} commits ({sorted(commits)}), not one")
    fetched, unfetched, failures = [], [], []
    for source in sources:
        try:
            fetched.append((source, fetch(source.key, data_root=data_root, progress=False)))
        except DownloadError as error:
            unfetched.append(source.key.removeprefix(prefix))
            failures.append(str(error))
    if not fetched:
        raise OracleError(f"{repo}: none of its registered files could be fetched ({failures[0]})")
    source, file = fetched[0]
    root = file.parents[source.key.removeprefix(prefix).count("/")]
    return AuthorsCode(repo, commits.pop(), root, tuple(unfetched))


@contextlib.contextmanager
def shimmed_modules(modules: dict[str, types.ModuleType]) -> Iterator[None]:
    """Modules the released code imports that today's libraries no longer have (e.g. ``torch._six``), for the
    duration; each is a listed ``Replacement`` of the caller's."""
    saved = {name: sys.modules.get(name) for name in modules}
    sys.modules.update(modules)
    try:
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


@contextlib.contextmanager
def importable(root: Path) -> Iterator[None]:
    """``root`` first on ``sys.path`` (as ``python`` running a script there has it); afterwards, every module imported
    from it forgotten, so two releases with packages of the same name (``dataset_zoo``) never meet."""
    root = Path(root).resolve()
    sys.path.insert(0, str(root))
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(str(root))
        for name, module in list(sys.modules.items()):
            file = getattr(module, "__file__", None)
            if file and Path(file).resolve().is_relative_to(root):
                del sys.modules[name]


@contextlib.contextmanager
def printed(log: Path) -> Iterator[io.StringIO]:
    """The block's standard output, kept (the released scripts report by printing) and written to ``log``."""
    buffer = io.StringIO()
    try:
        with contextlib.redirect_stdout(buffer):
            yield buffer
    finally:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(buffer.getvalue(), encoding="utf-8")


def script_file(code: AuthorsCode, script: str) -> Path:
    """``script``: a module of the release (``main_eval``) or its path relative to the release's root."""
    plain_module = "/" not in script and not script.endswith(".py")
    return (code.module_file(script) if plain_module else code.path(script)).resolve()


def run_script(code: AuthorsCode, script: str, argv: Sequence[str], cwd: Path) -> dict:
    """``python <the script's file> ARGV`` of the release (``script``: see ``script_file``), in ``cwd``, in this
    process; returns the script's globals."""
    path = script_file(code, script)
    Path(cwd).mkdir(parents=True, exist_ok=True)
    with mock.patch.object(sys, "argv", [str(path), *map(str, argv)]), importable(code.root), contextlib.chdir(cwd):
        return runpy.run_path(str(path), run_name="__main__")


def output_rows(path: Path) -> list[dict[str, str]]:
    """The rows of a CSV the authors' script wrote."""
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def command_line(code: AuthorsCode, script: str, argv: Sequence[str]) -> str:
    """How ``run_script`` ran, for the report."""
    relative = script_file(code, script).relative_to(code.root.resolve())
    return f"{code.pinned} python {relative} {' '.join(shlex.quote(str(a)) for a in argv)}"
