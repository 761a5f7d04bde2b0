"""``python -m common card --model SPEC [--model SPEC ...]``: one report card per model (``common.card``), and the
paired differences when several are carded together; each benchmark's data is loaded once for all models.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator, Sequence

from common.card import report
from common.card.collect import register_cli as register_collect
from common.card.core import (
    CardBenchmark, CardError, Estimate, Measure, MissingInput, close_ids, estimate, paired_difference)
from common.card.models import build, is_mini_world, resolve
from common.card.published import published_rows
from common.card.result import Card
from common.card.trend import Residual, Trend, residual
from common.errors import unknown_name
from common.files.io import sha256_file
from common.paper import load_papers
from common.paths import ROOT, build_root, refuse_workspace_outputs
from common.pipeline import machine, reproducible
from common.pipeline.inputs import full_inputs
from common.pipeline.params import read_params

DEFAULT_OUT = "cards"
"""Under the build root: ``<build>/cards/<profile>/``."""
PROFILES = ("mini", "full")
BENCHMARKS_DOC = "docs/benchmarks.md"
"""What each full-profile benchmark needs on disk, its size and the command that prepares it."""


def _plug_ins() -> list:
    """Every paper's card plug-in (``common.paper.CardPlugIn``), in paper order."""
    return [paper.card.load() for paper in load_papers() if paper.card is not None]


def discover(profile: str, only: Sequence[str] | None = None) -> tuple[list[CardBenchmark], list[Trend]]:
    """Every paper's card benchmarks and trends, in paper order; ``only``: those keys."""
    cards = _plug_ins()
    benchmarks = [b for card in cards for b in card.benchmarks(profile)]
    known = {b.key for b in benchmarks}
    for key in only or ():
        if key not in known:
            raise unknown_name("benchmark", key, known)
    return [b for b in benchmarks if not only or b.key in only], [t for card in cards for t in card.trends(profile)]


def _left_out(b: CardBenchmark, why: str) -> dict:
    return {"benchmark": b.key, "title": b.title, "why": why, "how": b.how_to_get}


def _with_blind(measures: list[Measure], blind: dict[str, Measure], bench: CardBenchmark,
                blind_note: str) -> list[Measure]:
    out = []
    for m in measures:
        why_not = bench.blind_applies(m)
        if why_not is None and m.key in blind:
            b = blind[m.key]
            if b.example_ids != m.example_ids:
                raise CardError(f"{m.key}: the blind scorer's examples differ from the model's")
            out.append(dataclasses.replace(m, blind=b.correct, blind_note=blind_note))
        else:
            out.append(dataclasses.replace(m, blind_note=why_not or blind_note))
    return out


def _trend_residuals(estimates: dict[str, Estimate], trends: Sequence[Trend], model: str) -> dict[str, Residual]:
    """Per number a trend covers, the model's residual (x: its measured recognition number, else the trend's)."""
    out: dict[str, Residual] = {}
    for trend in trends:
        measured = estimates.get(trend.x_key)
        if measured is None and model not in trend.x_published:
            continue
        x = (trend.x_published[model],) * 3 if measured is None else (measured.value, measured.low, measured.high)
        for key, points in trend.points.items():
            y = estimates.get(key)
            r = None if y is None else residual(points, x, (y.value, y.low, y.high), model, trend.label)
            if r is not None:
                out[key] = r
    return out


def _commit() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown (no git)"
    return head.stdout.strip() + (" (with uncommitted changes)" if dirty.stdout.strip() else "") \
        if head.returncode == 0 else "unknown (not a git checkout)"


def _refuse_missing(named: Sequence[str] | None, available: Sequence[CardBenchmark], missing: Sequence[dict],
                    profile: str) -> None:
    """One line naming what prepares each named benchmark that is not here, or every one when none is."""
    absent = [m for m in missing if named and m["benchmark"] in named] or ([] if available else list(missing))
    if absent:
        raise CardError(f"{profile} profile: " + "; ".join(f"{m['benchmark']} is not here ({m['why']}): {m['how']}"
                                                           for m in absent)
                        + f" (what each needs and its size: {BENCHMARKS_DOC})")


