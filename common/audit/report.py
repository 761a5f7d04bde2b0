"""Write one paper's audit: Markdown (discrepancies first), CSV, DVC metrics and a y = x figure (what each shows:
docs/audit.md, "Verdicts, tolerances and comparisons").
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Callable, Iterable, Mapping, NamedTuple

from common.audit.core import CLAIM_TABLE, REHEARSAL, VERDICTS, AuditRow, VerdictCounts
from common.files.io import write_csv_atomic, write_json_atomic, write_output_group, write_text_atomic
from common.oracle.core import read_record
from common.paths import RESULTS
from common.reporting.figures import pyplot, save_figure
from common.reporting.markdown_table import md_escape
from common.reporting.published import PublishedDataError, load_claims

FIELDS = ("paper", "table", "row", "column", "published", "published_text", "unit", "recomputed",
          "difference", "tolerance", "tolerance_rule", "verdict", "profile", "source", "note",
          "comparison", "quote")
"""``AuditRow``'s fields (``verdict``: the verdict text), then the claim's comparison and quote."""
MD_QUOTE_CHARS = 90
MD_SOURCE_CHARS = 70
MD_NOTE_CHARS = 140
PAPER_TABLES_SOURCE = "paper tables: "
"""Prefix of the ``source`` of a claim recomputed from the paper's tables (``common.audit.claims``)."""


class ClaimInfo(NamedTuple):
    comparison: str = "="
    quote: str = ""


def claim_info(paper: str, claims: Iterable | None = None) -> dict[str, ClaimInfo]:
    """claim_id -> (comparison, quote), from ``claims`` or, when None, the paper's claims file (if valid)."""
    if claims is None:
        try:
            claims = load_claims(paper)
        except (FileNotFoundError, PublishedDataError):
            return {}
    return {c.claim_id: ClaimInfo(getattr(c, "comparison", "=") or "=", c.quote) for c in claims}


def _fmt(x: float | None, digits: int = 4) -> str:
    """Up to ``digits`` decimals, trailing zeros dropped; whole numbers (counts) in full."""
    if x is None:
        return ""
    if float(x).is_integer():
        return f"{int(x):d}"
    return f"{x:.{digits}f}".rstrip("0").rstrip(".")


def shorten(text: str, limit: int) -> str:
    """``text`` on one line, cut to at most ``limit`` characters (an ellipsis marks a cut)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: max(limit - 1, 0)].rstrip() + "…"


def _comparison(r: AuditRow, info: Mapping[str, ClaimInfo]) -> str:
    return info.get(r.row, ClaimInfo()).comparison if r.table == CLAIM_TABLE else "="


def published_label(r: AuditRow, comparison: str = "=") -> str:
    """The published number as printed, prefixed by the claim's comparison unless it is "=" ("> 0.8")."""
    text = r.published_text or _fmt(r.published) or "(no number)"
    return text if comparison == "=" else f"{comparison} {text}"


def _source_label(r: AuditRow) -> str:
    if not r.source:
        return ""
    if r.table == CLAIM_TABLE and r.source.startswith(PAPER_TABLES_SOURCE):
        return "paper tables (`recompute` in the claims CSV)"
    source = shorten(r.source, MD_SOURCE_CHARS)
    return f"{r.profile}: {source}" if r.profile else source


def _what(r: AuditRow, info: Mapping[str, ClaimInfo]) -> str:
    if r.table == CLAIM_TABLE:
        quote = info.get(r.row, ClaimInfo()).quote
        label = f"claim `{r.row}`"
        return f"{label}: “{md_escape(shorten(quote, MD_QUOTE_CHARS))}”" if quote else label
    return md_escape(f"{r.table} · {r.row} · {r.column}")


def _note(r: AuditRow, info: Mapping[str, ClaimInfo]) -> str:
    note = r.note
    if r.table == CLAIM_TABLE and note == info.get(r.row, ClaimInfo()).quote:
        note = ""  # a claim nothing recomputes carries its quote as note; it is shown already
    note = md_escape(shorten(note, MD_NOTE_CHARS))
    if r.caveat:  # in full, first: the row's verdict does not stand without it
        return f"**{md_escape(r.caveat)}**" + (f"; {note}" if note else "")
    return note


