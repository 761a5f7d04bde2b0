"""The audit's core: join published numbers with recomputed ones, cell by cell, and report.

A *recomputation* (``Recomputed``) is one number produced here for one published cell or claim,
with where it came from (``source``), under which profile (``profile``) and with what tolerance.
``audit_rows`` pairs every published cell and claim of a paper with its recomputations and gives each
pair a verdict:

* ``reproduced``: |published - recomputed| <= tolerance, or, for a claim that is a bound, the
  recomputed number satisfies the bound (see ``comparison`` below);
* ``differs``: otherwise (the report lists these first, with the evidence);
* ``not recomputed yet``: nothing here recomputes that number (yet);
* ``mini profile: not comparable``: only a mini-profile run covers it; a mini-world number is never
  compared with a published one;
* ``rehearsal: not comparable`` (``REHEARSAL``): the number comes from full-profile inputs of which not all were read
  (``params.yaml full_inputs.cap``: a rehearsal's capped stand-in data with random-init models,
  ``tests/rehearsal``); the value is shown, never compared. Only such an audit has this verdict (``VerdictCounts``
  counts it only there).

A recomputation may carry a ``caveat``: what its verdict cannot vouch for (a training method this workspace had to
reconstruct because the authors released none, a deliberate deviation from their recipe). The row keeps its verdict
(counted and sorted as above) and its verdict text (``AuditRow.verdict_text``, the report's ``verdict`` column) reads
"<verdict>; <caveat>", so nobody reads "reproduced" without it.

Tolerances are explicit and per source:
* ``exact``: recomputation from released per-example predictions or counts: half a unit of the
  paper's last printed digit (91.77 -> 0.005), i.e. equal after the paper's rounding;
* ``std``: a run compared with a cell for which the paper reports a standard deviation;
* ``default``: a run otherwise: ``DEFAULT_RUN_TOLERANCE`` in the cell's unit;
* ``claim``: a claim recomputed from the paper's own tables: half a unit of the claim's printed
  precision, like ``exact``.

A claim's ``comparison`` (``results/published/<paper>_claims.csv``; table cells are always "=") says
how the published number relates to the recomputed quantity:
* ``=``: |recomputed - published| <= tolerance (above);
* ``>``, ``>=``, ``<``, ``<=``: the claim is a bound, checked as "recomputed OP published". Under the
  ``exact`` and ``claim`` rules a bound has no slack (tolerance 0; ``>=``/``<=`` absorb float noise
  only): "r > 0.8" is not reproduced by r = 0.78. Under ``std``/``default`` (runs) and with an explicit
  tolerance the slack is applied in the claim's favour (``>``: recomputed > published - tolerance);
* ``~`` (the text says about / around / approximately / roughly / nearly / almost): like "=", with the
  tolerance widened to at least 10 % of the published value (``tolerance_for(..., approx_relative=0.10)``):
  tolerance = max(the rule's tolerance, 0.10 * |published|). "around 9 points" accepts 8.1..9.9,
  "almost 3,000" accepts 2,700..3,300, "around 61%" accepts 54.9..67.1.

Fractions and percents are converted to the published unit before comparing (0.9177 -> 91.77).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Callable

from common.errors import WorkspaceError
from common.reporting.published import PublishedCell, PublishedClaim

VERDICTS = ("differs", "reproduced", "not recomputed yet", "mini profile: not comparable")
REHEARSAL = "rehearsal: not comparable"
"""The verdict of a rehearsal's recomputations (module docstring); not in ``VERDICTS``, which a real audit counts."""
ORDER = (*VERDICTS, REHEARSAL)
PROFILES = ("released", "paper", "full", "mini")
"""Where a recomputed number comes from: authors' released artifacts, the paper's own tables (claims),
a full-profile run, or a mini-profile run."""
DEFAULT_RUN_TOLERANCE = {"percent": 1.0, "fraction": 0.01, "points": 1.0, "score": 0.005, "count": 0.0}
CLAIM_TABLE = "claims"
"""Recomputations of a claim use table ``claims``, row ``<claim_id>``, column ``value``."""


class AuditError(WorkspaceError, ValueError):
    """A recomputation does not match anything published, or is otherwise malformed."""


