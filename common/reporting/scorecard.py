"""The claims scorecard: each paper's headline claims (``papers/<paper>/scorecard.toml``) against what this workspace
found (fields and verdicts: docs/layout.md, "A paper's scorecard.toml"); ``python -m common docs claims``.
"""
from __future__ import annotations

import argparse
import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from common import plugins
from common.errors import WorkspaceError, unknown_name
from common.files.io import write_text_atomic
from common.files.utf8 import read_toml
from common.paths import RESULTS, ROOT
from common.reporting.report import is_number
from common.reporting.results_ref import DocNumberError, lookup
from common.text.markdown import md_cell

SPEC = "scorecard.toml"
"""Under ``papers/<paper>/``: the paper's headline claims."""
DATA_FILES = ("papers/",)
"""Each paper's ``scorecard.toml``, which a stage importing this module reads (listed one by one)."""
EVIDENCE = ("mini", "offline", "full")
EVIDENCE_TITLES = {"mini": "mini profile", "offline": "offline, real data", "full": "full profile"}
DIRECTIONS = (">", "<", "=")
REPRODUCED, DIRECTION_ONLY, NOT_REPRODUCED, NO_INTERVAL, NOT_RUN, NOT_MEASURED = (
    "reproduced", "in direction, not in size", "not reproduced", "in direction, no interval", "not run",
    "no such analysis")
VERDICTS = (REPRODUCED, DIRECTION_ONLY, NOT_REPRODUCED, NO_INTERVAL, NOT_RUN, NOT_MEASURED)
BLOCK, SUMMARY_BLOCK = "claims", "claims-summary"
"""The generated blocks' markers: in a paper's README, and in the front door."""
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
    """With two estimates: ``low``/``high`` bound the first, the second subtracted as a fixed number."""
    same_as_published: bool = False
    """The evidence measures the paper's own quantity: its interval is compared with the published effect."""
    threshold: float | None = None
    """This evidence's threshold where it differs from the claim's (None: the claim's)."""
    margin: float | None = None

    @property
    def file(self) -> str:
        return self.estimate[0].split("\u00a6")[0].strip()


@dataclass(frozen=True)
class Published:
    """The effect the paper states: a number, or the transcribed cells it is read from (their difference)."""

    number: float | None = None
    refs: tuple[str, ...] = ()
    scale: float = 1.0
    tolerance: float = 0.0
    note: str = ""

    def value(self, where: str, results: Path) -> float:
        if self.number is not None:
            return self.number
        values = [_number(r, where, results) for r in self.refs]
        return (values[0] - values[1] if len(values) == 2 else values[0]) * self.scale

    def text(self) -> str:
        """Where the effect comes from ("Table 6, VG-Relation: NegCLIP minus CLIP-FT")."""
        cells = [dict(p.strip().replace("\\|", "|").split("=", 1) for p in ref.split("\u00a6")[1:] if "=" in p)
                 for ref in self.refs]
        words = ""
        if cells:
            first = cells[0]
            head = ", ".join(v for k, v in first.items() if k not in ("column",) and all(
                c.get(k) == v for c in cells))
            names = [" ".join(v for k, v in c.items() if k == "column" or any(
                o.get(k) != v for o in cells)) for c in cells]
            words = f"{head}: {' minus '.join(names)}" if head else " minus ".join(names)
        return "; ".join(x for x in (words, self.note) if x)


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
    quote: tuple[str, ...] = ()
    """The paper's words the claim tests (a sentence, or a table's row)."""
    published: Published = Published()
    margin: float | None = None
    """With ``=``: how far from the threshold still counts as equal (required)."""

    def test(self, kind: str) -> tuple[float, float | None]:
        """The threshold and margin that evidence ``kind`` is judged against."""
        e = self.evidence.get(kind)
        threshold = e.threshold if e is not None and e.threshold is not None else self.threshold
        margin = e.margin if e is not None and e.margin is not None else self.margin
        return threshold, margin

    @property
    def direction_text(self) -> str:
        """The paper's direction in words ("above 0 points", "50 % within 2")."""
        return direction_words(self.direction, self.threshold, self.margin, self.unit)

    def tested_here(self, kind: str) -> str:
        """The test of evidence ``kind`` in words where it is not the paper's, else ""."""
        tested = direction_words(self.direction, *self.test(kind), self.unit)
        return tested if kind in self.evidence and tested != self.direction_text else ""


