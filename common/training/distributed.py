"""Distributed setup in one place, and the one gather every loss uses: launched by ``torchrun``, ``init_from_env``
joins the process group; launched plainly it returns a local context and nothing else changes."""
from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class DistributedContext:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: str = "cpu"
    distributed: bool = False
    """True when a process group exists (launched by torchrun), even with a single rank."""

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @classmethod
    def local(cls, device: str | None = None) -> "DistributedContext":
        """One process, no process group; CUDA when there is one."""
        return cls(device=device or ("cuda" if torch.cuda.is_available() else "cpu"))


def init_from_env(device: str | None = None) -> DistributedContext:
    """Join the process group torchrun describes (gloo on CPU, nccl on CUDA), else a local context. A world of one is
    run as a plain process, as open_clip does: a one-rank group would only add collectives (15% of a mini training
    step) to bit-identical arithmetic (the tests check the distributed path with a one-rank group of their own)."""
    if int(os.environ.get("WORLD_SIZE", "1")) == 1:
        return DistributedContext.local(device)
    local_rank = int(os.environ.get("LOCAL_RANK", 0))  # RANK and the rest are read by init_method="env://"
    device_type = (device or ("cuda" if torch.cuda.is_available() else "cpu")).split(":")[0]
    if device_type == "cuda":
        torch.cuda.set_device(local_rank)  # before init, so nccl binds each rank to its own GPU
    if not dist.is_initialized():
        dist.init_process_group(backend="nccl" if device_type == "cuda" else "gloo", init_method="env://")
    return DistributedContext(
        rank=dist.get_rank(),
        world_size=dist.get_world_size(),
        local_rank=local_rank,
        device=f"cuda:{local_rank}" if device_type == "cuda" else device_type,
        distributed=True,
    )


def shutdown(world: DistributedContext) -> None:
    if world.distributed and dist.is_initialized():
        dist.destroy_process_group()


def barrier(world: DistributedContext) -> None:
    if world.distributed:
        dist.barrier()


class _ScaleGrad(torch.autograd.Function):
    """Identity forward; multiplies the incoming gradient by ``factor`` on the way back."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, factor: float) -> torch.Tensor:
        ctx.factor = factor
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        return grad * ctx.factor, None


def gather_with_grad_slot(t: torch.Tensor, world: DistributedContext | None) -> torch.Tensor:
    """All ranks' ``t`` in rank order; only the local slot carries gradient, scaled by N so that DDP's average over
    the N ranks is the single-process gradient of the global batch (the loss's own parameters see the full gradient
    on every rank, unscaled). Cheaper than all_gather with autograd: no second collective in backward."""
    if world is None or not world.distributed:
        return t
    parts = [torch.empty_like(t) for _ in range(world.world_size)]
    dist.all_gather(parts, t.detach().contiguous())
    parts[world.rank] = _ScaleGrad.apply(t, float(world.world_size))
    return torch.cat(parts)


def gather_segments(t: torch.Tensor, n_segments: int, world: DistributedContext | None) -> torch.Tensor:
    """A segment-major tensor ``[S_0; S_1; ...]`` gathered segment by segment, so that it is laid out as one process
    with the global batch would lay it out ([S_0^r0; S_0^r1; S_1^r0; ...]), not rank by rank."""
    if world is None or not world.distributed:
        return t
    if n_segments == 1:
        return gather_with_grad_slot(t, world)
    return torch.cat([gather_with_grad_slot(s, world) for s in t.chunk(n_segments)])


def gather_plain(t: torch.Tensor, world: DistributedContext | None) -> torch.Tensor:
    """All ranks' ``t`` (labels and other inputs without gradient), in rank order."""
    if world is None or not world.distributed:
        return t
    parts = [torch.empty_like(t) for _ in range(world.world_size)]
    dist.all_gather(parts, t.contiguous())
    return torch.cat(parts)


def all_gather_objects(obj, world: DistributedContext) -> list:
    """Every rank's ``obj`` (small picklable state such as RNG states), in rank order."""
    if not world.distributed:
        return [obj]
    out: list = [None] * world.world_size
    dist.all_gather_object(out, obj)
    return out


def broadcast_object(obj, world: DistributedContext):
    """Rank 0's ``obj`` on every rank."""
    if not world.distributed:
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=0)
    return box[0]
