"""A throwaway copy of the workspace for tests that run DVC on it (nothing they do touches the real one): the
rehearsal's copy (``tests.rehearsal.workspace``)."""
from __future__ import annotations

from tests.rehearsal.workspace import IGNORED, copy_env, copy_workspace, dvc

__all__ = ["IGNORED", "copy_env", "copy_workspace", "dvc"]
