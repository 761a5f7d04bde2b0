"""The audit's core: published numbers joined with recomputed ones, cell by cell, each pair with a verdict
(docs/audit.md, "Verdicts, tolerances and comparisons").
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Callable

from common.errors import WorkspaceError
from common.reporting.published import PublishedCell, PublishedClaim

VERDICTS = ("differs", "reproduced", "not recomputed yet", "mini profile: not comparable")
REHEARSAL = "rehearsal: not comparable"
"""A rehearsal's verdict; not in ``VERDICTS``, which a real audit counts."""
ORDER = (*VERDICTS, REHEARSAL)
PROFILES = ("released", "paper", "full", "mini")
"""Where a recomputed number comes from: released artifacts, the paper's own tables (claims), or a run."""
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
    """What the verdict cannot vouch for; empty for none."""

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
        entries[c.key] = _Published(c.table, c.row, c.column, c.value, c.text, c.unit, std_of.get(c.key))
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
    """The tolerance of comparing ``rec`` with ``pub`` (in ``pub``'s unit), widened for a "~" claim."""
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
    """Every published number of ``paper`` with each of its recomputations (or none), and a verdict; ``rehearsal``
    picks the recomputations from capped inputs (``common.audit.standin``), whose verdict is ``REHEARSAL``."""
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
            value = difference = tol = None
            if rehearsal is not None and rehearsal(rec):
                value = None if math.isnan(rec.value) else convert(rec.value, rec.unit, pub.unit)
                verdict = REHEARSAL
            elif rec.profile == "mini" or pub.value is None or math.isnan(rec.value):
                verdict = "mini profile: not comparable" if rec.profile == "mini" else "not recomputed yet"
            else:
                value = convert(rec.value, rec.unit, pub.unit)
                tol = tolerance_for(rec, pub)
                difference, verdict = value - pub.value, _verdict(pub, value, tol)
            rows.append(AuditRow(paper, *key, pub.value, pub.text, pub.unit, value, difference, tol,
                                 rec.tolerance_rule, verdict, rec.profile, rec.source, rec.note, rec.caveat))
    order = {v: i for i, v in enumerate(ORDER)}
    rows.sort(key=lambda r: (order[r.verdict], r.table != CLAIM_TABLE, r.table, -abs(r.difference or 0.0)))
    return rows


@dataclass
class VerdictCounts:
    counts: dict[str, int] = field(default_factory=lambda: {v: 0 for v in VERDICTS})

    @classmethod
    def of(cls, rows: list[AuditRow]) -> "VerdictCounts":
        """Each verdict of ``VERDICTS`` (zero included) and, in a rehearsal's audit only, ``REHEARSAL``."""
        return cls({v: 0 for v in VERDICTS} | Counter(r.verdict for r in rows))
