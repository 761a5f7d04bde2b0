"""The one base class of every error the workspace expects (bad input, missing data, unreadable release).

An expected error is the user's to fix: its message names the file, the record and the remedy, and the command
line prints it as one ``error: ...`` line (``run_entry_point`` below, also exported as
``common.cli.run_entry_point``; it lives here, with no imports beyond the standard library, so that a paper's
script can use it without its DVC stage depending on the whole command line). Anything else is a bug in this
workspace and keeps its traceback; ``--debug`` (``python -m common``) or ``VLC_DEBUG=1`` (every entry point) shows
the traceback of an expected error too.
"""
from __future__ import annotations

import os
import sys
from typing import Callable, Iterable, Sequence, TextIO


class WorkspaceError(Exception):
    """An expected failure whose message alone tells the user what is wrong and what to do."""

    exit_code: int = 1


class UnknownName(WorkspaceError, KeyError):
    """A name (model, paper, benchmark) that nothing registers; the message lists the close matches.

    Also a ``KeyError``, so a lookup's callers that expect one keep working; ``str()`` is the message itself
    (a bare ``KeyError`` would print it quoted).
    """

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def unknown_name(kind: str, name: str, known: Iterable[str]) -> UnknownName:
    """``unknown <kind> 'name'; did you mean ...? (known: ...)``: the error to raise for a name nothing registers."""
    import difflib

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
"""The stdlib errors that are the user's to fix when they name a file (``exc.filename`` set): a path given on the
command line or in an input file that is missing, unreadable or of the wrong kind. Converted at the boundary into
``error: <file>: <reason>``. Every other stdlib exception (``ValueError``, ``KeyError``, ``TypeError``, an
``OSError`` without a file name such as a full disk or a broken pipe) is *not* expected there: bad input must be
turned into a ``WorkspaceError`` with a precise message where it is read (file, record, remedy), so whatever still
reaches the boundary as a bare stdlib exception is a bug and keeps its traceback."""

DEBUG_ENV = "VLC_DEBUG"
"""``VLC_DEBUG=1``: expected errors show their traceback too (``python -m common --debug`` does the same)."""


def debug_enabled() -> bool:
    return os.environ.get(DEBUG_ENV, "").strip().lower() not in ("", "0", "false", "no", "off")


def expected_message(exc: BaseException) -> str | None:
    """The one-line message of an expected error, or None when ``exc`` is a bug (it keeps its traceback)."""
    if isinstance(exc, WorkspaceError):
        return str(exc) or type(exc).__name__
    if isinstance(exc, EXPECTED_OS_ERRORS) and exc.filename is not None:
        target = f" -> {exc.filename2}" if exc.filename2 is not None else ""
        return f"{exc.filename}{target}: {exc.strerror or exc}"
    return None


def report_error(exc: BaseException, stream: TextIO | None = None) -> int:
    """Print an expected error as ``error: <message>`` on stderr; its exit status."""
    message = expected_message(exc)
    assert message is not None
    print(f"error: {message}", file=stream or sys.stderr)
    return int(getattr(exc, "exit_code", 1))


def run_entry_point(main: Callable[..., int | None], argv: Sequence[str] | None = None, *,
                    debug: bool | None = None) -> int:
    """Run a command's ``main`` (``main()`` when ``argv`` is None, else ``main(argv)``) and return its exit status.

    An expected error (``WorkspaceError``, or a file-naming ``OSError`` of ``EXPECTED_OS_ERRORS``) prints one
    ``error: <message>`` line on stderr and returns its ``exit_code`` (1); with ``debug`` (default: ``VLC_DEBUG``
    set) it is re-raised, traceback and all. Anything else propagates (a bug: its traceback is the report).
    ``SystemExit`` passes through untouched (argparse's usage errors exit 2, ``--help`` 0). Use it as the whole
    ``__main__`` block: ``raise SystemExit(run_entry_point(main))``.
    """
    if debug is None:
        debug = debug_enabled()
    try:
        result = main() if argv is None else main(argv)
    except (WorkspaceError, OSError) as exc:
        if debug or expected_message(exc) is None:
            raise
        return report_error(exc)
    except KeyboardInterrupt:
        if debug:
            raise
        print("error: interrupted", file=sys.stderr)
        return 130
    return int(result or 0)


class OutputError(WorkspaceError):
    """A stage's outputs could not be written (disk full, read-only folder); the message names the destination and
    says the previous outputs there are unchanged."""