def oracle_lines(record: Mapping | None) -> list[str]:
    """The section on the authors' code run beside this workspace's (``common.oracle``), from its committed record."""
    if record is None:
        return []
    code = ", ".join(f"`{c}`" for c in record["code"])
    lines = ["## The authors' code as the oracle", "",
             f"The authors' released evaluation ({code}) run unmodified beside this workspace's on "
             f"{record['inputs']}, with the same weights: **it agrees on {record['agreeing']} of {record['of']} "
             f"benchmarks** (`results/oracle/{record['paper']}.json`; CI reruns it and fails when this record is "
             "stale; on the real files after the full profile: `make oracle`).", "",
             "| benchmark | agrees | models | numbers equal at the paper's precision | decisions compared | "
             "decisions differing | stated reason |", "| --- | --- | ---: | ---: | ---: | ---: | --- |"]
    for name, b in record["benchmarks"].items():
        reasons = md_escape(shorten("; ".join(b["stated_reasons"]), MD_NOTE_CHARS)) or "-"
        lines.append(f"| {md_escape(name)} | {'yes' if b['agrees'] else '**no**'} | {b['models']} "
                     f"| {b['numbers_equal']} of {b['numbers']} | {b['decisions']} | {b['decisions_differing']} "
                     f"| {reasons} |")
    lines.append("")
    if record["not_covered"]:
        lines += ["Not run:", "", *(f"- {md_escape(n['benchmark'])}: {md_escape(n['why'])}"
                                    for n in record["not_covered"]), ""]
    return lines


def markdown(paper: str, rows: list[AuditRow], profile: str, info: Mapping[str, ClaimInfo],
             oracle: Mapping | None = None) -> str:
    """The readable report; ``info``: from ``claim_info``; ``oracle``: the paper's oracle record."""
    counts = VerdictCounts.of(rows).counts
    shown = [v for v in (*VERDICTS, REHEARSAL) if v in counts]
    banner = ([f"**REHEARSAL** (`make rehearse`): this audit was written in a rehearsal's copy of the workspace. "
               f"Its runs scored stand-in data with random-init models: the {counts[REHEARSAL]} cells marked "
               f"`{REHEARSAL}` show what the pipeline computed, never the paper's numbers.", ""]
              if REHEARSAL in counts else [])
    lines = [
        f"# Audit: {paper}",
        "",
        *banner,
        f"Published numbers (`results/published/{paper}.csv`, `{paper}_claims.csv`) joined cell by cell with "
        f"what this workspace recomputed. Current pipeline profile: **{profile}**. Full sources, notes and "
        f"recompute expressions are in `{paper}.csv` next to this file.",
        "",
        "| verdict | cells |", "| --- | ---: |",
        *[f"| {v} | {counts[v]} |" for v in shown],
        "",
        "Tolerances: `exact` = half a unit of the paper's last printed digit (recomputation from released "
        "artifacts); `claim` = half a unit of the claim's printed precision (recomputed from the paper's own "
        "tables); `std` = the paper's reported standard deviation; `default` = 1 point (runs). "
        "Comparisons (claims): a published number shown as `> x`, `>= x`, `< x` or `<= x` is a bound the "
        "recomputed number must satisfy (no rounding slack under `exact`/`claim`); `~ x` is an approximate "
        "claim (\"about\", \"around\", \"almost\"), reproduced within max(tolerance, 10% of x). "
        "Profiles: `released` (authors' released files), `paper` (the paper's own tables), `full` (a full-profile "
        "run here), `mini` (a mini-world run: never compared with a published number).",
        "",
        *oracle_lines(oracle),
    ]
    titles = {"differs": "Discrepancies", "reproduced": "Reproduced",
              "mini profile: not comparable": "Mini profile only (not comparable)",
              **({REHEARSAL: "Rehearsal (not comparable)"} if REHEARSAL in counts else {})}
    for verdict, title in titles.items():
        subset = [r for r in rows if r.verdict == verdict]
        lines += [f"## {title} ({len(subset)})", ""]
        if not subset:
            lines += ["None.", ""]
            continue
        lines += ["| what | published | recomputed | diff | tol | source | note |",
                  "| --- | ---: | ---: | ---: | ---: | --- | --- |"]
        for r in subset:
            tol = f"{_fmt(r.tolerance)} ({r.tolerance_rule})" if r.tolerance is not None else r.tolerance_rule
            lines.append(
                f"| {_what(r, info)} | {md_escape(published_label(r, _comparison(r, info)))} "
                f"| {_fmt(r.recomputed)} | {_fmt(r.difference)} | {tol} "
                f"| {md_escape(_source_label(r))} | {_note(r, info)} |"
            )
        lines.append("")
    pending = [r for r in rows if r.verdict == "not recomputed yet"]
    by_table = Counter(r.table for r in pending)
    lines += [f"## Not recomputed yet ({len(pending)})", "",
              "Per table (every cell is listed in the CSV):", "",
              *[f"- {t}: {n}" for t, n in sorted(by_table.items())], ""]
    return "\n".join(lines)


