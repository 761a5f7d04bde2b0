"""The scoring engine: one way to score every task shape, fast and exactly like the official loops.

Each unique image and each unique text is encoded once per model, across all items and categories
(SugarCrepe's 7,511 examples share 1,560 images), in batches, through the on-disk embedding cache.
Images are keyed by the sha256 of their bytes; texts by the sha256 of their token ids, so two strings
the tokenizer maps to the same tokens share one embedding and tie exactly, as they do in a
per-example loop.

Decisions follow the official per-example rule: an item is correct only when its first candidate
scores strictly higher than every other candidate; ties count as wrong, and are counted.
"""
from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import torch
from tqdm import tqdm

from common.cache import EmbeddingCache
from common.io import sha256_file
from common.tasks import DatasetError, ImageToTextItem, TextToImageItem
from common.zoo import EmbeddingModel


@dataclass(frozen=True)
class EngineConfig:
    image_batch_size: int = 64
    text_batch_size: int = 256
    num_workers: int = 0
    """Image decoding processes; 0 decodes in the main process (best on two cores)."""
    shard_size: int = 1024
    """Embeddings per cache shard: the most work an interruption can lose."""
    progress: bool = True


@dataclass(frozen=True)
class Outcome:
    item_id: str
    group: str
    scores: tuple[float, ...]
    correct: bool
    tie: bool


@dataclass(frozen=True)
class GroupScore:
    n: int
    correct: int
    ties: int

    @property
    def accuracy(self) -> float:
        return self.correct / self.n if self.n else float("nan")


@dataclass
class SelectionResult:
    """Per-item outcomes of a choose-one-of-K task for one model."""

    model: str
    fingerprint: str
    task: str
    outcomes: list[Outcome] = field(default_factory=list)

    def by_group(self) -> dict[str, GroupScore]:
        counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
        for o in self.outcomes:
            c = counts[o.group]
            c[0] += 1
            c[1] += o.correct
            c[2] += o.tie
        return {g: GroupScore(*c) for g, c in counts.items()}

    def macro_accuracy(self) -> float:
        groups = self.by_group()
        return float(np.mean([g.accuracy for g in groups.values()]))

    @property
    def ties(self) -> int:
        return sum(o.tie for o in self.outcomes)


def decide(scores: np.ndarray) -> tuple[bool, bool]:
    """(correct, tie) under the official rule: candidate 0 must beat every other strictly."""
    best_other = scores[1:].max()
    return bool(scores[0] > best_other), bool(scores[0] == best_other)


class _ImageFiles(torch.utils.data.Dataset):
    def __init__(self, paths: Sequence[Path], model: EmbeddingModel, owners: dict[Path, list[str]]):
        self.paths, self.model, self.owners = list(paths), model, owners

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int) -> torch.Tensor:
        path = self.paths[i]
        try:
            return self.model.load_image(path)
        except Exception as exc:
            raise DatasetError(f"unreadable image {path} (used by {_owners_text(self.owners, path)}): {exc}") from exc


def _owners_text(owners: dict[Path, list[str]], path: Path, limit: int = 5) -> str:
    ids = owners.get(path, [])
    more = f" and {len(ids) - limit} more" if len(ids) > limit else ""
    return ", ".join(ids[:limit]) + more