def direction_words(direction: str, threshold: float, margin: float | None, unit: str) -> str:
    """A test in words: "above 0 points", "50 % within 2"."""
    unit = f" {unit}" if unit else ""
    if direction == "=":
        return f"{threshold:g}{unit} within {margin:g}"
    return f"{'above' if direction == '>' else 'below'} {threshold:g}{unit}"


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
    published: float | None = None
    """The published effect (None: the claim states none that this evidence could be compared with)."""

    @property
    def number(self) -> str:
        """The estimate and its interval as one table cell (``…``: a bound the stage did not write)."""
        if self.estimate is None:
            return ""

        def show(v: float | None) -> str:
            return "…" if v is None else _fmt(self.claim, v, self.estimate)

        text = show(self.estimate)
        if self.low is not None or self.high is not None:
            text += f" [{show(self.low)}, {show(self.high)}]"
        return text


def _fmt(c: Claim, value: float, size: float) -> str:
    """A number of the claim: signed when it is a difference (threshold 0), with the claim's decimals."""
    digits = c.digits if c.digits is not None else 2 if abs(size) < 1 else 1
    return f"{value:{'+' if c.threshold == 0 and c.direction != '=' else ''},.{digits}f}"


def _number(ref: str, where: str, results: Path) -> float:
    try:
        text = lookup(ref, where, results)
    except DocNumberError as exc:
        raise ScorecardError(str(exc)) from None
    try:
        value = float(text)
    except ValueError:
        raise ScorecardError(f"{where}: {ref!r} is {text!r}, not a number") from None
    if not math.isfinite(value):
        raise ScorecardError(f"{where}: {ref!r} is {text!r}, not a finite number")
    return value


def judge(direction: str, threshold: float, estimate: float, low: float | None, high: float | None,
          margin: float | None = None) -> tuple[str, str]:
    """The verdict and its detail for one estimate (and interval) against the paper's direction alone."""
    t = f"{threshold:g}"
    if direction == "=":
        if margin is None:
            raise ScorecardError("an '=' claim needs its margin")
        lo, hi = threshold - margin, threshold + margin
        if low is None or high is None:
            if lo <= estimate <= hi:
                return NO_INTERVAL, f"no interval in results/, so equality within {margin:g} is not tested"
            return NOT_REPRODUCED, f"point estimate outside {t} \u00b1 {margin:g}; no interval in results/"
        if lo <= low and high <= hi:
            return REPRODUCED, f"interval within {t} \u00b1 {margin:g}"
        if high < lo or low > hi:
            return NOT_REPRODUCED, f"interval outside {t} \u00b1 {margin:g}"
        return NOT_REPRODUCED, f"interval reaches beyond {t} \u00b1 {margin:g}"
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


def size(verdict: str, detail: str, published: float | None, low: float | None, high: float | None,
         tolerance: float = 0.0) -> tuple[str, str]:
    """A reproduced direction stays reproduced when the (widened) interval holds the published effect."""
    if verdict != REPRODUCED or published is None or low is None or high is None:
        return verdict, detail
    shown = f"{published:+g}" if published else "0"
    if low - tolerance <= published <= high + tolerance:
        return REPRODUCED, "; ".join(x for x in (detail, f"holds the published {shown}") if x)
    where = "above" if published > high else "below"
    return DIRECTION_ONLY, "; ".join(x for x in (detail, f"the published {shown} lies {where} the interval") if x)


_CLAIM_KEYS = {"id", "claim", "source", "quote", "direction", "threshold", "margin", "unit", "digits", "published",
               "published_scale", "published_tolerance", "published_note", *EVIDENCE}
_EVIDENCE_KEYS = {"what", "estimate", "low", "high", "scale", "interval_of", "same_as_published", "threshold",
                  "margin"}