def csv_rows(rows: list[AuditRow], info: Mapping[str, ClaimInfo]) -> list[dict]:
    return [{**r.as_dict(), "verdict": r.verdict_text, "comparison": _comparison(r, info),
             "quote": info.get(r.row, ClaimInfo()).quote if r.table == CLAIM_TABLE else ""} for r in rows]


def scatter(rows: list[AuditRow], out_png: Path, title: str, comparisons: Mapping[str, str] | None = None) -> Path:
    """Published (x) vs recomputed (y) with y = x; claims that are bounds or approximate drawn as triangles."""
    plt = pyplot()
    comparisons = comparisons or {}

    def is_exact(r: AuditRow) -> bool:
        return r.table != CLAIM_TABLE or comparisons.get(r.row, "=") == "="

    compared = [r for r in rows if r.recomputed is not None and r.published is not None]
    fig, axes = plt.subplots(1, 2, figsize=(9, 4.2))
    for ax, units in zip(axes, (("percent", "points"), None)):
        subset = [r for r in compared if (units is None and r.unit not in ("percent", "points"))
                  or (units is not None and r.unit in units)]
        for verdict, color in (("reproduced", "tab:green"), ("differs", "tab:red")):
            for exact, marker, suffix in ((True, "o", ""), (False, "^", ", bound / approx.")):
                pts = [(r.published, r.recomputed) for r in subset if r.verdict == verdict and is_exact(r) == exact]
                if pts:
                    ax.scatter(*zip(*pts), s=14 if exact else 22, color=color, marker=marker,
                               label=f"{verdict}{suffix} ({len(pts)})", alpha=0.8)
        if subset:
            lo = min(min(r.published, r.recomputed) for r in subset)
            hi = max(max(r.published, r.recomputed) for r in subset)
            ax.plot([lo, hi], [lo, hi], color="grey", lw=0.8, ls="--", label="y = x")
            ax.legend(fontsize=7)
        ax.set_xlabel("published")
        ax.set_ylabel("recomputed")
        ax.set_title("percent / points" if units else "other units (fractions, counts, r)", fontsize=9)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return save_figure(fig, out_png)


def write_audit(paper: str, rows: list[AuditRow], out_dir: Path, profile: str,
                claims: Iterable | None = None,
                figures: Callable[[Path], Mapping[str, Path]] | None = None) -> dict[str, Path]:
    """Write ``<paper>.md``, ``.csv``, ``_summary.json`` (DVC metrics: the count of each verdict), ``.png`` and
    whatever ``figures(folder)`` draws into ``out_dir``, as one output group; ``claims``: as ``claim_info``."""
    info = claim_info(paper, claims)
    counts = VerdictCounts.of(rows).counts
    return write_output_group(out_dir, lambda staging: {
        "markdown": write_text_atomic(staging / f"{paper}.md", markdown(
            paper, rows, profile, info=info, oracle=read_record(paper, RESULTS))),
        "csv": write_csv_atomic(staging / f"{paper}.csv", csv_rows(rows, info), FIELDS),
        "metrics": write_json_atomic(staging / f"{paper}_summary.json", counts),
        "figure": scatter(rows, staging / f"{paper}.png", f"{paper}: published vs recomputed",
                          {k: v.comparison for k, v in info.items()}),
        **(figures(staging) if figures is not None else {}),
    })
