"""BiVLC Finding 3 ("SugarCrepe and BiVLC performance are not correlated") as rank correlations with intervals, and
the cross-benchmark view: every model scored here against every benchmark of the five papers.

**Finding 3.** The paper argues from rankings (NegCLIP best on SugarCrepe, CLIPCOCO best on BiVLC; Open CapPa ahead on
SugarCrepe, last on BiVLC) and reports no statistic. Here: Spearman's rho and Kendall's tau-b between the SugarCrepe
column and each BiVLC score (I2T, T2I, group) across models, from the published Tables 2 and 3 and their union
(``PUBLISHED_MODELS``: a model in both tables must print the same numbers) and from every
``results/bivlc/<profile>/table2.csv`` that exists.

**Why these statistics.** With 4-9 models a bootstrap over models is meaningless (a resample of 5 models has a
handful of distinct values), so the intervals are closed-form Fisher-z intervals with the rank statistics' own
standard errors: Spearman SE(atanh rho) = sqrt((1 + rho^2 / 2) / (n - 3)) (Bonett & Wright 2000, defined from n = 4),
Kendall SE(atanh tau) = sqrt(0.437 / (n - 4)) (Fieller, Hartley & Pearson 1957, defined from n = 5). A |statistic|
of 1 makes atanh infinite: the interval is then NaN, with the reason in ``note``. Neither interval is trustworthy at
such n (the approximations assume more); they say how little a handful of models pins down. The p-value is a
two-sided permutation test of no association, exact over all n! orderings of one side for n <= 9 (Spearman's in
``p_exact``, Kendall's in ``p_exact_kendall``); beyond 9 models a Monte Carlo test with ``--n-resamples`` orderings
drawn with ``--seed`` (``p_method`` says which). Fewer than ``MIN_MODELS`` (4) models: every statistic is NaN with
the reason in ``note``.

**Cross-benchmark view.** ``BENCHMARKS`` declares each benchmark's headline number as data; models are keyed by
their zoo name. A benchmark scored by two papers stays one column per paper; two files of one paper feeding one
column must agree on a model they share. Every pair of benchmarks gets the statistics above over the models both
scored; signs are raw (``correlation_context.json`` lists each benchmark's direction). A results file that does not
exist, or a cell the paper did not measure (``unmeasured``), is listed in the context, not an error.

Outputs (stage ``correlation``): the README's "Outputs and notebooks".
"""
from __future__ import annotations

import csv
import itertools
import math
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np
import scipy.stats

from common.errors import WorkspaceError
from common.files.io import output_group, staged_to_final, write_csv_atomic, write_json_atomic
from common.files.jsonl import read_json
from common.paths import PUBLISHED, RESULTS
from common.pipeline.cli import print_written, stage_parser
from common.pipeline.params import PROFILES, own_params
from common.reporting.published import CellIndex, load_cells

CONFIDENCE = 0.95
MIN_MODELS = 4
"""Fewer models than this: no statistic (the Spearman interval needs n - 3 > 0; ranks of 3 models take 6 orders)."""
KENDALL_CI_MIN_N = 5
KENDALL_VARIANCE = 0.437
"""Fieller, Hartley & Pearson (1957): var(atanh tau) ~ 0.437 / (n - 4)."""
EXACT_MAX_N = 9
"""Up to 9! = 362,880 orderings the permutation test enumerates them all."""
N_RESAMPLES = 99_999
SEED = 0
DIGITS = 4
UNIT_TOLERANCE = 1e-12
"""A rank statistic this close to +-1 is +-1 (floating-point sums give 0.9999999999999999): atanh is infinite there."""


class CorrelationInputError(WorkspaceError, ValueError):
    """A results or published file cannot feed the correlations; the message names the file and the record."""