def _refs(value: object) -> tuple[str, ...] | None:
    """One reference or two (a difference), or None when ``value`` is neither."""
    refs = (value,) if isinstance(value, str) else tuple(value) if isinstance(value, list) else ()
    return refs if 1 <= len(refs) <= 2 and all(isinstance(r, str) and r.strip() for r in refs) else None


def _margin(where: str, direction: str, margin: object, required: bool) -> float | None:
    if margin is None:
        if direction == "=" and required:
            raise ScorecardError(f"{where}: an '=' claim states its margin (margin = a number > 0): equality within "
                                 f"what?")
        return None
    if not is_number(margin) or margin <= 0:
        raise ScorecardError(f"{where}: margin is a finite number > 0")
    if direction != "=":
        raise ScorecardError(f"{where}: margin goes with direction '=' only")
    return float(margin)


def _evidence(where: str, kind: str, e: object, direction: str) -> Evidence:
    if not isinstance(e, dict):
        raise ScorecardError(f"{where}: [{kind}] is not a table ([claim.{kind}] with what, estimate, ...)")
    unknown = set(e) - _EVIDENCE_KEYS
    if unknown:
        raise ScorecardError(f"{where}: [{kind}] has unknown keys {sorted(unknown)}")
    for key in ("scale", "threshold"):
        if key in e and not is_number(e[key]):
            raise ScorecardError(f"{where}: [{kind}] {key} is not a finite number")
    if "same_as_published" in e and not isinstance(e["same_as_published"], bool):
        raise ScorecardError(f"{where}: [{kind}] same_as_published is true or false")
    estimate = _refs(e.get("estimate"))
    if not isinstance(e.get("what"), str) or estimate is None:
        raise ScorecardError(f"{where}: [{kind}] needs what (text) and estimate (a reference, or two for a "
                             f"difference)")
    for key in ("low", "high"):
        if key in e and not (isinstance(e[key], str) and e[key].strip()):
            raise ScorecardError(f"{where}: [{kind}] {key} is a reference (text)")
    if e.get("interval_of", "estimate") not in ("estimate", "first") or (
            e.get("interval_of") == "first" and len(estimate) != 2):
        raise ScorecardError(f"{where}: [{kind}] interval_of is 'estimate' (the default) or 'first' (with two "
                             f"estimates)")
    return Evidence(kind, e["what"], estimate, e.get("low"), e.get("high"), float(e.get("scale", 1.0)),
                    e.get("interval_of") == "first", bool(e.get("same_as_published", kind == "full")),
                    float(e["threshold"]) if "threshold" in e else None,
                    _margin(f"{where}: [{kind}]", direction, e.get("margin"), False))


def _published(where: str, c: dict) -> Published:
    value = c.get("published")
    for key in ("published_scale", "published_tolerance"):
        if key in c and (not is_number(c[key]) or c[key] < 0):
            raise ScorecardError(f"{where}: {key} is a finite number >= 0")
    if "published_note" in c and not isinstance(c["published_note"], str):
        raise ScorecardError(f"{where}: published_note is text")
    common = dict(scale=float(c.get("published_scale", 1.0)), tolerance=float(c.get("published_tolerance", 0.0)),
                  note=c.get("published_note", ""))
    if is_number(value):
        return Published(number=float(value), **common)
    refs = _refs(value)
    if refs is None:
        raise ScorecardError(f"{where}: published is the effect the paper states: a finite number, or a reference "
                             f"to its transcribed cell in results/published/ (two: their difference)")
    return Published(refs=refs, **common)


def read_spec(path: Path) -> dict:
    """A paper's ``scorecard.toml`` as a table (its claims, and the ``[paper]`` table ``common.site.about`` reads)."""
    return read_toml(path, ScorecardError)[1]


