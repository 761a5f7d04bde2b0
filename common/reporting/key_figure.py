"""A paper's key figure redrawn from results (published bars hatched), with a plot CSV naming every bar's source; not
in ``figures``, since a module boundary is a rerun boundary (docs/layout.md).
"""
from __future__ import annotations

import argparse
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from common.errors import WorkspaceError
from common.files.io import write_csv_atomic
from common.paths import RESULTS, ROOT
from common.pipeline.cli import stage_parser
from common.pipeline.params import PROFILES, own_params
from common.reporting.figures import pyplot, save_figure
from common.reporting.published import CellIndex, parse_number
from common.reporting.report import read_table

PUBLISHED_SOURCE = "published: "
"""How a ``PlotBar.source`` names a number transcribed from the paper (``results/published/``), not measured here."""
PLOT_FIELDS = ("panel", "group", "series", "value", "source")
"""The plot CSV's columns: one line per bar, so every drawn number can be checked against the file it came from."""


@dataclass(frozen=True)
class PlotBar:
    """One bar of a key figure and where its number was read: a results file or a published table (drawn hatched)."""

    panel: str
    group: str
    series: str
    value: float
    source: str

    @property
    def published(self) -> bool:
        return self.source.startswith(PUBLISHED_SOURCE)


@dataclass(frozen=True)
class ProfileView:
    """What a key figure draws from one profile (``absent_rows``: the full profile may lack a model it could not
    load)."""

    models: Mapping[str, str]
    label: str
    title: str
    absent_rows: bool = False


@dataclass(frozen=True)
class PlotLine:
    """A reference level across one bar group (chance for that metric), drawn dashed."""

    panel: str
    group: str
    value: float


def table_rows(path: Path, columns: Sequence[str], key: str = "row") -> dict[str, dict[str, str]]:
    """A results table by its ``key`` column, each row holding ``columns``, checked (``read_table``)."""
    path = Path(path)
    if not path.is_file():
        raise WorkspaceError(f"{path}: missing; run the stage that writes it (dvc repro)")
    out: dict[str, dict[str, str]] = {}
    for row in read_table(path, (key, *columns)):
        if row[key] in out:
            raise WorkspaceError(f"{path}: {key} {row[key]!r} twice")
        out[row[key]] = row
    return out


def result_bars(path: Path, panel: str, groups: Mapping[str, str], series: Mapping[str, str],
                absent_rows: bool = False) -> list[PlotBar]:
    """A bar per (column in ``groups``, row in ``series``) of a results table; a missing row is an error unless
    ``absent_rows``."""
    path = Path(path)
    rows = table_rows(path, list(groups))
    absent = [r for r in series if r not in rows]
    if absent and not absent_rows:
        raise WorkspaceError(f"{path}: no row(s) {absent}; rerun the stage that writes it")
    series = {row: name for row, name in series.items() if row in rows}
    source = path.resolve().relative_to(ROOT).as_posix() if path.resolve().is_relative_to(ROOT) else path.name

    def number(row: str, column: str) -> float:
        try:
            return parse_number(rows[row][column])
        except ValueError:
            raise WorkspaceError(f"{path}: row {row!r}, column {column!r}: {rows[row][column]!r} is no number; rerun "
                                 "the stage that writes it") from None

    return [PlotBar(panel, group, name, number(row, column), source)
            for column, group in groups.items() for row, name in series.items()]


def published_bars(cells: CellIndex, table: str, panel: str, groups: Mapping[str, str], series: Mapping[str, str]
                   ) -> list[PlotBar]:
    """Bars from a paper's published ``table``, as ``result_bars`` reads a results table."""
    def number(row: str, column: str) -> float:
        try:
            return cells.cell(table, row, column)
        except KeyError as exc:
            raise WorkspaceError(f"results/published: {exc.args[0]}") from None

    return [PlotBar(panel, group, name, number(row, column), f"{PUBLISHED_SOURCE}{table}")
            for column, group in groups.items() for row, name in series.items()]


