"""Cross-paper consistency: one model on one benchmark, as each paper printed it (docs/audit.md, "Cross-paper
consistency"); the root ``dvc.yaml`` stage ``audit/cross_paper``.
"""
from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from dataclasses import asdict, dataclass, fields
from fractions import Fraction
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence, TypeVar

from common.audit import PARTIAL, STRICT_EXIT, partial_dir
from common.audit.consistency import (
    CONSISTENT, EXPLAINED, MACRO, MICRO, PER_CATEGORY, ROUND, TRUNCATE, UNEXPLAINED, VERDICTS, Breakdown, Part, Printed,
    Side, compare, implied_counts)
from common.audit.identities import (
    CERTAIN, SCALES, UNCERTAIN, Identities, Member, ReleasedSpec, WitnessSpec, breakdown_cells, load_identities,
    resolve, transcribed_papers)
from common.errors import WorkspaceError
from common.files.io import write_csv_atomic, write_json_atomic, write_output_group, write_text_atomic
from common.paths import RESULTS
from common.registry.errors import FetchError
from common.registry.fetch import quiet_fetch
from common.reporting.figures import pyplot, save_figure
from common.reporting.published import PublishedCell, load_cells, parse_number, read_csv_rows
from common.text.markdown import md_cell

PAPERS_KIND, RELEASED_KIND, WITNESS_KIND, NOT_JOINED_KIND = "papers", "released", "witness", "not joined"
WITNESS_DECIMALS = 6
"""A third party's full-precision floats are read to 6 decimals: a count k/n still fits exactly, float noise not."""
NAME = "cross_paper"
DATA_FILES = ("results/published/",)
"""The stage's data dependency: every paper's transcriptions and the identity table."""
Fetcher = Callable[[str], Path]
SpecT, DataT = TypeVar("SpecT"), TypeVar("DataT")


class CrossPaperIncomplete(WorkspaceError):
    """``--strict`` and a released source could not be read: nothing was written."""

    exit_code = STRICT_EXIT


@dataclass(frozen=True)
class Row:
    """One line of the comparison: two numbers for one model and measure, or cells not joined."""

    verdict: str
    kind: str
    benchmark: str
    measure: str
    category: str
    model: str
    source_a: str
    location_a: str
    value_a: str
    averaging_a: str
    source_b: str
    location_b: str
    value_b: str
    averaging_b: str
    difference: float | None
    cause: str
    mapping: str
    evidence: str


FIELDS = tuple(f.name for f in fields(Row))


@dataclass(frozen=True)
class Entry:
    """One paper's number for a (model, measure), the cells printing that same number merged."""

    members: tuple[Member, ...]

    @property
    def first(self) -> Member:
        return self.members[0]

    @property
    def location(self) -> str:
        return "; ".join(m.location for m in self.members)

    @property
    def certainty(self) -> str:
        return UNCERTAIN if any(m.certainty == UNCERTAIN for m in self.members) else CERTAIN

    def side(self) -> Side:
        return Side(self.first.paper, self.first.printed, self.first.averaging)


# ---- joining --------------------------------------------------------------------------------------------------

def entries(members: Iterable[Member], ids: Identities) -> dict[tuple[str, str], list[Entry]]:
    """(model, measure) -> one entry per (paper, printed number), papers in the order of the measure's labels."""
    grouped: dict[tuple[str, str], dict[tuple[str, str, str], list[Member]]] = defaultdict(dict)
    for m in members:
        grouped[(m.model, m.measure)].setdefault((m.paper, m.printed.text, m.averaging), []).append(m)
    out = {}
    for key, by_value in grouped.items():
        rank = {p: i for i, p in enumerate(dict.fromkeys(lab.paper for lab in ids.measure(key[1]).labels))}
        out[key] = sorted((Entry(tuple(ms)) for ms in by_value.values()),
                          key=lambda e: (rank.get(e.first.paper, len(rank)), e.first.cell.line))
    return out


