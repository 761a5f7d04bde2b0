"""One trainer for CLIP-style models, with three plug points: where the weights start (``Init``), the data
(``BatchSource``) and the loss (a module returning named ``*_loss`` terms); docs/training.md describes them. A paper
plugs in without touching this package, e.g. hard-negative fine-tuning (its batches hold ``images`` (B, 2, 3, H, W)
and ``texts`` (B, 4, L), a pure function of (seed, step))::

    world = init_from_env()
    config = TrainConfig(steps=5000, batch_size=256, lr=1e-6, warmup_steps=50, checkpoint_every=500)
    result = train(config, FromPretrained("ViT-B-32", "openai"), MyBatches(...), HardNegativeClipLoss,
                   out / "model.safetensors", world=world, validate=my_validation_accuracy)
    shutdown(world)

run as ``python`` on that file, or ``torchrun --standalone --nproc_per_node N`` on it."""
from common.training.data import BatchSource, MiniWorldBatches, SyntheticBatches
from common.training.distributed import (
    DistributedContext, gather_plain, gather_segments, gather_with_grad_slot, init_from_env, shutdown)
from common.training.losses import (
    ClipLoss, ContrastiveLoss, ExtraTextNegativesLoss, HardNegativeClipLoss, arange_labels)
from common.training.model_init import FromCheckpoint, FromPretrained, FromScratch, FromZoo, Init, Initialized
from common.training.optim import clamp_logit_scale, cosine_with_warmup, exclude_from_wd, param_groups
from common.training.trainer import Towers, TrainConfig, TrainResult, train, train_step

__all__ = [
    "BatchSource", "MiniWorldBatches", "SyntheticBatches",
    "DistributedContext", "gather_plain", "gather_segments", "gather_with_grad_slot", "init_from_env", "shutdown",
    "ClipLoss", "ContrastiveLoss", "ExtraTextNegativesLoss", "HardNegativeClipLoss", "arange_labels",
    "FromCheckpoint", "FromPretrained", "FromScratch", "FromZoo", "Init", "Initialized",
    "clamp_logit_scale", "cosine_with_warmup", "exclude_from_wd", "param_groups",
    "Towers", "TrainConfig", "TrainResult", "train", "train_step",
]