@dataclass(frozen=True)
class Recomputed:
    paper: str
    table: str
    row: str
    column: str
    value: float
    unit: str
    source: str
    profile: str
    tolerance_rule: str = "exact"
    tolerance: float | None = None
    """Explicit tolerance in ``unit``; None derives it from ``tolerance_rule``."""
    note: str = ""
    caveat: str = ""
    """What the verdict cannot vouch for (module docstring); empty for none."""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.table, self.row, self.column)

    def __post_init__(self) -> None:
        if self.profile not in PROFILES:
            raise AuditError(f"{self.key}: profile {self.profile!r} not in {PROFILES}")


@dataclass(frozen=True)
class AuditRow:
    paper: str
    table: str
    row: str
    column: str
    published: float | None
    published_text: str
    unit: str
    recomputed: float | None
    difference: float | None
    tolerance: float | None
    tolerance_rule: str
    verdict: str
    profile: str
    source: str
    note: str = ""
    caveat: str = ""

    @property
    def verdict_text(self) -> str:
        """The verdict with its caveat, if any ("reproduced; method unverified: ...")."""
        return f"{self.verdict}; {self.caveat}" if self.caveat else self.verdict

    def as_dict(self) -> dict:
        return {k: ("" if v is None else v) for k, v in self.__dict__.items()}


def printed_half_unit(text: str) -> float:
    """Half a unit of the last printed digit of ``text`` ("91.77" -> 0.005, "17" -> 0.5)."""
    try:
        exponent = Decimal(text.strip()).as_tuple().exponent
    except InvalidOperation:
        return 0.005
    return 0.5 * 10.0 ** (exponent if isinstance(exponent, int) else -2)


def convert(value: float, from_unit: str, to_unit: str) -> float:
    if from_unit == to_unit:
        return value
    if (from_unit, to_unit) == ("fraction", "percent"):
        return 100.0 * value
    if (from_unit, to_unit) == ("percent", "fraction"):
        return value / 100.0
    raise AuditError(f"cannot compare a {from_unit} with a {to_unit}")


@dataclass
class _Published:
    table: str
    row: str
    column: str
    value: float | None
    text: str
    unit: str
    std: float | None = None
    comparison: str = "="
    note: str = ""


def _published_entries(cells: list[PublishedCell], claims: list[PublishedClaim]) -> dict[tuple[str, str, str], _Published]:
    entries: dict[tuple[str, str, str], _Published] = {}
    std_of = {(c.table, c.row, c.column.removesuffix(" | std")): c.value for c in cells if c.column.endswith(" | std")}
    for c in cells:
        text = c.text
        entries[c.key] = _Published(c.table, c.row, c.column, c.value, text, c.unit, std_of.get(c.key))
    for claim in claims:
        entries[(CLAIM_TABLE, claim.claim_id, "value")] = _Published(
            CLAIM_TABLE, claim.claim_id, "value", claim.value, claim.text, claim.unit,
            comparison=getattr(claim, "comparison", "=") or "=", note=claim.quote,
        )
    return entries


BOUNDS = (">", ">=", "<", "<=")
"""Comparisons under which a claim is a bound on the recomputed quantity."""
_FLOAT_NOISE = 1e-9


def tolerance_for(rec: Recomputed, pub: _Published, approx_relative: float = 0.10) -> float:
    """The tolerance of comparing ``rec`` with ``pub``, in ``pub``'s unit (see the module docstring).

    ``approx_relative`` is the relative slack of an approximate ("~") claim: its tolerance is at least
    ``approx_relative * |published|``.
    """
    if rec.tolerance is not None:
        base = rec.tolerance
    elif rec.tolerance_rule in ("exact", "claim"):
        if pub.comparison in BOUNDS:
            return 0.0  # a bound is checked as stated: no rounding slack
        base = printed_half_unit(pub.text) + _FLOAT_NOISE
    elif rec.tolerance_rule == "std":
        if pub.std is None:
            raise AuditError(f"{rec.key}: tolerance 'std' but the paper reports no std for this cell")
        base = pub.std
    elif rec.tolerance_rule == "default":
        base = DEFAULT_RUN_TOLERANCE.get(pub.unit, 0.0)
    else:
        raise AuditError(f"{rec.key}: unknown tolerance rule {rec.tolerance_rule!r}")
    if pub.comparison == "~" and pub.value is not None:
        return max(base, approx_relative * abs(pub.value) + _FLOAT_NOISE)
    return base


