"""One trainer for CLIP-style models: plug in where the weights start, the data, and the loss; docs/training.md
describes the loop, its recipe, and distributed and resumable runs. The weights, the best weights and the sidecar are
written as one output group: an interrupted run leaves the previous run's files, all of them, or the new ones."""
from __future__ import annotations

import contextlib
import functools
import json
import operator
import time
from collections import ChainMap
from dataclasses import asdict, dataclass, field, fields
from itertools import chain
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from common.files.io import output_group, write_json_atomic
from common.pipeline.machine import training_environment
from common.pipeline.params import ParamsError
from common.training import checkpoint as ckpt
from common.training.data import Batch, BatchSource
from common.training.distributed import DistributedContext, all_gather_objects, barrier, broadcast_object
from common.training.loader import LoaderConfig, step_batches
from common.training.model_init import Init, normalizer
from common.training.optim import clamp_logit_scale, lr_at, make_optimizer, param_groups, set_lr
from common.training.recipes import Recipe, mini_recipe
from common.zoo import encode_text, padding_is_inert

PARTS = ("image", "text", "logit_scale")
LossFactory = Callable[..., nn.Module]
"""Called as ``factory(world=context)``: a loss class, or ``functools.partial`` of one."""


REQUIRED = ("batch_size", "lr", "warmup_steps", "weight_decay", "seed", "checkpoint_every")
"""The settings a ``params.yaml`` training section states, every one of them: a default here would be one more place
for callers to disagree (their old defaults did: ``warmup_steps`` 100, 20 or 50)."""
STATED_OR_DEFAULT = {"precision": "fp32", "accum": 1}
"""The settings a section may leave out: every run trains in fp32 with one micro-batch unless it says otherwise."""
NOT_RECORDED = {"checkpoint_every": 0}
"""Fields the record states at a fixed value, whatever the run used: how often a resume state is saved changes no
number (saving draws no random number), so a state written at another interval is continued; sidecars show 0."""


@dataclass(frozen=True)
class TrainConfig:
    """Every training hyper-parameter of one run, from its ``params.yaml`` section (``from_params``) and recipe."""

    steps: int
    batch_size: int
    """Global: summed over ranks and micro-batches; every step's contrastive batch has this many samples."""
    lr: float = 1e-3
    weight_decay: float = 0.1
    warmup_steps: int = 100
    accum: int = 1
    """Micro-batches per step on each rank (memory only: the loss still sees the whole batch)."""
    seed: int = 0
    precision: str = "fp32"
    """'fp32', 'bf16' or 'fp16' (autocast of the encoders, CUDA only; the loss stays fp32; fp16 scales the loss with
    a ``GradScaler``, as the authors' ``amp``)."""
    checkpoint_every: int = 0
    """Save a resume state every this many steps (0: never); not part of the record (``NOT_RECORDED``)."""
    validate_every: int = 0
    """Call ``validate`` every this many steps (0: only at the end); it is always called at the end."""
    freeze: tuple[str, ...] = ()
    """Parts that keep their weights: any of 'image', 'text', 'logit_scale'."""
    recipe: Recipe | None = None
    """The optimiser, decay rule, schedule and clamp (None: ``mini_recipe()``); its name, digest and the run's
    deviations from the authors' numbers go to the training record."""

    def __post_init__(self):
        if self.steps < 1 or self.batch_size < 1 or self.accum < 1:
            raise ValueError("TrainConfig: steps, batch_size and accum must be positive")
        if self.checkpoint_every < 0:
            raise ValueError(f"TrainConfig: checkpoint_every must be >= 0, not {self.checkpoint_every}")
        if self.precision not in ("fp32", "bf16", "fp16"):
            raise ValueError(f"TrainConfig: precision must be 'fp32', 'bf16' or 'fp16', not {self.precision!r}")
        unknown = set(self.freeze) - set(PARTS)
        if unknown:
            raise ValueError(f"TrainConfig: freeze names unknown parts {sorted(unknown)}; known: {', '.join(PARTS)}")

    @classmethod
    def from_params(cls, *sections: Mapping[str, Any], steps_per_epoch: int | None = None,
                    recipe: Recipe | None = None, **decided: Any) -> "TrainConfig":
        """A run's settings from its ``params.yaml`` section(s), the first that has a key winning: ``steps``, or
        ``epochs`` x ``steps_per_epoch``; ``REQUIRED``; ``STATED_OR_DEFAULT``. ``decided``: what the caller sets itself
        (a swept lr, the validation interval; ``steps=None`` leaves the section's steps, a number replaces them)."""
        stated = ChainMap(*(dict(s) for s in sections))
        steps = decided.pop("steps", None)
        values: dict[str, Any] = {}
        for key in REQUIRED + tuple(STATED_OR_DEFAULT):
            if key in decided:
                values[key] = decided.pop(key)
            elif key in stated:
                values[key] = stated[key]
            elif key in STATED_OR_DEFAULT:
                values[key] = STATED_OR_DEFAULT[key]
            else:
                raise ParamsError(f"params.yaml: a training section lacks {key!r}; it states "
                                  f"{', '.join(REQUIRED)} (and steps or epochs)")
        if steps is None:
            if "steps" in stated:
                steps = stated["steps"]
            elif "epochs" in stated and steps_per_epoch is not None:
                steps = int(stated["epochs"]) * steps_per_epoch
            else:
                raise ParamsError("params.yaml: a training section states neither steps nor epochs (with the "
                                  "steps per epoch its caller counts)")
        floats, ints = ("lr", "weight_decay"), ("batch_size", "warmup_steps", "seed", "checkpoint_every", "accum")
        values = {k: float(v) if k in floats else int(v) if k in ints else v for k, v in values.items()}
        return cls(steps=int(steps), recipe=recipe, **values, **decided)


