"""The claims scorecard: each paper's headline claims, and what this workspace found for each, from ``results/``.

A paper lists its headline claims in ``papers/<paper>/scorecard.toml`` (found by convention, so ``common`` names no
paper). A claim says which way the paper found it (``direction``: ``>`` or ``<`` a ``threshold``, or ``=``: no
difference from it) and, per kind of evidence, where the number is in ``results/``:

* ``mini``: the mini profile's runs;
* ``offline``: the analyses of real data that run offline (the released benchmark text, the authors' released files,
  the published tables);
* ``full``: the full profile's runs, when they have been run.

Each number is a reference in the documentation's marker syntax (``common.docnumbers``: ``FILE¦filters¦column`` or
``FILE¦dotted.path``), so a claim's number and the prose's numbers are read the same way. ``estimate`` is one
reference or two (their difference, first minus second); ``low``/``high`` are the interval's bounds when the stage
wrote one (a bootstrap over examples, or over checkpoints). The verdict:

* **reproduced**: the interval lies wholly on the paper's side of the threshold (for ``=``: it holds the threshold);
* **not reproduced**: it does not (the detail says whether it lies on the other side or holds the threshold);
* **in direction, no interval**: the stage wrote no interval, and the point estimate is on the paper's side (a point
  estimate on the other side is **not reproduced**). Never counted as reproduced;
* **not run**: the results file does not exist (the full profile before its run);
* **no such analysis**: no stage of this kind measures the claim (most claims need trained models, which no offline
  analysis has).

``python -m common docs claims`` prints every paper's scorecard and checks the generated block of each paper's README
(between ``<!--claims-->`` and ``<!--/claims-->``); ``--write`` rewrites those blocks; ``--line PAPER`` prints the one
line ``make repro`` shows. The site shows the same rows.
"""
from __future__ import annotations

import argparse
import math
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from common import plugins
from common.results_ref import DocNumberError, lookup
from common.errors import WorkspaceError
from common.paths import RESULTS, ROOT

SPEC = "scorecard.toml"
"""Under ``papers/<paper>/``: the paper's headline claims."""
DATA_FILES = ("papers/",)
"""What a stage that imports this module reads besides code: each paper's ``scorecard.toml`` (a stage lists them one
by one; ``common`` names no paper)."""
EVIDENCE = ("mini", "offline", "full")
EVIDENCE_TITLES = {"mini": "mini profile", "offline": "offline, real data", "full": "full profile"}
DIRECTIONS = (">", "<", "=")
REPRODUCED, NOT_REPRODUCED, NO_INTERVAL, NOT_RUN, NOT_MEASURED = (
    "reproduced", "not reproduced", "in direction, no interval", "not run", "no such analysis")
VERDICTS = (REPRODUCED, NOT_REPRODUCED, NO_INTERVAL, NOT_RUN, NOT_MEASURED)
BLOCK, SUMMARY_BLOCK = "claims", "claims-summary"
"""The generated blocks: ``<!--claims-->`` ... ``<!--/claims-->`` in a paper's README, ``<!--claims-summary-->`` ...
in the front door."""
README = "README.md"


class ScorecardError(WorkspaceError, ValueError):
    """A scorecard file that cannot be read, or a reference that names no number; the message names the file."""


@dataclass(frozen=True)
class Evidence:
    """Where one kind of evidence for a claim is in ``results/``."""

    kind: str
    what: str
    estimate: tuple[str, ...]
    low: str | None = None
    high: str | None = None
    scale: float = 1.0
    """Multiplies every number (a fraction shown in points: 100)."""
    interval_of_first: bool = False
    """With two estimates: ``low``/``high`` bound the first number, and the second (another model's point, a
    published number) is subtracted from them as a fixed number; otherwise they bound the estimate itself."""

    @property
    def file(self) -> str:
        return self.estimate[0].split("\u00a6")[0].strip()


@dataclass(frozen=True)
class Claim:
    paper: str
    id: str
    claim: str
    source: str
    direction: str
    threshold: float
    unit: str
    evidence: dict[str, Evidence]
    digits: int | None = None
    """Decimals shown (default: 1, or 2 below 1 in size)."""

    @property
    def direction_text(self) -> str:
        """The paper's direction in words ("above 0 points")."""
        sense = {">": "above", "<": "below", "=": "equal to"}[self.direction]
        return f"{sense} {self.threshold:g}{(' ' + self.unit) if self.unit else ''}"