class Engine:
    def __init__(self, model: EmbeddingModel, config: EngineConfig | None = None, cache_root: Path | None = None):
        self.model = model
        self.config = config or EngineConfig()
        self.image_cache = EmbeddingCache(model.fingerprint, "images", cache_root)
        self.text_cache = EmbeddingCache(model.fingerprint, "texts", cache_root)
        self._file_keys: dict[Path, str] = {}

    # -- images ---------------------------------------------------------------------------------
    def image_keys(self, paths: Sequence[Path], owners: dict[Path, list[str]]) -> list[str]:
        keys = []
        for path in paths:
            if path not in self._file_keys:
                try:
                    self._file_keys[path] = sha256_file(path)
                except OSError as exc:
                    raise DatasetError(
                        f"missing or unreadable image {path} (used by {_owners_text(owners, path)}): {exc}"
                    ) from exc
            keys.append(self._file_keys[path])
        return keys

    def image_embeddings(self, paths: Sequence[Path], owners: dict[Path, list[str]] | None = None) -> np.ndarray:
        """Embeddings of ``paths`` (rows in order), encoding only images the cache lacks."""
        owners = owners or {}
        keys = self.image_keys(paths, owners)
        missing = set(self.image_cache.missing(keys))
        todo = list(dict.fromkeys(p for p, k in zip(paths, keys) if k in missing))
        if todo:
            cfg = self.config
            loader = torch.utils.data.DataLoader(
                _ImageFiles(todo, self.model, owners), batch_size=cfg.image_batch_size,
                num_workers=cfg.num_workers, shuffle=False,
            )
            bar = tqdm(total=len(todo), desc=f"encode images [{self.model.name}]", disable=not cfg.progress, mininterval=2)
            pending_keys: list[str] = []
            pending: list[np.ndarray] = []
            done = 0
            for pixels in loader:
                batch_keys = [self._file_keys[p] for p in todo[done: done + len(pixels)]]
                done += len(pixels)
                pending.append(self.model.encode_images(pixels).numpy())
                pending_keys.extend(batch_keys)
                if len(pending_keys) >= cfg.shard_size:
                    self.image_cache.put(pending_keys, np.concatenate(pending))
                    pending_keys, pending = [], []
                bar.update(len(pixels))
            self.image_cache.put(pending_keys, np.concatenate(pending) if pending else np.zeros((0, 0)))
            bar.close()
        return self.image_cache.get(keys)

    # -- texts ----------------------------------------------------------------------------------
    def text_embeddings(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of ``texts`` (rows in order); one encoding per distinct token sequence."""
        unique = list(dict.fromkeys(texts))
        tokens = self.model.tokenize(unique) if unique else torch.zeros((0, 0), dtype=torch.long)
        key_of = {t: hashlib.sha256(row.numpy().tobytes()).hexdigest() for t, row in zip(unique, tokens)}
        missing = set(self.text_cache.missing(key_of.values()))
        rows = {}
        for t, row in zip(unique, tokens):
            if key_of[t] in missing and key_of[t] not in rows:
                rows[key_of[t]] = row
        if rows:
            cfg = self.config
            # Similar lengths share a batch, so little padding is encoded (models that drop trailing
            # padding then run on short sequences; others are unaffected).
            todo_keys = sorted(rows, key=lambda k: int((rows[k] != 0).sum()))
            bar = tqdm(total=len(todo_keys), desc=f"encode texts [{self.model.name}]", disable=not cfg.progress, mininterval=2)
            pending_keys: list[str] = []
            pending: list[np.ndarray] = []
            for start in range(0, len(todo_keys), cfg.text_batch_size):
                chunk = todo_keys[start: start + cfg.text_batch_size]
                pending.append(self.model.encode_tokens(torch.stack([rows[k] for k in chunk])).numpy())
                pending_keys.extend(chunk)
                if len(pending_keys) >= cfg.shard_size:
                    self.text_cache.put(pending_keys, np.concatenate(pending))
                    pending_keys, pending = [], []
                bar.update(len(chunk))
            if pending_keys:
                self.text_cache.put(pending_keys, np.concatenate(pending))
            bar.close()
        return self.text_cache.get([key_of[t] for t in texts])

    # -- task shapes ----------------------------------------------------------------------------
    def _embed(self, image_owners: Iterable[tuple[Path, str]], texts: Iterable[str]):
        """Embeddings of every distinct image and text of a task, with row look-ups (float64)."""
        owners = _owners(image_owners)
        images = list(owners)
        image_emb = self.image_embeddings(images, owners).astype(np.float64)
        unique_texts = list(dict.fromkeys(texts))
        text_emb = self.text_embeddings(unique_texts).astype(np.float64)
        image_row = {p: i for i, p in enumerate(images)}
        text_row = {t: i for i, t in enumerate(unique_texts)}
        return (lambda paths: image_emb[[image_row[p] for p in paths]],
                lambda strings: text_emb[[text_row[t] for t in strings]])

    def _result(self, task: str) -> SelectionResult:
        return SelectionResult(self.model.name, self.model.fingerprint, task)

    def image_to_text(self, items: Sequence[ImageToTextItem]) -> SelectionResult:
        """Choose among K captions for each image; caption 0 is the correct one."""
        images, texts = self._embed(((it.image, it.origin or it.item_id) for it in items),
                                    (c for it in items for c in it.captions))
        result = self._result("image_to_text")
        for it in items:
            scores = texts(it.captions) @ images([it.image])[0]
            result.outcomes.append(Outcome(it.item_id, it.group, tuple(scores.tolist()), *decide(scores)))
        return result

    def text_to_image(self, items: Sequence[TextToImageItem]) -> SelectionResult:
        """Choose among K images for each caption; image 0 is the correct one."""
        images, texts = self._embed(((p, it.origin or it.item_id) for it in items for p in it.images),
                                    (it.caption for it in items))
        result = self._result("text_to_image")
        for it in items:
            scores = images(it.images) @ texts([it.caption])[0]
            result.outcomes.append(Outcome(it.item_id, it.group, tuple(scores.tolist()), *decide(scores)))
        return result


def _owners(pairs: Iterable[tuple[Path, str]]) -> dict[Path, list[str]]:
    owners: dict[Path, list[str]] = {}
    for path, owner in pairs:
        owners.setdefault(path, []).append(owner)
    return owners