def breakdowns_for(ids: Identities, model_id: str, measure_id: str,
                   grouped: Mapping[tuple[str, str], list[Entry]],
                   cells: Mapping[str, Sequence[PublishedCell]]) -> list[Breakdown]:
    """The measure broken into parts with counts, as each paper prints them for the model."""
    measure = ids.measure(measure_id)
    found: list[Breakdown] = []
    if measure.parts:
        per_paper: dict[str, list[Part]] = defaultdict(list)
        tables: dict[str, set[str]] = defaultdict(set)
        for part_id in measure.parts:
            part = ids.measure(part_id)
            seen: set[str] = set()
            for e in grouped.get((model_id, part_id), []):
                if e.first.paper not in seen:
                    seen.add(e.first.paper)
                    assert part.n is not None
                    per_paper[e.first.paper].append(Part(e.first.printed, part.n))
                    tables[e.first.paper].add(e.first.cell.table)
        for paper, parts in per_paper.items():
            if len(parts) == len(measure.parts):
                found.append(Breakdown(f"{paper} {'/'.join(sorted(tables[paper]))} per category", tuple(parts)))
    model = ids.model(model_id)
    for spec in (s for s in ids.breakdowns if s.measure == measure_id):
        label = next((lab.label for lab in model.labels if (lab.paper, lab.table) == (spec.paper, spec.table)), None)
        if label is None:
            continue
        pairs = breakdown_cells(spec, label, cells.get(spec.paper, ()))
        if pairs:
            parts = tuple(Part(Printed(v.text, SCALES.get(v.unit, 1)), int(c.value or 0)) for v, c in pairs)
            found.append(Breakdown(f"{spec.paper} {spec.table} ({len(parts)} parts with counts)", parts, measure.n))
    return found


def compare_papers(ids: Identities, grouped: Mapping[tuple[str, str], list[Entry]],
                   cells: Mapping[str, Sequence[PublishedCell]]) -> list[Row]:
    """A row for every pair of different papers' numbers for one model and measure."""
    rows: list[Row] = []
    for (model_id, measure_id), group in grouped.items():
        breakdowns = breakdowns_for(ids, model_id, measure_id, grouped, cells)
        for i, a in enumerate(group):
            for b in group[i + 1:]:
                if a.first.paper != b.first.paper:
                    rows.append(_pair_row(PAPERS_KIND, ids, model_id, measure_id, a.side(), a.location, b, breakdowns,
                                          [m.why_uncertain for e in (a, b) for m in e.members
                                           if m.certainty == UNCERTAIN]))
    return rows


def _pair_row(kind: str, ids: Identities, model_id: str, measure_id: str, a: Side, location_a: str, b: Entry,
              breakdowns: Sequence[Breakdown], uncertain: Sequence[str]) -> Row:
    """``a`` against paper ``b``'s number; ``uncertain``: why the mappings are uncertain (none: certain)."""
    measure = ids.measure(measure_id)
    verdict = compare(a, b.side(), measure.n if not measure.parts else None, breakdowns, dict(measure.other_sizes))
    evidence = verdict.evidence + (f" | uncertain mapping: {'; '.join(dict.fromkeys(uncertain))}" if uncertain else "")
    return Row(verdict.verdict, kind, measure.benchmark, measure_id, measure.category, model_id, a.source, location_a,
               a.printed.text, a.averaging, b.first.paper, b.location, b.first.printed.text, b.first.averaging,
               round(float(b.first.printed.exact - a.printed.exact), 4), verdict.cause,
               UNCERTAIN if uncertain else CERTAIN, evidence)


# ---- released per-example predictions ----------------------------------------------------------------------------

class ReleasedInputError(WorkspaceError):
    """A released or third-party file the comparison reads is malformed; the message names the file and the line."""