def load(paper: str, root: Path = ROOT) -> list[Claim]:
    """The claims of ``papers/<paper>/scorecard.toml`` ([] when the paper has none)."""
    path = root / "papers" / paper / SPEC
    if not path.is_file():
        return []
    tables = read_spec(path).get("claim", [])
    if not isinstance(tables, list):
        raise ScorecardError(f"{path}: 'claim' is a {type(tables).__name__}; each claim is a [[claim]] table")
    claims, seen = [], set()
    for i, c in enumerate(tables):
        if not isinstance(c, dict):
            raise ScorecardError(f"{path}: claim {i + 1} is a {type(c).__name__}, not a [[claim]] table")
        where = f"{path}: claim {i + 1} ({c.get('id', '?')!r:.60})"
        missing = [k for k in ("id", "claim", "source", "direction") if not isinstance(c.get(k), str)]
        if missing:
            raise ScorecardError(f"{where}: needs {', '.join(missing)} (text)")
        if c["direction"] not in DIRECTIONS:
            raise ScorecardError(f"{where}: direction {c['direction']!r} is not one of {', '.join(DIRECTIONS)}")
        if c["id"] in seen:
            raise ScorecardError(f"{where}: id {c['id']!r} appears twice")
        seen.add(c["id"])
        unknown = set(c) - _CLAIM_KEYS
        if unknown:
            raise ScorecardError(f"{where}: unknown keys {sorted(unknown)} (evidence kinds: {', '.join(EVIDENCE)})")
        quote = c.get("quote")
        quotes = (quote,) if isinstance(quote, str) else tuple(quote) if isinstance(quote, list) else ()
        if not quotes or not all(isinstance(q, str) and len(q.strip()) >= 8 for q in quotes):
            raise ScorecardError(f"{where}: needs quote: the paper's words it tests (text, or a list of texts)")
        if not is_number(c.get("threshold", 0)) or (
                "digits" in c and (isinstance(c["digits"], bool) or not isinstance(c["digits"], int)
                                   or not 0 <= c["digits"] <= 6)):
            raise ScorecardError(f"{where}: threshold is a finite number and digits an integer from 0 to 6")
        if "unit" in c and not isinstance(c["unit"], str):
            raise ScorecardError(f"{where}: unit is text")
        margin = _margin(where, c["direction"], c.get("margin"), True)
        evidence = {kind: _evidence(where, kind, c[kind], c["direction"]) for kind in EVIDENCE if kind in c}
        claims.append(Claim(paper, c["id"], c["claim"], c["source"], c["direction"], float(c.get("threshold", 0.0)),
                            c.get("unit", ""), evidence, c.get("digits"), quotes, _published(where, c), margin))
    return claims


def evaluate(claim: Claim, kind: str, results: Path = RESULTS) -> Finding:
    """What ``results`` say about ``claim`` from evidence ``kind``."""
    e = claim.evidence.get(kind)
    if e is None:
        return Finding(claim, kind, NOT_MEASURED, "")
    if not (results / e.file).is_file():
        return Finding(claim, kind, NOT_RUN, f"no results/{e.file}")
    where = f"papers/{claim.paper}/{SPEC}: claim {claim.id!r} [{kind}]"
    values = [_number(r, where, results) for r in e.estimate]
    estimate = (values[0] - values[1] if len(values) == 2 else values[0]) * e.scale
    shift = values[1] if e.interval_of_first else 0.0
    low = (_number(e.low, where, results) - shift) * e.scale if e.low else None
    high = (_number(e.high, where, results) - shift) * e.scale if e.high else None
    published = claim.published.value(f"{where} (published)", results) if e.same_as_published else None
    threshold, margin = claim.test(kind)
    verdict, detail = judge(claim.direction, threshold, estimate, low, high, margin)
    verdict, detail = size(verdict, detail, published, low, high, claim.published.tolerance)
    return Finding(claim, kind, verdict, detail, estimate, low, high, published)


def scorecard(paper: str, results: Path = RESULTS, root: Path = ROOT) -> list[list[Finding]]:
    """Per claim of ``paper``, its findings in ``EVIDENCE`` order."""
    return [[evaluate(c, kind, results) for kind in EVIDENCE] for c in load(paper, root)]


def counts(rows: list[list[Finding]], kind: str) -> dict[str, int]:
    return {v: 0 for v in VERDICTS} | Counter(next(f for f in findings if f.kind == kind).verdict for findings in rows)


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
        direction = "".join(f"; {c[v]} {v}" for v in (DIRECTION_ONLY, NO_INTERVAL) if c[v])
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


