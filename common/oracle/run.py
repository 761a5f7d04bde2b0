"""``python -m common oracle [PAPER...]`` (``make oracle``; docs/audit.md): each paper's authors' evaluation, in its
own process (``--one``), beside what the full profile wrote; exit 0 only when every benchmark asked for agrees.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence
from unittest import mock

from common import plugins
from common.errors import unknown_name
from common.oracle.authors import AuthorsCode, OracleError, fetch_code
from common.oracle.core import PaperOracle, Replacement, read_oracles, table_lines
from common.paper import load_paper, load_papers
from common.paths import ROOT, data_root
from common.pipeline.params import read_params

OUT_DIR = Path("build") / "oracle"
"""Where each paper's report goes, under the workspace root."""


@dataclass
class OracleContext:
    """What a paper's ``oracle.run`` gets: the workspace, its parameters, a scratch folder and the device."""

    root: Path
    params: dict[str, Any]
    scratch: Path
    device: str = "cpu"
    replacements: list[Replacement] = field(default_factory=list)

    def code(self, repo: str) -> AuthorsCode:
        return fetch_code(repo, data_root())

    def results(self, paper: str) -> Path:
        """``results/<paper>/full``, which must exist: the oracle compares with what the full profile computed."""
        folder = self.root / "results" / paper / "full"
        if not folder.is_dir():
            raise OracleError(f"{folder} does not exist: run the full profile first (profile: full in params.yaml, "
                              f"then dvc repro papers/{paper}), or make rehearse, which runs the oracle on stand-ins")
        return folder

    def replaced(self, what: str, by: str, why: str) -> None:
        if not any(r.what == what and r.by == by for r in self.replacements):
            self.replacements.append(Replacement(what, by, why))

    @contextlib.contextmanager
    def replacing(self, owner: Any, attribute: str, replacement: Any, what: str, by: str, why: str) -> Iterator[None]:
        """``owner.attribute`` is ``replacement`` for the block, listed as ``replaced``; None: left as released."""
        if replacement is None:
            yield
            return
        self.replaced(what, by, why)
        with mock.patch.object(owner, attribute, replacement):
            yield


def oracle_papers() -> list[str]:
    """The papers that declare an oracle (``common.paper.OraclePlugIn``)."""
    return [paper.name for paper in load_papers() if paper.oracle is not None]


def run_all(papers: Sequence[str], out_dir: Path, device: str = "cpu") -> tuple[list[PaperOracle], list[str]]:
    """Each paper in its own process; returns the reports and the papers whose process failed (with its error)."""
    failed: list[str] = []
    for paper in papers:
        (out_dir / f"{paper}.json").unlink(missing_ok=True)
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "common", "oracle", "--one", paper, "--out", str(out_dir),
                               "--device", device], cwd=ROOT, capture_output=True, text=True)
        log = out_dir / f"{paper}.log"
        log.write_text(done.stdout + done.stderr, encoding="utf-8")
        status = "ran" if done.returncode == 0 else "FAILED"
        print(f"oracle: {paper}: {status} in {time.perf_counter() - started:.0f} s (log: {log})", flush=True)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
            failed.append(f"{paper}: {tail[0]}")
    return [o for o in read_oracles(out_dir) if o.paper in papers], failed


def _cmd(args: argparse.Namespace) -> int:
    out_dir = Path(args.out) if args.out else ROOT / OUT_DIR
    out_dir.mkdir(parents=True, exist_ok=True)
    if args.device is None:
        # deferred: loads PIL, torch, tqdm only when called
        from common.evaluation.evaluate import best_device

        args.device = best_device()
    if args.one:  # the paper's oracle plug-in run in this process (run_all's child), its report written
        paper = args.one
        declared = load_paper(paper).oracle
        if declared is None:
            raise OracleError(f"papers/{paper} declares no oracle (its PAPER's oracle is None)")
        ctx = OracleContext(ROOT, read_params(ROOT / "params.yaml"), ROOT / "build" / "oracle" / "scratch" / paper,
                            args.device)
        oracle: PaperOracle = declared.load().run(ctx)
        oracle.replacements = [*ctx.replacements, *oracle.replacements]
        oracle.ran = [line.replace(f"{ROOT}/", "") for line in oracle.ran]  # paths relative to the workspace
        oracle.write(out_dir / f"{paper}.json")
        print("\n".join(table_lines([oracle])))
        return 0
    papers = args.papers or oracle_papers()
    for paper in papers:
        if paper not in plugins.paper_names():
            raise unknown_name("paper", paper, plugins.paper_names())
    oracles, failed = run_all(papers, out_dir, args.device)
    print("\n".join(table_lines(oracles)))
    without = [p for p in plugins.paper_names() if p not in oracle_papers()]
    if without and not args.papers:
        print(f"no oracle (not compared): {', '.join(without)}")
    for line in failed:
        print(f"oracle FAILED: {line}")
    print()
    for oracle in oracles:
        print(("ok    " if oracle.ok else "FAIL  ") + oracle.headline())
    summary = {"papers": {o.paper: {"ok": o.ok, "agreeing": o.agreeing(), "benchmarks": o.benchmarks(),
                                    "code": o.code} for o in oracles}, "failed": failed}
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return 0 if not failed and all(o.ok for o in oracles) and len(oracles) == len(papers) else 1


def register_cli(subparsers) -> None:
    """``python -m common oracle``."""
    parser = subparsers.add_parser("oracle", help="each paper's released evaluation code run beside this workspace's "
                                                  "on the full profile's inputs: numbers and decisions compared")
    parser.add_argument("papers", nargs="*", metavar="PAPER",
                        help="papers to check (default: every paper with a papers/<paper>/oracle.py)")
    parser.add_argument("--out", default=None, help=f"where the reports go (default {OUT_DIR}/ in the workspace)")
    parser.add_argument("--device", default=None,
                        help="the device the authors' code runs on (default: a GPU when there is one, as the full "
                             "profile's stages choose)")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)  # a paper, in this process (run_all's child)
    parser.set_defaults(func=_cmd)