@dataclass(frozen=True)
class TrainResult:
    losses: tuple[float, ...]
    """Summed loss of every step (the global batch's, identical on every rank)."""
    terms: dict[str, tuple[float, ...]]
    final_loss: float
    """Mean of the last 50 steps' losses."""
    validation: tuple[tuple[int, float], ...]
    """(steps done, score) of every validation."""
    best_step: int | None
    best_score: float | None
    weights: Path
    best_weights: Path | None
    record: dict = field(repr=False)
    """The provenance sidecar written beside the weights."""
    resumed_from: int | None = None
    train_seconds: float = 0.0


def freeze_parts(model: nn.Module, parts: set[str]) -> None:
    """Freeze ``parts`` of an open_clip model: 'image' (``visual.*``), 'logit_scale' (and bias), 'text' (the rest)."""
    for name, p in model.named_parameters():
        part = ("image" if name.startswith("visual.") else "logit_scale" if name in ("logit_scale", "logit_bias")
                else "text")
        if part in parts:
            p.requires_grad_(False)


def flatten_segments(x: torch.Tensor) -> torch.Tensor:
    """(B, k, ...) sample-major to (k*B, ...) segment-major; with one segment, a view (same strides)."""
    if x.shape[1] == 1:
        return x[:, 0]
    return x.transpose(0, 1).reshape(-1, *x.shape[2:])


def _unflatten(features: torch.Tensor, k: int) -> torch.Tensor:
    """(k*B, D) segment-major to (B, k, D), so micro-batches concatenate along samples."""
    return features.view(k, -1, features.shape[-1]).transpose(0, 1)


class Towers(nn.Module):
    """The model and the loss as one module, so DDP registers (and syncs) the loss's parameters too. ``forward`` runs
    the encoders the loss needs (normalised features, segment-major; raw ones, ``encode_*(normalize=False)``, for a loss
    with ``raw_features = True``, as a probe trained on them expects); the loss runs outside, on gathered features."""

    def __init__(self, model: nn.Module, loss: nn.Module, mean: torch.Tensor, std: torch.Tensor,
                 autocast: Callable = contextlib.nullcontext):
        super().__init__()
        self.model, self.loss = model, loss
        self.mean, self.std = mean, std
        self.autocast = autocast
        self.unpadded = padding_is_inert(model)
        self.normalize = not getattr(loss, "raw_features", False)

    def forward(self, images: torch.Tensor | None, texts: torch.Tensor | None):
        image_features = text_features = None
        with self.autocast():
            if images is not None:
                pixels = (images.float() / 255.0 - self.mean) / self.std
                image_features = self.model.encode_image(pixels, normalize=self.normalize).float()
            if texts is not None:
                text_features = encode_text(self.model, texts, self.unpadded, self.normalize).float()
        return image_features, text_features, self.model.logit_scale.exp()