# ---- statistics ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RankCorrelation:
    """Spearman and Kendall (tau-b) with Fisher-z intervals and permutation p-values; NaN where undefined (``note``)."""

    n: int
    spearman: float
    spearman_low: float
    spearman_high: float
    kendall: float
    kendall_low: float
    kendall_high: float
    p_exact: float
    """Two-sided permutation p of Spearman's rho (exact for n <= 9, else Monte Carlo: ``p_method``)."""
    p_exact_kendall: float
    p_method: str
    note: str


STAT_FIELDS = ("spearman", "spearman_low", "spearman_high", "kendall", "kendall_low", "kendall_high", "p_exact",
               "p_exact_kendall", "p_method", "note")


def fisher_interval(estimate: float, n: int, variance_numerator: float, dof_offset: int,
                    confidence: float = CONFIDENCE) -> tuple[float, float]:
    """``tanh(atanh(r) -+ z * sqrt(variance_numerator / (n - dof_offset)))``; NaN when undefined (the caller says
    why: too few models, or |r| = 1 where atanh is infinite)."""
    if math.isnan(estimate) or n - dof_offset <= 0 or abs(estimate) >= 1.0 - UNIT_TOLERANCE:
        return math.nan, math.nan
    half = scipy.stats.norm.ppf(0.5 + confidence / 2.0) * math.sqrt(variance_numerator / (n - dof_offset))
    z = math.atanh(estimate)
    return math.tanh(z - half), math.tanh(z + half)


