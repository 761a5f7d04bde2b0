"""What the site says about each paper: the ``[paper]`` table of ``papers/<paper>/scorecard.toml`` (the facts of
the README's "Paper and code", which is prose and not parsed)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from common.paths import ROOT
from common.reporting.scorecard import SPEC, ScorecardError, read_spec

ARXIV = "https://arxiv.org/abs/{id}"


@dataclass(frozen=True)
class About:
    paper: str
    short: str
    """The paper's name as people say it ("SugarCrepe"); the package name when the table is missing."""
    title: str = ""
    authors: str = ""
    venue: str = ""
    arxiv: str = ""
    """The arXiv id ("2306.14610")."""
    code: str = ""
    """The official code's URL."""
    note: str = ""

    @property
    def arxiv_url(self) -> str:
        return ARXIV.format(id=self.arxiv) if self.arxiv else ""


def about(paper: str, root: Path = ROOT) -> About:
    """The ``[paper]`` table of ``papers/<paper>/scorecard.toml`` (only the package name when there is none)."""
    path = root / "papers" / paper / SPEC
    if not path.is_file():
        return About(paper, paper)
    table = read_spec(path).get("paper", {})
    fields = set(About.__dataclass_fields__) - {"paper"}
    wrong = sorted(k for k, v in table.items() if k not in fields or not isinstance(v, str))
    if wrong:
        raise ScorecardError(f"{path}: [paper] keys {wrong} are unknown or not text (known: {sorted(fields)})")
    return About(paper, **{"short": paper, **table})
