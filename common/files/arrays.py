"""Reading a saved numpy array: numbers only, never code, and one line naming the file when it is not one.

Every ``.npy`` a stage reads goes through ``load_array``: ``np.load`` with ``allow_pickle=False`` (a pickled object
array is refused before anything in it is unpickled), numpy's own complaints an ``ArrayFileError``.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from common.errors import WorkspaceError


class ArrayFileError(WorkspaceError, ValueError):
    """A ``.npy`` file that is not an array of numbers, or damaged (the message names it and the remedy). A missing
    file stays ``FileNotFoundError``, which callers word themselves and every entry point prints as one line."""


def load_array(path: str | os.PathLike, *, mmap: bool = False,
               remedy: str = "rerun the stage that writes it") -> np.ndarray:
    """The array saved at ``path`` (memory-mapped, read-only, with ``mmap``); never unpickles anything."""
    path = Path(path)
    try:
        array = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except FileNotFoundError:
        raise  # the caller's to word ("no fine-tuning set here; run ..."); at an entry point, one line naming the file
    except IsADirectoryError:
        raise ArrayFileError(f"{path}: a folder, not a .npy file; {remedy}") from None
    except (ValueError, EOFError, OSError) as exc:  # object array, pickle, bad header, short body
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise ArrayFileError(f"{path}: not a readable array of numbers ({reason}); nothing in it was run; "
                             f"{remedy}") from None
    if not isinstance(array, np.ndarray):  # an .npz archive, which np.load also opens
        raise ArrayFileError(f"{path}: a .npz archive, not one .npy array; {remedy}")
    if array.dtype.kind not in "biuf":
        raise ArrayFileError(f"{path}: holds {array.dtype} values, not numbers; {remedy}")
    return array