def read_released(path: Path, spec: ReleasedSpec) -> dict[str, tuple[int, int]]:
    """measure id -> (correct, examples) from a per-example file, read strictly (no example twice)."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    _, rows = read_csv_rows(path, ReleasedInputError, bom="strip", identical_rows=False,
                            required=(*spec.category_columns, spec.correct_column))
    for line, row in rows:
        category = "/".join(row[c].strip() for c in spec.category_columns)
        measure = spec.categories.get(category)
        if measure is None:
            raise ReleasedInputError(f"{path}:{line}: column(s) {'/'.join(spec.category_columns)}: category "
                                     f"{category!r} is not one of {sorted(spec.categories)}")
        flag = row[spec.correct_column].strip()
        if flag not in ("0", "1"):
            raise ReleasedInputError(f"{path}:{line}: column {spec.correct_column!r}: {flag!r}, expected 0 or 1")
        counts[measure][0] += int(flag)
        counts[measure][1] += 1
    return {m: (c[0], c[1]) for m, c in counts.items()}


def _released_value(measure_id: str, ids: Identities, counts: Mapping[str, tuple[int, int]], averaging: str
                    ) -> list[tuple[str, Fraction, str]]:
    """[(averaging, value in percent, how)] of the measure from per-category counts; unstated gives both."""
    measure = ids.measure(measure_id)
    if measure_id in counts:
        k, n = counts[measure_id]
        return [(PER_CATEGORY, Fraction(100 * k, n), f"{k}/{n}")]
    if not measure.parts or any(p not in counts for p in measure.parts):
        return []
    ks = [counts[p] for p in measure.parts]
    micro = (MICRO, Fraction(100 * sum(k for k, _ in ks), sum(n for _, n in ks)),
             f"{sum(k for k, _ in ks)}/{sum(n for _, n in ks)}")
    macro = (MACRO, sum(Fraction(100 * k, n) for k, n in ks) / len(ks),
             "mean of " + ", ".join(f"{k}/{n}" for k, n in ks))
    return {MICRO: [micro], MACRO: [macro]}.get(averaging, [micro, macro])


def _released_row(spec: ReleasedSpec, entry: Entry, ids: Identities, counts: Mapping[str, tuple[int, int]]
                  ) -> Row | None:
    """One paper's number (``entry``) against the released predictions, under the paper's own averaging."""
    m = entry.first
    measure = ids.measure(m.measure)
    candidates = _released_value(m.measure, ids, counts, m.averaging)
    if not candidates:
        return None
    fits = [(avg, x, how, rule) for avg, x, how in candidates for rule in (ROUND, TRUNCATE)
            if m.printed.fits(x, rule)]
    if fits:
        avg, x, how, rule = fits[0]
        verdict, cause = (CONSISTENT, "within printed precision") if rule == ROUND else (EXPLAINED, "rounding rule")
        evidence = f"{how} = {float(x):.4f}% ({avg}) {rule} to {m.printed.text}"
    else:
        avg, x, how = candidates[0]
        verdict, cause = UNEXPLAINED, ""
        evidence = f"released {how} = {float(x):.4f}% ({avg}); printed {m.printed.text}"
        if avg == PER_CATEGORY:
            k, n = counts[m.measure]
            evidence += (f"; {m.paper}'s number fits {implied_counts(m.printed, n, tuple(measure.other_sizes))}"
                         f" (released: {k}/{n})")
            for size, why in measure.other_sizes.items():
                evidence += f"; known other size {size}: {why}"
        elif len(candidates) > 1:
            evidence += "; " + ", ".join(f"{a}: {float(v):.4f}" for a, v, _ in candidates[1:])
    if m.measure in counts and measure.n and counts[m.measure][1] != measure.n:
        evidence += f" (the file has {counts[m.measure][1]} examples, the benchmark {measure.n})"
    return Row(verdict, RELEASED_KIND, measure.benchmark, m.measure, measure.category, m.model, "released",
               spec.key, f"{float(x):.4f}", avg, m.paper, entry.location, m.printed.text, m.averaging,
               round(float(m.printed.exact - x), 4), cause, entry.certainty, evidence)


def read_sources(specs: Sequence[SpecT], read: Callable[[Path, SpecT], DataT], fetcher: Fetcher
                 ) -> tuple[list[tuple[SpecT, DataT]], list[str]]:
    """Each source fetched and read; the ones that could not be fetched, with why (the caller decides: --strict)."""
    found, unreadable = [], []
    for spec in specs:
        try:
            found.append((spec, read(fetcher(spec.key), spec)))  # type: ignore[attr-defined]
        except (FetchError, OSError) as exc:
            unreadable.append(f"{spec.key}: {type(exc).__name__}: {exc}")  # type: ignore[attr-defined]
    return found, unreadable


def compare_released(ids: Identities, grouped: Mapping[tuple[str, str], list[Entry]], fetcher: Fetcher
                     ) -> tuple[list[Row], list[str]]:
    """Every mapped number of a model with released predictions, recomputed from them; and the unreadable keys."""
    rows: list[Row] = []
    sources, unreadable = read_sources(ids.released, read_released, fetcher)
    for spec, counts in sources:
        for (model_id, measure_id), group in grouped.items():
            if model_id != spec.model or ids.measure(measure_id).benchmark != spec.benchmark:
                continue
            rows += [row for row in (_released_row(spec, e, ids, counts) for e in group) if row is not None]
    return rows, unreadable


def read_witness(path: Path, spec: WitnessSpec) -> dict[tuple[str, str], str]:
    """(model id, measure id) -> the witness's number as text (6 decimals), read strictly."""
    wanted = {row: model for model, row in spec.models.items()}
    found: dict[tuple[str, str], str] = {}
    _, rows = read_csv_rows(path, ReleasedInputError, bom="strip",
                            required=(*spec.key_columns, *spec.columns.values()))
    for line, row in rows:
        name = "/".join(row[c] for c in spec.key_columns)
        model = wanted.get(name)
        if model is None:
            continue
        if any(k[0] == model for k in found):
            raise ReleasedInputError(f"{path}:{line}: row {name} appears twice")
        for measure, column in spec.columns.items():
            try:
                value = parse_number(row[column].strip())
            except ValueError as exc:
                raise ReleasedInputError(f"{path}:{line} ({name}): column {column!r}: {exc}") from None
            found[(model, measure)] = f"{value:.{WITNESS_DECIMALS}f}"
    absent = sorted(set(spec.models.values()) - {spec.models[m] for m, _ in found})
    if absent:
        raise ReleasedInputError(f"{path}: no row {absent} ({'/'.join(spec.key_columns)})")
    return found