def iter_cards(specs: Sequence[str], only: Sequence[str] | None = None, device: str = "cpu",
               params: dict | None = None, log=print, strict: bool = False) -> Iterator[Card]:
    """Each model's card in turn, on every benchmark whose data is here (``strict``: else stop); each model is built
    before the data is loaded, so a checkpoint that does not fit fails first."""
    # deferred: loads PIL, torch, tqdm only when called
    from common.card.blind import blind_engine
    from common.evaluation.engine import Engine
    from common.evaluation.evaluate import engine_config

    models = [resolve(s) for s in specs]
    if len({m.file_stem for m in models}) != len(models):
        raise CardError("two --model values name the same card file; give each model once")
    params = params if params is not None else read_params()
    profile = params["profile"]
    benchmarks, trends = discover(profile, only)
    # one record per benchmark left out: why, and how to get its data
    missing = [_left_out(b, b.not_on_card or "missing: " + ", ".join(str(p) for p in b.missing()))
               for b in benchmarks if b.not_on_card or b.missing()]
    available = [b for b in benchmarks if b.key not in {m["benchmark"] for m in missing}]
    if strict:
        _refuse_missing(only, available, missing, profile)
    for m in missing:
        log(f"not on the card: {m['benchmark']}: {m['why']} ({m['how']})")
    sources = [table for card in _plug_ins() for table in card.published()]

    versions = machine.versions()
    config = engine_config(params)
    data: dict[str, object] | None = None  # loaded with the first model, and the blind baseline scored
    for model in models:
        warnings = [f"{model.spec_text} is not a mini-world model: scored on the mini world's rendered scenes "
                    f"(48-pixel images), not comparable with any published number; use --profile full (the real "
                    f"benchmarks: {BENCHMARKS_DOC})"] if profile == "mini" and not is_mini_world(model) else []
        for line in warnings:
            log(f"warning: {line}")
        log(f"building {model.spec_text}")
        started = time.perf_counter()
        engine = Engine(build(model, device=device), config)
        if data is None:
            load_started = time.perf_counter()
            data = {}
            for b in list(available):
                log(f"loading {b.key}")
                try:
                    data[b.key] = b.load()
                except MissingInput as exc:  # e.g. a manual download not in place: listed, the rest carded
                    available.remove(b)
                    missing.append(_left_out(b, f"missing: {exc}"))
                    log(f"not on the card: {b.key}: {exc}")
            if strict:
                _refuse_missing(only, available, missing, profile)
            text_only, blind_note = blind_engine(profile)
            blind = {b.key: {m.key: m for m in b.score(text_only, data[b.key])} for b in available} if text_only else {}
            # the sha256 of every input file (a folder: its manifest.json when it has one); "rehearsal": not all of
            # the full profile's inputs were read (full_inputs.cap, as a rehearsal caps them)
            inputs = {b.key: [p / "manifest.json" if p.is_dir() else p for p in b.inputs] for b in available}
            provenance = {"profile": profile, "rehearsal": not full_inputs(params).comparable, "commit": _commit(),
                          "data_sha256": {key: {str(f): sha256_file(f) for f in paths if f.is_file()}
                                          for key, paths in inputs.items()},
                          "engine": dataclasses.asdict(config), "blind_scorer": blind_note,
                          "trends": [t.label for t in trends],
                          "data_load_seconds": round(time.perf_counter() - load_started, 2)}
            started += time.perf_counter() - load_started  # a model's time is its own: build and scoring
        log(f"scoring {model.spec_text}")
        measures: list[Measure] = []
        precisions: dict[str, str] = {}
        half: dict[str, Engine] = {}
        for b in available:
            authors = b.authors_precision(model.spec) if profile != "mini" else None
            if authors is None or authors[0] == config.precision:
                measures += _with_blind(b.score(engine, data[b.key]), blind.get(b.key, {}), b, blind_note)
                continue
            precision, why = authors
            if precision not in half:
                log(f"scoring {model.spec_text} at {precision} too (the authors' precision)")
                half[precision] = Engine(engine.model, dataclasses.replace(config, precision=precision))
            precisions[b.key] = f"{precision} ({why}); {config.precision} beside it"
            theirs = [dataclasses.replace(m, precision=precision,
                                          rule=f"{m.rule}; scored at {precision} as the authors' code: {why}")
                      for m in b.score(half[precision], data[b.key])]
            measures += _with_blind(theirs, blind.get(b.key, {}), b, blind_note)
            measures += [dataclasses.replace(m, key=f"{m.key}@{config.precision}",
                                             metric=f"{m.metric} [{config.precision}]", precision=config.precision,
                                             blind=None, blind_note=f"the blind baseline is on the {precision} row")
                         for m in b.score(engine, data[b.key])]
        close_ids(measures)
        estimates = {m.key: estimate(m) for m in measures}
        blind_estimates = {m.key: estimate(dataclasses.replace(m, correct=m.blind)) for m in measures
                           if m.blind is not None}
        residuals = _trend_residuals(estimates, trends, model.spec_text)
        seconds = round(time.perf_counter() - started, 2)

        yield Card(model, profile, measures, estimates, blind_estimates, residuals, missing,
                   {**provenance, "model": model.provenance(), "fingerprint": engine.model.fingerprint,
                    "precision": {"engine": config.precision, "authors": precisions},
                    "evaluation_seconds": seconds,
                    "environment": {"versions": versions, "hardware": machine.hardware(device)}},
                   warnings, published_rows(sources, {m.key for m in measures}))


