"""``data.dvc``: the fetched inputs the default (mini) profile reads, tracked by DVC, and the team remote
(docs/data.md): ``python -m common data fetch|status|add|track|pull|check``, which the Makefile calls.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Iterable, Mapping, Sequence

import yaml

from common import paths, plugins
from common.errors import WorkspaceError
from common.files.io import write_text_atomic
from common.pipeline.disk import free_bytes
from common.pipeline.dvc_run import run_dvc
from common.pipeline.params import read_yaml
from common.registry.fetch import fetch, md5_file  # DVC 3's hash of a file (``hash: md5``)
from common.registry.sources import default_registry, get_source, groups, sources_in_group

DATA_DVC = paths.ROOT / "data.dvc"
HEADER = """\
# The fetched inputs of the default (mini) profile, tracked by DVC: one output per registry entry (pinned sha256)
# that a mini stage reads. Written by `python -m common data add KEY...`, checked by `python -m common data fetch`
# (which `make repro` runs first). No stage lists these paths as deps, so `dvc repro` never rewrites this file.
# README: "Data: data.dvc and a DVC remote".
"""


class DataDvcError(WorkspaceError, ValueError):
    """data.dvc is malformed, disagrees with the registry, or a tracked file is missing or changed."""


@dataclass(frozen=True)
class TrackedInput:
    """One output of data.dvc: a file under data/ and the DVC hash of its bytes."""

    path: str
    """Relative to the workspace root, ``data/<registry dest>``."""
    md5: str
    size: int

    @property
    def dest(self) -> str:
        """The registry ``dest`` (the path under the data root)."""
        return PurePosixPath(self.path).relative_to("data").as_posix()


def read_data_dvc(path: Path | None = None) -> list[TrackedInput]:
    """The outputs of ``path`` (default: data.dvc), checked: each a file under data/ with an md5 and a size."""
    path = DATA_DVC if path is None else path
    doc = read_yaml(path, DataDvcError, f"it is in git: `git checkout -- {path.name}`",
                    restore=f"restore it: `git checkout -- {path.name}`")[1]
    outs = doc.get("outs") if isinstance(doc, dict) else None
    if not isinstance(outs, list) or not outs:
        raise DataDvcError(f"{path}: expected a top-level 'outs:' list of files under data/")
    tracked: list[TrackedInput] = []
    for index, out in enumerate(outs):
        where = f"{path}: outs[{index}]"
        if not isinstance(out, dict):
            raise DataDvcError(f"{where}: expected a mapping with path, md5, size")
        rel, md5, size = out.get("path"), out.get("md5"), out.get("size")
        if not isinstance(rel, str) or not rel.startswith("data/") or ".." in PurePosixPath(rel).parts:
            raise DataDvcError(f"{where}: path {rel!r} is not a file under data/")
        if not isinstance(md5, str) or len(md5) != 32 or md5.endswith(".dir"):
            raise DataDvcError(f"{where} ({rel}): md5 {md5!r} is not a file's md5 (folders are not tracked here)")
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise DataDvcError(f"{where} ({rel}): size {size!r} is not a byte count")
        tracked.append(TrackedInput(rel, md5, size))
    listed = [item.path for item in tracked]
    for twice in (rel for i, rel in enumerate(listed) if rel in listed[:i]):
        raise DataDvcError(f"{path}: {twice} is listed twice")
    return tracked


def write_data_dvc(tracked: Iterable[TrackedInput], path: Path | None = None) -> None:
    """Write ``path`` (default: data.dvc; sorted by path, atomically) in DVC 3's .dvc format."""
    path = DATA_DVC if path is None else path
    outs = [{"md5": t.md5, "size": t.size, "hash": "md5", "path": t.path}
            for t in sorted(tracked, key=lambda t: t.path)]
    write_text_atomic(path, HEADER + yaml.safe_dump({"outs": outs}, sort_keys=False))


def source_of(item: TrackedInput, by_dest: Mapping[str, Any]) -> Any:
    """The registry entry whose dest is this output's file; it must pin a sha256."""
    source = by_dest.get(item.dest)
    if source is None:
        raise DataDvcError(f"{DATA_DVC.name}: {item.path}: no registry entry has dest {item.dest!r} "
                           f"(remove the output, or add the entry to a sources.toml)")
    if not source.sha256 or source.archive or source.method != "http":
        raise DataDvcError(f"{DATA_DVC.name}: {item.path}: registry entry {source.key!r} must be a plain http file "
                           f"with a pinned sha256 to be tracked by data.dvc")
    return source


