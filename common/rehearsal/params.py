"""The rehearsal's ``params.yaml``: the workspace's own, under ``profile: full``, with the rehearsal switched on and
every size and place of work shrunk to what two CPU cores do in minutes.

What changes is decided by key name, wherever the key sits (as ``common.params.PARAM_RULES`` checks them), so a new
paper's full section is shrunk without an entry here (``SHRINK``); a paper adds what only it knows (a shorter model
list, say) in ``papers/<paper>/rehearsal.py``'s ``params(params)``. The result is validated like any params.yaml
(``common.params.read_params``) when the copy's stages read it.
"""
from __future__ import annotations

import copy
from typing import Any, Callable, Iterable, Mapping

PROCESSES = 2
"""torchrun processes per fine-tune (gloo on the CPU): DDP is rehearsed, not only one process."""
BATCH = 4
"""Images per global batch: two per process."""
RESAMPLES = 20
DEFAULT_CAP = 4
"""Examples scored per benchmark group (``params.yaml rehearsal.cap``)."""

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


def _shrink(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: (SHRINK[k](v) if k in SHRINK else _shrink(v)) for k, v in node.items()}
    if isinstance(node, list):
        return [_shrink(v) for v in node]
    return node


def rehearsal_params(params: Mapping[str, Any], papers: Iterable[str], cap: int = DEFAULT_CAP) -> dict[str, Any]:
    """``params`` (the workspace's params.yaml) made the rehearsal's: full profile, ``rehearsal.enabled``, ``cap``
    examples per benchmark group, ``SHRINK`` applied, then each paper's own ``rehearsal.params``."""
    from common.paper import load_paper

    out = _shrink(copy.deepcopy(dict(params)))
    out["profile"] = "full"
    out["rehearsal"] = {"enabled": True, "cap": cap}
    for paper in papers:
        rehearsal = load_paper(paper).rehearsal
        if rehearsal is not None:
            rehearsal.load().params(out)
    return out