@dataclass(frozen=True)
class Finding:
    """One claim, one kind of evidence: the number, its interval and the verdict."""

    claim: Claim
    kind: str
    verdict: str
    detail: str
    estimate: float | None = None
    low: float | None = None
    high: float | None = None

    @property
    def number(self) -> str:
        """The estimate and its interval as one table cell (an open bound: the stage wrote one side only)."""
        if self.estimate is None:
            return ""
        signed = self.claim.threshold == 0 and self.claim.direction != "="
        digits = self.claim.digits if self.claim.digits is not None else 2 if abs(self.estimate) < 1 else 1

        def show(v: float | None) -> str:
            return "…" if v is None else _fmt(v, signed, digits)

        text = show(self.estimate)
        if self.low is not None or self.high is not None:
            text += f" [{show(self.low)}, {show(self.high)}]"
        return text


def _fmt(value: float, signed: bool, digits: int) -> str:
    """A number of the scorecard: signed when it is a difference, ``digits`` decimals."""
    return f"{value:{'+' if signed else ''},.{digits}f}"


def _number(ref: str, where: str, results: Path) -> float:
    text = lookup(ref, where, results)
    try:
        value = float(text)
    except ValueError:
        raise ScorecardError(f"{where}: {ref!r} is {text!r}, not a number") from None
    if not math.isfinite(value):
        raise ScorecardError(f"{where}: {ref!r} is {text!r}, not a finite number")
    return value


def judge(direction: str, threshold: float, estimate: float, low: float | None, high: float | None) -> tuple[str, str]:
    """The verdict and its detail for one estimate (and interval, when either bound is known)."""
    t = f"{threshold:g}"
    if direction == "=":
        if low is None or high is None:
            return NO_INTERVAL, "no interval in results/, so equality is not tested"
        if low <= threshold <= high:
            return REPRODUCED, f"interval holds {t} (no difference shown; not proof of none)"
        return NOT_REPRODUCED, f"interval excludes {t}"
    sign = 1.0 if direction == ">" else -1.0
    near, far = (low, high) if direction == ">" else (high, low)
    if near is None and far is None:
        if sign * (estimate - threshold) > 0:
            return NO_INTERVAL, "no interval in results/"
        return NOT_REPRODUCED, f"point estimate on the other side of {t}; no interval in results/"
    if near is not None and sign * (near - threshold) > 0:
        return REPRODUCED, ""
    if far is not None and sign * (far - threshold) < 0:
        return NOT_REPRODUCED, f"interval on the other side of {t}"
    return NOT_REPRODUCED, f"interval reaches {t}"


def load(paper: str, root: Path = ROOT) -> list[Claim]:
    """The claims of ``papers/<paper>/scorecard.toml`` ([] when the paper has none)."""
    path = root / "papers" / paper / SPEC
    if not path.is_file():
        return []
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ScorecardError(f"{path}: not valid TOML: {exc}") from None
    claims, seen = [], set()
    for i, c in enumerate(data.get("claim", [])):
        where = f"{path}: claim {i + 1} ({c.get('id', '?')!r})"
        missing = [k for k in ("id", "claim", "source", "direction") if not isinstance(c.get(k), str)]
        if missing:
            raise ScorecardError(f"{where}: needs {', '.join(missing)} (text)")
        if c["direction"] not in DIRECTIONS:
            raise ScorecardError(f"{where}: direction {c['direction']!r} is not one of {', '.join(DIRECTIONS)}")
        if c["id"] in seen:
            raise ScorecardError(f"{where}: id {c['id']!r} appears twice")
        seen.add(c["id"])
        unknown = set(c) - {"id", "claim", "source", "direction", "threshold", "unit", "digits", *EVIDENCE}
        if unknown:
            raise ScorecardError(f"{where}: unknown keys {sorted(unknown)} (evidence kinds: {', '.join(EVIDENCE)})")
        if isinstance(c.get("threshold", 0), bool) or not isinstance(c.get("threshold", 0), (int, float)) or (
                "digits" in c and (isinstance(c["digits"], bool) or not isinstance(c["digits"], int))):
            raise ScorecardError(f"{where}: threshold is a number and digits an integer")
        evidence = {}
        for kind in EVIDENCE:
            e = c.get(kind)
            if e is None:
                continue
            if not isinstance(e, dict):
                raise ScorecardError(f"{where}: [{kind}] is not a table ([claim.{kind}] with what, estimate, ...)")
            unknown = set(e) - {"what", "estimate", "low", "high", "scale", "interval_of"}
            if unknown:
                raise ScorecardError(f"{where}: [{kind}] has unknown keys {sorted(unknown)}")
            numbers = {k: e[k] for k in ("scale",) if k in e}
            if any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in numbers.values()):
                raise ScorecardError(f"{where}: [{kind}] scale is not a number")
            estimate = e.get("estimate")
            estimate = (estimate,) if isinstance(estimate, str) else tuple(estimate or ())
            if not isinstance(e.get("what"), str) or not 1 <= len(estimate) <= 2:
                raise ScorecardError(f"{where}: [{kind}] needs what (text) and estimate (a reference, or two for "
                                     f"a difference)")
            if e.get("interval_of", "estimate") not in ("estimate", "first") or (
                    e.get("interval_of") == "first" and len(estimate) != 2):
                raise ScorecardError(f"{where}: [{kind}] interval_of is 'estimate' (the default) or 'first' (with "
                                     f"two estimates)")
            evidence[kind] = Evidence(kind, e["what"], estimate, e.get("low"), e.get("high"),
                                      float(e.get("scale", 1.0)), e.get("interval_of") == "first")
        claims.append(Claim(paper, c["id"], c["claim"], c["source"], c["direction"], float(c.get("threshold", 0.0)),
                            c.get("unit", ""), evidence, c.get("digits")))
    return claims