def _total(terms: Mapping[str, torch.Tensor]) -> torch.Tensor:
    return functools.reduce(operator.add, terms.values())


def _inputs(batch: Batch, loss: nn.Module) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    towers = getattr(loss, "towers", ("image", "text"))
    out = []
    for tower, key, segments in (("image", "images", "image_segments"), ("text", "texts", "text_segments")):
        if tower not in towers:
            out.append(None)
            continue
        if key not in batch:
            raise ValueError(f"{type(loss).__name__} needs batch[{key!r}]; the batch source gave {sorted(batch)}")
        want = getattr(loss, segments, 1)
        if batch[key].shape[1] != want:
            raise ValueError(f"{type(loss).__name__} expects {want} {tower} segment(s) per sample, "
                             f"the batch has {batch[key].shape[1]} (shape {tuple(batch[key].shape)})")
        out.append(batch[key])
    return out[0], out[1]


def train_step(net: nn.Module, core: Towers, batch: Batch, accum: int,
               scale_loss: Callable[[torch.Tensor], torch.Tensor] = lambda t: t) -> dict[str, torch.Tensor]:
    """Forward and backward of one step's local batch (micro-batches as open_clip's ``_train_step_eager``, except
    that the loss's own parameters are detached in all but the last, so their gradient counts once, not ``accum``
    times); returns the loss terms. ``scale_loss``: fp16's ``GradScaler.scale``."""
    images, texts = _inputs(batch, core.loss)
    if accum == 1:
        image_features, text_features, scale = net(
            None if images is None else flatten_segments(images),
            None if texts is None else flatten_segments(texts))
        terms = core.loss(image_features, text_features, scale, batch)
        total = _total(terms)
        if total.requires_grad:
            scale_loss(total).backward()
        return terms

    def micro(x: torch.Tensor | None, j: int) -> torch.Tensor | None:
        return None if x is None else x.chunk(accum)[j]

    def encode(j: int):
        i, t = micro(images, j), micro(texts, j)
        fi, ft, scale = net(None if i is None else flatten_segments(i), None if t is None else flatten_segments(t))
        return (None if fi is None else _unflatten(fi, i.shape[1]),
                None if ft is None else _unflatten(ft, t.shape[1]), scale)

    with torch.no_grad():
        cached = [encode(j)[:2] for j in range(accum)]

    def splice(which: int, live: torch.Tensor | None, j: int) -> torch.Tensor | None:
        if live is None:
            return None
        parts = [c[which] for c in cached]
        parts[j] = live
        return flatten_segments(torch.cat(parts))

    loss_params = dict(core.loss.named_parameters())
    terms: dict[str, torch.Tensor] = {}
    for j in range(accum):
        last = j == accum - 1
        sync = contextlib.nullcontext() if last or not isinstance(net, DistributedDataParallel) else net.no_sync()
        with sync:
            image_j, text_j, scale = encode(j)
            image_features, text_features = splice(0, image_j, j), splice(1, text_j, j)
            if last:
                terms = core.loss(image_features, text_features, scale, batch)
            else:
                detached = {name: p.detach() for name, p in loss_params.items()}
                terms = torch.func.functional_call(
                    core.loss, detached, (image_features, text_features, scale.detach(), batch))
            total = _total(terms)
            if total.requires_grad:
                scale_loss(total).backward()
    return terms