def spearman_interval(rho: float, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Bonett & Wright (2000): SE(atanh rho) = sqrt((1 + rho^2 / 2) / (n - 3))."""
    return fisher_interval(rho, n, 1.0 + rho * rho / 2.0, 3, confidence)


def kendall_interval(tau: float, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Fieller et al. (1957): SE(atanh tau) = sqrt(0.437 / (n - 4))."""
    return fisher_interval(tau, n, KENDALL_VARIANCE, 4, confidence)


@lru_cache(maxsize=EXACT_MAX_N + 1)
def all_orderings(n: int) -> np.ndarray:
    """Every permutation of ``range(n)``, one per row (n! x n, int8): the exact test's reference set."""
    count = math.factorial(n)
    flat = np.fromiter(itertools.chain.from_iterable(itertools.permutations(range(n))), dtype=np.int8,
                       count=count * n)
    return flat.reshape(count, n)


def _spearman_many(rx: np.ndarray, ry_perm: np.ndarray) -> np.ndarray:
    """Spearman's rho of ranks ``rx`` against each row of ``ry_perm`` (orderings of one rank vector: the mean and
    spread of every row are the same)."""
    cx, cy = rx - rx.mean(), ry_perm - ry_perm.mean(axis=1, keepdims=True)
    return (cy @ cx) / math.sqrt(float(cx @ cx) * float(cy[0] @ cy[0]))


def _kendall_numerators(x: np.ndarray, y_perm: np.ndarray, chunk: int = 65_536) -> np.ndarray:
    """sum_{i<j} sign(x_i - x_j) sign(y_i - y_j) for each row of y_perm (tau-b's denominator is order-invariant)."""
    i, j = np.triu_indices(x.size, k=1)
    sx = np.sign(x[i] - x[j])
    out = np.empty(y_perm.shape[0])
    for start in range(0, y_perm.shape[0], chunk):
        block = y_perm[start:start + chunk]
        out[start:start + chunk] = np.sign(block[:, i] - block[:, j]) @ sx
    return out


def permutation_p(x: Sequence[float], y: Sequence[float], n_resamples: int = N_RESAMPLES,
                  seed: int = SEED) -> tuple[float, float, str]:
    """Two-sided permutation p-values of Spearman's rho and Kendall's tau: (p_rho, p_tau, how); exact up to 9
    models, else Monte Carlo with the observed ordering counted, ``(1 + hits) / (1 + n_resamples)``."""
    xs, ys = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    n = xs.size
    if n <= EXACT_MAX_N:
        orders, method = all_orderings(n), f"exact ({math.factorial(n)} orderings)"
    else:
        rng = np.random.default_rng(seed)
        orders = rng.permuted(np.tile(np.arange(n), (n_resamples, 1)), axis=1)
        method = f"Monte Carlo ({n_resamples} orderings; seed {seed})"
    rx, ry = scipy.stats.rankdata(xs), scipy.stats.rankdata(ys)
    rho_obs = _spearman_many(rx, ry[None, :])[0]
    k_obs = _kendall_numerators(xs, ys[None, :])[0]
    eps = 1e-9  # equal statistics computed in another order must count as ties
    rho_hits = int(np.count_nonzero(np.abs(_spearman_many(rx, ry[orders])) >= abs(rho_obs) - eps))
    k_hits = int(np.count_nonzero(np.abs(_kendall_numerators(xs, ys[orders])) >= abs(k_obs) - eps))
    if n <= EXACT_MAX_N:
        return rho_hits / len(orders), k_hits / len(orders), method
    return (1 + rho_hits) / (1 + n_resamples), (1 + k_hits) / (1 + n_resamples), method


def rank_correlation(x: Sequence[float], y: Sequence[float], confidence: float = CONFIDENCE,
                     n_resamples: int = N_RESAMPLES, seed: int = SEED) -> RankCorrelation:
    """Spearman and Kendall tau-b of paired scores, their Fisher-z intervals and permutation p-values."""
    xs, ys = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if xs.shape != ys.shape or xs.ndim != 1:
        raise CorrelationInputError(f"paired scores of different shapes: {xs.shape} and {ys.shape}")
    if not (np.isfinite(xs).all() and np.isfinite(ys).all()):
        raise CorrelationInputError("paired scores hold a NaN or infinite value")
    n = int(xs.size)
    undefined = (f"n = {n} < {MIN_MODELS} models: no statistic" if n < MIN_MODELS else
                 "one side is constant over the models: ranks undefined" if np.ptp(xs) == 0 or np.ptp(ys) == 0 else "")
    if undefined:
        return RankCorrelation(n, *[math.nan] * 8, "", undefined)
    rho = _snap(float(scipy.stats.spearmanr(xs, ys).statistic))
    tau = _snap(float(scipy.stats.kendalltau(xs, ys, variant="b").statistic))
    notes = []
    s_low, s_high = spearman_interval(rho, n, confidence)
    if abs(rho) == 1.0:
        notes.append("|spearman| = 1: Fisher-z interval undefined")
    k_low, k_high = kendall_interval(tau, n, confidence)
    if n < KENDALL_CI_MIN_N:
        notes.append(f"n = {n} < {KENDALL_CI_MIN_N}: Kendall interval undefined")
    elif abs(tau) == 1.0:
        notes.append("|kendall| = 1: Fisher-z interval undefined")
    p_rho, p_tau, method = permutation_p(xs, ys, n_resamples, seed)
    return RankCorrelation(n, rho, s_low, s_high, tau, k_low, k_high, p_rho, p_tau, method, "; ".join(notes))


def _snap(value: float) -> float:
    return math.copysign(1.0, value) if abs(value) >= 1.0 - UNIT_TOLERANCE else value


def stat_cells(result: RankCorrelation) -> dict[str, object]:
    """A correlation as CSV cells: statistics to 4 decimals, p-values to 4 significant digits (an exact p can be
    2 / 8! = 5e-5), NaN written empty with the reason in ``note``."""
    cells: dict[str, object] = {}
    for name in STAT_FIELDS:
        value = getattr(result, name)
        if name in ("p_method", "note"):
            cells[name] = value
        elif math.isnan(value):
            cells[name] = ""
        else:
            cells[name] = float(f"{value:.4g}") if name.startswith("p_") else round(value, DIGITS)
    return cells


# ---- Finding 3 from the published tables --------------------------------------------------------------------------
@dataclass(frozen=True)
class PublishedModel:
    """One model of BiVLC's Tables 2/3: its row key in each table that prints it (None: not in that table)."""

    name: str
    table2_row: str | None
    table3_row: str | None


PUBLISHED_MODELS = (
    PublishedModel("CLIP", "Contrastive | CLIP", "CLIP"),
    PublishedModel("CLIPCOCO", "Contrastive | CLIPCOCO", "CLIPCOCO"),
    PublishedModel("NegCLIP", "Contrastive | NegCLIP", "NegCLIP"),
    PublishedModel("GNM", "Contrastive | GNM", "GNM"),
    PublishedModel("Open CapPa", "Generative | Open CapPa", None),
    PublishedModel("VQAScore-XL", "Generative | VQAScore-XL", None),
    PublishedModel("VQAScore-XXL", "Generative | VQAScore-XXL", None),
    PublishedModel("CLIPTROHN-Text", None, "CLIPTROHN-Text"),
    PublishedModel("CLIPTROHN-Img", None, "CLIPTROHN-Img"),
)
"""Human and Random (both tables) are references, not models: left out."""
SCORES = ("I2T", "T2I", "group")
PUBLISHED_COLUMNS = {"sugarcrepe": "SugarCrepe", "I2T": "BiVLC | I2T", "T2I": "BiVLC | T2I", "group": "BiVLC | Group"}
PUBLISHED_SOURCES = {"published table2": ("Table 2",), "published table3": ("Table 3",),
                     "published table2+table3": ("Table 2", "Table 3")}


def published_scores(published_root: Path = PUBLISHED) -> dict[str, dict[str, dict[str, float]]]:
    """source -> model -> {sugarcrepe, I2T, T2I, group} from the paper's Tables 2 and 3; a model in both tables must
    print the same numbers in both (the union takes them once)."""
    index = CellIndex(load_cells("bivlc", published_root))
    where = published_root / "bivlc.csv"

    def read(table: str, row: str) -> dict[str, float]:
        try:
            return {key: index.cell(table, row, column) for key, column in PUBLISHED_COLUMNS.items()}
        except KeyError as exc:
            raise CorrelationInputError(f"{where}: {exc.args[0]}") from None

    out: dict[str, dict[str, dict[str, float]]] = {}
    for source, tables in PUBLISHED_SOURCES.items():
        models: dict[str, dict[str, float]] = {}
        for m in PUBLISHED_MODELS:
            rows = {"Table 2": m.table2_row, "Table 3": m.table3_row}
            found = [read(t, rows[t]) for t in tables if rows[t] is not None]
            if not found:
                continue
            if any(f != found[0] for f in found[1:]):
                raise CorrelationInputError(f"{where}: {m.name}: Tables 2 and 3 print different scores "
                                            f"({found[0]} vs {found[1]})")
            models[m.name] = found[0]
        out[source] = models
    return out


def finding3_rows(sources: Mapping[str, Mapping[str, Mapping[str, float]]], confidence: float = CONFIDENCE,
                  n_resamples: int = N_RESAMPLES, seed: int = SEED) -> list[dict[str, object]]:
    """One row per (source, BiVLC score): SugarCrepe against that score over the source's models."""
    return [_stat_row({"source": source, "score": score}, "n", list(models),
                      {m: v["sugarcrepe"] for m, v in models.items()}, {m: v[score] for m, v in models.items()},
                      confidence, n_resamples, seed)
            for source, models in sources.items() for score in SCORES]


def _stat_row(head: dict[str, object], n_key: str, models: Sequence[str], x: Mapping[str, float],
              y: Mapping[str, float], confidence: float, n_resamples: int, seed: int) -> dict[str, object]:
    """``head``, then the rank correlation of ``x`` and ``y`` over ``models`` (their count under ``n_key``)."""
    result = rank_correlation([x[m] for m in models], [y[m] for m in models], confidence, n_resamples, seed)
    return {**head, n_key: result.n, **stat_cells(result), "models": "; ".join(models)}


def read_run_table2(path: Path) -> dict[str, dict[str, float]]:
    """model -> {sugarcrepe, I2T, T2I, group} from a run's table2.csv (the tables stage's schema)."""
    columns = ("sugarcrepe", *SCORES)
    out: dict[str, dict[str, float]] = {}
    for line, row in _csv_rows(path, ("model", *columns)):
        model = row["model"]
        if model in out:
            raise CorrelationInputError(f"{path}:{line}: model {model!r} appears twice")
        out[model] = {c: _number(row[c], f"{path}:{line}: column {c!r}") for c in columns}
    return out


# ---- the cross-benchmark view -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Benchmark:
    """One benchmark's headline number in one paper's results: the mean of ``values`` (columns of the CSV, or keys of
    each model's metrics JSON) per model. ``path`` is under ``results/``, ``{profile}`` filled in."""

    paper: str
    label: str
    path: str
    values: tuple[str, ...]
    unit: str
    layout: str = "csv"
    model_column: str = "model"
    higher_is_better: bool = True

    @property
    def column(self) -> str:
        return f"{self.paper}:{self.label}"


SUGARCREPE_CATEGORIES = ("replace_obj", "replace_att", "replace_rel", "swap_obj", "swap_att", "add_obj", "add_att")
_HP = "hard_positives/{profile}/"
BENCHMARKS: tuple[Benchmark, ...] = (
    Benchmark("sugarcrepe", "SugarCrepe", "sugarcrepe/{profile}/table6.csv", ("average",), "percent"),
    Benchmark("aro", "VG-Relation", "aro/{profile}/metrics", ("VG-Relation",), "fraction", "metrics-json"),
    Benchmark("aro", "VG-Attribution", "aro/{profile}/metrics", ("VG-Attribution",), "fraction", "metrics-json"),
    Benchmark("aro", "COCO-Order", "aro/{profile}/metrics", ("COCO-PRC",), "fraction", "metrics-json"),
    *(Benchmark("hard_positives", label, _HP + table, (column,), "percent", higher_is_better=better)
      for label, column, better in (("REPLACE aug", "replace_aug", True), ("SWAP aug", "swap_aug", True),
                                    ("REPLACE brittleness", "replace_brittleness", False),
                                    ("SWAP brittleness", "swap_brittleness", False))
      for table in ("table1.csv", "table3.csv")),
    Benchmark("conclip", "CC-Neg", "conclip/{profile}/table3.csv", ("ccneg",), "percent"),
    Benchmark("conclip", "SugarCrepe", "conclip/{profile}/sugarcrepe.csv", SUGARCREPE_CATEGORIES, "percent"),
    Benchmark("conclip", "classification top-1", "conclip/{profile}/classification.csv", ("classification_top1",),
              "percent"),
    Benchmark("bivlc", "SugarCrepe", "bivlc/{profile}/table2.csv", ("sugarcrepe",), "percent"),
    Benchmark("bivlc", "I2T", "bivlc/{profile}/table2.csv", ("I2T",), "percent"),
    Benchmark("bivlc", "T2I", "bivlc/{profile}/table2.csv", ("T2I",), "percent"),
    Benchmark("bivlc", "group", "bivlc/{profile}/table2.csv", ("group",), "percent"),
)
"""Left out: BiVLC's Table 5 (its ``model`` is the detector's frozen tower, not a model scored by similarity), ARO's
retrieval and shape-classification rows (not compositionality benchmarks), the per-category columns."""


def _csv_rows(path: Path, required: Sequence[str]) -> list[tuple[int, dict[str, str]]]:
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in required if c not in (reader.fieldnames or ())]
        if missing:
            raise CorrelationInputError(f"{path}: no column {missing[0]!r} (header: {reader.fieldnames})")
        return [(reader.line_num, row) for row in reader]


