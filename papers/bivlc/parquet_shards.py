"""Reading a Hugging Face dataset snapshot's parquet shards, which BiVLC's benchmark (``tables``) and its TROHN
training sets (``sets_full``) both do: a module of its own, so that neither stage's code is the other's dependency."""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Iterator, Sequence

from common.files.io import atomic_path
from common.files.tasks import DatasetError


def split_files(snapshot: Path, split: str, error: type[Exception]) -> list[Path]:
    """A Hugging Face dataset snapshot's parquet shards of one split (``data/<split>-*.parquet``), in name order."""
    snapshot = Path(snapshot)
    files = sorted(p for p in snapshot.rglob("*.parquet")
                   if p.name.split("-")[0] == split or split in p.relative_to(snapshot).parts[:-1])
    if not files:
        raise error(f"{snapshot}: no parquet file of split {split!r} (expected data/{split}-*.parquet)")
    return files


def parquet_records(path: Path, columns: Sequence[str]) -> Iterator[tuple[str, dict]]:
    """A shard's ``columns`` row by row, each with where it is (``<file>: row <k>``)."""
    # deferred: loads pyarrow only when called
    import pyarrow.parquet as pq

    handle = pq.ParquetFile(path)
    missing = [c for c in columns if c not in handle.schema_arrow.names]
    if missing:
        raise DatasetError(f"{path}: no column(s) {missing} (found {handle.schema_arrow.names})")
    batches = handle.iter_batches(batch_size=64, columns=list(columns))
    for k, record in enumerate(r for batch in batches for r in batch.to_pylist()):
        yield f"{path.name}: row {k}", record


def image_bytes(where: str, column: str, value) -> bytes:
    """An image cell's bytes (a {bytes, path} struct or raw bytes), refused when empty."""
    data = value.get("bytes") if isinstance(value, dict) else value
    if not isinstance(data, (bytes, bytearray)) or not data:
        raise DatasetError(f"{where}: column {column!r} holds no image bytes")
    return bytes(data)


def cache_image(data: bytes, image_dir: Path, webp: bool = True) -> Path:
    """The image's file in a content-addressed cache, written (atomically) when it is not there yet; ``webp``
    False names a WebP image ``.img``, as the TROHN sets' rows always have."""
    ext = (".png" if data.startswith(b"\x89PNG") else ".jpg" if data.startswith(b"\xff\xd8")
           else ".webp" if webp and data[:4] == b"RIFF" and data[8:12] == b"WEBP" else ".img")
    path = Path(image_dir) / f"{hashlib.sha256(data).hexdigest()}{ext}"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp:
            Path(tmp).write_bytes(data)
    return path
