"""The rehearsal's ``params.yaml``: the workspace's own, under ``profile: full``, with every size and place of work
shrunk to what two CPU cores do in minutes. The full profile's stages do not know they are rehearsed: the copy's
``full_inputs.cap`` caps each benchmark group (so no number is compared with the paper's), and each paper's ``params``
states the counts its stand-ins hold where its full section states the published ones.

What changes is decided by key name, wherever the key sits (``SHRINK``), so a new paper's full section is shrunk
without an entry here; a paper adds what only it knows in ``tests/rehearsal/papers/<paper>.py``'s ``params(params)``.
"""
from __future__ import annotations

import copy
from typing import Any, Callable, Iterable, Mapping

from common.pipeline.inputs import SECTION
from tests.rehearsal.papers import has_standins, standins

PROCESSES = 2
"""torchrun processes per fine-tune (gloo on the CPU): DDP is rehearsed, not only one process."""
BATCH = 4
"""Images per global batch: two per process."""
RESAMPLES = 20
DEFAULT_CAP = 4
"""Examples scored per benchmark group (``params.yaml full_inputs.cap``)."""

SHRINK: dict[str, Callable[[Any], Any]] = {
    "device": lambda v: "cpu",
    "precision": lambda v: "fp32",  # fp16/bf16 training needs CUDA (common.training.trainer)
    "gpus": lambda v: PROCESSES,
    "epochs": lambda v: 1,
    "accum": lambda v: 1,
    "batch_size": lambda v: BATCH if isinstance(v, int) else {k: BATCH for k in v},
    "n_resamples": lambda v: RESAMPLES,
    "bootstrap_resamples": lambda v: RESAMPLES,
}
"""Key name -> its rehearsal value (from the real one), anywhere in the file."""


def _shrink(node: Any, shrink: Mapping[str, Callable[[Any], Any]]) -> Any:
    if isinstance(node, dict):
        return {k: (shrink[k](v) if k in shrink else _shrink(v, shrink)) for k, v in node.items()}
    if isinstance(node, list):
        return [_shrink(v, shrink) for v in node]
    return node


def fine_tune_steps(cap: int, batch_size: int = BATCH) -> int:
    """A rehearsal's fine-tune: ``cap`` rows' worth of steps, not the recipe's epochs. It proves that a fine-tune runs
    and hands its checkpoint on, not what it learns."""
    return -(-cap // batch_size)


def rehearsal_params(params: Mapping[str, Any], papers: Iterable[str], cap: int = DEFAULT_CAP) -> dict[str, Any]:
    """``params`` (the workspace's params.yaml) made the rehearsal's: full profile, ``cap`` examples per benchmark
    group, ``SHRINK`` and ``fine_tune_steps`` applied, then each paper's own ``params`` (``papers/<paper>.py``)."""
    out = _shrink(copy.deepcopy(dict(params)), {**SHRINK, "max_steps": lambda v: fine_tune_steps(cap)})
    out["profile"] = "full"
    out[SECTION] = {"cap": cap}
    for paper in papers:
        if has_standins(paper):
            standins(paper).params(out)
    return out