def published_words(c: Claim, results: Path = RESULTS) -> str:
    """The published effect as the README states it: the number and where it is read."""
    value = c.published.value(f"papers/{c.paper}/{SPEC}: claim {c.id!r} (published)", results)
    unit = f" {c.unit}" if c.unit else ""
    where = c.published.text()
    return f"{_fmt(c, value, value)}{unit}" + (f" ({where})" if where else "")


def markdown(paper: str, results: Path = RESULTS, root: Path = ROOT) -> str:
    """The README's generated block: per claim, the paper's words and effect, then a row per kind of evidence."""
    out = ["| claim: the paper's words and published effect | evidence | what is measured here | estimate [95% CI] "
           "| verdict |", "|---|---|---|---|---|"]
    for findings in scorecard(paper, results, root):
        c = findings[0].claim
        quote = " … ".join(f"\"{q}\"" for q in c.quote)
        head = (f"**{c.claim}** ({c.source}: {quote}; published: {published_words(c, results)}; tested: "
                f"{c.direction_text})")
        for i, f in enumerate(findings):
            e = c.evidence.get(f.kind)
            verdict = f"**{f.verdict}**" if f.verdict == REPRODUCED else f.verdict
            if tested := c.tested_here(f.kind):
                verdict += f" (tested here: {tested})"
            out.append("| " + " | ".join(md_cell(x) for x in (
                head if i == 0 else "", EVIDENCE_TITLES[f.kind], e.what if e else "",
                f.number, verdict + (f" ({f.detail})" if f.detail else ""))) + " |")
    out.append("")
    out.append(f"Generated from `results/` by `python -m common docs claims --write` (the claims, the paper's words "
               f"and where each number is: `papers/{paper}/{SPEC}`); a test fails when this table and `results/` "
               f"disagree. Intervals are the 95% intervals the stages wrote (bootstrap over examples or "
               f"checkpoints). \"Reproduced\" needs the whole interval on the paper's side and, for a rerun of the "
               f"paper's own quantity (the full profile), the published effect inside it; \"in direction, not in "
               f"size\" and \"no interval\" are never counted as reproduced. The mini world's sizes are not the "
               f"paper's: its rows test the direction only.")
    return "\n".join(out) + "\n"


def check(papers: Sequence[str] | None = None, root: Path = ROOT, results: Path = RESULTS,
          write: bool = False) -> list[str]:
    """The papers (and ``README.md``, all papers only) whose block disagrees with ``results`` (``write``: rewritten)."""
    names = list(papers if papers is not None else plugins.paper_names())
    wrong = []
    for paper in names:  # a loop, not a comprehension: check_block rewrites the block when ``write``
        if load(paper, root) and check_block(root / "papers" / paper / README, BLOCK, markdown(paper, results, root),
                                             write, f"papers/{paper}/{SPEC}"):
            wrong.append(paper)
    front = root / README
    if papers is None and check_block(front, SUMMARY_BLOCK, summary_markdown(names, results, root), write,
                                       "the papers' claims"):
        wrong.append(README)
    return wrong


def check_block(path: Path, name: str, generated: str, write: bool, what: str) -> bool:
    """Whether the generated block ``name`` of ``path`` disagrees with ``generated`` (rewritten when ``write``)."""
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    m = re.search(rf"<!--{name}-->\n(.*?)<!--/{name}-->", text, re.S)
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
                raise unknown_name("paper", paper, plugins.paper_names())
        for paper in args.line:
            print("claims " + line(paper))
        return 0
    wrong = check(write=args.write)
    for paper in plugins.paper_names():
        if load(paper):
            print(line(paper))
    for paper in wrong:
        where = paper if paper == README else f"papers/{paper}/{README}"
        print(f"rewritten: {where}" if args.write else
              f"{where}: its claims block disagrees with results/ (python -m common docs claims --write rewrites it)")
    return 1 if wrong and not args.write else 0


def register_cli(docs_subparsers) -> None:
    p = docs_subparsers.add_parser("claims", help="each paper's headline claims against results/ (the scorecard)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--write", action="store_true", help="rewrite the papers' README blocks from results/")
    g.add_argument("--line", nargs="+", metavar="PAPER", help="one line per paper (make repro's report)")
    p.set_defaults(func=_cmd)