def _tracked_root() -> Path:
    """Where data.dvc's files are: the workspace's data/ (VLC_DATA elsewhere is not what data.dvc describes)."""
    root = paths.ROOT / "data"
    if paths.data_root().resolve() != root.resolve():
        print(f"note: VLC_DATA={paths.data_root()} but data.dvc tracks {root}; fetching into {root}",
              file=sys.stderr)
    return root


def problems(tracked: Sequence[TrackedInput], workspace: Path | None = None) -> dict[str, list[str]]:
    """Tracked files missing, or whose size or md5 differs from data.dvc: {"missing": [...], "changed": [...]}."""
    workspace = paths.ROOT if workspace is None else workspace
    found: dict[str, list[str]] = {"missing": [], "changed": []}
    for item in tracked:
        file = workspace / item.path
        if not file.is_file():
            found["missing"].append(item.path)
        elif file.stat().st_size != item.size or md5_file(file) != item.md5:
            found["changed"].append(item.path)
    return found


def fetch_tracked(*, force: bool = False, progress: bool = False) -> list[TrackedInput]:
    """Fetch every data.dvc input (sha256 against the registry) and check its md5 against data.dvc."""
    tracked = read_data_dvc()
    by_dest = {source.dest: source for source in default_registry().values()}
    root = _tracked_root()
    for item in tracked:
        fetched = fetch(source_of(item, by_dest), data_root=root, force=force, progress=progress)
        if fetched.stat().st_size != item.size or md5_file(fetched) != item.md5:
            raise DataDvcError(
                f"{DATA_DVC.name}: {item.path}: the file verified against the registry's sha256 has md5 "
                f"{md5_file(fetched)} ({fetched.stat().st_size} bytes) but data.dvc records {item.md5} ({item.size} "
                f"bytes): data.dvc and the registry disagree; rewrite the record with "
                f"`python -m common data add {source_of(item, by_dest).key}`")
    _commit_to_cache()
    return tracked


def _commit_to_cache() -> None:
    """Put the verified files in DVC's cache (what ``dvc push`` sends); data.dvc itself must not change."""
    before = DATA_DVC.read_bytes()
    done = dvc("commit", "--force", DATA_DVC.name)  # not --quiet: it would hide DVC's error and keep its footer
    if DATA_DVC.read_bytes() != before:
        write_text_atomic(DATA_DVC, before.decode("utf-8"))
        raise DataDvcError(f"{DATA_DVC}: `dvc commit` changed it (restored): a tracked file differs from its record")
    if done.returncode == 0:
        return
    if any(mark in done.stderr + done.stdout for mark in NO_ROOM):
        listed = dvc("cache", "dir")
        shown = listed.stdout.strip().splitlines()
        cache = Path(shown[-1]) if listed.returncode == 0 and shown else paths.ROOT / ".dvc" / "cache"
        raise DataDvcError(
            f"DVC's cache {cache}: no room left on its disk ({free_bytes(cache) / 1e6:,.1f} MB free): data/ is "
            f"fetched and verified, but not added to the cache (what `dvc push` sends). Free some space there, or move "
            f"the cache (`dvc cache dir PATH`), then rerun `python -m common data fetch`")
    print(f"note: data/ verified but not added to DVC's cache ({_last_error(done)})", file=sys.stderr)


NO_ROOM = ("[Errno 28]", "No space left on device", "[Errno 122]", "Disk quota exceeded")
"""How DVC reports a full disk (or quota) under its cache: the errno in its ERROR lines."""


def add_sources(keys: Sequence[str]) -> list[TrackedInput]:
    """Fetch these registry entries and track them in data.dvc (existing outputs kept)."""
    current = {t.path: t for t in read_data_dvc()} if DATA_DVC.exists() else {}
    root = _tracked_root()
    for key in keys:
        source = get_source(key)
        item = TrackedInput(f"data/{source.dest}", "0" * 32, 0)
        source_of(item, {source.dest: source})
        file = fetch(source, data_root=root, progress=False)
        current[item.path] = TrackedInput(item.path, md5_file(file), file.stat().st_size)
    write_data_dvc(current.values())
    _commit_to_cache()
    return sorted(current.values(), key=lambda t: t.path)