def compare_witnesses(ids: Identities, grouped: Mapping[tuple[str, str], list[Entry]],
                      cells: Mapping[str, Sequence[PublishedCell]], fetcher: Fetcher) -> tuple[list[Row], list[str]]:
    """Each third-party number beside every paper's number for the same model and measure."""
    rows: list[Row] = []
    sources, unreadable = read_sources(ids.witnesses, read_witness, fetcher)
    for spec, values in sources:
        for (model_id, measure_id), text in sorted(values.items()):
            witness = Side(spec.name, Printed(text), spec.averaging.get(measure_id, PER_CATEGORY))
            breakdowns = breakdowns_for(ids, model_id, measure_id, grouped, cells)
            for entry in grouped.get((model_id, measure_id), []):
                uncertain = [spec.uncertain[model_id]] if model_id in spec.uncertain else []
                uncertain += [m.why_uncertain for m in entry.members if m.certainty == UNCERTAIN]
                rows.append(_pair_row(WITNESS_KIND, ids, model_id, measure_id, witness, spec.key, entry, breakdowns,
                                      uncertain))
    return rows, unreadable


def not_joined_rows(ids: Identities, cells: Mapping[str, Sequence[PublishedCell]]) -> list[Row]:
    by_key = {p: {c.key: c for c in cs} for p, cs in cells.items()}
    rows = []
    for nj in ids.not_joined:
        found = [by_key[ref.paper][(ref.table, ref.row, ref.column)] for ref in nj.cells]
        values = [f"{ref} = {cell.text or cell.status}" for ref, cell in zip(nj.cells, found)]
        papers = ", ".join(dict.fromkeys(ref.paper for ref in nj.cells))
        rows.append(Row("not joined", NOT_JOINED_KIND, "", "", "", "", papers, "; ".join(values), "", "", "", "",
                        "", "", None, "", "", nj.reason))
    return rows


def sort_rows(rows: Iterable[Row]) -> list[Row]:
    order = {v: i for i, v in enumerate(VERDICTS)}
    kinds = {PAPERS_KIND: 0, RELEASED_KIND: 1, WITNESS_KIND: 2, NOT_JOINED_KIND: 3}
    return sorted(rows, key=lambda r: (kinds[r.kind], order.get(r.verdict, len(order)), r.benchmark, r.model,
                                       r.measure, r.source_a, r.source_b))


def summary(rows: Sequence[Row]) -> dict[str, int]:
    """The DVC metrics: verdict counts per kind of comparison (explained: the rest of its kind), groups not joined."""
    out: dict[str, int] = {}
    for kind, prefix, verdicts in ((PAPERS_KIND, "pairs", (CONSISTENT, EXPLAINED, UNEXPLAINED)),
                                   (RELEASED_KIND, "released", (CONSISTENT, UNEXPLAINED)),
                                   (WITNESS_KIND, "witness", (CONSISTENT, UNEXPLAINED))):
        chosen = [r for r in rows if r.kind == kind]
        out[prefix if kind == PAPERS_KIND else f"{prefix}_checked"] = len(chosen)
        out.update({f"{prefix}_{v}": sum(r.verdict == v for r in chosen) for v in verdicts})
        if kind == PAPERS_KIND:
            out["pairs_uncertain_mapping"] = sum(r.mapping == UNCERTAIN for r in chosen)
    out["not_joined"] = sum(r.kind == NOT_JOINED_KIND for r in rows)
    return out


# ---- report ----------------------------------------------------------------------------------------------------

