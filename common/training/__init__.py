"""One trainer for CLIP-style models, with three plug points: where the weights start (``Init``), the data
(``BatchSource``) and the loss; docs/training.md, "Three plug points", shows a paper plugging in."""
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