def _number(text: str | None, where: str) -> float:
    try:
        value = float(text or "")
    except ValueError:
        raise CorrelationInputError(f"{where}: {text!r} is not a number") from None
    if not math.isfinite(value):
        raise CorrelationInputError(f"{where}: {text!r} is not a finite number")
    return value


def _measured(text: str | None, where: str) -> float:
    """A benchmark cell: a finite number, or NaN where the paper measured nothing (an empty cell, a NaN metric: e.g.
    ARO's VG-Relation macro average when no relation reaches its case threshold); anything else is an error."""
    if text is None or str(text).strip().lower() in ("", "nan"):
        return math.nan
    return _number(text, where)


def _read_csv(benchmark: Benchmark, path: Path) -> dict[str, float]:
    """Model -> the mean of the benchmark's columns (NaN where one of them was not measured)."""
    out: dict[str, float] = {}
    for line, row in _csv_rows(path, (benchmark.model_column, *benchmark.values)):
        model = row[benchmark.model_column]
        value = float(np.mean([_measured(row[c], f"{path}:{line}: model {model!r}, column {c!r}")
                               for c in benchmark.values]))
        if model in out and not (out[model] == value or (math.isnan(out[model]) and math.isnan(value))):
            raise CorrelationInputError(f"{path}:{line}: model {model!r} appears twice with different "
                                        f"{'/'.join(benchmark.values)}")
        out[model] = value
    return out