def evaluate(claim: Claim, kind: str, results: Path = RESULTS, spec: str = "") -> Finding:
    """What ``results`` say about ``claim`` from evidence ``kind``."""
    e = claim.evidence.get(kind)
    if e is None:
        return Finding(claim, kind, NOT_MEASURED, "")
    if not (results / e.file).is_file():
        return Finding(claim, kind, NOT_RUN, f"no results/{e.file}")
    where = f"{spec or f'papers/{claim.paper}/{SPEC}'}: claim {claim.id!r} [{kind}]"
    try:
        values = [_number(r, where, results) for r in e.estimate]
        estimate = (values[0] - values[1] if len(values) == 2 else values[0]) * e.scale
        shift = values[1] if e.interval_of_first else 0.0
        low = (_number(e.low, where, results) - shift) * e.scale if e.low else None
        high = (_number(e.high, where, results) - shift) * e.scale if e.high else None
    except DocNumberError as exc:
        raise ScorecardError(str(exc)) from None
    verdict, detail = judge(claim.direction, claim.threshold, estimate, low, high)
    return Finding(claim, kind, verdict, detail, estimate, low, high)


def scorecard(paper: str, results: Path = RESULTS, root: Path = ROOT) -> list[list[Finding]]:
    """Per claim of ``paper``, its findings in ``EVIDENCE`` order."""
    return [[evaluate(c, kind, results) for kind in EVIDENCE] for c in load(paper, root)]


def counts(rows: list[list[Finding]], kind: str) -> dict[str, int]:
    out = {v: 0 for v in VERDICTS}
    for findings in rows:
        out[next(f for f in findings if f.kind == kind).verdict] += 1
    return out


def line(paper: str, results: Path = RESULTS, root: Path = ROOT) -> str:
    """The one line of ``make repro``'s report: per kind of evidence, the verdict counts."""
    rows = scorecard(paper, results, root)
    if not rows:
        return f"{paper}: no headline claims listed (papers/{paper}/{SPEC})"
    parts = []
    for kind in EVIDENCE:
        c = counts(rows, kind)
        if c[NOT_MEASURED] == len(rows):
            continue
        if c[NOT_RUN] + c[NOT_MEASURED] == len(rows):
            parts.append(f"{kind}: not run")
        else:
            parts.append(f"{kind}: " + ", ".join(f"{n} {v}" for v, n in c.items() if n and v != NOT_MEASURED))
    return (f"{paper}: {len(rows)} headline claims; " + "; ".join(parts)
            + f" (papers/{paper}/README.md#claims-scorecard)")


def reproduced_counts(rows: list[list[Finding]]) -> dict[str, str]:
    """Per kind of evidence: "R of M reproduced" over the claims it measured, "not run", or "" (none measures)."""
    out = {}
    for kind in EVIDENCE:
        c = counts(rows, kind)
        measured = len(rows) - c[NOT_MEASURED]
        ran = measured - c[NOT_RUN]
        direction = f"; {c[NO_INTERVAL]} in direction, no interval" if c[NO_INTERVAL] else ""
        out[kind] = "" if not measured else "not run" if not ran else f"{c[REPRODUCED]} of {ran}{direction}"
    return out


