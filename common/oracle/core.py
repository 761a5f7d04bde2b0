"""What an oracle run reports: the authors' numbers beside this workspace's, decisions compared example by example,
and what agreeing means (docs/audit.md, "The authors' code as the oracle").
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from common.files.io import write_json_atomic

SCORE_TOLERANCE = 1e-4
"""How far two fp32 computations of the same example's score may be apart (summation order, kernels); beyond it the
two sides computed something different even where no decision moved (e.g. attention heads split another way)."""


@dataclass(frozen=True)
class Replacement:
    """One thing the oracle did not run as released, and why (model construction, or a shim for today's libraries)."""

    what: str
    by: str
    why: str


@dataclass(frozen=True)
class Number:
    """One number both sides compute: ``benchmark`` (e.g. "SugarCrepe"), ``model`` (zoo name), ``key`` (category,
    relation, K or word), both values in the paper's unit, compared after rounding to ``decimals``."""

    benchmark: str
    model: str
    key: str
    authors: float
    ours: float | None
    decimals: int
    reason: str | None = None
    """A stated deviation that explains a difference (printed beside it); None: none is expected."""

    @property
    def equal(self) -> bool:
        if self.ours is None or not (math.isfinite(self.authors) and math.isfinite(self.ours)):
            return False
        return round(self.authors, self.decimals) == round(self.ours, self.decimals)

    @property
    def verdict(self) -> str:
        if self.equal:
            return "equal"
        if self.ours is None:
            return "MISSING here"
        return f"differs: {self.reason}" if self.reason else "DIFFERS"

    @property
    def ok(self) -> bool:
        return self.equal or (self.ours is not None and self.reason is not None)


@dataclass(frozen=True)
class Decisions:
    """Per-example decisions of one benchmark and model: ``differing`` and ``missing`` name the examples."""

    benchmark: str
    model: str
    compared: int
    differing: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    """Examples one side decided and the other did not."""
    reason: str | None = None
    score_gap: float | None = None
    """The largest difference between the two sides' scores of the same example and option, where both give scores."""

    @property
    def scores_apart(self) -> bool:
        return self.score_gap is not None and self.score_gap > SCORE_TOLERANCE

    @property
    def ok(self) -> bool:
        return (self.compared > 0 and not self.missing
                and ((not self.differing and not self.scores_apart) or self.reason is not None))

    @property
    def verdict(self) -> str:
        if self.compared == 0:
            return "NOTHING COMPARED"
        parts = []
        if self.differing:
            parts.append(f"{len(self.differing)} differ ({', '.join(self.differing[:5])}"
                         f"{', ...' if len(self.differing) > 5 else ''})")
        if self.missing:
            parts.append(f"{len(self.missing)} on one side only ({', '.join(self.missing[:5])})")
        if self.scores_apart:
            parts.append(f"scores up to {self.score_gap:.1e} apart (over {SCORE_TOLERANCE:.0e})")
        if not parts:
            gap = "" if self.score_gap is None else f" (scores within {self.score_gap:.1e})"
            return f"{self.compared} identical{gap}"
        return "; ".join(parts) + (f": {self.reason}" if self.reason and not self.missing else "")


def compare_decisions(benchmark: str, model: str, authors: Mapping[str, bool], ours: Mapping[str, bool],
                      reason: str | None = None, authors_scores: Mapping[str, Sequence[float]] | None = None,
                      our_scores: Mapping[str, Sequence[float]] | None = None) -> Decisions:
    """Decisions keyed by example id (True: right) on both sides -> ``Decisions``; with both sides' scores per example
    (the same options in the same order), their largest difference too."""
    both = [k for k in authors if k in ours]
    missing = tuple(sorted(set(authors) ^ set(ours)))
    differing = tuple(k for k in both if bool(authors[k]) != bool(ours[k]))
    gap = None
    if authors_scores is not None and our_scores is not None:
        pairs = [(a, b) for k in both for a, b in zip(authors_scores[k], our_scores[k], strict=True)]
        gap = max((abs(float(a) - float(b)) for a, b in pairs), default=None)
    decisions = Decisions(benchmark, model, len(both), differing, missing, None, gap)
    if reason is not None and (differing or decisions.scores_apart):  # a stated reason only where it explains
        decisions = replace(decisions, reason=reason)
    return decisions


@dataclass(frozen=True)
class NotCovered:
    """A benchmark of the paper the oracle does not run, and exactly why."""

    benchmark: str
    why: str


@dataclass
class PaperOracle:
    """One paper's oracle run."""

    paper: str
    code: list[str] = field(default_factory=list)
    """``owner/repo@commit`` of each released code base run."""
    ran: list[str] = field(default_factory=list)
    """What was run, as a command line or a call."""
    replacements: list[Replacement] = field(default_factory=list)
    numbers: list[Number] = field(default_factory=list)
    decisions: list[Decisions] = field(default_factory=list)
    not_covered: list[NotCovered] = field(default_factory=list)

    def benchmarks(self) -> list[str]:
        return list(dict.fromkeys([n.benchmark for n in self.numbers] + [d.benchmark for d in self.decisions]))

    def agreeing(self) -> list[str]:
        """Benchmarks whose every number and decision agrees (or differs for a stated reason)."""
        return [b for b in self.benchmarks()
                if all(n.ok for n in self.numbers if n.benchmark == b)
                and all(d.ok for d in self.decisions if d.benchmark == b)]

    @property
    def ok(self) -> bool:
        return bool(self.benchmarks()) and len(self.agreeing()) == len(self.benchmarks())

    def headline(self) -> str:
        benchmarks = self.benchmarks()
        return (f"{self.paper}: the authors' code agrees on {len(self.agreeing())} of {len(benchmarks)} benchmarks "
                f"({', '.join(self.code) or 'no code'})"
                + (f"; not run: {', '.join(n.benchmark for n in self.not_covered)}" if self.not_covered else ""))

    def to_json(self) -> dict:
        return {**asdict(self), "benchmarks": self.benchmarks(), "agreeing": self.agreeing(), "ok": self.ok}

    @classmethod
    def from_json(cls, data: Mapping) -> "PaperOracle":
        return cls(paper=data["paper"], code=list(data["code"]), ran=list(data["ran"]),
                   replacements=[Replacement(**r) for r in data["replacements"]],
                   numbers=[Number(**n) for n in data["numbers"]],
                   decisions=[Decisions(**{**d, "differing": tuple(d["differing"]), "missing": tuple(d["missing"])})
                              for d in data["decisions"]],
                   not_covered=[NotCovered(**n) for n in data["not_covered"]])

    def write(self, path: Path) -> Path:
        return write_json_atomic(path, self.to_json())

    def record(self, inputs: str) -> dict:
        """What the committed record keeps of a run on ``inputs``: per benchmark the counts and the verdict, never
        the scores, whose last bits differ across CPU kinds (a rerun anywhere writes the same file)."""
        agreeing = set(self.agreeing())
        benchmarks = {}
        for benchmark in self.benchmarks():
            numbers = [n for n in self.numbers if n.benchmark == benchmark]
            decisions = [d for d in self.decisions if d.benchmark == benchmark]
            reasons = {n.reason for n in numbers if n.reason and not n.equal} | {d.reason for d in decisions
                                                                                   if d.reason}
            benchmarks[benchmark] = {
                "agrees": benchmark in agreeing,
                "models": len({n.model for n in numbers} | {d.model for d in decisions}),
                "numbers": len(numbers), "numbers_equal": sum(n.equal for n in numbers),
                "decisions": sum(d.compared for d in decisions),
                "decisions_differing": sum(len(d.differing) + len(d.missing) for d in decisions),
                "stated_reasons": sorted(reasons)}
        return {"paper": self.paper, "inputs": inputs, "code": self.code,
                "agreeing": len(agreeing), "of": len(benchmarks), "benchmarks": benchmarks,
                "not_covered": [asdict(n) for n in self.not_covered],
                "replacements": [r.what for r in self.replacements]}


RECORD_DIR = "oracle"
"""Where ``<paper>.json`` records the last oracle run on the rehearsal's stand-ins (``PaperOracle.record``), under
``results/``: committed, rewritten by every default rehearsal, so CI fails when the committed one is stale."""
STANDIN_INPUTS = ("the rehearsal's stand-ins (make rehearse: the full profile's inputs in their upstream "
                  "formats, a few examples per group, random-weight checkpoints in the released formats)")


def _fmt(value: float | None, decimals: int) -> str:
    return "-" if value is None else f"{value:.{decimals}f}"


def table_lines(oracles: Iterable[PaperOracle]) -> list[str]:
    """The printed report: per paper, what ran and was replaced, then one line per number and per decision set."""
    lines: list[str] = []
    for oracle in oracles:
        lines.append(f"== {oracle.headline()}")
        lines += [f"   ran: {ran}" for ran in oracle.ran]
        lines += [f"   replaced: {r.what} -> {r.by} ({r.why})" for r in oracle.replacements]
        rows = [("benchmark", "model", "key", "authors", "here", "verdict")]
        rows += [(n.benchmark, n.model, n.key, _fmt(n.authors, n.decimals), _fmt(n.ours, n.decimals), n.verdict)
                 for n in oracle.numbers]
        rows += [(d.benchmark, d.model, "decisions", "", "", d.verdict) for d in oracle.decisions]
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        lines += ["   " + "  ".join(c.ljust(w) for c, w in zip(row[:5], widths)) + "  " + row[5] for row in rows]
        lines += [f"   not run: {n.benchmark}: {n.why}" for n in oracle.not_covered]
    return lines


def read_oracles(folder: Path) -> list[PaperOracle]:
    """Every ``<paper>.json`` an oracle run wrote under ``folder``."""
    return [PaperOracle.from_json(json.loads(p.read_text(encoding="utf-8"))) for p in sorted(Path(folder).glob("*.json"))
            if p.name != "summary.json"]


def read_record(paper: str, results: Path) -> dict | None:
    """``results/oracle/<paper>.json`` (``PaperOracle.record``), or None when the paper has none."""
    path = Path(results) / RECORD_DIR / f"{paper}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