def trainer_fields(config: TrainConfig) -> dict:
    """``config`` as the record's ``trainer`` entry: every field but the recipe (recorded on its own), those of
    ``NOT_RECORDED`` at their fixed values."""
    values = {**asdict(config), **NOT_RECORDED}
    return {f.name: values[f.name] for f in fields(config) if f.name != "recipe"}


def optimizer_step(optimizer: torch.optim.Optimizer, scaler: torch.amp.GradScaler | None) -> None:
    """One step: fp32/bf16 (no scaler) always steps, as before; fp16's ``GradScaler`` steps and updates only when
    some parameter has a gradient, since with none it records no inf check and ``scaler.step`` raises."""
    if scaler is None:
        optimizer.step()
    elif any(p.grad is not None for group in optimizer.param_groups for p in group["params"]):
        scaler.step(optimizer)
        scaler.update()


def recipe_record(config: TrainConfig) -> dict:
    """The record's ``recipe`` entry: name, file, digest, settings, and the run's numbers that differ from the
    authors' (the batch in samples per step, the epochs left to the caller's record)."""
    run = {key: getattr(config, key) for key in ("lr", "weight_decay", "warmup_steps", "batch_size", "precision")}
    return (config.recipe or mini_recipe()).describe(run)


def _snapshot(module: nn.Module) -> dict[str, torch.Tensor]:
    """A copy of the module's portable state (on CPU ``portable_state`` shares the live parameters' storage)."""
    return {k: v.clone() for k, v in ckpt.portable_state(module).items()}


