"""Hugging Face entries: a pinned snapshot of a dataset or model repository, with a marker that makes later fetches
offline."""
from __future__ import annotations

import contextlib
import datetime as _dt
import logging
from pathlib import Path

from common.files.io import write_json_atomic
from common.registry.errors import DownloadError
from common.registry.markers import SNAPSHOT_MARKER, read_marker
from common.registry.sources import Source

log = logging.getLogger(__name__)


def fetch_snapshot(source: Source, root: Path, *, force: bool) -> Path:
    """Snapshot a Hugging Face repository into ``<data_root>/<dest>``; a marker makes later calls offline."""
    local_dir = source.dest_path(root)
    marker = local_dir / SNAPSHOT_MARKER
    wanted = {"repo_id": source.repo_id, "repo_type": source.repo_type, "revision": source.revision,
              "allow_patterns": list(source.allow_patterns)}
    if not force and marker.is_file():
        recorded = read_marker(marker)
        if all(recorded.get(k) == v for k, v in wanted.items()):
            return local_dir
    rev = source.revision or "main (unpinned)"
    connected_cmd = (
        f"hf download {source.repo_id} --repo-type {source.repo_type}"
        + (f" --revision {source.revision}" if source.revision else "")
        + "".join(f" --include '{p}'" for p in source.allow_patterns)
        + f" --local-dir {source.dest}"
    )
    advice = (
        f"This needs internet access to huggingface.co (and HF_HUB_OFFLINE unset). On a connected machine run "
        f"`python -m common fetch {source.key}` (or `{connected_cmd}` from the data root; `huggingface-cli download` "
        f"on older huggingface_hub) and copy the folder to {local_dir}; a folder fetched with `python -m common "
        f"fetch` carries {SNAPSHOT_MARKER}, which makes later fetches here return it without the network."
    )
    try:  # deferred: an optional package, needed only when a snapshot is fetched; its absence is this entry's error
        from huggingface_hub import snapshot_download
    except ImportError as exc:
        raise DownloadError(
            f"{source.key}: huggingface_hub is not installed (pip install huggingface_hub); needed for "
            f"{source.repo_type} {source.repo_id!r}. {advice}"
        ) from exc
    created = not local_dir.exists()
    try:
        local_dir.mkdir(parents=True, exist_ok=True)
        snapshot_download(
            repo_id=source.repo_id,
            repo_type=source.repo_type,
            revision=source.revision,
            local_dir=str(local_dir),
            allow_patterns=list(source.allow_patterns) or None,
        )
    except Exception as exc:  # noqa: BLE001 - every failure becomes one clear DownloadError
        if created:
            with contextlib.suppress(OSError):
                local_dir.rmdir()  # only if still empty: leave nothing behind for a failed first attempt
        raise DownloadError(
            f"{source.key}: could not download Hugging Face {source.repo_type} {source.repo_id!r} "
            f"(revision {rev}) into {local_dir}: {type(exc).__name__}: {exc}. {advice}"
        ) from exc
    write_json_atomic(marker, {**wanted, "completed": _dt.datetime.now(_dt.timezone.utc)
                               .replace(microsecond=0).isoformat()})
    if not source.revision:
        log.warning("%s: %s fetched at an unpinned revision (main); pin `revision` in the registry",
                    source.key, source.repo_id)
    return local_dir
