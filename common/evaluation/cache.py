"""On-disk embedding cache, ``<cache root>/embeddings/<model fingerprint>/<modality>/shard-*.npz`` (content keys and
their float32 embeddings, stored exactly as computed), each shard written atomically as soon as a chunk is encoded, so
an interrupted run keeps what it finished. A corrupt shard or an unwritable cache is a warning, never a failed run
(docs/eval.md, "Bad input, the embedding cache and image modes").
"""
from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from common.files.io import atomic_path
from common.paths import cache_root

log = logging.getLogger(__name__)

_UNWRITABLE: set[Path] = set()
"""Cache roots already reported as unwritable in this process (one warning for a run, not one per shard)."""


def _read_shard(shard: Path) -> dict[str, np.ndarray]:
    with np.load(shard, allow_pickle=False) as data:
        keys, embeddings = data["keys"], data["embeddings"]
        if keys.ndim != 1 or embeddings.ndim != 2 or len(keys) != len(embeddings):
            raise ValueError(f"keys {keys.shape} and embeddings {embeddings.shape} do not match")
        return dict(zip(keys.tolist(), embeddings))


def _move_aside(shard: Path) -> Path:
    aside = shard.with_name(shard.name + ".corrupt")
    try:
        os.replace(shard, aside)
    except OSError:  # a read-only cache: leave it, the entries are recomputed in memory all the same
        return shard
    return aside


class EmbeddingCache:
    def __init__(self, fingerprint: str, modality: str, root: Path | None = None):
        self.root = root or cache_root()
        self.directory = self.root / "embeddings" / fingerprint / modality
        self._index: dict[str, np.ndarray] | None = None

    def _shards(self) -> list[Path]:
        try:
            return sorted(self.directory.glob("shard-*.npz"))
        except OSError:  # an unreadable cache folder: nothing cached (writing it will warn)
            return []

    def _load(self) -> dict[str, np.ndarray]:
        if self._index is None:
            index: dict[str, np.ndarray] = {}
            for shard in self._shards():
                try:
                    rows = _read_shard(shard)
                except Exception as exc:  # truncated, garbage, wrong arrays: a cache is never worth a failed run
                    aside = _move_aside(shard)
                    log.warning("corrupt embedding-cache shard %s (%s: %s); moved to %s, its entries will be "
                                "recomputed", shard, type(exc).__name__, exc, aside)
                    continue
                index.update(rows)
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
        index = self._load()
        index.update(zip(keys, embeddings))  # in memory first: the run goes on whether the shard is written or not
        name = hashlib.sha256("\n".join(keys).encode()).hexdigest()[:20]
        try:
            with atomic_path(self.directory / f"shard-{name}.npz") as tmp, open(tmp, "wb") as fh:
                np.savez(fh, keys=np.array(keys), embeddings=embeddings)
        except OSError as exc:  # VLC_CACHE a file or read-only, the disk full: a warning, never a failed run
            if self.root not in _UNWRITABLE:
                _UNWRITABLE.add(self.root)
                reason = exc.strerror or str(exc)
                where = f" ({exc.filename})" if exc.filename else ""
                log.warning("cannot write the embedding cache in %s (VLC_CACHE): %s%s; going on without caching "
                            "(embeddings are recomputed next time): set VLC_CACHE to a writable folder with free "
                            "space to keep them", self.root, reason, where)
