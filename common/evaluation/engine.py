"""The encoding engine: every unique image and every unique text of a task encoded once per model, fast, cached.

Images are keyed by the sha256 of the file's bytes (plus a transform's and a non-RGB decoding's identity); texts by
the sha256 of their token ids, so two strings the tokenizer maps to the same tokens share one embedding and tie
exactly, as they do in a per-example loop. An embedding is the same bits whatever else shares its batch
(``MIN_BATCH_ROWS``; a text batch holds one token length), so what the cache serves is what a cold run computes.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Literal, Sequence

import numpy as np
import torch
from tqdm import tqdm

from common.errors import WorkspaceError
from common.evaluation.cache import EmbeddingCache
from common.files.image_transforms import decoding_identity
from common.files.tasks import DatasetError, Image, ImageRef, as_ref
from common.pipeline.machine import usable_cores
from common.zoo import EmbeddingModel


@dataclass(frozen=True)
class EngineConfig:
    image_batch_size: int = 64
    text_batch_size: int = 256
    num_workers: int | None = None
    """Image decoding processes. None: all cores but one when the model runs on a GPU (decoding is then the
    bottleneck), none on the CPU (the encoder needs the cores; best on two); 0 decodes in the main process."""
    decode_batch_size: int = 16
    """Images a decoding worker hands over at a time (regrouped into ``image_batch_size``): small, so that all workers
    stay busy (1,560 images in batches of 256 would keep only 7 of 15 busy)."""
    shard_size: int = 1024
    """Embeddings per cache shard: the most work an interruption can lose."""
    progress: bool = True
    precision: Literal["fp32", "bf16", "fp16"] = "fp32"
    """bf16 autocast on CUDA: faster, but decisions can flip at tiny margins, so fp32 stays the default. fp16: the
    weights cast to half precision as OpenAI's ``clip.load`` casts them on CUDA (``common.zoo.FP16_WHY``) and every
    similarity rounded to half precision (``Embeddings.round_scores``), as the evaluators of papers that load CLIP
    with ``clip.load`` computed them: exact ties are then common, and a paper's tie rule decides them."""

    def workers_for(self, device: str) -> int:
        if self.num_workers is not None:
            return self.num_workers
        return max(1, min(15, usable_cores() - 1)) if device.startswith("cuda") else 0


class _ImageFiles(torch.utils.data.Dataset):
    """Decoded, preprocessed (and transformed) images; ``content_keys`` are the files' sha256, which seed transforms."""

    def __init__(self, refs: Sequence[ImageRef], content_keys: Sequence[str], model: EmbeddingModel,
                 owners: dict[ImageRef, list[str]]):
        self.refs, self.content_keys, self.model, self.owners = list(refs), list(content_keys), model, owners

    def __len__(self) -> int:
        return len(self.refs)

    def __getitem__(self, i: int) -> torch.Tensor:
        ref = self.refs[i]
        try:
            pixels = self.model.load_image(ref.path)
        except WorkspaceError as exc:  # names the file already (an image mode refused by name)
            raise DatasetError(f"{exc} (image used by {_owners_text(self.owners, ref)})") from exc
        except Exception as exc:
            raise DatasetError(f"unreadable image {ref.path} (used by {_owners_text(self.owners, ref)}): {exc}") from exc
        return pixels if ref.transform is None else ref.transform(pixels, self.content_keys[i])


TOKENIZE_CHUNK = 512

MIN_BATCH_ROWS = 8
"""The fewest rows a batch is encoded with (a shorter one is padded with copies of its last row): with fewer than
four, the CPU's matrix products take another path and a row's last bits change (measured on the mini CLIPs on the
pinned CPU profile, images and texts alike: batches of 1-3 rows differ, any batch of 4 to 256 rows gives the same bits
in any order). Without the floor an embedding depended on what else its batch held, and through the cache on which
stage had encoded it first: a from-scratch ``make repro`` then wrote other last digits into ARO's mini predictions
than the relocked workspace had."""

ENCODING = "e2"
"""In the cache key: an embedding cached by an engine that encoded rows differently is never served as this one's
("e2", 2026-12: the batch-invariant encoding above; older embeddings carried their batch's shape in their last bits)."""


