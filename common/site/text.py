"""Text as the site shows it: quotes without the extraction's duplicates, numbers rounded, verdicts toned. The papers'
text, extracted from LaTeX-rendered HTML, prints each formula three times (rendered, read, TeX: "63%percent6363\\%");
the committed CSVs keep it verbatim, the site shows it once. "484848" is taken as triplicated too, so the cleaner is
for quotes only, never for a results table's cells.
"""
from __future__ import annotations

import math
import re

from common.audit.consistency import CONSISTENT, EXPLAINED, UNEXPLAINED
from common.audit.core import VERDICTS as AUDIT_VERDICTS
from common.reporting import scorecard

_PERCENT = re.compile(r"(?P<pre>>?)(?P<v>\d[\d.,]*)%(?:absent)?percent(?P=v)?>?(?P=v)\\%")
"""``63%percent6363\\%`` and ``>30%absentpercent30>30\\%``: a percentage, its reading, its TeX."""
_PLUS_MINUS = re.compile(r"(?P<a>\d[\d.]*)±(?P<b>\d[\d.]*)plus-or-minus(?P=a)(?P=b)(?P=a)\s*\\pm\s*(?P=b)")
_EQUATION = re.compile(r"(?P<v>[A-Za-z]=\d[\d,.]*)[\U0001D400-\U0001D7FF]+[\d.,]+(?P=v)")
"""``N=32,000𝑁32000N=32,000``: a one-letter equation, its math-italic reading, its TeX."""
_LETTER = re.compile(r"(?P<v>[A-Za-z])[\U0001D400-\U0001D7FF](?P=v)(?![A-Za-z])")
"""``N𝑁N``: a variable, its math-italic reading, its TeX."""
_FRACTION = re.compile(r"(?P<n>\d)(?P<d>\d)(?P=n)(?P=d)\\frac\{(?P=n)\}\{(?P=d)\}")
_SUBSCRIPT = re.compile(r"(?P<i>\w+)subscript(?P=i)\\mathcal\{(?P<s>[A-Z])\}_\{(?P=i)\}")
_SYMBOL = re.compile(r"(?P<r>[^\s\\])(?P=r)\\(?:mathcal\{[A-Z]\}|[A-Za-z]+)")
"""``ΔΔ\\Delta``, ``𝒦𝒦\\mathcal{K}``: a symbol twice, then its TeX."""
_SET = re.compile(r"\{[^{}\\]*\}[^\s\\]*\\\{(?P<t>[^\\]*)\\\}")
"""``{1e5,5e6,1e6}1𝑒55𝑒61𝑒6\\{1e-5,5e-6,1e-6\\}``: a set as rendered (signs lost), its reading, its TeX."""
_NUMBER_RUN = re.compile(r"\d[\d.,]*\d")


def _once(run: str) -> str:
    """A number printed three times (as shown, without separators, as shown: ``23,9372393723,937``) once."""
    for size in range(1, len(run) // 2 + 1):
        shown = run[:size]
        if shown + shown.replace(",", "") + shown == run:
            return shown
    return run


def clean_quote(text: str) -> str:
    """``text`` with the extraction's triplicated formulas and numbers printed once (``63%``, ``23,937``)."""
    for pattern, shown in ((_PERCENT, r"\g<pre>\g<v>%"), (_PLUS_MINUS, r"\g<a>±\g<b>"), (_EQUATION, r"\g<v>"),
                           (_LETTER, r"\g<v>"), (_FRACTION, r"\g<n>/\g<d>"), (_SUBSCRIPT, r"\g<s>\g<i>"),
                           (_SYMBOL, r"\g<r>"), (_SET, r"{\g<t>}")):
        text = pattern.sub(shown, text)
    return _NUMBER_RUN.sub(lambda m: _once(m.group()), text)


def to_float(text: str) -> float | None:
    """A finite number, or None (text, an empty cell, nan)."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def decimals(printed: str) -> int | None:
    """The decimals a number was printed with ("0.59": 2, "23937": 0), or None when ``printed`` is no number."""
    text = printed.strip().lstrip("<>=≤≥ ").rstrip("%").replace(",", "")
    if to_float(text) is None or "e" in text.lower():
        return None
    return len(text.partition(".")[2])


def rounded(text: str, digits: int | None = None) -> str:
    """A number cell rounded for reading (``digits`` decimals, else at most 3); integers and text unchanged."""
    value = to_float(text)
    if value is None:
        return text
    if value.is_integer() and digits is None:
        return f"{int(value)}"
    if digits is not None:
        return f"{value:.{digits}f}"
    if value and abs(value) < 1e-3:
        return f"{value:.3g}"
    return f"{value:.3f}".rstrip("0").rstrip(".")


DIFFERS, AUDIT_REPRODUCED = AUDIT_VERDICTS[:2]
TONES = {"good": (scorecard.REPRODUCED, AUDIT_REPRODUCED, CONSISTENT, EXPLAINED),
         "partial": (scorecard.DIRECTION_ONLY, scorecard.NO_INTERVAL),
         "bad": (scorecard.NOT_REPRODUCED, DIFFERS, UNEXPLAINED)}
"""A verdict's colour (scorecard, audit and cross-paper verdicts); any other is grey."""


def tone(verdict: str) -> str:
    """The CSS class of a verdict's colour: ``good``, ``partial``, ``bad`` or ``none``."""
    return next((t for t, verdicts in TONES.items() if verdict in verdicts), "none")
