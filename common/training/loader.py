"""The trainer's input pipeline: each step's batch made in the loop (``workers == 0``, the mini profile's in-memory
sources) or ahead of it by torch's ``DataLoader`` workers, one item per step's local batch, in step order
(docs/training.md, "The input pipeline"). The batches are the same tensors either way, since a batch is a pure
function of (seed, step). The DataLoader's workers take their base seed from a generator of their own, never from
torch's global one, so turning them on changes no random draw of the training; a worker's error comes back as the
same exception with its one-line message, not a worker traceback."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterator

import torch

from common.errors import WorkspaceError
from common.pipeline.machine import usable_cores
from common.training.data import Batch, BatchSource

WORKERS_ENV = "VLC_LOADER_WORKERS"
"""Overrides the number of loader workers of every training run (0: decode in the training loop)."""


@dataclass(frozen=True)
class LoaderConfig:
    """How a run's batches are prepared; never part of its record (the batches are the same tensors either way)."""

    workers: int = 0
    """Worker processes preparing batches ahead of the step (0: in the training loop)."""
    prefetch: int = 2
    """Batches each worker keeps ready ahead of the step (torch's ``prefetch_factor``)."""

    def __post_init__(self):
        if self.workers < 0 or self.prefetch < 1:
            raise ValueError(f"LoaderConfig: workers must be >= 0 and prefetch >= 1, not {self.workers} and "
                             f"{self.prefetch}")

    @classmethod
    def for_source(cls, source: BatchSource, processes_per_node: int = 1) -> "LoaderConfig":
        """Workers for a source that reads files (``reads_files`` on it or its ``images``): one per CPU core this rank
        may use beyond its own, at most 8; none for others; ``VLC_LOADER_WORKERS`` overrides it for every source."""
        value = os.environ.get(WORKERS_ENV, "").strip()
        if value:
            try:
                workers = int(value)
            except ValueError:
                raise WorkspaceError(f"{WORKERS_ENV}={value!r}: expected a number of worker processes "
                                     "(0: decode in the training loop)") from None
            if workers < 0:
                raise WorkspaceError(f"{WORKERS_ENV}={value!r}: expected a number >= 0")
            return cls(workers=workers)
        images = getattr(source, "images", None)
        if not (getattr(source, "reads_files", False) or getattr(images, "reads_files", False)):
            return cls()
        return cls(workers=max(1, min(8, usable_cores() // max(1, processes_per_node) - 1)))


@dataclass(frozen=True)
class _Failed:
    """A worker's expected error, carried back to be raised again in the training process as itself."""

    kind: type
    message: str


class _Steps(torch.utils.data.Dataset):
    """Item s: rows ``rows`` of the global batch of step s."""

    def __init__(self, source: BatchSource, seed: int, size: int, rows: slice):
        self.source, self.seed, self.size, self.rows = source, seed, size, rows

    def __getitem__(self, step: int) -> Batch | _Failed:
        try:
            return self.source.batch(self.seed, step, self.size, self.rows)
        except (WorkspaceError, ValueError) as exc:
            return _Failed(type(exc), str(exc))


def step_batches(source: BatchSource, seed: int, size: int, rows: slice, steps: range,
                 config: LoaderConfig = LoaderConfig(), pin_memory: bool = False) -> Iterator[Batch]:
    """The local batches of ``steps``, in order: ``source.batch(seed, s, size, rows)`` for each s, made in the loop
    (``config.workers == 0``) or ahead of it by worker processes."""
    if config.workers == 0:
        for step in steps:
            yield source.batch(seed, step, size, rows)
        return
    loader = torch.utils.data.DataLoader(
        _Steps(source, seed, size, rows), batch_size=None, sampler=steps, num_workers=config.workers,
        prefetch_factor=config.prefetch, pin_memory=pin_memory, generator=torch.Generator(),
        persistent_workers=False)
    for item in loader:
        if isinstance(item, _Failed):
            try:
                error = item.kind(item.message)
            except TypeError:  # an exception class with another signature: the message stays the same
                error = WorkspaceError(item.message)
            raise error from None
        yield item