def markdown(rows: Sequence[Row], ids: Identities, unreadable: Sequence[str]) -> str:
    s = summary(rows)
    lines = [
        "# Cross-paper consistency: one model on one benchmark, as each paper printed it",
        "",
        f"Identity table: `{ids.path.relative_to(RESULTS.parent) if ids.path.is_relative_to(RESULTS.parent) else ids.path}`"
        " (which cells name the same model and measure, with evidence). Verdicts: **consistent** (the printed "
        "intervals overlap), **explained** (rounding rule, data version or averaging, with the computation), "
        "**unexplained** (with the counts each number implies). Values in percent; `difference` is b - a.",
        "",
        f"Paper pairs: {s['pairs']} ({s['pairs_unexplained']} unexplained, {s['pairs_explained']} explained, "
        f"{s['pairs_consistent']} consistent; {s['pairs_uncertain_mapping']} through an uncertain mapping). "
        + "".join(f"{title}: {s[f'{p}_checked']} numbers ({s[f'{p}_unexplained']} unexplained, "
                  f"{s[f'{p}_checked'] - s[f'{p}_unexplained'] - s[f'{p}_consistent']} explained, "
                  f"{s[f'{p}_consistent']} consistent). "
                  for p, title in (("released", "Released predictions"), ("witness", "Third witness")))
        + f"Looked at and not joined: {s['not_joined']} groups.",
        "",
    ]
    if unreadable:
        lines += ["**Sources not read** (their rows are missing):", "", *(f"- {u}" for u in unreadable), ""]
    header = "| verdict | model | measure | a | value a | b | value b | difference | cause | evidence |"
    rule = "| --- | --- | --- | --- | ---: | --- | ---: | ---: | --- | --- |"
    for kind, title in ((PAPERS_KIND, "Paper against paper"), (RELEASED_KIND, "Released predictions against papers"),
                        (WITNESS_KIND, "A third witness against papers")):
        chosen = [r for r in rows if r.kind == kind]
        lines += [f"## {title}", "", header, rule]
        for r in chosen:
            flag = " (uncertain mapping)" if r.mapping == UNCERTAIN else ""
            lines.append(
                f"| {r.verdict}{flag} | {md_cell(r.model)} | {md_cell(r.measure)} | {md_cell(r.source_a)}: "
                f"{md_cell(r.location_a)} ({r.averaging_a}) | {r.value_a} | {md_cell(r.source_b)}: "
                f"{md_cell(r.location_b)} ({r.averaging_b}) | {r.value_b} | "
                f"{'' if r.difference is None else f'{r.difference:+.2f}'} | "
                f"{md_cell(r.cause)} | {md_cell(r.evidence)} |")
        lines.append("")
    lines += ["## Looked at, not joined", ""]
    lines += [f"- {md_cell(r.location_a)}: {md_cell(r.evidence)}" for r in rows if r.kind == NOT_JOINED_KIND]
    lines += ["", "## Identities", "", "| model | paper | table | label | certainty | evidence |",
              "| --- | --- | --- | --- | --- | --- |"]
    lines += [f"| {model.id} | {lab.paper} | {lab.table} | {md_cell(lab.label)} | {lab.certainty} | "
              f"{md_cell(lab.evidence)} |" for model in ids.models for lab in model.labels]
    return "\n".join(lines) + "\n"