def status_line(tracked: Sequence[TrackedInput] | None = None, workspace: Path | None = None) -> str:
    """One line: whether data/ holds exactly what data.dvc records, and what to run if not."""
    tracked = read_data_dvc() if tracked is None else tracked
    found = problems(tracked, workspace)
    if not found["missing"] and not found["changed"]:
        return f"data.dvc: up to date ({len(tracked)} fetched inputs under data/)"
    parts = []
    if found["missing"]:
        parts.append(f"{len(found['missing'])} of {len(tracked)} inputs not fetched yet (e.g. {found['missing'][0]})")
    if found["changed"]:
        parts.append(f"{len(found['changed'])} changed ({', '.join(found['changed'][:3])}: delete them)")
    return f"data.dvc: {'; '.join(parts)}: run `make fetch` (or `make repro`, which fetches first)"


# ----------------------------------------------------------------------------------------------------------------
# The full profile: its own .dvc files
# ----------------------------------------------------------------------------------------------------------------
def dvc(*args: str, cwd: Path = paths.ROOT, check: bool = False) -> subprocess.CompletedProcess:
    """This environment's DVC (``common.pipeline.dvc_run``), output captured."""
    done = run_dvc(*args, cwd=cwd)
    if check and done.returncode != 0:
        raise DataDvcError(f"dvc {' '.join(args)} failed: {_last_error(done)}")
    return done


DVC_FOOTER = "Having any troubles?"
"""The first words of the support line DVC prints after every failure: never the cause."""


def _last_error(done: subprocess.CompletedProcess) -> str:
    lines = [line.strip() for line in (done.stderr + "\n" + done.stdout).splitlines()
             if line.strip() and not line.strip().startswith(DVC_FOOTER)]
    errors = [line for line in lines if line.startswith("ERROR")]
    return (errors or lines or [f"exit status {done.returncode}"])[-1]


FULL_DVC = paths.ROOT / "data" / "full.dvc"
"""The full profile's fetched data (``python -m common data track``): its own .dvc file, in git (``.gitignore``
re-includes it), so tracking it never touches the default's ``data.dvc``."""


def track_full(targets: Sequence[str]) -> list[str]:
    """Record each present full-profile target (key or group) in ``data/full.dvc``, hashed and cached by DVC."""
    registry = default_registry()
    root = _tracked_root()
    in_data_dvc = {t.path for t in read_data_dvc()}
    chosen = [source for target in targets for source in
              (sources_in_group(target, registry) if target in groups(registry) else [get_source(target)])]
    outs: dict[str, dict] = {}
    if FULL_DVC.exists():
        doc = yaml.safe_load(FULL_DVC.read_text(encoding="utf-8")) or {}
        outs = {out["path"]: out for out in doc.get("outs", []) if isinstance(out, dict) and "path" in out}
    added: list[str] = []
    for source in chosen:
        path = source.target_path(root)
        rel = path.relative_to(paths.ROOT).as_posix()
        if rel in in_data_dvc:
            continue  # the default profile reads it: data.dvc has it
        if not path.exists():
            print(f"skipped {source.key}: not fetched ({rel}); `python -m common fetch {source.key}` first",
                  file=sys.stderr)
            continue
        out_path = path.relative_to(FULL_DVC.parent).as_posix()
        outs[out_path] = {"path": out_path}  # no hash yet: `dvc commit` below hashes and caches it
        added.append(rel)
    if added:
        body = yaml.safe_dump({"outs": [outs[k] for k in sorted(outs)]}, sort_keys=False)
        write_text_atomic(FULL_DVC, "# The full profile's fetched data (`python -m common data track KEY_OR_GROUP`); "
                                    "data.dvc at the top level is the default's.\n" + body)
        dvc("commit", "--force", "--quiet", FULL_DVC.relative_to(paths.ROOT).as_posix(), check=True)
    return added


# ----------------------------------------------------------------------------------------------------------------
# The team remote
# ----------------------------------------------------------------------------------------------------------------
def _probe(remote: str) -> tuple[bool, str]:
    """Whether the remote's root exists (DVC itself reports an unreachable remote as "missing" objects, silently)."""
    # deferred: loads dvc only when called
    from dvc.repo import Repo

    try:
        with Repo(str(paths.ROOT)) as repo:
            odb = repo.cloud.get_remote(remote)
            where = getattr(odb, "path", remote)
            try:
                return bool(odb.fs.exists(odb.path)), str(where)
            except Exception as exc:  # noqa: BLE001 - any backend's connection error means "unreachable"
                return False, f"{where}: {type(exc).__name__}: {(str(exc).splitlines() or [''])[0]}"
    except Exception as exc:  # noqa: BLE001 - a remote DVC cannot even configure (missing plugin, bad URL)
        return False, f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0]}"