def write_bar_figure(bars: Sequence[PlotBar], lines: Sequence[PlotLine], out_png: Path, out_csv: Path, title: str,
                     ylabel: str) -> dict[str, Path]:
    """The figure (panels of grouped bars, published ones hatched) and its plot CSV (every bar's source)."""
    plot = write_csv_atomic(out_csv, [asdict(b) for b in bars], PLOT_FIELDS)
    plt = pyplot()
    panels = list(dict.fromkeys(b.panel for b in bars))
    groups_of = {p: list(dict.fromkeys(b.group for b in bars if b.panel == p)) for p in panels}
    ncols = min(2, len(panels))
    nrows = -(-len(panels) // ncols)
    widths = [max(1.5, len(groups_of[p])) for p in panels] if nrows == 1 else [1] * ncols
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    # one colour per series name across all panels: a model keeps its colour, measured or published
    colours = {name: cycle[k % len(cycle)] for k, name in enumerate(dict.fromkeys(b.series for b in bars))}
    fig, axes = plt.subplots(nrows, ncols, figsize=(5.8 * ncols, 4.6 * nrows + 0.6), squeeze=False,
                             gridspec_kw={"width_ratios": widths})
    for ax, panel in zip(axes.flat, panels):
        here, groups = [b for b in bars if b.panel == panel], groups_of[panel]
        series = list(dict.fromkeys((b.series, b.published) for b in here))
        width = 0.84 / len(series)
        for k, (name, published) in enumerate(series):
            values = {b.group: b.value for b in here if (b.series, b.published) == (name, published)}
            x = [i + k * width - 0.42 + width / 2 for i, g in enumerate(groups) if g in values]
            heights = [values[g] for g in groups if g in values]
            drawn = ax.bar(x, heights, width, color=colours[name], alpha=0.45 if published else 1.0,
                           hatch="///" if published else None, edgecolor=colours[name] if published else "none",
                           label=f"{name} (published)" if published else name)
            ax.bar_label(drawn, fmt="%.0f", fontsize=6.5, padding=1)
        for line in (ln for ln in lines if ln.panel == panel and ln.group in groups):
            i = groups.index(line.group)
            ax.hlines(line.value, i - 0.46, i + 0.46, colors="grey", linestyles="--", lw=0.9)
        ax.set_xticks(np.arange(len(groups)), groups, fontsize=8)
        ax.set_ylim(0, 100 + 0.08 * 100)  # room for a full bar's label
        ax.set_yticks(np.linspace(0, 100, 6))
        ax.set_ylabel(ylabel, fontsize=8)
        ax.set_title(panel, fontsize=9)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.09), ncol=3 if len(series) > 4 else len(series),
                  frameon=False)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    fig.suptitle(title, fontsize=9.5)
    fig.tight_layout()
    return {"plot": plot, "figure": save_figure(fig, out_png)}


def results_dir(paper: str, profile: str) -> Path:
    """Where a profile's tables are, and where its key figure goes: ``results/<paper>/<profile>/``."""
    return RESULTS / paper / profile


def parse_args(argv: Sequence[str] | None, module: str, doc: str, paper: str) -> argparse.Namespace:
    """A key figure module's command line (``python -m module``, described by ``doc``'s first line): ``--profile``
    (default: the stage's), ``--results`` and ``--out``."""
    parser = stage_parser(module, doc)
    parser.add_argument("--profile", choices=PROFILES, default=None,
                        help="default: the stage's `profile` parameter (params.yaml)")
    parser.add_argument("--results", type=Path, default=None,
                        help=f"the results folder to read (default: results/{paper}/<profile>)")
    parser.add_argument("--out", type=Path, default=None,
                        help=f"where to write the figure (default: results/{paper}/<profile>)")
    args = parser.parse_args(argv)
    if args.profile is None:
        args.profile = own_params()["profile"]
    args.results = args.results or results_dir(paper, args.profile)
    args.out = args.out or results_dir(paper, args.profile)
    return args


def run(argv: Sequence[str] | None, module: str, doc: str, paper: str, name: str,
        bars_of: Callable[..., tuple[list[PlotBar], list[PlotLine]]], views: Mapping[str, ProfileView],
        ylabel: str) -> int:
    """A key figure module's ``main``: ``bars_of(results, profile=...)`` drawn (``write_bar_figure``)."""
    args = parse_args(argv, module, doc, paper)
    bars, lines = bars_of(args.results, profile=args.profile)
    paths = write_bar_figure(bars, lines, args.out / "key_figure.png", args.out / "key_figure_plot.csv",
                             views[args.profile].title, ylabel)
    print(f"{name} key figure ({args.profile} profile): {paths['figure']} ({len(bars)} bars, plot {paths['plot']})")
    return 0
