"""On-disk embedding cache, keyed by model fingerprint and content hash.

Layout: ``<cache root>/embeddings/<model fingerprint>/<modality>/shard-*.npz``; each shard holds the
content keys (sha256 of the image file's bytes, or of the caption text) and their float32 embeddings.
Shards are written atomically as soon as a chunk is encoded, so an interrupted run keeps everything
it finished, and a rerun, or another benchmark sharing images or captions, encodes only what is new.
Embeddings are stored exactly as computed, so cached and fresh results are bit-identical.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from common.io import atomic_path
from common.paths import cache_root


class EmbeddingCache:
    def __init__(self, fingerprint: str, modality: str, root: Path | None = None):
        self.directory = (root or cache_root()) / "embeddings" / fingerprint / modality
        self._index: dict[str, np.ndarray] | None = None

    def _load(self) -> dict[str, np.ndarray]:
        if self._index is None:
            index: dict[str, np.ndarray] = {}
            for shard in sorted(self.directory.glob("shard-*.npz")):
                with np.load(shard, allow_pickle=False) as data:
                    for key, row in zip(data["keys"].tolist(), data["embeddings"]):
                        index[key] = row
            self._index = index
        return self._index

    def __len__(self) -> int:
        return len(self._load())

    def missing(self, keys: Iterable[str]) -> list[str]:
        index = self._load()
        return [k for k in dict.fromkeys(keys) if k not in index]

    def get(self, keys: Sequence[str]) -> np.ndarray:
        index = self._load()
        return np.stack([index[k] for k in keys]) if keys else np.zeros((0, 0), dtype=np.float32)

    def put(self, keys: Sequence[str], embeddings: np.ndarray) -> None:
        if len(keys) != len(embeddings):
            raise ValueError(f"{len(keys)} keys for {len(embeddings)} embeddings")
        if not keys:
            return
        embeddings = np.ascontiguousarray(embeddings, dtype=np.float32)
        name = hashlib.sha256("\n".join(keys).encode()).hexdigest()[:20]
        with atomic_path(self.directory / f"shard-{name}.npz") as tmp:
            with open(tmp, "wb") as fh:
                np.savez(fh, keys=np.array(keys), embeddings=embeddings)
        index = self._load()
        for key, row in zip(keys, embeddings):
            index[key] = row
