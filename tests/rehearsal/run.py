"""``python -m tests.rehearsal [PAPER...]`` (``make rehearse [PAPER=...]``): each paper's full pipeline run by DVC on
stand-ins, in a copy of the workspace, reported as the stages that ran out of how many and the wall time per paper.

1. The copy: ``build/rehearsal/ws`` (git-ignored), made afresh (``workspace.copy_workspace``), its own git repository
   and DVC cache.
2. Its ``params.yaml``: ``params.rehearsal_params`` and each paper's own changes (the counts its stand-ins hold).
3. Room on the disk for what follows (``space.check_room``), else one line and nothing written. Its data root: each
   paper's stand-ins, the pinned files they name fetched real from ``VLC_MIRROR``, the stand-ins' md5s stated in the
   copy's registry; then the keys its DVC data dependencies need, fetched as a real run fetches them.
4. Its models, at the shrunk sizes of ``tests.rehearsal.archs`` unless ``--real-sizes``: into its own hub cache
   (``HF_HOME`` inside the copy, offline) and at their ``data:`` checkpoints.
5. ``dvc repro papers/<paper>`` in the copy (the stage commands a real run uses, with no ``VLC_DATA``/``VLC_BUILD``/
   ``VLC_CACHE``), its output kept in ``build/rehearsal/<paper>.log``, what it left on disk and its peak measured.
6. When every pipeline ran, in the copy: the report card of ``CARD_MODEL`` (``card``), the claims scorecard read
   against the full stages' files (``scorecard_lines``) and the authors' released evaluation code on the same stand-ins
   (``oracle``); any of them failing fails the rehearsal.

Nothing but the oracle's committed record (``results/oracle/<paper>.json``) is written outside ``build/rehearsal/``.
"""
from __future__ import annotations

import argparse
import errno
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Mapping, Sequence

import yaml

from common import plugins
from common.errors import SettingError, WorkspaceError, unknown_name
from common.files.io import write_json_atomic
from common.oracle.core import RECORD_DIR, STANDIN_INPUTS, read_oracles
from common.paths import RESULTS, ROOT, mirror_root
from common.pipeline.params import read_params
from common.registry.fetch import fetch
from common.zoo import get_spec
from common.zoo.specs import ARCH_OVERRIDES_ENV
from tests.rehearsal import models as standin_models
from tests.rehearsal.archs import arch_overrides, write_shrunk
from tests.rehearsal.papers import has_standins, rehearsed_papers, standins as standins_of
from tests.rehearsal.params import DEFAULT_CAP, rehearsal_params
from tests.rehearsal.space import (
    MEASURED, MEASURED_REAL_SIZES, Footprint, FreeWatch, check_room, free_bytes, gb, tree_bytes)
from tests.rehearsal.standins import name_seed, state_md5s
from tests.rehearsal.workspace import copy_bytes, copy_env, copy_workspace, dvc

REHEARSAL_DIR = ROOT / "build" / "rehearsal"
"""Everything a rehearsal writes (``/build/`` is git-ignored)."""
WORKSPACE = "ws"
HF_HOME = Path(".cache") / "huggingface"
"""The copy's hub cache (under its git-ignored ``.cache/``)."""
ARCH_DIR = Path(".cache") / "archs"
"""The copy's shrunk architectures (``tests.rehearsal.archs``), named to its processes by ``VLC_ARCH_OVERRIDES``."""
MARKER = ".vlc-rehearsal"
"""In the copy's root: the folder is a rehearsal's, which the next rehearsal may delete."""
RUNNING = re.compile(r"^Running stage '([^']+)'")


class RehearsalError(WorkspaceError):
    """A rehearsal that cannot be prepared (a paper without ``papers/<paper>.py`` here, no mirror)."""