def summary_markdown(papers: Sequence[str], results: Path = RESULTS, root: Path = ROOT) -> str:
    """The front door's generated block: per paper, the claims reproduced of those measured, per kind of evidence."""
    out = ["| paper | headline claims | " + " | ".join(f"reproduced: {EVIDENCE_TITLES[k]}" for k in EVIDENCE) + " |",
           "|---|---|" + "---|" * len(EVIDENCE)]
    for paper in papers:
        rows = scorecard(paper, results, root)
        if rows:
            shown = reproduced_counts(rows)
            out.append(f"| [{paper}](papers/{paper}/README.md#claims-scorecard) | {len(rows)} | "
                       + " | ".join(shown[k] or "no such analysis" for k in EVIDENCE) + " |")
    return "\n".join(out) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(paper: str, results: Path = RESULTS, root: Path = ROOT) -> str:
    """The README's generated block: per claim, one row per kind of evidence."""
    out = ["| claim (the paper's direction) | evidence | what is measured here | estimate [95% CI] | verdict |",
           "|---|---|---|---|---|"]
    for findings in scorecard(paper, results, root):
        c = findings[0].claim
        head = f"**{c.claim}** ({c.source}; paper: {c.direction_text})"
        for i, f in enumerate(findings):
            e = c.evidence.get(f.kind)
            verdict = f"**{f.verdict}**" if f.verdict == REPRODUCED else f.verdict
            out.append("| " + " | ".join(_cell(x) for x in (
                head if i == 0 else "", EVIDENCE_TITLES[f.kind], e.what if e else "",
                f.number, verdict + (f" ({f.detail})" if f.detail else ""))) + " |")
    out.append("")
    out.append(f"Generated from `results/` by `python -m common docs claims --write` (the claims and where each "
               f"number is: `papers/{paper}/{SPEC}`); a test fails when this table and `results/` disagree. "
               f"Intervals are the 95% intervals the stages wrote (bootstrap over examples or checkpoints); "
               f"\"no interval\" means the stage wrote none, and such a row is never counted as reproduced.")
    return "\n".join(out) + "\n"


def check(papers: Sequence[str] | None = None, root: Path = ROOT, results: Path = RESULTS,
          write: bool = False) -> list[str]:
    """The papers whose README block disagrees with ``results`` (rewritten when ``write``), and ``README.md`` when the
    front door's summary block does (all papers only). A README with claims but no block is an error."""
    wrong = []
    names = list(papers if papers is not None else plugins.paper_names())
    for paper in names:
        if not load(paper, root):
            continue
        path = root / "papers" / paper / README
        if _check_block(path, BLOCK, markdown(paper, results, root), write, f"papers/{paper}/{SPEC}"):
            wrong.append(paper)
    front = root / README
    if papers is None and _check_block(front, SUMMARY_BLOCK, summary_markdown(names, results, root), write,
                                       "the papers' claims"):
        wrong.append(README)
    return wrong


def _block(text: str, name: str) -> re.Match | None:
    return re.search(rf"<!--{name}-->\n(.*?)<!--/{name}-->", text, re.S)


def _check_block(path: Path, name: str, generated: str, write: bool, what: str) -> bool:
    """Whether the generated block ``name`` of ``path`` disagrees with ``generated`` (rewritten when ``write``)."""
    from common.io import write_text_atomic

    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    m = _block(text, name)
    if m is None:
        raise ScorecardError(f"{path}: has no <!--{name}--> ... <!--/{name}--> block for {what}")
    if m.group(1) == generated:
        return False
    if write:
        write_text_atomic(path, text[:m.start(1)] + generated + text[m.end(1):])
    return True


def _cmd(args: argparse.Namespace) -> int:
    if args.line:
        for paper in args.line:
            if paper not in plugins.paper_names():
                from common.errors import unknown_name

                raise unknown_name("paper", paper, plugins.paper_names())
        for paper in args.line:
            print("claims " + line(paper))
        return 0
    wrong = check(write=args.write)
    for paper in plugins.paper_names():
        if load(paper):
            print(line(paper))
    if args.write:
        for paper in wrong:
            print(f"rewritten: {paper if paper == README else f'papers/{paper}/{README}'}")
        return 0
    for paper in wrong:
        where = paper if paper == README else f"papers/{paper}/{README}"
        print(f"{where}: its claims block disagrees with results/ (python -m common docs claims --write rewrites it)")
    return 1 if wrong else 0


def register_cli(docs_subparsers) -> None:
    p = docs_subparsers.add_parser("claims", help="each paper's headline claims against results/ (the scorecard)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--write", action="store_true", help="rewrite the papers' README blocks from results/")
    g.add_argument("--line", nargs="+", metavar="PAPER", help="one line per paper (make repro's report)")
    p.set_defaults(func=_cmd)