def _at_one_precision(a: Card, b: Card, key: str) -> tuple[Measure, Measure] | None:
    """The two cards' numbers under ``key`` scored at one precision (the authors' fp16 of both, else both at the
    engine's), since fp16's extra ties would favour the model scored at fp32."""
    def options(card: Card) -> list[Measure]:  # the number itself first, then those beside it
        return [m for m in card.measures if m.key == key] + [m for m in card.measures if m.key.startswith(key + "@")]

    pairs = [(x, y) for x in options(a) for y in options(b) if x.precision == y.precision]
    if not pairs or all(m.key != key for m in b.measures):
        return None
    return dataclasses.replace(pairs[0][0], key=key), dataclasses.replace(pairs[0][1], key=key)


def comparisons(cards: Sequence[Card]) -> list[dict]:
    """Every pair of models (in the order given): per shared number, a - b with its paired interval."""
    rows = []
    for i, a in enumerate(cards):
        for b in cards[i + 1:]:
            for key in (m.key for m in a.measures if "@" not in m.key):
                pair = _at_one_precision(a, b, key)
                if pair is None:
                    continue
                m, other = pair
                d = paired_difference(m, other)
                rows.append({"a": a.model.spec_text, "b": b.model.spec_text, "key": m.key, "benchmark": m.benchmark,
                             "metric": m.metric, "n": m.n, "precision": m.precision,
                             "a_value": round(m.value(), 2), "b_value": round(other.value(), 2),
                             "difference": round(d.value, 2),
                             "low": round(d.low, 2), "high": round(d.high, 2),
                             "verdict": (f"{a.model.spec_text} higher" if d.low > 0 else
                                         f"{b.model.spec_text} higher" if d.high < 0 else
                                         "no difference shown (the interval holds 0)")})
    return rows