@dataclass(frozen=True)
class Outcome:
    paper: str
    ran: int
    total: int
    seconds: float
    returncode: int
    log: str
    stages: dict[str, float] = field(default_factory=dict)
    """Each stage that ran -> its wall seconds (from its "Running stage" line to the next one, or to the end)."""
    earlier: int = 0
    """Stages of this pipeline that ran in this rehearsal for a paper before it (shared ones: DVC does not rerun them)."""
    grew: int = 0
    """Bytes the copy grew by while this pipeline ran (``space.tree_bytes``: its outputs and DVC's cache of them)."""
    peak: int = 0
    """How far the disk's free space fell, at most, while it ran (``space.FreeWatch``)."""

    @property
    def complete(self) -> bool:
        """Every stage of the pipeline ran in this rehearsal, and DVC succeeded."""
        return self.returncode == 0 and self.ran + self.earlier == self.total

    def line(self) -> str:
        status = ("ok" if self.complete else f"FAILED (dvc exit {self.returncode}; log {self.log})" if self.returncode
                  else f"INCOMPLETE ({self.total - self.ran - self.earlier} not run; log "
                       f"{self.log})")
        earlier = f" (and {self.earlier} for the papers before it)" if self.earlier else ""
        disk = f", +{gb(self.grew)} on disk (at most +{gb(self.peak)} while it ran)" if self.grew else ""
        return (f"papers/{self.paper}: {self.ran} of {self.total} stages ran{earlier}, {self.seconds:.0f} s{disk}: "
                f"{status}")

    def slowest(self, n: int = 3) -> str:
        ranked = sorted(self.stages.items(), key=lambda kv: -kv[1])[:n]
        return ", ".join(f"{name.rpartition(':')[2]} {seconds:.0f} s" for name, seconds in ranked)


def rehearsal_env(workspace: Path, mirror: Path) -> dict[str, str]:
    """The copy's environment: no data/build/cache roots (its own), the mirror, an offline hub cache inside it."""
    env = copy_env()
    env.update({"VLC_MIRROR": str(mirror), "HF_HOME": str(Path(workspace) / HF_HOME), "HF_HUB_OFFLINE": "1",
                "TRANSFORMERS_OFFLINE": "1", "TORCH_HOME": str(Path(workspace) / ".cache" / "torch"),
                "PYTHONUNBUFFERED": "1"})  # DVC's "Running stage" lines as they happen: each stage's wall time
    return env


def _module(paper: str):
    if not has_standins(paper):
        raise RehearsalError(f"papers/{paper} has no tests/rehearsal/papers/{paper}.py (its stand-ins, models and "
                             "params): it cannot be rehearsed yet (tests.rehearsal.papers.StandIns says what it holds)")
    return standins_of(paper)


STAGE_OWNER = re.compile(r"^papers/([^/]+)(?:/dvc\.yaml:|$)")


def stage_owners(stages: Sequence[str]) -> list[str]:
    """The papers whose stages these are (``papers/<paper>/dvc.yaml:<stage>`` and the aggregate ``papers/<paper>``;
    root stages such as ``audit/cross_paper`` belong to none), in order of first appearance."""
    return list(dict.fromkeys(m.group(1) for m in map(STAGE_OWNER.match, stages) if m))


def _layout(name: str) -> str:
    """The release layout of a ``data:`` checkpoint: its owner paper's ``CHECKPOINT_LAYOUTS``, else open_clip's."""
    owner = plugins.owner(name)
    return standins_of(owner).CHECKPOINT_LAYOUTS.get(name, "state_dict") if owner and has_standins(owner) \
        else "state_dict"


def remove_previous(workspace: Path) -> None:
    """Delete an earlier rehearsal's copy at ``workspace``; refuse a folder that is not one."""
    if workspace.exists():
        if not (workspace / MARKER).is_file():
            raise RehearsalError(f"{workspace} exists and is not a rehearsal's copy (no {MARKER}): remove it yourself "
                                 "or choose another --dir")
        shutil.rmtree(workspace)