def pull(papers: Sequence[str]) -> str:
    """Pull data.dvc and the papers' stage outputs from the default remote; one line saying what happened (never a
    failure: an unreachable remote or missing objects leave the stages to ``dvc repro``)."""
    done = dvc("remote", "default")
    remote = done.stdout.strip() if done.returncode == 0 else ""
    if not remote:  # none configured
        return "no DVC remote configured: every stage not in the local cache is built here (README: a team remote)"
    reachable, where = _probe(remote)
    if not reachable:
        return f"DVC remote {remote!r} ({where}) unreachable or empty: building locally instead"
    targets = [str(DATA_DVC.relative_to(paths.ROOT)), *(f"papers/{p}" for p in papers)]
    if FULL_DVC.exists():
        params = yaml.safe_load((paths.ROOT / "params.yaml").read_text(encoding="utf-8"))
        if isinstance(params, dict) and params.get("profile") == "full":
            targets.append(FULL_DVC.relative_to(paths.ROOT).as_posix())
    status = dvc("status", "--cloud", "--json", "--with-deps", *targets)
    if status.returncode != 0:
        return f"DVC remote {remote!r} unreachable ({_last_error(status)}): building locally instead"
    try:
        lacking = [path for path, state in json.loads(status.stdout or "{}").items() if state == "missing"]
    except json.JSONDecodeError:
        lacking = []
    done = dvc("pull", "--allow-missing", "--with-deps", *targets)
    if done.returncode != 0:
        return f"dvc pull from {remote!r} failed ({_last_error(done)}): building locally instead"
    if lacking:
        return (f"pulled from DVC remote {remote!r}; it lacks {len(lacking)} output(s) (e.g. {sorted(lacking)[0]}): "
                f"dvc repro builds those")
    return f"pulled from DVC remote {remote!r}: every output it holds is in place"


# ----------------------------------------------------------------------------------------------------------------
# Before dvc repro: every fetched input the stages list is in place
# ----------------------------------------------------------------------------------------------------------------
MAX_LISTED_INPUTS = 4


def pipeline_inputs(papers: Sequence[str], root: Path = paths.ROOT) -> list[str]:
    """The ``data/...`` paths (relative to ``root``) that the stages ``dvc repro papers/<paper>`` walks list as deps
    (under the profile ``params.yaml`` picks), in order."""
    # deferred: loads dvc only when called
    from dvc.exceptions import DvcException
    from dvc.repo import Repo

    found: dict[str, None] = {}
    top = Path(os.path.abspath(root))
    try:
        with contextlib.chdir(top), Repo(str(top)) as repo:  # DVC reads a target relative to the working folder
            for paper in papers:
                for stage in repo.stage.collect(f"papers/{paper}", with_deps=True):
                    for dep in stage.deps:
                        path = Path(os.path.abspath(dep.fs_path))
                        if path.is_relative_to(top / "data") and path != top / "data":
                            found.setdefault(path.relative_to(top).as_posix())
    except DvcException as exc:  # a damaged data.dvc, dvc.yaml or dvc.lock: DVC's words, on one line
        said = " ".join(f"{exc}: {exc.__cause__}".split()) if exc.__cause__ else " ".join(str(exc).split())
        raise DataDvcError(f"DVC cannot read the pipeline of {', '.join(f'papers/{p}' for p in papers)} in {top}: "
                           f"{said:.400}; fix or restore the file it names (`git checkout -- FILE`)") from None
    return list(found)


@dataclass(frozen=True)
class InputSource:
    """What fetches a stage's ``data/`` input: a registry key, or the group of the entries under a folder input."""

    target: str
    manual: bool


def source_for_input(rel: str, registry: Mapping[str, Any] | None = None) -> InputSource | None:
    """What ``python -m common fetch`` needs to put the input ``data/<...>`` in place: the entry whose file, snapshot
    or extracted folder holds it, else (a folder holding several entries' files) their group; None when no entry
    writes there."""
    path = PurePosixPath(rel).relative_to("data")
    entries = list((registry or default_registry()).values())
    for source in entries:
        owned = [PurePosixPath(source.dest)] + ([PurePosixPath(source.dest[: -len(".zip")])] if source.archive else [])
        if any(path == own or own in path.parents for own in owned):
            return InputSource(source.key, source.method == "manual")
    inside = [source for source in entries if path in PurePosixPath(source.dest).parents]
    if not inside:
        return None
    groups = {source.group for source in inside}
    target = groups.pop() if len(groups) == 1 else " ".join(source.key for source in inside)
    return InputSource(target, any(source.method == "manual" for source in inside))