def _cmd_card(args: argparse.Namespace) -> int:
    if not args.model:
        args.parser.error("--model SPEC is required (or `card collect DIR...` to build a leaderboard from cards)")
    specs = list(dict.fromkeys(args.model))
    for spec in specs:  # every SPEC checked first, on every rank: a misspelt name is one line before torch loads
        resolve(spec)  # and before the CPU profile restarts the process (reexec_pinned)
    # deferred: loads PIL, torch, tqdm only when called
    from common.evaluation.evaluate import best_device

    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))  # under torchrun, else 0, 1
    device = args.device or best_device()
    if device == "cuda" and world > 1:
        device = f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}"
    if device == "cpu":  # the pipeline's CPU profile: the tables' stages' bits (common.pipeline.reproducible)
        reproducible.pin()
    params = read_params()
    if args.profile:  # the card's own: params.yaml, and so every stage, keep theirs
        params = {**params, "profile": args.profile}
    out_dir = Path(args.out).expanduser() if args.out else build_root() / DEFAULT_OUT / params["profile"]
    if out_dir.exists() and not out_dir.is_dir():
        raise CardError(f"--out {out_dir} is a file, not a folder")
    refuse_workspace_outputs([out_dir], "--out")  # before any work
    mine = specs[rank::world]  # a sweep under torchrun: each rank cards its share of the models
    if not mine:
        return 0
    cards = []
    for card in iter_cards(mine, args.benchmark or None, device, params,
                           log=lambda line: print(f"[rank {rank}] {line}" if world > 1 else line, file=sys.stderr,
                                                  flush=True), strict=True):
        cards.append(card)  # each card written whole as soon as it is scored: a later failure loses none of them
        print(report.markdown(card))
        for path in report.write_cards([card], [], out_dir):
            print(f"written: {path}", file=sys.stderr)
    if len(cards) > 1 and world == 1:
        for path in report.write_cards([], comparisons(cards), out_dir):
            print(f"written: {path}", file=sys.stderr)
    return 0


def register_cli(subparsers) -> None:
    p = subparsers.add_parser(
        "card", help="a report card: any model on every benchmark of the five papers",
        description="Score models on every benchmark of the five papers under the current profile, each number with "
                    "its paper's rule, n, ties, a 95% interval, the blind text-only baseline and the residual from "
                    "the recognition trend; with several models, their paired differences.",
        epilog="SPEC: a zoo name (python -m common zoo list), ARCH:TAG (open_clip pretrained), ARCH:FILE (a local "
               "checkpoint of that open_clip architecture), or hf:REPO|DIR (transformers BLIP or FLAVA). Writes "
               "<out>/<model>.{json,csv,md,png} and, for several models, comparison.{json,csv,md}. A sweep over many "
               "models: `torchrun --nproc_per_node N -m common card --model A --model B ...` (one process per GPU, "
               "each taking every N-th model; several nodes: torchrun's --nnodes/--node_rank/--rdzv_endpoint); the "
               "paired comparison is written by a single-process run only. A model that is not of the mini family, "
               "carded under the mini profile, is warned about (its numbers are the rendered mini world's). "
               "`card collect DIR...` merges cards into one leaderboard.")
    p.add_argument("--model", action="append", metavar="SPEC", help="a model to card (repeatable; required)")
    p.add_argument("--profile", choices=PROFILES, default=None,
                   help="mini (the rendered mini world) or full (the papers' real benchmarks, prepared as "
                        f"{BENCHMARKS_DOC} says); default: params.yaml's profile. The card's only: stages keep theirs")
    p.add_argument("--benchmark", action="append", metavar="KEY",
                   help="only these benchmarks (repeatable; default: all): sugarcrepe, recognition, aro, "
                        "hard_positives, ccneg, bivlc; a named benchmark whose data is not here stops with the "
                        "command that prepares it")
    p.add_argument("--out", default=None, help=f"output folder (default: <build>/{DEFAULT_OUT}/<profile>/)")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    p.set_defaults(func=_cmd_card, parser=p)
    actions = p.add_subparsers(dest="card_action", metavar="{collect}", required=False)

    register_collect(actions)