def _read_metrics_json(benchmark: Benchmark, path: Path) -> dict[str, float]:
    """A metrics folder: one ``<zoo name, '/' as '__'>.json`` per model (``common.evaluation.results.metrics_filename``)."""
    out: dict[str, float] = {}
    for file in sorted(path.glob("*.json")):
        metrics = read_json(file, dict)
        missing = [k for k in benchmark.values if k not in metrics]
        if missing:
            raise CorrelationInputError(f"{file}: no metric {missing[0]!r} (has: {sorted(metrics)})")
        out[file.stem.replace("__", "/")] = float(np.mean([_measured(str(metrics[k]), f"{file}: metric {k!r}")
                                                           for k in benchmark.values]))
    return out


READERS: dict[str, Callable[[Benchmark, Path], dict[str, float]]] = {
    "csv": _read_csv, "metrics-json": _read_metrics_json,
}


def _shown(path: Path, results_root: Path) -> str:
    """``results/...`` for a file under the results folder (the context must not name this machine's paths)."""
    return str(path.relative_to(results_root.parent)) if path.is_relative_to(results_root.parent) else str(path)


@dataclass(frozen=True)
class CrossBenchmark:
    """Scores per benchmark column (model -> value, in first-seen order) and the files read or missing."""

    scores: dict[str, dict[str, float]]
    read: tuple[str, ...]
    missing: tuple[str, ...]
    unmeasured: tuple[str, ...] = ()
    """``<file>: <model> (<column>)`` for each model a file lists without a number for the column (left out of it)."""