def train(
    config: TrainConfig,
    init: Init,
    batches: BatchSource,
    loss: LossFactory,
    out_path: Path,
    *,
    world: DistributedContext | None = None,
    validate: Callable[[nn.Module], float] | None = None,
    provenance: Mapping[str, Any] | None = None,
    resume: bool = True,
    progress: bool = False,
    resume_path: Path | None = None,
    loader: LoaderConfig | None = None,
) -> TrainResult:
    """Train and write ``out_path`` (safetensors) with its ``.json`` sidecar (``provenance``: extra keys), beside it
    ``<stem>.loss.safetensors`` when the loss has parameters and ``<stem>.best.safetensors`` when ``validate`` is
    given. ``resume``: continue a resume state of the same setup (``resume_path``, default ``<stem>.resume.pt``)."""
    world = world or DistributedContext.local("cpu")
    out_path = Path(out_path)
    stem = out_path.with_suffix("")
    paths = {
        "weights": out_path,
        "sidecar": out_path.with_suffix(".json"),
        "loss_weights": Path(f"{stem}.loss.safetensors"),
        "best": Path(f"{stem}.best.safetensors"),
        "best_loss": Path(f"{stem}.best.loss.safetensors"),
        "resume": Path(f"{stem}.resume.pt") if resume_path is None else Path(resume_path),
    }
    every = config.checkpoint_every
    local_batch, rem = divmod(config.batch_size, world.world_size * config.accum)
    if rem:
        raise ValueError(f"batch_size {config.batch_size} is not divisible by world_size {world.world_size} "
                         f"x accum {config.accum}")
    local_batch *= config.accum
    device = torch.device(world.device)
    if config.precision in ("bf16", "fp16") and device.type != "cuda":
        raise ValueError(f"precision {config.precision!r} needs CUDA; use 'fp32' on CPU")
    recipe = config.recipe or mini_recipe()
    if recipe.schedule == "constant" and config.warmup_steps > 0:
        raise ValueError(f"recipe {recipe.name!r} has a constant schedule, which has no warmup; the config asks for "
                         f"{config.warmup_steps} warmup steps (set warmup_steps to 0)")

    ckpt.seed_everything(config.seed)  # identical model and loss weights on every rank
    built = init.build()
    loss_fn = loss(world=world)
    ckpt.seed_everything(config.seed + world.rank)  # then each rank its own stream (dropout, augmentation)

    model = built.model.to(device)
    loss_fn = loss_fn.to(device)
    # A tower the loss never runs gets no gradient: freezing it keeps weight decay from shrinking
    # it and keeps DDP from waiting for gradients that never come.
    unused = {"image", "text"} - set(getattr(loss_fn, "towers", ("image", "text")))
    frozen = set(config.freeze) | set(getattr(loss_fn, "frozen", ())) | unused
    freeze_parts(model, frozen)
    model.train()
    loss_fn.train()
    mean, std = normalizer(built.transform)
    dtypes = {"bf16": torch.bfloat16, "fp16": torch.float16}
    autocast = (functools.partial(torch.autocast, "cuda", dtype=dtypes[config.precision])
                if config.precision in dtypes else contextlib.nullcontext)
    scaler = torch.amp.GradScaler("cuda") if config.precision == "fp16" else None
    core = Towers(model, loss_fn, mean.to(device), std.to(device), autocast)
    named = chain(model.named_parameters(), (("loss." + n, p) for n, p in loss_fn.named_parameters()))
    groups = param_groups(named, config.weight_decay, recipe.exclude_from_decay)
    if not any(g["params"] for g in groups):
        raise ValueError(f"nothing to train: {sorted(frozen)} frozen and the loss has no parameters")
    optimizer = make_optimizer(groups, config.lr, recipe)
    setup = json.loads(json.dumps({  # what defines the run: a resume state written by another setup is refused
        "trainer": trainer_fields(config),
        "recipe": recipe_record(config),
        "init": init.describe(),
        "data": batches.describe(),
        "loss": loss_fn.describe() if hasattr(loss_fn, "describe") else {"name": type(loss_fn).__name__},
        "world_size": world.world_size,
        "frozen": sorted(frozen),
    }))

    start, losses, terms_log = 0, [], {}
    scores: list[tuple[int, float]] = []
    best: tuple[int, float] | None = None
    best_states: dict[str, dict[str, torch.Tensor]] = {}  # "model" (and "loss"): the best validated weights
    resumed_from = None
    if resume and paths["resume"].is_file():
        state = ckpt.load_resume(paths["resume"])
        if state["setup"] != setup:
            differs = sorted(k for k in setup if state["setup"].get(k) != setup[k])
            raise ValueError(f"{paths['resume']}: written by a different run ({', '.join(differs)} differ); "
                             "delete it or rerun with its settings")
        model.load_state_dict(state["model"])
        loss_fn.load_state_dict(state["loss"])
        optimizer.load_state_dict(state["optimizer"])
        if scaler is not None and "scaler" in state:
            scaler.load_state_dict(state["scaler"])
        ckpt.restore_rng(state["rng"][world.rank], world.device)
        start = resumed_from = state["step"]
        losses, terms_log = list(state["losses"]), {k: list(v) for k, v in state["terms"].items()}
        scores = [(int(s), float(v)) for s, v in state["scores"]]
        best = None if state["best"] is None else (int(state["best"][0]), float(state["best"][1]))
        if "best_states" in state:
            best_states = {k: dict(v) for k, v in state["best_states"].items()}
        elif best is not None:  # a format-1 state (before 2026-11-29) left them in <stem>.best[.loss].safetensors
            found = {"model": paths["best"], "loss": paths["best_loss"]}
            best_states = {k: ckpt.load_weights(p) for k, p in found.items() if p.is_file()}

    net: nn.Module = core
    if world.distributed:
        net = DistributedDataParallel(core, device_ids=[world.local_rank] if device.type == "cuda" else None)

    def validate_now(done: int) -> None:
        nonlocal best
        if world.is_main:
            model.eval()
            with torch.no_grad():
                score = float(validate(model))
            model.train()
            scores.append((done, score))
            if best is None or score > best[1]:  # strictly better: the earliest of equal scores wins
                best = (done, score)
                best_states["model"] = _snapshot(model)
                if len(loss_fn.state_dict()):
                    best_states["loss"] = _snapshot(loss_fn)
        barrier(world)

    rows = slice(world.rank * local_batch, (world.rank + 1) * local_batch)
    started = time.perf_counter()
    bar = None
    if progress and world.is_main:
        # deferred: loads tqdm only when called
        from tqdm import tqdm

        bar = tqdm(total=config.steps, initial=start, desc=f"train {out_path.stem}", mininterval=5)
    feed = contextlib.closing(step_batches(batches, config.seed, config.batch_size, rows,
                                           range(start, config.steps), loader or LoaderConfig(),
                                           pin_memory=device.type == "cuda"))
    with feed as step_feed:  # closed on the way out: the loader's workers stop with the loop
        for step, batch in zip(range(start, config.steps), step_feed):
            batch = {k: v.to(device, non_blocking=True) for k, v in batch.items()}
            set_lr(optimizer, lr_at(recipe.schedule, step, config.lr, config.warmup_steps, config.steps))
            optimizer.zero_grad(set_to_none=True)
            terms = train_step(net, core, batch, config.accum, scaler.scale if scaler is not None else lambda t: t)
            optimizer_step(optimizer, scaler)
            if recipe.clamp_logit_scale and "logit_scale" not in frozen:
                clamp_logit_scale(model)
            losses.append(float(_total(terms).detach()))
            for k, v in terms.items():
                terms_log.setdefault(k, []).append(float(v.detach()))
            done = step + 1
            due = done == config.steps or (config.validate_every and done % config.validate_every == 0)
            if validate is not None and due:
                validate_now(done)
            if every and done % every == 0 and done < config.steps:
                rng_states = all_gather_objects(ckpt.capture_rng(world.device), world)
                if world.is_main:
                    ckpt.save_resume(paths["resume"], {
                        "format": 2, "setup": setup, "step": done, "best_states": best_states,
                        "model": ckpt.portable_state(model), "loss": ckpt.portable_state(loss_fn),
                        "optimizer": optimizer.state_dict(), "rng": rng_states,
                        **({} if scaler is None else {"scaler": scaler.state_dict()}),
                        "losses": losses, "terms": terms_log,
                        "scores": [list(s) for s in scores], "best": None if best is None else list(best),
                    })
            if bar is not None:
                bar.update(1)
                if step % 50 == 0:
                    bar.set_postfix(loss=f"{np.mean(losses[-50:]):.3f}")
    if bar is not None:
        bar.close()
    seconds = time.perf_counter() - started

    scores, best = broadcast_object((scores, best), world)  # validation ran on rank 0 only
    record = dict(provenance or {})
    own = {
        **setup,
        "final_loss": float(np.mean(losses[-50:])),
        "parameters": sum(p.numel() for p in model.parameters()),
        "trainable_parameters": sum(p.numel() for g in groups for p in g["params"]),
        "samples_seen": config.steps * config.batch_size,
        "environment": training_environment(world.device),
        "validation": None if validate is None else {
            "every": config.validate_every, "scores": [list(s) for s in scores],
            "best_step": best[0] if best else None, "best_score": best[1] if best else None},
    }
    clash = sorted(set(record) & set(own))
    if clash:
        raise ValueError(f"provenance keys {clash} clash with the trainer's own record")
    record.update(own)
    if world.is_main:
        model.eval()
        with output_group(out_path.parent) as staging:
            def staged(key: str) -> Path:
                return staging / paths[key].name

            ckpt.save_weights(staged("weights"), ckpt.portable_state(model))
            if len(loss_fn.state_dict()):
                ckpt.save_weights(staged("loss_weights"), ckpt.portable_state(loss_fn))
            for part, key in (("model", "best"), ("loss", "best_loss")):
                if part in best_states:
                    ckpt.save_weights(staged(key), best_states[part])
            write_json_atomic(staged("sidecar"), dict(record))
        paths["resume"].unlink(missing_ok=True)
    barrier(world)
    return TrainResult(
        losses=tuple(losses), terms={k: tuple(v) for k, v in terms_log.items()},
        final_loss=record["final_loss"], validation=tuple(scores),
        best_step=best[0] if best else None, best_score=best[1] if best else None,
        weights=paths["weights"], best_weights=paths["best"] if validate is not None else None,
        record=record, resumed_from=resumed_from, train_seconds=round(seconds, 1),
    )
