"""Contrastive pretraining of the mini profile's tiny CLIPs on mini-world image-caption pairs.

The standard CLIP objective (symmetric InfoNCE over the batch, learned temperature), AdamW with
warmup and cosine decay, on CPU. Deterministic for a given seed and thread count. The checkpoint is a
plain state dict (safetensors) with a JSON record of how it was trained next to it.
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

from common.io import atomic_path, sha256_file, write_json_atomic
from common.miniworld import VERSION


@dataclass(frozen=True)
class TrainConfig:
    arch: str
    n_images: int
    steps: int
    batch_size: int = 128
    lr: float = 1e-3
    weight_decay: float = 0.1
    warmup_steps: int = 100
    seed: int = 0


def _normalizer(transform) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean/std of the model's own preprocessing, so training sees exactly what evaluation sees."""
    for t in getattr(transform, "transforms", []):
        if type(t).__name__ == "Normalize":
            return torch.tensor(t.mean).view(1, 3, 1, 1), torch.tensor(t.std).view(1, 3, 1, 1)
    raise ValueError("model transform has no Normalize step")


def _param_groups(model: torch.nn.Module, weight_decay: float) -> list[dict]:
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        (no_decay if p.ndim < 2 or "embedding" in name or "logit_scale" in name else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def train_clip(config: TrainConfig, train_dir: Path, out_path: Path, progress: bool = True) -> dict:
    """Train ``config.arch`` on the first ``n_images`` of the mini training set; save to ``out_path``."""
    import open_clip
    from common.zoo import encode_text_unpadded, padding_is_inert, quiet_random_init_warning, register_local_configs

    register_local_configs()
    torch.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)

    images = np.load(train_dir / "images.npy", mmap_mode="r")
    captions = json.loads((train_dir / "captions.json").read_text())
    if config.n_images > len(images):
        raise ValueError(f"{train_dir}: asked for {config.n_images} images, the training set has {len(images)}")
    images = torch.from_numpy(np.array(images[: config.n_images])).permute(0, 3, 1, 2)
    captions = captions[: config.n_images]

    with quiet_random_init_warning():  # training from scratch is the point; say so once, below
        model, _, transform = open_clip.create_model_and_transforms(config.arch, pretrained=None)
    print(f"training {config.arch} from random initialization on {config.n_images} mini-world pairs "
          f"({config.steps} steps of {config.batch_size})", flush=True)
    tokenizer = open_clip.get_tokenizer(config.arch)
    per_image = len(captions[0])
    tokens = tokenizer([c for caps in captions for c in caps]).view(config.n_images, per_image, -1)
    mean, std = _normalizer(transform)

    optimizer = torch.optim.AdamW(
        _param_groups(model, config.weight_decay), lr=config.lr, betas=(0.9, 0.98), eps=1e-6, fused=True
    )
    encode_text = encode_text_unpadded if padding_is_inert(model) else (
        lambda m, t: m.encode_text(t, normalize=True))

    def lr_at(step: int) -> float:
        if step < config.warmup_steps:
            return config.lr * (step + 1) / config.warmup_steps
        progress_ = (step - config.warmup_steps) / max(1, config.steps - config.warmup_steps)
        return 0.5 * config.lr * (1 + math.cos(math.pi * progress_))

    model.train()
    started = time.perf_counter()
    losses: list[float] = []
    order = rng.permutation(config.n_images)
    cursor = 0
    bar = tqdm(range(config.steps), desc=f"train {out_path.stem}", disable=not progress, mininterval=5)
    for step in bar:
        if cursor + config.batch_size > len(order):
            order, cursor = rng.permutation(config.n_images), 0
        idx = torch.from_numpy(order[cursor: cursor + config.batch_size])
        cursor += config.batch_size
        pick = torch.from_numpy(rng.integers(0, per_image, size=len(idx)))
        pixels = (images[idx].float() / 255.0 - mean) / std
        text = tokens[idx, pick]
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step)
        image_features = model.encode_image(pixels, normalize=True)
        text_features = encode_text(model, text)
        logits = model.logit_scale.exp() * image_features @ text_features.T
        target = torch.arange(len(idx))
        loss = (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target)) / 2
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        with torch.no_grad():
            model.logit_scale.clamp_(0, math.log(100))
        losses.append(loss.item())
        if step % 50 == 0:
            bar.set_postfix(loss=f"{np.mean(losses[-50:]):.3f}")
    seconds = time.perf_counter() - started

    from safetensors.torch import save_file

    model.eval()
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    with atomic_path(out_path) as tmp:
        save_file(state, str(tmp))
    record = {
        "world_version": VERSION,
        "config": asdict(config),
        "train_set": _portable(train_dir),
        "train_images_sha256": sha256_file(train_dir / "images.npy"),
        "final_loss": float(np.mean(losses[-50:])),
        "parameters": sum(p.numel() for p in model.parameters()),
        "samples_seen": config.steps * config.batch_size,
    }
    # The sidecar is provenance and must be identical on every rerun (DVC hashes it);
    # wall time is not, so it is returned (and logged by the CLI) but not stored beside the weights.
    write_json_atomic(out_path.with_suffix(".json"), record)
    return {**record, "train_seconds": round(seconds, 1)}


def _portable(path: Path) -> str:
    """``path`` relative to the build root when it lies under it, so records do not embed the clone's location."""
    from common.paths import build_root

    try:
        return path.resolve().relative_to(build_root().resolve()).as_posix()
    except ValueError:
        return path.name