def collect(benchmarks: Sequence[Benchmark], profile: str, results_root: Path = RESULTS) -> CrossBenchmark:
    """Read every benchmark's files that exist; two files feeding one column must agree on shared models."""
    scores: dict[str, dict[str, float]] = {}
    read: dict[str, None] = {}
    missing: dict[str, None] = {}
    unmeasured: list[str] = []
    for b in benchmarks:
        if b.layout not in READERS:
            raise CorrelationInputError(f"benchmark {b.column}: unknown layout {b.layout!r} (known: {sorted(READERS)})")
        path = results_root / b.path.format(profile=profile)
        rel = _shown(path, results_root)
        (read if path.exists() else missing)[rel] = None
        if not path.exists():
            continue
        column = scores.setdefault(b.column, {})
        for model, value in READERS[b.layout](b, path).items():
            if math.isnan(value):
                unmeasured.append(f"{rel}: {model} ({b.column})")
                continue
            if model in column and abs(column[model] - value) > 1e-9:
                raise CorrelationInputError(f"{path}: model {model!r}: {b.column} = {value} here but "
                                            f"{column[model]} in another file of {b.paper}")
            column[model] = value
    return CrossBenchmark({c: s for c, s in scores.items() if s}, tuple(read), tuple(missing), tuple(unmeasured))


