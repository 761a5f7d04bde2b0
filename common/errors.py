"""The one base class of every error the workspace expects (bad input, missing data, unreadable release).

An expected error is the user's to fix: its message names the file, the record and the remedy, and every entry
point prints it as one ``error: ...`` line (``run_entry_point``; docs/robustness.md). This module imports the
standard library only, so that a paper's script can use it without its DVC stage depending on the whole command line.
"""
from __future__ import annotations

import contextlib
import difflib
import os
import re
import signal
import sys
import threading
from typing import Callable, Iterable, Iterator, Sequence


class WorkspaceError(Exception):
    """An expected failure whose message alone tells the user what is wrong and what to do."""

    exit_code: int = 1


class LookupFailed(WorkspaceError, KeyError):
    """Also a ``KeyError``, so a lookup's callers that expect one keep working; ``str()`` is the message itself (a
    bare ``KeyError`` would print it quoted)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class UnknownName(LookupFailed):
    """A name (model, paper, benchmark) that nothing registers; the message lists the close matches."""


class SettingError(WorkspaceError):
    """An environment variable (``VLC_MIRROR``, ``VLC_BUILD``, ...) or an option names something unusable: a file
    where a folder belongs, a folder that does not exist. The message starts with the variable and its value."""


SETTINGS = ("VLC_BUILD", "VLC_DATA", "VLC_CACHE", "VLC_MIRROR")
"""The variables that move the workspace's folders (``common.paths``)."""


def _mentions(message: str, path: str) -> bool:
    """Whether ``message`` names ``path`` or something under it (not merely a longer name that starts alike)."""
    path = path.rstrip("/") or "/"
    return re.search(rf"(?<![\w./-]){re.escape(path)}(?![\w.-])", message) is not None


def with_setting_hint(message: str) -> str:
    """``message``, led by what is wrong with a ``SETTINGS`` variable whose folder it names and that is not a folder:
    a file "not found" under ``VLC_BUILD=/typo`` is first of all a wrong variable."""
    for var in SETTINGS:
        value = os.environ.get(var, "")
        if not value or f"{var}=" in message or os.path.isdir(os.path.expanduser(value)):
            continue
        if _mentions(message, value) or _mentions(message, os.path.abspath(os.path.expanduser(value))):
            what = "is a file, not a folder" if os.path.lexists(os.path.expanduser(value)) else "does not exist"
            return f"{var}={value} {what}: set {var} to the folder meant, or unset it for the default; {message}"
    return message


def unknown_name(kind: str, name: str, known: Iterable[str]) -> UnknownName:
    """``unknown <kind> 'name'; did you mean ...? (known: ...)``: the error to raise for a name nothing registers."""
    known = sorted(known)
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
    listed = ", ".join(known) if len(known) <= 30 else ", ".join(known[:30]) + f", ... ({len(known)} in all)"
    return UnknownName(f"unknown {kind} {name!r}{hint} (known: {listed})")


# ----------------------------------------------------------------------------------------------------------------
# The boundary: every entry point (``python -m common ...``, ``python -m papers.<paper>.<script>``) runs its
# ``main`` through ``run_entry_point``.
# ----------------------------------------------------------------------------------------------------------------
EXPECTED_OS_ERRORS: tuple[type[OSError], ...] = (
    FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError, FileExistsError,
)
"""The stdlib errors that are the user's to fix when they name a file (``exc.filename`` set), printed as
``error: <file>: <reason>``. Every other stdlib exception is a bug and keeps its traceback: bad input must become a
``WorkspaceError`` with a precise message where it is read."""

DEBUG_ENV = "VLC_DEBUG"
"""``VLC_DEBUG=1``: expected errors show their traceback too (``python -m common --debug`` does the same)."""


def debug_enabled() -> bool:
    return os.environ.get(DEBUG_ENV, "").strip().lower() not in ("", "0", "false", "no", "off")


def expected_message(exc: BaseException) -> str | None:
    """The one-line message of an expected error, or None when ``exc`` is a bug (it keeps its traceback)."""
    if isinstance(exc, WorkspaceError):
        return with_setting_hint(str(exc) or type(exc).__name__)
    if isinstance(exc, EXPECTED_OS_ERRORS) and exc.filename is not None:
        target = f" -> {exc.filename2}" if exc.filename2 is not None else ""
        return with_setting_hint(f"{exc.filename}{target}: {exc.strerror or exc}")
    return None


class Terminated(KeyboardInterrupt):
    """SIGTERM (what ``timeout``, CI and schedulers send), raised like Ctrl-C's ``KeyboardInterrupt`` so that the same
    clean-up runs (an output group's staging folder removed, the previous outputs left as they were)."""


TERMINATED_EXIT = 128 + signal.SIGTERM
"""The exit status of a process ended by SIGTERM, as a shell reports it (143)."""


def _raise_terminated(signum: int, frame: object, owner: int) -> None:
    if os.getpid() != owner:  # a forked worker (a DataLoader's) inherited the handler: die as SIGTERM intends
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
        return
    raise Terminated("SIGTERM")


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises ``Terminated`` in the main thread instead of ending the process at once;
    only where SIGTERM still has its default action (a handler someone else installed is kept; nested uses are
    no-ops) and only from the main thread (the only one Python delivers signals to)."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return
    owner = os.getpid()
    signal.signal(signal.SIGTERM, lambda signum, frame: _raise_terminated(signum, frame, owner))
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def run_entry_point(main: Callable[..., int | None], argv: Sequence[str] | None = None, *,
                    debug: bool | None = None) -> int:
    """Run a command's ``main`` (``main()`` when ``argv`` is None, else ``main(argv)``) and return its exit status:
    an expected error (``expected_message``) is one ``error:`` line and its ``exit_code`` (re-raised with ``debug``,
    default ``VLC_DEBUG``); Ctrl-C and SIGTERM run the clean-up, then exit 130 or 143. Use it as the whole
    ``__main__`` block: ``raise SystemExit(run_entry_point(main))``."""
    if debug is None:
        debug = debug_enabled()
    try:
        with sigterm_as_interrupt():
            result = main() if argv is None else main(argv)
    except (WorkspaceError, OSError) as exc:
        message = expected_message(exc)
        if debug or message is None:
            raise
        print(f"error: {message}", file=sys.stderr)
        return int(getattr(exc, "exit_code", 1))
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM as ``Terminated``
        if debug:
            raise
        terminated = isinstance(exc, Terminated)
        print("error: terminated (SIGTERM); the outputs being written were discarded" if terminated
              else "error: interrupted", file=sys.stderr)
        return TERMINATED_EXIT if terminated else 130
    return int(result or 0)


class OutputError(WorkspaceError):
    """A stage's outputs could not be written (disk full, read-only folder); the message names the destination and
    says the previous outputs there are unchanged."""