def check_inputs(papers: Sequence[str], root: Path = paths.ROOT) -> str:
    """One line saying every fetched input of the papers' pipelines is in place; else ``DataDvcError``, one line
    naming the missing ones (what fetches each, manual or not) and the ``fetch`` that gets them: said before DVC,
    whose own refusal names a missing dep but not how to get it."""
    missing = sorted(rel for rel in pipeline_inputs(papers, root) if not (Path(root) / rel).exists())
    targets = ", ".join(f"papers/{p}" for p in papers)
    if not missing:
        return f"{targets}: every fetched input its stages read is in data/"
    sources = {rel: source_for_input(rel) for rel in missing}
    named = [f"{rel} ({s.target}{', manual' if s.manual else ''})" if s else f"{rel} (no registry entry)"
             for rel, s in sources.items()]
    more = len(named) - MAX_LISTED_INPUTS
    listed = ", ".join(named[:MAX_LISTED_INPUTS]) + (f" and {more} more" if more > 0 else "")
    fetched = list(dict.fromkeys(s.target for s in sources.values() if s is not None))
    fix = (f"fetch them first: `python -m common fetch {' '.join(fetched)}`" if fetched
           else "no registry entry fetches them: see the stage's comment in its dvc.yaml")
    manual = any(s is not None and s.manual for s in sources.values())
    raise DataDvcError(f"dvc repro {targets} reads {len(missing)} input(s) not in {Path(root) / 'data'}: {listed}; "
                       f"{fix}" + (" (a manual source prints the steps to get it by hand)" if manual else ""))


# ----------------------------------------------------------------------------------------------------------------
# CLI
# ----------------------------------------------------------------------------------------------------------------
def _cmd_fetch(args: argparse.Namespace) -> int:
    tracked = fetch_tracked(force=args.force, progress=not args.no_progress)
    print(f"data.dvc: {len(tracked)} inputs fetched and verified (sha256 against the registry, md5 against data.dvc)")
    return 0


def _cmd_status(args: argparse.Namespace) -> int:
    line = status_line()
    print(line)
    return 0 if line.startswith("data.dvc: up to date") or not args.strict else 1


def _cmd_add(args: argparse.Namespace) -> int:
    tracked = add_sources(args.keys)
    print(f"data.dvc: {len(tracked)} inputs tracked")
    return 0


def _cmd_track(args: argparse.Namespace) -> int:
    added = track_full(args.targets)
    print(f"{FULL_DVC.relative_to(paths.ROOT)}: {len(added)} target(s) tracked" + "".join(f"\n  {a}" for a in added))
    return 0


def _cmd_pull(args: argparse.Namespace) -> int:
    print(pull(args.papers))
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    print(check_inputs(args.papers or plugins.paper_names()))
    return 0


def register_cli(data_sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """``python -m common data {fetch,status,add,track,pull,check}``."""
    fetch = data_sub.add_parser("fetch", help="fetch and verify every input data.dvc tracks (make fetch)")
    fetch.add_argument("--force", action="store_true", help="fetch again even where a verified copy is present")
    fetch.add_argument("--no-progress", action="store_true", help="no progress bars")
    fetch.set_defaults(func=_cmd_fetch)
    status = data_sub.add_parser("status", help="one line: does data/ hold what data.dvc records")
    status.add_argument("--strict", action="store_true", help="exit 1 unless up to date")
    status.set_defaults(func=_cmd_status)
    add = data_sub.add_parser("add", help="track registry entries (pinned http files) in data.dvc")
    add.add_argument("keys", nargs="+", metavar="KEY")
    add.set_defaults(func=_cmd_add)
    track = data_sub.add_parser("track", help="full profile: record fetched sources in data/full.dvc (hashed and "
                                              "cached by DVC)")
    track.add_argument("targets", nargs="+", metavar="KEY_OR_GROUP")
    track.set_defaults(func=_cmd_track)
    pull_cmd = data_sub.add_parser("pull", help="pull data.dvc and papers' outputs from the default DVC remote")
    pull_cmd.add_argument("papers", nargs="*", metavar="PAPER")
    pull_cmd.set_defaults(func=_cmd_pull)
    check = data_sub.add_parser("check", help="before dvc repro: every data/ input the papers' stages list is there "
                                              "(else one line: which, and the fetch that gets them)")
    check.add_argument("papers", nargs="*", metavar="PAPER")
    check.set_defaults(func=_cmd_check)