def cross_table_rows(view: CrossBenchmark) -> tuple[list[dict[str, object]], list[str]]:
    """Model rows x benchmark columns (empty where a benchmark did not score the model)."""
    columns = list(view.scores)
    rows = []
    for model in dict.fromkeys(m for column in view.scores.values() for m in column):
        cells = {c: round(view.scores[c][model], DIGITS) for c in columns if model in view.scores[c]}
        rows.append({"model": model, "n_benchmarks": len(cells), **cells})
    return rows, ["model", "n_benchmarks", *columns]


def benchmark_correlation_rows(view: CrossBenchmark, confidence: float = CONFIDENCE, n_resamples: int = N_RESAMPLES,
                               seed: int = SEED) -> list[dict[str, object]]:
    """Every pair of benchmark columns over the models both scored."""
    scores = view.scores
    return [_stat_row({"benchmark_a": a, "benchmark_b": b}, "n_models", [m for m in scores[a] if m in scores[b]],
                      scores[a], scores[b], confidence, n_resamples, seed)
            for a, b in itertools.combinations(scores, 2)]


# ---- outputs ------------------------------------------------------------------------------------------------------
def _metric(value: object) -> float | None:
    return None if value == "" else float(value)  # type: ignore[arg-type]


def summary(finding3: Sequence[Mapping[str, object]], pairs: Sequence[Mapping[str, object]], profile: str,
            n_benchmarks: int) -> dict[str, float | None]:
    """Twelve numbers for ``dvc metrics``: group-vs-SugarCrepe from each published source and this profile's runs,
    and how many benchmark pairs had enough models. None where undefined."""
    group = {r["source"]: r for r in finding3 if r["score"] == "group"}
    out: dict[str, float | None] = {}
    for key, source in (("published_table2", "published table2"), ("published_table3", "published table3"),
                        ("published_union", "published table2+table3")):
        out[f"{key}_group_spearman"] = _metric(group[source]["spearman"])
        out[f"{key}_group_p_exact"] = _metric(group[source]["p_exact"])
    runs = group.get(f"runs-{profile}", {})
    for name in ("spearman", "spearman_low", "spearman_high", "p_exact"):
        out[f"runs_group_{name}"] = _metric(runs.get(name, ""))
    out["cross_benchmarks"] = float(n_benchmarks)
    out["cross_pairs_with_4_models"] = float(sum(1 for p in pairs if int(p["n_models"]) >= MIN_MODELS))
    return out