def figure(members: Sequence[Member], ids: Identities, rows: Sequence[Row], out_png: Path) -> Path:
    """One panel per benchmark: each paper's number (and the released recomputation) for each shared model."""
    plt = pyplot()
    joined = {(r.model, r.measure) for r in rows if r.kind in (PAPERS_KIND, RELEASED_KIND, WITNESS_KIND)}
    benchmarks = list(dict.fromkeys(ids.measure(m).benchmark for _, m in sorted(joined, key=lambda x: x[1])))
    papers = list(dict.fromkeys(m.paper for m in members))
    markers = dict(zip(papers, "osD^vP*X"))
    fig, axes = plt.subplots(len(benchmarks), 1, figsize=(12, 3.6 * max(1, len(benchmarks))), squeeze=False)
    released, witnessed = defaultdict(set), defaultdict(set)
    for r in rows:
        if r.kind == RELEASED_KIND:
            released[(r.model, r.measure)].add(float(r.value_a))
        elif r.kind == WITNESS_KIND:
            witnessed[(r.model, r.measure)].add((r.source_a, float(r.value_a)))
    for ax, benchmark in zip(axes[:, 0], benchmarks):
        keys = sorted((k for k in joined if ids.measure(k[1]).benchmark == benchmark), key=lambda k: (k[0], k[1]))
        for x, key in enumerate(keys):
            for m in (mm for mm in members if (mm.model, mm.measure) == key):
                ax.scatter(x + 0.06 * (papers.index(m.paper) - len(papers) / 2), m.printed.value,
                           marker=markers[m.paper], s=28, label=m.paper, alpha=0.8,
                           facecolors="none" if m.certainty == UNCERTAIN else None,
                           color=f"C{papers.index(m.paper)}")
            for value in released.get(key, ()):
                ax.scatter(x, value, marker="x", color="black", s=40, label="released predictions")
            for source, value in witnessed.get(key, ()):
                ax.scatter(x + 0.25, value, marker="_", color="dimgrey", s=90, linewidths=2,
                           label=f"{source} (third witness)")
        ax.set_xticks(range(len(keys)))
        ax.set_xticklabels([f"{k[0]}\n{ids.measure(k[1]).category}" for k in keys], rotation=60, ha="right",
                           fontsize=6)
        ax.set_title(f"{benchmark}: each paper's number (hollow: uncertain mapping; x: released predictions; "
                     "dash: third witness)",
                     fontsize=9)
        ax.set_ylabel("%")
        handles, labels = ax.get_legend_handles_labels()
        unique = dict(zip(labels, handles))
        ax.legend(unique.values(), unique.keys(), fontsize=7, loc="best")
    fig.tight_layout()
    return save_figure(fig, out_png)


# ---- entry point ---------------------------------------------------------------------------------------------------

def run(identities: Path | None = None, out_dir: Path | None = None, fetcher: Fetcher | None = None,
        strict: bool = False, published_root: Path | None = None) -> tuple[list[Row], dict[str, Path]]:
    """Load, join, compare, write (``strict``: an unreadable source raises first; else ``partial_dir``)."""
    known = transcribed_papers(published_root) if published_root else None
    ids = load_identities(identities, known) if identities else load_identities(papers=known)
    cells = {paper: (load_cells(paper, published_root) if published_root else load_cells(paper))
             for paper in ids.papers + sorted({r.paper for nj in ids.not_joined for r in nj.cells} - set(ids.papers))}
    members = resolve(ids, cells)
    grouped = entries(members, ids)  # (model, measure) -> each paper's number, shared by the three comparisons
    rows = compare_papers(ids, grouped, cells)
    released_rows, unreadable = compare_released(ids, grouped, fetcher or quiet_fetch)
    witness_rows, unreadable_witnesses = compare_witnesses(ids, grouped, cells, fetcher or quiet_fetch)
    unreadable += unreadable_witnesses
    if unreadable and strict:
        raise CrossPaperIncomplete("cross-paper comparison incomplete (--strict): released source(s) unreadable; "
                                   "nothing was written:\n  " + "\n  ".join(unreadable))
    rows = sort_rows(rows + released_rows + witness_rows + not_joined_rows(ids, cells))
    out_dir = partial_dir(out_dir or RESULTS / "audit", bool(unreadable))
    return rows, write_output_group(out_dir, lambda staging: {
        "markdown": write_text_atomic(staging / f"{NAME}.md", markdown(rows, ids, unreadable)),
        "csv": write_csv_atomic(staging / f"{NAME}.csv",
                                ({k: ("" if v is None else v) for k, v in asdict(r).items()} for r in rows), FIELDS),
        "metrics": write_json_atomic(staging / f"{NAME}_summary.json", summary(rows)),
        "figure": figure(members, ids, rows, staging / f"{NAME}.png"),
    })


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m common.audit.cross_paper",
                                     description="Each model's number on each benchmark as every paper printed it, "
                                                 "compared (results/audit/cross_paper.*).")
    parser.add_argument("--strict", action="store_true",
                        help=f"exit {STRICT_EXIT}, writing nothing, when a released source could not be read; "
                             f"without it such a partial comparison goes to results/audit/{PARTIAL}/")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default results/audit)")
    args = parser.parse_args(argv)
    try:
        rows, paths = run(out_dir=args.out, strict=args.strict)
    except CrossPaperIncomplete as exc:
        print(exc, file=sys.stderr)
        return STRICT_EXIT
    counts = summary(rows)
    print("cross-paper: " + ", ".join(f"{k}: {v}" for k, v in counts.items()))
    for kind, path in paths.items():
        print(f"{kind}: {path}")
    return 0


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