def _verdict(pub: _Published, value: float, tol: float) -> str:
    """"reproduced" when ``value`` (recomputed, in ``pub``'s unit) satisfies ``pub``'s comparison."""
    assert pub.value is not None
    cmp = pub.comparison or "="
    if cmp == ">":
        ok = value > pub.value - tol
    elif cmp == ">=":
        ok = value >= pub.value - tol - _FLOAT_NOISE
    elif cmp == "<":
        ok = value < pub.value + tol
    elif cmp == "<=":
        ok = value <= pub.value + tol + _FLOAT_NOISE
    elif cmp in ("=", "~"):
        ok = abs(value - pub.value) <= tol
    else:
        raise AuditError(f"({pub.table!r}, {pub.row!r}, {pub.column!r}): unknown comparison {cmp!r}")
    return "reproduced" if ok else "differs"


def audit_rows(
    paper: str, cells: list[PublishedCell], claims: list[PublishedClaim], recomputed: list[Recomputed],
    rehearsal: Callable[[Recomputed], bool] | None = None,
) -> list[AuditRow]:
    """Every published number of ``paper`` with each of its recomputations (or none), and a verdict.

    ``rehearsal``: when the full profile's inputs are not comparable (``common.pipeline.inputs``: capped, as a rehearsal is),
    which recomputations come from them (a run's, or a released file with no pinned sha256): their verdict is
    ``REHEARSAL``, the value kept, nothing compared."""
    entries = _published_entries(cells, claims)
    by_key: dict[tuple[str, str, str], list[Recomputed]] = {}
    unknown = []
    for rec in recomputed:
        if rec.paper != paper:
            raise AuditError(f"recomputation for paper {rec.paper!r} passed to the {paper!r} audit: {rec.key}")
        if rec.key not in entries:
            unknown.append(rec.key)
        by_key.setdefault(rec.key, []).append(rec)
    if unknown:
        listed = "\n  ".join(map(str, unknown[:20]))
        raise AuditError(f"{len(unknown)} recomputation(s) match no published cell or claim of {paper}:\n  {listed}")

    rows: list[AuditRow] = []
    for key, pub in entries.items():
        recs = by_key.get(key, [])
        if pub.value is None and not recs:
            continue  # unreadable / not reported, nothing to compare
        if not recs:
            rows.append(AuditRow(paper, *key, pub.value, pub.text, pub.unit, None, None, None, "", "not recomputed yet", "", "", pub.note))
            continue
        for rec in recs:
            if rehearsal is not None and rehearsal(rec):
                rows.append(AuditRow(paper, *key, pub.value, pub.text, pub.unit,
                                     None if math.isnan(rec.value) else convert(rec.value, rec.unit, pub.unit),
                                     None, None, rec.tolerance_rule, REHEARSAL, rec.profile, rec.source, rec.note,
                                     rec.caveat))
                continue
            if rec.profile == "mini" or pub.value is None or math.isnan(rec.value):
                verdict = "mini profile: not comparable" if rec.profile == "mini" else "not recomputed yet"
                rows.append(AuditRow(paper, *key, pub.value, pub.text, pub.unit, None, None, None,
                                     rec.tolerance_rule, verdict, rec.profile, rec.source, rec.note, rec.caveat))
                continue
            value = convert(rec.value, rec.unit, pub.unit)
            tol = tolerance_for(rec, pub)
            rows.append(AuditRow(
                paper, *key, pub.value, pub.text, pub.unit, value, value - pub.value, tol, rec.tolerance_rule,
                _verdict(pub, value, tol), rec.profile, rec.source, rec.note, rec.caveat,
            ))
    order = {v: i for i, v in enumerate(ORDER)}
    rows.sort(key=lambda r: (order[r.verdict], r.table != CLAIM_TABLE, r.table, -abs(r.difference or 0.0)))
    return rows


@dataclass
class VerdictCounts:
    counts: dict[str, int] = field(default_factory=lambda: {v: 0 for v in VERDICTS})

    @classmethod
    def of(cls, rows: list[AuditRow]) -> "VerdictCounts":
        """Each verdict of ``VERDICTS`` (zero included) and, in a rehearsal's audit only, ``REHEARSAL``."""
        out = cls()
        for r in rows:
            out.counts[r.verdict] = out.counts.get(r.verdict, 0) + 1
        return out