def run(profile: str, results_root: Path | None = None, published_root: Path | None = None,
        benchmarks: Sequence[Benchmark] = BENCHMARKS, confidence: float = CONFIDENCE,
        n_resamples: int = N_RESAMPLES, seed: int = SEED) -> dict[str, Path]:
    """Compute everything, then write the profile's group and ``finding3.csv``; returns the written files.
    Defaults: the workspace's ``results/`` and ``results/published/``."""
    results_root = RESULTS if results_root is None else Path(results_root)
    published_root = PUBLISHED if published_root is None else Path(published_root)
    if profile not in PROFILES:
        raise CorrelationInputError(f"profile must be one of {PROFILES}, got {profile!r}")
    sources: dict[str, Mapping[str, Mapping[str, float]]] = dict(published_scores(published_root))
    for p in PROFILES:
        table2 = results_root / "bivlc" / p / "table2.csv"
        if table2.is_file():
            sources[f"runs-{p}"] = read_run_table2(table2)
    f3 = finding3_rows(sources, confidence, n_resamples, seed)
    view = collect(benchmarks, profile, results_root)
    cross_rows, cross_fields = cross_table_rows(view)
    pairs = benchmark_correlation_rows(view, confidence, n_resamples, seed)
    context = {
        "profile": profile, "confidence": confidence, "seed": seed, "n_resamples": n_resamples,
        "methods": {
            "spearman_interval": "Fisher z, SE = sqrt((1 + rho^2/2) / (n - 3)) (Bonett & Wright 2000); n >= 4",
            "kendall_interval": "Fisher z, SE = sqrt(0.437 / (n - 4)) (Fieller, Hartley & Pearson 1957); n >= 5",
            "p_exact": f"two-sided permutation test of Spearman's rho (p_exact_kendall: of Kendall's tau), all n! "
                       f"orderings for n <= {EXACT_MAX_N}, else Monte Carlo ({n_resamples} orderings, seed {seed})",
            "min_models": MIN_MODELS,
        },
        "finding3_sources": {
            **{s: {"file": _shown(published_root / "bivlc.csv", results_root),
                   "rows": {m.name: [f"{t} | {r}" for t, r in (("Table 2", m.table2_row), ("Table 3", m.table3_row))
                                     if t in tables and r is not None] for m in PUBLISHED_MODELS
                            if m.name in sources[s]}} for s, tables in PUBLISHED_SOURCES.items()},
            **{f"runs-{p}": _shown(results_root / "bivlc" / p / "table2.csv", results_root) for p in PROFILES
               if f"runs-{p}" in sources},
        },
        "benchmarks": [{**asdict(b), "column": b.column,
                        "file": _shown(results_root / b.path.format(profile=profile), results_root)}
                       for b in benchmarks],
        "read": list(view.read),
        "missing": list(view.missing),
        "unmeasured": list(view.unmeasured),
        "note": "signs are raw: for a lower-is-better benchmark (higher_is_better false) a negative correlation "
                "means agreement",
    }
    metrics = summary(f3, pairs, profile, len(view.scores))
    out_dir = results_root / "bivlc" / profile
    with output_group(out_dir) as staging:
        staged = {
            "cross_benchmark": write_csv_atomic(staging / "cross_benchmark.csv", cross_rows, cross_fields),
            "benchmark_correlations": write_csv_atomic(staging / "benchmark_correlations.csv", pairs, (
                "benchmark_a", "benchmark_b", "n_models", *STAT_FIELDS, "models")),
            "summary": write_json_atomic(staging / "correlation_summary.json", metrics),
            "context": write_json_atomic(staging / "correlation_context.json", context),
        }
    written = {name: staged_to_final(path, staging, out_dir) for name, path in staged.items()}
    written["finding3"] = write_csv_atomic(results_root / "bivlc" / "finding3.csv", f3,
                                         ("source", "score", "n", *STAT_FIELDS, "models"))
    return written


def describe(finding3: Path) -> str:
    """Finding 3's group rows, one line each (printed by the stage)."""
    with open(finding3, newline="", encoding="utf-8") as fh:
        rows = [r for r in csv.DictReader(fh) if r["score"] == "group"]
    return "\n".join(f"{r['source']:<24} n = {r['n']}  spearman {r['spearman'] or 'NaN'} "
                     f"[{r['spearman_low'] or 'NaN'}, {r['spearman_high'] or 'NaN'}]  kendall {r['kendall'] or 'NaN'}  "
                     f"p = {r['p_exact'] or 'NaN'}" for r in rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = stage_parser(__spec__.name, __doc__)
    parser.add_argument("--seed", type=int, default=SEED,
                        help=f"Monte Carlo permutation test's seed, used only beyond {EXACT_MAX_N} models (default "
                             f"{SEED})")
    parser.add_argument("--n-resamples", type=int, default=N_RESAMPLES,
                        help=f"orderings of the Monte Carlo permutation test (default {N_RESAMPLES})")
    parser.add_argument("--profile", choices=PROFILES, default=None,
                        help="default: the stage's `profile` parameter (params.yaml)")
    args = parser.parse_args(argv)
    if args.n_resamples < 1:
        parser.error("--n-resamples must be at least 1")
    written = run(args.profile or own_params()["profile"], n_resamples=args.n_resamples, seed=args.seed)
    print(describe(written["finding3"]))
    return print_written(written)


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
