"""``python -m common fetch KEY_OR_GROUP...`` and ``python -m common sources``: the registry on the command line."""
from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from common import paths
from common.errors import UnknownName
from common.registry.errors import DownloadError, FetchError, RegistryError
from common.registry.fetch import fetch, fetch_group
from common.registry.lock import ChecksumLock
from common.registry.markers import EXTRACT_MARKER, SNAPSHOT_MARKER
from common.registry.sources import Source, default_registry, groups, sources_in_group


def register_cli(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``fetch`` and ``sources`` subcommands to an argparse subparsers object."""
    p = subparsers.add_parser(
        "fetch", help="download registry entries (by key or group), verified",
        description="Fetch registry entries by key or group into the data root, verifying sha256. "
                    "Uses the VLC_MIRROR mirror when set, else the network.",
    )
    p.add_argument("targets", nargs="+", metavar="KEY_OR_GROUP", help="a source key or a group name")
    p.add_argument("--force", action="store_true", help="fetch again even if a verified copy is present")
    p.add_argument("--data-root", type=Path, default=None, help="data root (default: VLC_DATA or <repo>/data)")
    p.add_argument("--mirror", type=Path, default=None, help="mirror root (default: VLC_MIRROR)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(func=run_fetch)

    s = subparsers.add_parser("sources", help="list registry entries",
                              description="List registry entries: key, method, license, size, sha256 pinned "
                                          "or not, present locally or not.")
    s.add_argument("--group", default=None, help="only this group")
    s.add_argument("--json", action="store_true", help="machine-readable output (every field)")
    s.add_argument("--data-root", type=Path, default=None, help="data root (default: VLC_DATA or <repo>/data)")
    s.set_defaults(func=run_sources)


def run_fetch(args: argparse.Namespace) -> int:
    """``fetch KEY_OR_GROUP...``: print each fetched path; raise one error listing every failure."""
    registry = default_registry()
    known_groups = groups(registry)
    kw: dict[str, Any] = dict(data_root=args.data_root, mirror=args.mirror, force=args.force,
                              progress=not args.no_progress, registry=registry)
    for target in args.targets:  # every name checked before anything is fetched
        if target not in registry and target not in known_groups:  # the close matches among keys and groups
            close = difflib.get_close_matches(target, [*known_groups, *registry], n=3, cutoff=0.6)
            hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
            raise UnknownName(f"unknown source key or group {target!r}{hint} (groups: "
                              f"{', '.join(sorted(known_groups))}; `python -m common sources` lists every key)")
    failures: list[str] = []
    for target in args.targets:
        try:
            paths_out = [fetch(target, **kw)] if target in registry else fetch_group(target, **kw)
        except (FetchError, RegistryError) as exc:
            # the details (a manual source's steps, each failure of a group) above, the one error line last
            print(f"{target}: {type(exc).__name__}: {exc}\n", file=sys.stderr)
            failures.append(f"{target} ({_gist(exc, target)})")
            continue
        for path in paths_out:
            print(path)
    if failures:
        raise DownloadError(f"{len(failures)} of {len(args.targets)} target(s) failed, details above: "
                            + "; ".join(failures))
    return 0


def _gist(exc: BaseException, target: str, limit: int = 160) -> str:
    """The first clause of an error's first line, without the target's name: what the one error line says of it."""
    line = next((line for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
    gist = line.removeprefix(f"{target}: ").split("; ")[0].rstrip(":.")
    return gist if len(gist) <= limit else gist[: limit - 3] + "..."


def run_sources(args: argparse.Namespace) -> int:
    """``sources [--group G] [--json]``: list entries with pinning and local presence."""
    registry = default_registry()
    chosen = sources_in_group(args.group, registry) if args.group else list(registry.values())
    lock = ChecksumLock(args.data_root or paths.data_root())
    rows = [{**describe(s, args.data_root), "sha256_recorded": None if s.sha256 or s.repo_id else lock.get(s)}
            for s in chosen]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    header = ("key", "group", "method", "size", "sha256", "present", "license")
    table = [header] + [
        (r["key"], r["group"], r["method"], _human_size(r["size"]),
         "pinned" if r["sha256_pinned"] else ("n/a" if r["method"].startswith("hf_")
                                              else "recorded" if r["sha256_recorded"] else "unpinned"),
         "yes" if r["present"] else "no", r["license"])
        for r in rows
    ]
    widths = [max(len(str(row[i])) for row in table) for i in range(len(header) - 1)]
    for row in table:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)) + "  " + str(row[-1]))
    return 0


def is_present(source: Source, data_root: str | os.PathLike[str] | None = None) -> bool:
    """Whether the source's result is on disk (presence only; ``fetch`` does the verification)."""
    root = Path(data_root) if data_root is not None else paths.data_root()
    if source.method in ("hf_dataset", "hf_model"):
        return (source.dest_path(root) / SNAPSHOT_MARKER).is_file()
    if source.archive:
        return (source.target_path(root) / EXTRACT_MARKER).is_file()
    return source.dest_path(root).exists()


def describe(source: Source, data_root: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """A JSON-ready row for ``sources``: every field plus pinning and presence."""
    return {**asdict(source), "allow_patterns": list(source.allow_patterns), "sha256_pinned": source.sha256 is not None,
            "present": is_present(source, data_root), "path": str(source.target_path(data_root))}


def _human_size(size: int | None) -> str:
    if size is None:
        return "?"
    value, units = float(size), ["B", "KiB", "MiB", "GiB", "TiB"]
    while value >= 1024 and len(units) > 1:
        value, units = value / 1024, units[1:]
    return f"{value:.0f} B" if units[0] == "B" else f"{value:.1f} {units[0]}"
