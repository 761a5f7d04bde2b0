"""Is one printed number consistent with another, and if not, what explains the difference (the verdicts:
docs/audit.md, "Cross-paper consistency")? Exact arithmetic throughout (``Fraction`` of the printed text), so a
verdict never hinges on binary floating point.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Sequence

ROUND, TRUNCATE = "rounds", "truncates"
RULES = (ROUND, TRUNCATE)
PER_CATEGORY, MICRO, MACRO, UNSTATED = "per-category", "micro", "macro", "unstated"
AVERAGINGS = (PER_CATEGORY, MICRO, MACRO, UNSTATED)
CONSISTENT, EXPLAINED, UNEXPLAINED = "consistent", "explained", "unexplained"
VERDICTS = (UNEXPLAINED, EXPLAINED, CONSISTENT)
"""Verdicts, discrepancies first (the order of the report)."""


@dataclass(frozen=True)
class Printed:
    """A number as a paper prints it, in percent, with the precision of its last printed digit."""

    text: str
    scale: int = 1
    """100 when the paper prints a fraction (ARO's 0.59), 1 for percent."""

    def __post_init__(self) -> None:
        try:
            Decimal(self.text)
        except InvalidOperation:
            raise ValueError(f"printed value {self.text!r} is not a decimal number") from None

    @property
    def exact(self) -> Fraction:
        return Fraction(Decimal(self.text)) * self.scale

    @property
    def value(self) -> float:
        return float(self.exact)

    @property
    def decimals(self) -> int:
        """Decimals of the last printed digit, in percent units (0.59 printed as a fraction: 0; "0.8": -1)."""
        exponent = Decimal(self.text).as_tuple().exponent
        assert isinstance(exponent, int)
        return -exponent - round(math.log10(self.scale))

    @property
    def half(self) -> Fraction:
        """Half a unit of the last printed digit, in percent."""
        return Fraction(1, 2) * Fraction(10) ** -self.decimals

    def fits(self, x: Fraction, rule: str = ROUND) -> bool:
        """Whether the exact value ``x`` (percent) prints as this number under ``rule`` (round half up, or truncate)."""
        q = Fraction(10) ** self.decimals
        shifted = x * q + (Fraction(1, 2) if rule == ROUND else 0)
        return math.floor(shifted) == self.exact * q

    def counts(self, n: int, rule: str = ROUND) -> range:
        """Every ``k`` in 0..n with ``100 k / n`` printing as this number under ``rule``."""
        low = self.exact - self.half if rule == ROUND else self.exact
        high = low + 2 * self.half  # the printed interval is [low, high)
        first = max(0, math.ceil(low * n / 100))
        last = min(n, math.ceil(high * n / 100) - 1)
        return range(first, last + 1) if first <= last else range(0)


@dataclass(frozen=True)
class Side:
    """One paper's number in a comparison: where it is printed, how it is averaged."""

    source: str
    printed: Printed
    averaging: str = PER_CATEGORY


@dataclass(frozen=True)
class Part:
    printed: Printed
    count: int


@dataclass(frozen=True)
class Breakdown:
    """An aggregate broken into parts with their counts, as one source prints them."""

    source: str
    parts: tuple[Part, ...]
    total: int | None = None
    """Examples of the whole set; more than the parts' sum when the source lists only some parts."""

    @property
    def listed(self) -> int:
        return sum(p.count for p in self.parts)

    @property
    def unlisted(self) -> int:
        return max(0, (self.total or self.listed) - self.listed)

    def interval(self, averaging: str) -> tuple[Fraction, Fraction]:
        """[low, high] of the aggregate under ``averaging`` (micro: unlisted examples anywhere in 0-100%)."""
        if averaging == MICRO:
            n = self.listed + self.unlisted
            low = sum((p.printed.exact - p.printed.half) * p.count for p in self.parts) / n
            high = (sum((p.printed.exact + p.printed.half) * p.count for p in self.parts) + 100 * self.unlisted) / n
            return low, high
        if averaging == MACRO:
            k = len(self.parts)
            return (sum(p.printed.exact - p.printed.half for p in self.parts) / k,
                    sum(p.printed.exact + p.printed.half for p in self.parts) / k)
        raise ValueError(f"no interval for averaging {averaging!r}")

    def describe(self, averaging: str) -> str:
        low, high = self.interval(averaging)
        what = (f"micro over {self.listed + self.unlisted:,} examples" if averaging == MICRO
                else f"macro over {len(self.parts)} parts")
        extra = f", {self.unlisted:,} examples unlisted" if averaging == MICRO and self.unlisted else ""
        point = (low + high) / 2
        return f"{what} = {float(point):.2f} (in [{float(low):.2f}, {float(high):.2f}]{extra})"


@dataclass(frozen=True)
class Verdict:
    verdict: str
    cause: str
    evidence: str
    implied: dict[str, str] = field(default_factory=dict)


def overlap(a: Printed, b: Printed) -> bool:
    return abs(a.exact - b.exact) <= a.half + b.half


def _fmt(x: Fraction | float) -> str:
    return f"{float(x):.4f}".rstrip("0").rstrip(".")


def implied_counts(p: Printed, n: int, other_sizes: Sequence[int] = ()) -> str:
    """What ``p`` says about a count out of ``n`` (or of a nearby size): "151/246 (rounds, truncates)"."""
    for m in (n, *other_sizes, n - 1, n + 1):
        by_range: dict[str, list[str]] = {}
        for rule in RULES:
            counts = p.counts(m, rule)
            if counts:
                shown = f"{counts[0]}/{m}" if len(counts) == 1 else f"{counts[0]}-{counts[-1]}/{m}"
                by_range.setdefault(shown, []).append(rule)
        if by_range:
            found = "; ".join(f"{text} ({', '.join(rules)})" for text, rules in by_range.items())
            return found if m == n else f"no count out of {n}; {found}"
    return f"no count out of {n} or {n}±1"


def closest_counts(a: Printed, b: Printed, n: int) -> tuple[int, int] | None:
    """The counts out of ``n`` (either rule) that ``a`` and ``b`` fit, chosen as close as possible."""
    best: tuple[int, int] | None = None
    for ka in (k for rule in RULES for k in a.counts(n, rule)):
        for kb in (k for rule in RULES for k in b.counts(n, rule)):
            if best is None or abs(ka - kb) < abs(best[0] - best[1]):
                best = (ka, kb)
    return best


def _rounding_rule(a: Side, b: Side, n: int) -> Verdict | None:
    for rule_a in RULES:
        for rule_b in RULES:
            if rule_a == rule_b == ROUND:
                continue
            common = set(a.printed.counts(n, rule_a)) & set(b.printed.counts(n, rule_b))
            if common:
                k = min(common)
                return Verdict(EXPLAINED, "rounding rule",
                               f"{k}/{n} = {_fmt(Fraction(100 * k, n))}%: {a.source} {rule_a} it to "
                               f"{a.printed.text}, {b.source} {rule_b} it to {b.printed.text}")
    return None


def _data_version(a: Side, b: Side, n: int, other_sizes: dict[int, str]) -> Verdict | None:
    """Both numbers from one count, ``b``'s on a set with one example fewer or more (or a known other size)."""
    for first, second in ((a, b), (b, a)):
        for rule_1 in RULES:
            for k in first.printed.counts(n, rule_1):
                for m in (*other_sizes, n - 1, n + 1):
                    delta = m - n
                    candidates = range(k + min(delta, 0), k + max(delta, 0) + 1)
                    for rule_2 in RULES:
                        for k2 in candidates:
                            if 0 <= k2 <= m and second.printed.fits(Fraction(100 * k2, m), rule_2):
                                size = other_sizes.get(m) or f"{abs(delta)} example{'s' * (abs(delta) > 1)} "\
                                                              f"{'fewer' if delta < 0 else 'more'}"
                                return Verdict(EXPLAINED, "data version",
                                               f"{first.source}: {k}/{n} ({rule_1} to {first.printed.text}); "
                                               f"{second.source}: {k2}/{m} ({rule_2} to {second.printed.text}): "
                                               f"{size}")
    return None


def _fits_averaging(side: Side, breakdown: Breakdown) -> list[str]:
    """The averagings of ``breakdown`` that give ``side``'s number (within its printed precision)."""
    allowed = (MICRO, MACRO) if side.averaging == UNSTATED else (side.averaging,)
    found = []
    for averaging in allowed:
        if averaging not in (MICRO, MACRO):
            continue
        low, high = breakdown.interval(averaging)
        if low - side.printed.half <= side.printed.exact <= high + side.printed.half:
            found.append(averaging)
    return found


def _averaging(a: Side, b: Side, breakdowns: Sequence[Breakdown]) -> Verdict | None:
    for breakdown in breakdowns:
        fits_a, fits_b = _fits_averaging(a, breakdown), _fits_averaging(b, breakdown)
        for avg_a in fits_a:
            for avg_b in fits_b:
                if avg_a != avg_b and avg_a not in fits_b and avg_b not in fits_a:
                    stated = {s.source: ("" if s.averaging == UNSTATED else " (as stated)") for s in (a, b)}
                    return Verdict(EXPLAINED, "averaging",
                                   f"from {breakdown.source}: {breakdown.describe(avg_a)} gives {a.source}'s "
                                   f"{a.printed.text}{stated[a.source]}; {breakdown.describe(avg_b)} gives "
                                   f"{b.source}'s {b.printed.text}{stated[b.source]}")
    return None


def compare(a: Side, b: Side, n: int | None = None, breakdowns: Sequence[Breakdown] = (),
            other_sizes: dict[int, str] | None = None) -> Verdict:
    """The verdict on two papers' numbers for one model and measure; ``n``: its examples when it is one category;
    ``breakdowns``: it broken into parts as the papers print them; ``other_sizes``: size -> evidence."""
    other_sizes = dict(other_sizes or {})
    difference = b.printed.exact - a.printed.exact
    implied = {}
    if n and {a.averaging, b.averaging} <= {PER_CATEGORY, MICRO}:
        implied = {a.source: implied_counts(a.printed, n, tuple(other_sizes)),
                   b.source: implied_counts(b.printed, n, tuple(other_sizes))}
    single = a.averaging == b.averaging == PER_CATEGORY
    if overlap(a.printed, b.printed):
        same_count = n and set(a.printed.counts(n)) & set(b.printed.counts(n))
        rule = _rounding_rule(a, b, n) if n and single and not same_count else None
        if rule:  # one unit apart, and one count gives both: one paper truncates
            return Verdict(CONSISTENT, "rounding rule", rule.evidence, implied)
        return Verdict(CONSISTENT, "within printed precision",
                       f"|{a.printed.text} - {b.printed.text}| = {_fmt(abs(difference))} <= "
                       f"{_fmt(a.printed.half + b.printed.half)} (half a unit of each last digit)", implied)
    found = None
    if n and single:
        found = _rounding_rule(a, b, n) or _data_version(a, b, n, other_sizes)
    elif not single:
        found = _averaging(a, b, breakdowns)
    if found:
        return replace(found, implied=implied)
    evidence = f"difference {_fmt(difference)} points"
    if breakdowns and not single:
        evidence += "; recomputed: " + "; ".join(
            f"from {bd.source}: {bd.describe(MICRO)}" + (f", {bd.describe(MACRO)}" if not bd.unlisted else "")
            for bd in breakdowns)
    if implied:
        evidence += "; counts implied: " + "; ".join(f"{s}: {text}" for s, text in implied.items())
        closest = closest_counts(a.printed, b.printed, n) if n else None
        if closest:
            evidence += f" (at closest {closest[0]} vs {closest[1]} of {n}: {abs(closest[0] - closest[1])} examples)"
    tried = [name for name, ok in (("rounding rule", n and single), ("data version", n and single),
                                  ("averaging", bool(breakdowns) and not single)) if ok]
    evidence += f"; tried: {', '.join(tried)}" if tried else "; no breakdown or count to test a cause"
    return Verdict(UNEXPLAINED, "", evidence, implied)