def _padded(batch: torch.Tensor) -> torch.Tensor:
    """``batch`` with copies of its last row up to ``MIN_BATCH_ROWS`` (the caller keeps the first ``len(batch)``)."""
    short = MIN_BATCH_ROWS - len(batch)
    return batch if short <= 0 else torch.cat([batch, batch[-1:].expand(short, *batch.shape[1:])])


def _length_batches(sorted_lengths: np.ndarray, size: int) -> list[tuple[int, int]]:
    """(start, stop) of batches of at most ``size`` rows, each of one length (``sorted_lengths`` ascending): a model
    that drops trailing padding runs a batch at its longest text's length, and a text's last bits depend on that
    length (measured: the mini CLIP's embeddings of 64 ten-token captions all change between lengths 11 and 12)."""
    cuts = [0, *(np.flatnonzero(np.diff(sorted_lengths)) + 1).tolist(), len(sorted_lengths)]
    return [(start, min(start + size, stop))
            for begin, stop in zip(cuts, cuts[1:]) for start in range(begin, stop, size)]


class _Work(torch.utils.data.Dataset):
    """A task's CPU work for one pool of worker processes: its token chunks first (the GPU encodes them while the
    workers decode the images), then its images in batches. One pool: a second of 15 workers cost as much as a third
    of the decoding (each start forks the whole process)."""

    def __init__(self, text_chunks: list[list[str]], tokenize, images: "_ImageFiles", decode_batch: int):
        self.text_chunks, self.tokenize, self.images, self.decode_batch = text_chunks, tokenize, images, decode_batch
        self.image_batches = -(-len(images) // decode_batch)

    def __len__(self) -> int:
        return len(self.text_chunks) + self.image_batches

    def __getitem__(self, i: int) -> torch.Tensor | _WorkerError:
        try:
            if i < len(self.text_chunks):
                return self.tokenize(self.text_chunks[i])
            start = (i - len(self.text_chunks)) * self.decode_batch
            return torch.stack([self.images[j] for j in range(start, min(start + self.decode_batch, len(self.images)))])
        except DatasetError as exc:
            if torch.utils.data.get_worker_info() is None:  # decoded here: the error propagates as it is
                raise
            return _WorkerError(str(exc))


@dataclass(frozen=True)
class _WorkerError:
    """A worker process's bad-input error, handed to the main process as a value: raised there, torch would re-raise
    it with the worker's traceback inside its message, and the one ``error:`` line would be a page."""

    message: str


def _raise_worker_errors(batches: Iterator[torch.Tensor | _WorkerError]) -> Iterator[torch.Tensor]:
    for batch in batches:
        if isinstance(batch, _WorkerError):
            raise DatasetError(batch.message)
        yield batch


def _regroup(batches: Iterator[torch.Tensor], size: int) -> Iterator[torch.Tensor]:
    """Decoded batches, concatenated into batches of ``size`` (the last one smaller), in order."""
    held: list[torch.Tensor] = []
    count = 0
    for batch in batches:
        held.append(batch)
        count += len(batch)
        while count >= size:
            joined = torch.cat(held) if len(held) > 1 else held[0]
            yield joined[:size]
            rest = joined[size:]
            held, count = ([rest] if len(rest) else []), len(rest)
    if held:
        yield torch.cat(held) if len(held) > 1 else held[0]


def _hash_file(path: Path) -> tuple[str | None, str | None, OSError | None]:
    """An image file's sha256 and its decoding's identity (``decoding_identity``: None for RGB and grey files), or the
    error reading it; the file is read once for both (reading it twice cost a third of the hashing)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        return None, None, exc
    return hashlib.sha256(data).hexdigest(), decoding_identity(io.BytesIO(data)), None


def _owners_text(owners: dict[ImageRef, list[str]], ref: ImageRef, limit: int = 5) -> str:
    ids = owners.get(ref, [])
    more = f" and {len(ids) - limit} more" if len(ids) > limit else ""
    return ", ".join(ids[:limit]) + more


class _Phases:
    """Adds the wall seconds since the last lap to ``into[name]``."""

    def __init__(self, into: dict[str, float]):
        self.into, self.last = into, time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.into[name] = self.into.get(name, 0.0) + now - self.last
        self.last = now


@dataclass(frozen=True)
class Embeddings:
    """The embeddings of a task's distinct images and texts (float64 rows), looked up by image or text."""

    image_matrix: np.ndarray
    text_matrix: np.ndarray
    image_row: dict[ImageRef, int]
    text_row: dict[str, int]
    score_dtype: type | None = None
    """Half precision (``np.float16``) for an fp16 engine: what ``round_scores`` rounds similarities to."""

    def round_scores(self, scores: np.ndarray) -> np.ndarray:
        """Similarities as the engine's precision computes them: for fp16, the float64 product of the fp16 embeddings
        rounded once to fp16, approximating the model's half-precision product: an evaluator such as ARO's normalises
        in numpy float16 after encoding (here ``F.normalize`` inside the model), so a score can differ by one fp16
        ulp and a tie set by one member; fp32 and bf16 scores are returned as they are."""
        if self.score_dtype is None:
            return scores
        return np.asarray(scores).astype(self.score_dtype).astype(np.float64)

    def images(self, images: Sequence[Image]) -> np.ndarray:
        return self.image_matrix[[self.image_row[as_ref(i)] for i in images]]

    def texts(self, texts: Sequence[str]) -> np.ndarray:
        return self.text_matrix[[self.text_row[t] for t in texts]]


class NonFiniteEmbedding(WorkspaceError, ValueError):
    """A model gave a NaN or infinite embedding: no score of it may become a decision (a NaN compares false both ways,
    so every choice would silently count as wrong, or a tie)."""


def _finite(embeddings: np.ndarray, model: str, what: str) -> np.ndarray:
    """``embeddings`` when every value is finite, else ``NonFiniteEmbedding`` naming the model: checked before they
    enter the cache, so a damaged model never leaves a score behind."""
    bad = ~np.isfinite(embeddings)
    if bad.any():
        rows = int(bad.any(axis=tuple(range(1, embeddings.ndim))).sum()) if embeddings.ndim > 1 else int(bad.sum())
        raise NonFiniteEmbedding(f"model {model!r}: {rows} of {len(embeddings)} {what} embeddings are NaN or "
                                 f"infinite (damaged or diverged weights?); no score of it is counted")
    return embeddings


class PrecisionUnsupported(WorkspaceError, ValueError):
    """A model asked to run at a precision its backend has no path for."""


class Engine:
    def __init__(self, model: EmbeddingModel, config: EngineConfig | None = None, cache_root: Path | None = None):
        self.model = model
        self.config = config or EngineConfig()
        self.device = str(getattr(model, "device", "cpu"))
        if self.config.precision not in ("fp32", "bf16", "fp16"):
            raise ValueError(f"unknown precision {self.config.precision!r} (fp32, bf16 or fp16)")
        if self.config.precision == "bf16" and not self.device.startswith("cuda"):
            raise ValueError("precision bf16 is for CUDA; on the CPU the engine encodes in fp32")
        if self.config.precision == "fp16":  # half-precision weights: the model's at_precision("fp16")
            cast = getattr(model, "at_precision", None)
            if cast is None:
                raise PrecisionUnsupported(f"model {model.name!r} has no fp16 path (only open_clip models do); score "
                                           f"it with precision fp32 or bf16")
            self.model = cast("fp16")
        precision = "" if self.config.precision == "fp32" else f"-{self.config.precision}"
        key = f"{model.fingerprint}-{ENCODING}{precision}"
        self.image_cache = EmbeddingCache(key, "images", cache_root)
        self.text_cache = EmbeddingCache(key, "texts", cache_root)
        self._file_keys: dict[Path, str] = {}
        """Each image file's sha256 (what seeds a transform)."""
        self._decodings: dict[Path, str | None] = {}
        self.phase_seconds: dict[str, float] = {}
        """Wall seconds of each phase of ``embed``, summed over calls (what the bench prints)."""

    # -- images ---------------------------------------------------------------------------------
    def image_keys(self, refs: Sequence[ImageRef], owners: dict[ImageRef, list[str]]) -> list[str]:
        """Cache keys: the file's sha256, combined with its decoding's identity for a file neither RGB nor grey, and
        with the transform's identity when there is one."""
        new = list(dict.fromkeys(r.path for r in refs if r.path not in self._file_keys))
        if new:  # hashlib releases the GIL: threads read and hash files in parallel
            with ThreadPoolExecutor(max_workers=min(16, usable_cores())) as pool:
                hashed = list(pool.map(_hash_file, new))
            for path, (digest, decoding, error) in zip(new, hashed):
                if error is not None:
                    ref = next(r for r in refs if r.path == path)
                    raise DatasetError(
                        f"missing or unreadable image {path} (used by {_owners_text(owners, ref)}): {error}")
                self._file_keys[path], self._decodings[path] = digest, decoding
        keys = []
        for ref in refs:
            key = self._file_keys[ref.path]
            if self._decodings[ref.path] is not None:  # not decoded as before to_rgb: never an older embedding
                key = hashlib.sha256(f"{key}|{self._decodings[ref.path]}".encode()).hexdigest()
            if ref.transform is not None:
                key = hashlib.sha256(f"{key}|{ref.transform.identity}".encode()).hexdigest()
            keys.append(key)
        return keys

    def _token_chunks(self, texts: list[str], decoding: bool) -> list[list[str]]:
        """The texts cut into chunks for the worker processes to tokenise, or none (tokenised here): with workers, when
        they start anyway (images to decode) or the texts make two chunks or more."""
        chunks = [texts[i: i + TOKENIZE_CHUNK] for i in range(0, len(texts), TOKENIZE_CHUNK)]
        workers = self.config.workers_for(self.device)
        return chunks if workers and (decoding or min(workers, len(chunks)) >= 2) else []

    def _work(self, todo_refs: list[ImageRef], owners: dict[ImageRef, list[str]],
              text_chunks: list[list[str]] = ()) -> Iterator[torch.Tensor]:
        """The token chunks, then the decoded images in batches, from one pool of ``workers_for(device)`` processes
        or, without workers, in this process as consumed."""
        cfg = self.config
        workers = cfg.workers_for(self.device)
        decode_batch = min(cfg.decode_batch_size, cfg.image_batch_size) if workers else cfg.image_batch_size
        images = _ImageFiles(todo_refs, [self._file_keys[r.path] for r in todo_refs], self.model, owners)
        work = _Work(list(text_chunks), self.model.tokenize, images, decode_batch)
        if not len(work):
            return iter(())
        workers = min(workers, len(work))
        return _raise_worker_errors(iter(torch.utils.data.DataLoader(
            work, batch_size=None, num_workers=workers, shuffle=False, pin_memory=self.device.startswith("cuda"),
            prefetch_factor=max(2, -(-cfg.image_batch_size // decode_batch)) if workers else None)))

    def _encode(self, cache: EmbeddingCache, what: str, total: int,
                batches: Iterator[tuple[Sequence[str], torch.Tensor]]) -> None:
        """Encode ``batches`` of (cache keys, model inputs), shard by shard into ``cache``."""
        encode = self.model.encode_images if what == "image" else self.model.encode_tokens
        bar = tqdm(total=total, desc=f"encode {what}s [{self.model.name}]", disable=not self.config.progress,
                   mininterval=2)
        pending_keys: list[str] = []
        pending: list[np.ndarray] = []
        try:  # closed on an error too, so that an error line starts on a line of its own
            for keys, inputs in batches:
                with (torch.autocast("cuda", dtype=torch.bfloat16) if self.config.precision == "bf16"
                      else contextlib.nullcontext()):
                    pending.append(_finite(encode(_padded(inputs))[: len(keys)].float().numpy(), self.model.name,
                                           what))
                pending_keys.extend(keys)
                if len(pending_keys) >= self.config.shard_size:
                    cache.put(pending_keys, np.concatenate(pending))
                    pending_keys, pending = [], []
                bar.update(len(keys))
            if pending_keys:
                cache.put(pending_keys, np.concatenate(pending))
        finally:
            bar.close()

    def _encode_images(self, batches: Iterator[torch.Tensor], todo_keys: Sequence[str]) -> None:
        """Encode decoded image batches (regrouped into encoding batches), shard by shard into the cache."""
        if not todo_keys:
            return
        size = self.config.image_batch_size
        if self.device.startswith("cuda"):  # each pinned batch to the GPU as it comes, without waiting
            batches = (batch.to(self.device, non_blocking=True) for batch in batches)
        self._encode(self.image_cache, "image", len(todo_keys),
                     ((todo_keys[i * size: i * size + len(pixels)], pixels)
                      for i, pixels in enumerate(_regroup(batches, size))))

    # -- texts ----------------------------------------------------------------------------------
    def _embed_tokens(self, texts: list[str], tokens: torch.Tensor) -> np.ndarray:
        """Embeddings of the distinct ``texts`` (rows in order), one encoding per distinct token sequence, shortest
        first, a batch per length (``_length_batches``); on CUDA the token matrix goes to the GPU once, pinned."""
        token_rows = np.ascontiguousarray(tokens.numpy())
        keys = [hashlib.sha256(row.tobytes()).hexdigest() for row in token_rows]
        missing = set(self.text_cache.missing(keys))
        first_row: dict[str, int] = {}
        for row, key in enumerate(keys):
            if key in missing and key not in first_row:
                first_row[key] = row
        if first_row:
            cfg = self.config
            rows = np.fromiter(first_row.values(), dtype=np.int64, count=len(first_row))
            lengths = (token_rows[rows] != 0).sum(axis=1)
            by_length = np.argsort(lengths, kind="stable")
            order = rows[by_length]
            todo_keys = [keys[row] for row in order]
            on_gpu = index = None
            if self.device.startswith("cuda"):
                on_gpu = tokens.pin_memory().to(self.device, non_blocking=True)
                index = torch.from_numpy(order).to(self.device)

            def batch_of(start: int, stop: int) -> torch.Tensor:
                if on_gpu is not None:
                    return on_gpu[index[start: stop]]
                # numpy's gather: torch's indexing on the CPU took 15 ms a batch of 1,024 on two busy cores
                return torch.from_numpy(token_rows[order[start: stop]])

            self._encode(self.text_cache, "text", len(todo_keys),
                         ((todo_keys[start: stop], batch_of(start, stop))
                          for start, stop in _length_batches(lengths[by_length], cfg.text_batch_size)))
        return self.text_cache.get(keys)

    def _tokenize(self, texts: list[str]) -> torch.Tensor:
        """Token ids of ``texts``; spread over the decoding workers when there are any (tokenising is pure Python:
        10k captions take a second in one process, on the critical path of a GPU run)."""
        if not texts:
            return torch.zeros((0, 0), dtype=torch.long)
        chunks = self._token_chunks(texts, decoding=False)
        return torch.cat(list(self._work([], {}, chunks))) if chunks else self.model.tokenize(texts)

    # -- a task's images and texts --------------------------------------------------------------
    def embed(self, image_owners: Iterable[tuple[Image, str]], texts: Iterable[str]) -> Embeddings:
        """Embeddings of every distinct image and text of a task. ``image_owners`` pairs each image with the item
        that uses it, so an unreadable image is reported with the items it breaks. Texts are encoded while the
        workers decode images ahead (CPU decoding overlaps GPU encoding)."""
        clock = _Phases(self.phase_seconds)
        owners: dict[ImageRef, list[str]] = {}
        for image, owner in image_owners:
            owners.setdefault(as_ref(image), []).append(owner)
        refs = list(owners)
        keys = self.image_keys(refs, owners)
        missing = set(self.image_cache.missing(keys))  # the distinct images the cache lacks, in order of first use
        todo = list(dict.fromkeys((r, k) for r, k in zip(refs, keys) if k in missing))
        todo_refs, todo_keys = [r for r, _ in todo], [k for _, k in todo]
        unique_texts = list(dict.fromkeys(texts))
        chunks = self._token_chunks(unique_texts, decoding=bool(todo_refs))
        clock.lap("hash and look up")
        work = self._work(todo_refs, owners, chunks)  # with workers, tokenising and decoding start here
        clock.lap("start workers")
        tokens = torch.cat([next(work) for _ in chunks]) if chunks else self._tokenize(unique_texts)
        clock.lap("tokenise")
        text_matrix = self._embed_tokens(unique_texts, tokens).astype(np.float64)
        clock.lap("encode texts")
        self._encode_images(work, todo_keys)
        image_matrix = self.image_cache.get(keys).astype(np.float64)
        clock.lap("decode and encode images")
        return Embeddings(image_matrix, text_matrix, {r: i for i, r in enumerate(refs)},
                          {t: i for i, t in enumerate(unique_texts)},
                          np.float16 if self.config.precision == "fp16" else None)

    @property
    def identity(self) -> tuple[str, str]:
        """(model name, weights fingerprint): what every result of this engine is attributed to."""
        return self.model.name, self.model.fingerprint
