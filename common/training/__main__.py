"""Smoke run of the trainer on synthetic data, one process or many (docs/training.md, "The smoke run": how losses are
named and what each writes)::

    python -m common.training smoke --out /tmp/smoke --loss clip --loss hard-negative-clip
    torchrun --standalone --nproc_per_node 2 -m common.training smoke --out /tmp/smoke --loss clip
    python -m common.training smoke --out /tmp/smoke --loss-class papers.bivlc.losses:TrohnImgLoss
    python -m common.training smoke --out /tmp/smoke --freeze image --loss-class papers.conclip.losses:ConClipLoss
    python -m common.training smoke --out /tmp/smoke --labels --loss-class papers.bivlc.losses:DetectorLoss,tower=image
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from common.files.io import write_json_atomic
from common.training import cost
from common.training.data import SyntheticBatches
from common.training.distributed import init_from_env, shutdown
from common.training.loss_spec import SHARED_LOSSES, loss_by_path, shared_loss
from common.training.model_init import FromScratch
from common.training.trainer import PARTS, TrainConfig, train


def smoke(args: argparse.Namespace) -> int:
    cfg = cost.arch_config(args.arch)
    if cfg is None:
        print(f"unknown architecture {args.arch!r}", file=sys.stderr)
        return 2
    losses = args.losses or [shared_loss("clip")]
    names = [x.name for x in losses]
    if len(set(names)) != len(names):
        print(f"two losses would write the same files: {names}", file=sys.stderr)
        return 2
    world = init_from_env(args.device)
    try:
        for spec in losses:
            batches = SyntheticBatches(
                image_size=cfg["vision_cfg"]["image_size"], context_length=cfg["text_cfg"]["context_length"],
                images_per_sample=getattr(spec.cls, "image_segments", 1),
                texts_per_sample=getattr(spec.cls, "text_segments", 1), labels=args.labels)
            config = TrainConfig(steps=args.steps, batch_size=args.batch_size, lr=args.lr, warmup_steps=args.warmup,
                                 accum=args.accum, seed=args.seed, freeze=tuple(args.freeze))
            result = train(config, FromScratch(args.arch), batches, spec.factory(cfg["embed_dim"]),
                           args.out / f"{spec.name}.safetensors", world=world, resume=False)
            if world.is_main:
                write_json_atomic(args.out / f"{spec.name}.losses.json", list(result.losses))
                print(f"{spec.name}: world {world.world_size}, losses "
                      + " ".join(f"{x:.6f}" for x in result.losses), flush=True)
    finally:
        shutdown(world)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m common.training")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("smoke", help="train a tiny model on synthetic data for a few steps",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--loss", dest="losses", action="append", type=shared_loss,
                   metavar="{" + ",".join(SHARED_LOSSES) + "}", help="a shared loss by short name (repeatable)")
    p.add_argument("--loss-class", dest="losses", action="append", type=loss_by_path,
                   metavar="MODULE:CLASS[,KEY=VALUE...]", help="any loss class by import path (repeatable)")
    p.add_argument("--freeze", "--frozen", action="append", default=[], choices=PARTS,
                   help="a part that keeps its weights, for every loss of the run (repeatable)")
    p.add_argument("--labels", action="store_true", help="batches carry 0/1 'labels' (for losses that read them)")
    p.add_argument("--arch", default="mini-vit-xs")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=8, help="global batch")
    p.add_argument("--accum", type=int, default=1)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    p.set_defaults(func=smoke)

    cost.register(sub)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
