"""What one of the authors' functions returns (``returns_of``, a profile hook), or holds in its locals at one line
(``locals_at_line``, a trace hook), recorded while their code runs unmodified: their scripts print aggregates, the
per-example decisions live in a return value (SugarCrepe's ``text_retrieval``: 1 or 0 per example; ARO's
``get_retrieval_scores_batched``: the score array) or in locals.
"""
from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence


@dataclass
class Returns:
    """What ``returns_of`` recorded, one entry per return: the value, the chosen locals of the caller's frame, and
    the chosen locals of the function's own frame."""

    values: list[Any] = field(default_factory=list)
    callers: list[dict[str, Any]] = field(default_factory=list)
    locals: list[dict[str, Any]] = field(default_factory=list)


def _caller_locals(frame, names: Sequence[str]) -> dict[str, Any]:
    """``names`` from the nearest calling frame that has them all (a decorator's wrapper, such as ``torch.no_grad``'s,
    sits between the function and its caller)."""
    while frame is not None and names:
        if all(name in frame.f_locals for name in names):
            return {name: frame.f_locals[name] for name in names}
        frame = frame.f_back
    return dict.fromkeys(names)


@contextlib.contextmanager
def returns_of(path: Path, function: str, caller_locals: Sequence[str] = (),
               own_locals: Sequence[str] = ()) -> Iterator[Returns]:
    """Record every return of ``function`` defined in file ``path`` while the block runs: its value, ``caller_locals``
    of its caller and ``own_locals`` of its own frame (None for a name it has not bound)."""
    target = str(Path(path).resolve())
    seen = Returns()
    previous = sys.getprofile()

    def hook(frame, event, arg):  # noqa: ANN001 - sys.setprofile's signature
        if event == "return" and frame.f_code.co_name == function and frame.f_code.co_filename == target:
            seen.values.append(arg)
            seen.callers.append(_caller_locals(frame.f_back, caller_locals))
            seen.locals.append({name: frame.f_locals.get(name) for name in own_locals})
        if previous is not None:
            previous(frame, event, arg)

    sys.setprofile(hook)
    try:
        yield seen
    finally:
        sys.setprofile(previous)


@contextlib.contextmanager
def locals_at_line(path: Path, function: str, line: int, names: Sequence[str]) -> Iterator[list[dict[str, Any]]]:
    """Each time ``function`` (defined in file ``path``) is about to run line ``line``, the chosen locals of its frame
    (None for a name not bound yet), while the block runs. Why not ``returns_of``: a function that overwrites its
    per-example locals batch after batch (CoN-CLIP's README snippet: ``sim`` and ``preds``) shows them only while
    its loop runs."""
    target = str(Path(path).resolve())
    seen: list[dict[str, Any]] = []
    previous = sys.gettrace()

    def in_function(frame, event, arg):  # noqa: ANN001 - sys.settrace's signature
        if event == "line" and frame.f_lineno == line:
            seen.append({name: frame.f_locals.get(name) for name in names})
        return in_function

    def calls(frame, event, arg):  # noqa: ANN001
        if event == "call" and frame.f_code.co_name == function and frame.f_code.co_filename == target:
            return in_function
        return None

    sys.settrace(calls)
    try:
        yield seen
    finally:
        sys.settrace(previous)
