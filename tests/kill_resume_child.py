"""Child processes of tests/common/test_kill_resume.py, run as ``python tests/kill_resume_child.py <job> ...``.

``train TRAIN_SET OUT STEPS EVERY``: trains a tiny CLIP through ``common.training.family.train_clip`` (resume states
under ``VLC_CACHE``), one thread. ``encode IMAGES_DIR OUT_NPZ``: embeds every PNG of the folder and a set of captions
with a random-weight mini-vit-xs through the engine (cache under ``VLC_CACHE``), printing what the cache lacked
at the start as one JSON line.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SHARD = 32
"""Cache shard size: a multiple of both batch sizes, so a resumed run's batches are the uninterrupted run's."""


def captions(n: int) -> list[str]:
    colours = ["red", "green", "blue", "yellow", "purple", "orange", "white", "black"]
    shapes = ["cube", "sphere", "cone", "ring", "star", "cylinder"]
    return [f"a {colours[i % 8]} {shapes[(i // 8) % 6]} left of {i // 48} {colours[(i * 5) % 8]} things"
            for i in range(n)]


def train(train_set: str, out: str, steps: str, every: str) -> None:
    from common.training.family import train_clip
    from common.training.trainer import TrainConfig

    config = TrainConfig(steps=int(steps), batch_size=32, lr=2e-3, warmup_steps=2, checkpoint_every=int(every))
    record = train_clip("mini-vit-xs", 96, config, Path(train_set), Path(out), progress=False)
    print(json.dumps({"final_loss": record["final_loss"]}), flush=True)


def encode(images_dir: str, out: str) -> None:
    import numpy as np

    from common.evaluation.engine import Engine, EngineConfig
    from common.zoo import random_model

    engine = Engine(random_model("mini-vit-xs"), EngineConfig(
        image_batch_size=16, text_batch_size=SHARD, shard_size=SHARD, num_workers=0, progress=False))
    images = sorted(Path(images_dir).glob("*.png"))
    texts = captions(4 * SHARD)
    keys = engine.image_keys([engine_ref(p) for p in images], {})
    print(json.dumps({"images_missing": len(engine.image_cache.missing(keys)),
                      "image_shards": len(list(engine.image_cache.directory.glob("shard-*.npz")))}), flush=True)
    embeddings = engine.embed(((p, p.name) for p in images), texts)
    np.savez(out, images=embeddings.image_matrix, texts=embeddings.text_matrix)


def engine_ref(path: Path):
    from common.files.tasks import as_ref

    return as_ref(path)


if __name__ == "__main__":
    import torch

    torch.set_num_threads(1)  # float sums split by thread count: one thread, the same in every process
    {"train": train, "encode": encode}[sys.argv[1]](*sys.argv[2:])