def prepare(workspace: Path, papers: Sequence[str], mirror: Path, cap: int, log=print,
            real_sizes: bool = False) -> dict[str, str]:
    """Make the copy at ``workspace`` (replacing an earlier one) ready for ``dvc repro``; returns its environment.
    Its architectures are open_clip's shrunk (``tests.rehearsal.archs``) unless ``real_sizes``."""
    early = {paper: _module(paper) for paper in papers}  # before anything is deleted; their pipelines may walk more
    workspace = Path(workspace)
    remove_previous(workspace)
    params = rehearsal_params(read_params(ROOT / "params.yaml"), rehearsed_papers(), cap)
    footprints = MEASURED_REAL_SIZES if real_sizes else MEASURED
    with tempfile.TemporaryDirectory(prefix="vlc-archs-") as early_archs:
        if not real_sizes:
            write_shrunk(Path(early_archs))
        with arch_overrides(None if real_sizes else Path(early_archs)):
            # before the copy: a disk without room is one line and nothing written
            check_room(workspace, list(early), dict.fromkeys(n for m in early.values() for n in m.models(params)),
                       copy=copy_bytes(), footprints=footprints)
    try:
        # the marker first: a copy cut short (no room, a signal) is still known as the rehearsal's, and the next
        # run removes it
        workspace.mkdir(parents=True)
        (workspace / MARKER).write_text("a rehearsal's copy of the workspace (tests.rehearsal); replaced by the "
                                        "next\n")
        copy_workspace(workspace)
    except OSError as exc:
        shutil.rmtree(workspace, ignore_errors=True)
        why = {errno.ENOSPC: "no room left on its disk", errno.EDQUOT: "over the disk quota",
               errno.EROFS: "a read-only file system", errno.EACCES: "permission denied",
               errno.EPERM: "not permitted"}.get(exc.errno, exc.strerror or type(exc).__name__)
        raise RehearsalError(f"{workspace}: the workspace could not be copied there ({why}: "
                             f"{getattr(exc, 'filename', None) or workspace}); the partial copy was removed. Give "
                             f"--dir on a writable disk with room (tests/rehearsal/space.py says how much)") from None
    (workspace / "params.yaml").write_text(
        "# A rehearsal's params.yaml (tests.rehearsal.params): the full profile on stand-ins. Not the papers' "
        "numbers.\n" + yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    read_params(workspace / "params.yaml")  # as every stage will
    env = rehearsal_env(workspace, mirror)
    archs = None
    if not real_sizes:
        archs = workspace / ARCH_DIR
        shrunk = write_shrunk(archs)
        env[ARCH_OVERRIDES_ENV] = str(archs)
        log(f"rehearsal: {len(shrunk)} open_clip architectures shrunk for the copy ({ARCH_DIR}: ViT-B-32 and RN50 "
            "among them, the same key scheme with fewer and narrower blocks, megabytes each; "
            "tests/rehearsal/archs.py; --real-sizes rehearses without)")
    with arch_overrides(archs):
        _prepare_data(workspace, papers, mirror, params, env, footprints, log)
    configured = dvc(workspace, env, "config", "--local", "cache.type", "hardlink,copy")  # outputs: one copy on disk
    if configured.returncode != 0:
        raise RehearsalError(f"dvc config in {workspace} failed: {configured.stderr.strip()}")
    return env


def _prepare_data(workspace: Path, papers: Sequence[str], mirror: Path, params: dict, env: dict[str, str],
                  footprints: Mapping[str, Footprint], log) -> None:
    """Steps 3 and 4 of the module docstring: the stand-ins, the models, the fetched keys, data.dvc's inputs."""
    data_root = workspace / "data"
    modules = {paper: _module(paper) for paper in papers}
    for paper in papers:  # every paper whose stages the pipelines walk prepares its stand-ins (conclip: sugarcrepe's set)
        nodes = dag_nodes(workspace, env, paper)
        for owner in stage_owners(nodes):
            if not has_standins(owner):
                log(f"rehearsal: papers/{owner} has no tests/rehearsal/papers/{owner}.py: its stages in "
                    f"papers/{paper}'s pipeline get no stand-ins (they fail if they read any)")
            else:
                modules.setdefault(owner, standins_of(owner))

    def fetch_here(key: str) -> Path:
        return fetch(key, data_root=data_root, mirror=mirror, progress=False)

    names = list(dict.fromkeys(n for module in modules.values() for n in module.models(params)))
    check_room(workspace, list(modules), names, footprints=footprints)  # before the first stand-in, not an hour in
    keys: list[str] = []
    for paper, module in modules.items():
        started = time.perf_counter()
        keys += module.prepare(data_root, fetch_here)
        log(f"rehearsal: {paper}: stand-ins written ({time.perf_counter() - started:.0f} s)")
    restated = state_md5s(workspace, data_root)
    log(f"rehearsal: the copy's registry states the md5 of {len(restated)} stand-in(s) (tests.rehearsal.standins."
        "state_md5s)")
    for name in names:
        started = time.perf_counter()
        spec = get_spec(name)
        seed = name_seed(name)  # every model its own weights: a stand-in mixed up with another shows
        if spec.pretrained is not None:
            path = standin_models.write_pretrained(workspace / HF_HOME, name, seed)
        else:
            path = standin_models.write_checkpoint(data_root, name, _layout(name), seed)  # type: ignore[arg-type]
        log(f"rehearsal: model {name}: random {spec.arch} at {path.relative_to(workspace)} "
            f"({time.perf_counter() - started:.0f} s)")
    for key in dict.fromkeys(keys):
        fetch_here(key)
    # data.dvc's pinned inputs, real from the mirror, fetched as make repro fetches them
    fetched, seconds = _common(workspace, env, None, "data", "fetch")
    if fetched.returncode != 0:
        raise RehearsalError(f"python -m common data fetch in {workspace} failed: "
                             f"{(fetched.stderr or fetched.stdout).strip()[-2000:]}")
    log(f"rehearsal: data.dvc's inputs fetched ({seconds:.0f} s)")


def _common(workspace: Path, env: dict[str, str], log_path: Path | None,
            *args: str) -> tuple[subprocess.CompletedProcess, float]:
    """``python -m common <args>`` in the copy, its output kept in ``log_path``; with its wall seconds."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "common", *args], cwd=workspace, env=env, capture_output=True,
                          text=True)
    if log_path is not None:
        log_path.write_text(done.stdout + done.stderr, encoding="utf-8")
    return done, round(time.perf_counter() - started, 1)


def dag_nodes(workspace: Path, env: dict[str, str], paper: str) -> list[str]:
    """Every node of ``dvc dag papers/<paper>``: its stages and the ``.dvc`` files whose outputs they read."""
    dag = dvc(workspace, env, "dag", "--dot", f"papers/{paper}")
    if dag.returncode != 0:
        raise RehearsalError(f"dvc dag papers/{paper} failed in {workspace}: {dag.stderr.strip()[-2000:]}")
    return list(dict.fromkeys(m.group(1) for m in re.finditer(r'^\s*"([^"]+)";\s*$', dag.stdout, re.M)))


def dag_stages(workspace: Path, env: dict[str, str], paper: str) -> list[str]:
    """The stages ``dvc repro papers/<paper>`` walks. A ``.dvc`` file is no stage: DVC verifies its outputs, runs
    nothing (``prepare`` fetches them as ``make repro`` does)."""
    return [node for node in dag_nodes(workspace, env, paper) if not node.endswith(".dvc")]


def stage_count(workspace: Path, env: dict[str, str], paper: str) -> int:
    """How many stages ``dvc repro papers/<paper>`` walks."""
    return len(dag_stages(workspace, env, paper))


def repro(workspace: Path, env: dict[str, str], paper: str, log_path: Path, echo=sys.stdout,
          before: frozenset[str] = frozenset()) -> Outcome:
    """``dvc repro papers/<paper>`` in the copy, its output to ``log_path`` (and ``echo``), timed; ``before``: the
    stages that already ran in this rehearsal."""
    dag = dag_stages(workspace, env, paper)
    ran: list[str] = []
    stages: dict[str, float] = {}
    started = time.perf_counter()
    last = started
    with open(log_path, "w", encoding="utf-8") as log:
        process = subprocess.Popen([str(Path(sys.executable).with_name("dvc")), "repro", f"papers/{paper}"],
                                   cwd=workspace, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                   bufsize=1)
        assert process.stdout is not None
        for line in process.stdout:
            log.write(line)
            if echo is not None:
                echo.write(line)
                echo.flush()
            match = RUNNING.match(line)
            if match:
                now = time.perf_counter()
                if ran:
                    stages[ran[-1]] = round(now - last, 1)
                ran.append(match.group(1))
                last = now
        returncode = process.wait()
    if ran:
        stages[ran[-1]] = round(time.perf_counter() - last, 1)
    return Outcome(paper, len(ran), len(dag), round(time.perf_counter() - started, 1), returncode, str(log_path),
                   stages, earlier=len(set(dag) & before - set(ran)))


CARD_MODEL = "openai/ViT-B-32"
"""The model the rehearsal cards on the full profile's stand-ins once every pipeline ran (its stand-in weights are in
the copy's hub cache when a rehearsed paper lists it)."""


@dataclass(frozen=True)
class CardOutcome:
    """``python -m common card`` in the copy, on the full profile's stand-ins."""

    model: str
    returncode: int
    seconds: float
    numbers: int
    not_on_card: list[str]
    log: str

    @property
    def complete(self) -> bool:
        return self.returncode == 0 and self.numbers > 0

    def line(self) -> str:
        status = "ok" if self.complete else f"FAILED (exit {self.returncode}; log {self.log})"
        left = f"; not on the card: {', '.join(self.not_on_card)}" if self.not_on_card else ""
        return f"card {self.model}: {self.numbers} numbers, {self.seconds:.0f} s{left}: {status}"


def card(workspace: Path, env: dict[str, str], folder: Path, model: str = CARD_MODEL) -> CardOutcome:
    """The report card of ``model`` in the copy (full profile, stand-ins): the card's full-profile path run for real,
    its files in ``<folder>/cards/``."""
    out = folder / "cards"
    done, seconds = _common(workspace, env, folder / "card.log", "card", "--model", model, "--device", "cpu", "--out",
                            str(out))
    numbers, missing = 0, []
    card_file = out / (model.replace("/", "__") + ".json")
    if done.returncode == 0 and card_file.is_file():
        written = json.loads(card_file.read_text(encoding="utf-8"))
        numbers, missing = len(written["numbers"]), [m["benchmark"] for m in written["not_on_card"]]
    return CardOutcome(model, done.returncode, seconds, numbers, missing, str(folder / "card.log"))


@dataclass(frozen=True)
class ClaimsOutcome:
    """The claims scorecard read in the copy: its full-profile references resolved against the stand-ins' results
    (the verdicts there mean nothing: random weights)."""

    returncode: int
    seconds: float
    log: str

    @property
    def complete(self) -> bool:
        return self.returncode == 0


def scorecard_lines(workspace: Path, env: dict[str, str], papers: Sequence[str], folder: Path) -> ClaimsOutcome:
    """``python -m common docs claims --line`` in the copy: every reference of ``papers/*/scorecard.toml`` to a
    full-profile file the rehearsal wrote must name a number there."""
    done, seconds = _common(workspace, env, folder / "claims.log", "docs", "claims", "--line", *papers)
    for text in (done.stdout + done.stderr).splitlines():
        print(f"rehearsal (stand-ins, never the papers' numbers): {text}", flush=True)
    return ClaimsOutcome(done.returncode, seconds, str(folder / "claims.log"))


@dataclass(frozen=True)
class OracleOutcome:
    """``python -m common oracle`` in the copy: the authors' released evaluation beside this workspace's, on the same
    stand-ins and weights (``common.oracle``); its reports in ``<folder>/oracle/``."""

    returncode: int
    seconds: float
    headlines: list[str]
    log: str

    @property
    def complete(self) -> bool:
        return self.returncode == 0


def oracle(workspace: Path, env: dict[str, str], papers: Sequence[str], folder: Path,
           record: bool = False) -> OracleOutcome:
    """The oracle for the rehearsed papers that have one (``papers/<paper>/oracle.py`` in the copy: looked for, not
    imported here), in the copy. ``record``: each paper's outcome also rewrites this workspace's committed record
    (``common.oracle.core.RECORD_DIR``), which CI's clean-tree check then compares with the committed one; only a
    rehearsal at the default settings records, as its counts depend on them."""
    out = folder / "oracle"
    shutil.rmtree(out, ignore_errors=True)
    checked = [p for p in papers if (workspace / "papers" / p / "oracle.py").is_file()]
    done, seconds = _common(workspace, env, folder / "oracle.log", "oracle", "--device", "cpu", "--out", str(out),
                            *checked)
    headlines = [line for line in done.stdout.splitlines() if line.startswith(("ok    ", "FAIL  ", "oracle FAILED"))]
    for line in headlines:
        print(f"rehearsal: oracle: {line}", flush=True)
    if record:
        for ran in read_oracles(out):  # the papers whose oracle finished (out was emptied before it ran)
            write_json_atomic(RESULTS / RECORD_DIR / f"{ran.paper}.json", ran.record(STANDIN_INPUTS))
    return OracleOutcome(done.returncode, seconds, headlines, str(folder / "oracle.log"))


def rehearse(papers: Sequence[str], mirror: Path | None = None, cap: int | None = None,
             folder: Path = REHEARSAL_DIR, quiet: bool = False, real_sizes: bool = False) -> list[Outcome]:
    """Prepare the copy for ``papers`` and rehearse each; returns the outcomes (also in ``<folder>/summary.json``)."""
    mirror = Path(mirror) if mirror is not None else mirror_root()
    if mirror is None or not mirror.is_dir():
        raise SettingError("a rehearsal reads the pinned released files real: set VLC_MIRROR to a mirror of them "
                           "(or pass --mirror)")
    folder = Path(folder).resolve()  # the copy's environment names paths in it (HF_HOME) that its stages read from ws/
    workspace = folder / WORKSPACE
    for paper in papers:
        _module(paper)  # before anything is deleted
    remove_previous(workspace)  # before the whole rehearsal's watch starts: the old copy's room is free room
    with FreeWatch(folder) as whole:
        outcomes, summary = _rehearse(workspace, folder, papers, mirror, cap or DEFAULT_CAP, quiet, real_sizes)
    size = tree_bytes(workspace)
    print(f"rehearsal: disk: the copy takes {gb(size)} at the end; the disk's free space fell by at most "
          f"{gb(whole.drop)} while it ran", flush=True)
    summary.append({"disk": {"end": size, "peak": whole.drop}})
    (folder / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return outcomes


def _rehearse(workspace: Path, folder: Path, papers: Sequence[str], mirror: Path, cap: int, quiet: bool,
              real_sizes: bool) -> tuple[list[Outcome], list[dict]]:
    """Prepare the copy and run each paper's pipeline in it, then the card and the claims: the outcomes and the
    summary's entries."""
    started = time.perf_counter()
    env = prepare(workspace, papers, mirror, cap, real_sizes=real_sizes)
    size = tree_bytes(workspace)
    print(f"rehearsal: copy prepared at {workspace} ({time.perf_counter() - started:.0f} s; {gb(size)} on disk, "
          f"{gb(free_bytes(workspace))} free)", flush=True)
    outcomes: list[Outcome] = []
    done: set[str] = set()
    for paper in sorted(papers, key=lambda p: stage_count(workspace, env, p)):  # a paper's own stages under its name
        with FreeWatch(workspace) as watch:
            outcome = repro(workspace, env, paper, folder / f"{paper}.log", echo=None if quiet else sys.stdout,
                            before=frozenset(done))
        grown = tree_bytes(workspace)
        outcome, size = replace(outcome, grew=grown - size, peak=watch.drop), grown
        done |= set(outcome.stages)
        outcomes.append(outcome)
        print(f"rehearsal: {outcome.line()}", flush=True)
    summary: list[dict] = [asdict(o) for o in outcomes]
    steps: list[tuple[str, CardOutcome | ClaimsOutcome | OracleOutcome]] = []
    if all(o.complete for o in outcomes) and CARD_MODEL in _listed_models(workspace, papers):
        carded = card(workspace, env, folder)
        print(f"rehearsal: {carded.line()}", flush=True)
        steps.append(("card", carded))
    if all(o.complete for o in outcomes):
        steps += [("claims", scorecard_lines(workspace, env, papers, folder)),
                  ("oracle", oracle(workspace, env, papers, folder, record=cap == DEFAULT_CAP and not real_sizes))]
    for name, step in steps:  # a step that failed counts as a pipeline that did
        summary.append({name: asdict(step)})
        if not step.complete:
            outcomes.append(Outcome(name, 0, 1, step.seconds, step.returncode or 1, step.log))
    return outcomes, summary


def _listed_models(workspace: Path, papers: Sequence[str]) -> set[str]:
    """The zoo models whose stand-ins the rehearsed papers wrote (``papers/<paper>.py``'s ``models``)."""
    params = read_params(workspace / "params.yaml")
    return {name for paper in papers for name in _module(paper).models(params)}


def _cmd(args: argparse.Namespace) -> int:
    papers = args.papers or rehearsed_papers()
    for paper in papers:
        if paper not in plugins.paper_names():
            raise unknown_name("paper", paper, plugins.paper_names())
    outcomes = rehearse(papers, args.mirror, args.cap, Path(args.dir), quiet=args.quiet, real_sizes=args.real_sizes)
    print()
    for outcome in outcomes:
        print(outcome.line() + (f" (slowest: {outcome.slowest()})" if outcome.stages else ""))
    for outcome in outcomes:
        if args.quiet and not outcome.complete:  # the log's end, where DVC's one-line error is
            tail = Path(outcome.log).read_text(encoding="utf-8", errors="replace").splitlines()[-30:]
            print(f"--- the end of {outcome.log} ---", *tail, sep="\n")
    ran = sum(o.ran for o in outcomes)
    print(f"rehearsal: {ran} distinct stages ran in {sum(o.seconds for o in outcomes):.0f} s of DVC "
          f"({len(outcomes)} papers' pipelines)")
    return 0 if all(o.complete for o in outcomes) else 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("papers", nargs="*", metavar="PAPER",
                        help="papers to rehearse (default: every paper with tests/rehearsal/papers/<paper>.py)")
    parser.add_argument("--cap", type=int, default=None, help="examples scored per benchmark group (default 4)")
    parser.add_argument("--mirror", type=Path, default=None,
                        help="mirror of the pinned released files (default: VLC_MIRROR)")
    parser.add_argument("--dir", default=str(REHEARSAL_DIR), help=f"where it all goes (default {REHEARSAL_DIR})")
    parser.add_argument("--quiet", action="store_true", help="DVC's output only to <dir>/<paper>.log")
    parser.add_argument("--real-sizes", action="store_true",
                        help="the stand-ins at the architectures' real sizes (605 MB per ViT-B/32; about 25 GB and an "
                             "hour on two cores) rather than shrunk (tests/rehearsal/archs.py)")
    parser.set_defaults(func=_cmd)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.rehearsal", description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    return _cmd(args)
