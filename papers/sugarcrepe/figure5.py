"""SugarCrepe Figure 5: zero-shot classification accuracy against each SugarCrepe category, under either profile.

The paper (Sec. 5.3) plots 17 CLIPs' ImageNet zero-shot top-1 against their Table 6 accuracy per category and reports
Pearson r (0.78 SWAP-Obj, 0.75 ADD-Att, > 0.8 elsewhere). mini: the mini family is scored here on the mini world's
"ImageNet analog" (``common.miniworld.classification``; the 7-shape set beside it, r_shapes) against its mini Table 6,
whose fingerprints must match the weights scored here. full: each model Figure 5 plots (``released.figure5_models``)
takes its x from open_clip's published ImageNet-1k zero-shot top-1 (``mlfoundations/open_clip@89fb801f
docs/openclip_results.csv``, matched as the audit matches it, ``released.match_models``): ImageNet-1k is not among the
workspace's data, and the published top-1 is what the paper plotted. A model with none is named in
figure5_context.json.

Two intervals: Fisher z over models (the standard error of atanh(r) is 1/sqrt(n - 3): +- 1.96 with the mini family's
n = 4, +- 0.52 with the paper's 17), and a percentile bootstrap over test examples, the same draw for every model,
which shows test-set noise only (full: ImageNet top-1 held fixed, open_clip publishes no per-image outcomes). The
published r is the audit's recomputation (``papers.sugarcrepe.released``); the paper reports no r for the average,
so its "published" r is the same recomputation on Table 6's Average column. Outputs: the README's stage table.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np
import scipy.stats

from common.audit.core import AuditError
from common.benchmarks.caption_negatives import CATEGORIES
from common.errors import WorkspaceError
from common.evaluation import stats
from common.evaluation.engine import Engine, EngineConfig
from common.evaluation.evaluate import best_device, engine_config
from common.evaluation.scoring import classification
from common.files.io import sha256_file, write_csv_atomic, write_json_atomic, write_output_group
from common.files.tasks import ClassificationSet
from common.miniworld.classification import (
    COLORED_SHAPES, IMAGENET_ANALOG, SHAPES, ClassificationSetConfig, ensure_classification_set)
from common.paths import RESULTS, build_root
from common.pipeline import reproducible
from common.pipeline.cli import print_written, stage_parser
from common.pipeline.params import own_params
from common.registry.fetch import fetch
from common.registry.sources import get_source
from common.reporting.figures import pyplot, save_figure
from common.reporting.published import read_csv_rows
from common.zoo import create_model
from papers.sugarcrepe import released

AVERAGE = "average"
GROUPS: tuple[str, ...] = (*CATEGORIES, AVERAGE)
SHORT = {**released.SHORT, AVERAGE: "Average"}
IMAGENET_1K = "imagenet-1k"
"""The full profile's x: open_clip's published ImageNet-1k zero-shot top-1 (no per-image outcomes)."""
CLASSIFICATION_IMAGES = 1120
"""20 images per colour-shape class (160 per shape): each model's top-1 is then known to within about 3 points
(95%, binomial), and the set renders and scores in seconds."""
N_RESAMPLES = 2000
CONFIDENCE = 0.95
SEED = 0
FIGURE5_FIELDS = ["category", "label", "n_models", "r", "fisher_low", "fisher_high", "bootstrap_low", "bootstrap_high",
                  "bootstrap_dropped", "r_shapes", "published_r", "published_n_models"]


class Figure5InputError(WorkspaceError):
    """A Table 6, predictions or ImageNet results file that cannot be read or disagrees with the models plotted."""


@dataclass(frozen=True)
class Table6Row:
    model: str
    label: str
    fingerprint: str
    accuracy: dict[str, float]
    """Percent per category and the average, as the table prints them."""


@dataclass(frozen=True)
class ModelPoints:
    """One model's scores and the per-example correctness behind them (what the bootstrap resamples)."""

    model: str
    label: str
    classification_correct: dict[str, np.ndarray]
    """Label set -> per image, right at top-1 (ties count wrong); empty when the top-1 is a published number."""
    category_correct: dict[str, np.ndarray]
    """SugarCrepe category -> per example, right (from the Table 6 predictions)."""
    table6: dict[str, float]
    published_top1: dict[str, float] = field(default_factory=dict)
    """Label set -> top-1 in percent reported by others, with no per-image outcomes (full: ``IMAGENET_1K``)."""
    family: str = ""
    """Pretraining source (OpenAI, LAION, DataComp): the full profile's colours."""

    def top1(self, label_set: str) -> float:
        if label_set in self.classification_correct:
            return 100.0 * float(self.classification_correct[label_set].mean())
        return self.published_top1[label_set]


@dataclass(frozen=True)
class CategoryCorrelation:
    category: str
    n_models: int
    fisher: stats.Interval
    bootstrap: stats.Interval
    r_shapes: float
    """r against the mini world's 7-shape set (NaN in the full profile, which has no second label set)."""
    published_r: float
    published_n_models: int

    @property
    def r(self) -> float:
        return self.fisher.estimate


@dataclass(frozen=True)
class Figure5Config:
    """The mini profile uses every field; the full profile only the bootstrap's (no classification set)."""

    classification_images: int = CLASSIFICATION_IMAGES
    image_size: int = 48
    world_seed: int = 0
    n_resamples: int = N_RESAMPLES
    confidence: float = CONFIDENCE
    bootstrap_seed: int = SEED


@dataclass(frozen=True)
class ProfileView:
    """What a profile puts on the x axis and how its outputs name it; the statistics are the same for both."""

    label_set: str
    """The label set on the x axis (``ModelPoints.top1``)."""
    column: str
    """Its column in figure5_points.csv."""
    axis_label: str
    title: str
    """The figure's title; ``{n}`` is the number of models."""
    second_set: str | None = None
    """A second label set correlated beside the first (figure5.csv ``r_shapes``), or None."""
    second_column: str | None = None
    color_by_family: bool = False
    """One colour per pretraining source (many models) rather than one per model (the mini family's four)."""


MINI_VIEW = ProfileView(
    IMAGENET_ANALOG, "imagenet_analog_top1", "ImageNet-analog zero-shot top-1 (%)",
    "SugarCrepe Figure 5, mini profile: tiny CLIPs' zero-shot top-1 on 56 colour-shape classes vs mini Table 6 "
    "(n = {n} models; 95% intervals: bootstrap over test examples, Fisher z over models)", SHAPES, "shapes_top1")
FULL_VIEW = ProfileView(
    IMAGENET_1K, "imagenet_top1", "ImageNet-1k zero-shot top-1 (%, open_clip's results)",
    "SugarCrepe Figure 5, full profile: open_clip's published ImageNet-1k zero-shot top-1 vs this run's Table 6 "
    "(n = {n} models; 95% intervals: bootstrap over SugarCrepe examples, Fisher z over models)",
    color_by_family=True)


def read_table6(path: Path, groups: Sequence[str] = GROUPS) -> dict[str, Table6Row]:
    """model -> its row of a Table 6 CSV (``common.evaluation.results.write_accuracy_table``'s wide table)."""
    if not Path(path).is_file():
        raise Figure5InputError(f"{path}: not found: run the table6 stage of this profile first")
    rows: dict[str, Table6Row] = {}
    for line, row in read_csv_rows(path, Figure5InputError, required=("model", "label", "fingerprint", *groups))[1]:
        try:
            accuracy = {g: float(row[g]) for g in groups}
        except ValueError as exc:
            raise Figure5InputError(f"{path}: line {line} ({row['model']}): not a number ({exc})") from exc
        rows[row["model"]] = Table6Row(row["model"], row["label"], row["fingerprint"], accuracy)
    return rows


def read_correctness(path: Path) -> tuple[dict[str, tuple[str, ...]], dict[str, np.ndarray]]:
    """(category -> item ids, category -> per-example correctness), in file order, from a predictions CSV
    (``common.evaluation.results.write_predictions``)."""
    ids: dict[str, list[str]] = {}
    by_group: dict[str, list[bool]] = {}
    for line, row in read_csv_rows(path, Figure5InputError, required=("item_id", "group", "correct"))[1]:
        if row["correct"] not in ("0", "1"):
            raise Figure5InputError(f"{path}: line {line} ({row['item_id']}): correct is {row['correct']!r}, "
                                    "not 0 or 1")
        ids.setdefault(row["group"], []).append(row["item_id"])
        by_group.setdefault(row["group"], []).append(row["correct"] == "1")
    missing = [c for c in CATEGORIES if not by_group.get(c)]
    if missing:
        raise Figure5InputError(f"{path}: no predictions for categor(ies) {missing}")
    return {c: tuple(ids[c]) for c in CATEGORIES}, {c: np.asarray(by_group[c], dtype=bool) for c in CATEGORIES}


def predictions_path(predictions_dir: Path, model: str) -> Path:
    return predictions_dir / f"{model.replace('/', '__')}.csv"


def check_against_table(row: Table6Row, correct: Mapping[str, np.ndarray], source: Path) -> None:
    """The predictions must give the table's accuracies (to its two decimals): both come from one Table 6 run."""
    for category, values in correct.items():
        recomputed = round(100.0 * float(values.mean()), 2)
        if abs(recomputed - row.accuracy[category]) > 0.005 + 1e-9:
            raise Figure5InputError(f"{source}: {category} accuracy {recomputed:.2f} but the Table 6 row of "
                                    f"{row.model} says {row.accuracy[category]:.2f}: rerun the table6 stage")


def category_outcomes(models: Sequence[str], table6: Mapping[str, Table6Row], table6_path: Path,
                      predictions_dir: Path) -> dict[str, dict[str, np.ndarray]]:
    """model -> category -> per-example correctness, each file checked against its Table 6 row and listing the same
    examples in the same order (the bootstrap resamples example k of every model together)."""
    out = {}
    first_ids: tuple[Path, dict[str, tuple[str, ...]]] | None = None
    for model in models:
        if model not in table6:
            raise Figure5InputError(f"{table6_path}: no row for {model}: rerun the table6 stage")
        path = predictions_path(predictions_dir, model)
        if not path.is_file():
            raise Figure5InputError(f"{path}: no predictions for {model}: rerun the table6 stage")
        ids, correct = read_correctness(path)
        if first_ids is None:
            first_ids = (path, ids)
        elif ids != first_ids[1]:
            raise Figure5InputError(f"{path}: its examples differ from those of {first_ids[0]} (ids or order): rerun "
                                    "the table6 stage")
        check_against_table(table6[model], correct, path)
        out[model] = correct
    return out


def score_classification(model: str, sets: Mapping[str, ClassificationSet], config: EngineConfig,
                         device: str) -> tuple[str, dict[str, np.ndarray]]:
    """(weights fingerprint, label set -> per-image top-1 correctness) of one model."""
    engine = Engine(create_model(model, device=device), config)
    results = {name: classification.evaluate(engine, dataset) for name, dataset in sets.items()}
    return engine.identity[1], {name: r.ranks < 1 for name, r in results.items()}


def pick_imagenet(models: Sequence[str], imagenet: Mapping[tuple[str, str], float]
                  ) -> tuple[dict[str, released.ModelMatch], dict[str, str]]:
    """(model -> the open_clip row its x comes from, left-out model -> why), matched as the audit matches them
    (``released.figure5_models``, ``match_models``)."""
    matches, left_out = {}, {}
    for model in models:
        refs = released.figure5_models([model])
        if not refs:
            left_out[model] = (f"not an open_clip pretrained CLIP of {'/'.join(released.FIGURE5_FAMILIES)} "
                               "(Figure 5 plots only those)")
            continue
        (match,) = released.match_models(imagenet, refs)
        if match.imagenet is None:
            left_out[model] = (f"no row for ({match.model.arch}, {match.model.pretrained}) in open_clip's results "
                               "(nor its -quickgelu twin)")
            continue
        matches[model] = match
    return matches, left_out


def read_imagenet(path: Path) -> dict[tuple[str, str], float]:
    """(open_clip name, pretrained tag) -> ImageNet-1k top-1 (a fraction), errors naming the file."""
    try:
        return released.imagenet_top1(path)
    except (ValueError, AuditError) as exc:
        raise Figure5InputError(f"{path}: cannot read ImageNet-1k top-1: {exc}") from exc


def _resampled_accuracy(rng: np.random.Generator, correct: np.ndarray, n_resamples: int) -> np.ndarray:
    """(n_resamples, n_models) accuracies in percent, every model on the same resampled examples."""
    picks = rng.integers(0, correct.shape[1], size=(n_resamples, correct.shape[1]))
    return 100.0 * correct[:, picks].mean(axis=2).T


def example_bootstrap(points: Sequence[ModelPoints], estimates: Mapping[str, float], label_set: str = IMAGENET_ANALOG,
                      n_resamples: int = N_RESAMPLES, confidence: float = CONFIDENCE,
                      seed: int = SEED) -> dict[str, stats.Interval]:
    """Per group, a percentile interval of r over resampled test examples. One generator draws the classification
    images first (a published top-1 is held fixed), then each category in Table 6's order; the average is the mean of
    the seven, as Table 6 averages them. A resample where every model scores the same has no r and is dropped."""
    with_images = [label_set in p.classification_correct for p in points]
    if any(with_images) and not all(with_images):
        raise ValueError(f"example_bootstrap: some models have per-image outcomes for {label_set}, others not")
    rng = np.random.default_rng(seed)
    if all(with_images):
        x = _resampled_accuracy(rng, np.stack([p.classification_correct[label_set] for p in points]), n_resamples)
        method = "percentile bootstrap over test examples"
    else:
        x = np.tile([p.top1(label_set) for p in points], (n_resamples, 1))
        method = "percentile bootstrap over SugarCrepe examples (x fixed: no per-image outcomes)"
    y = {c: _resampled_accuracy(rng, np.stack([p.category_correct[c] for p in points]), n_resamples)
         for c in CATEGORIES}
    y[AVERAGE] = np.mean([y[c] for c in CATEGORIES], axis=0)
    tail = 100.0 * (1.0 - confidence) / 2.0
    out = {}
    for group in GROUPS:
        rs = np.array([stats.pearson_r(x[b], y[group][b]) for b in range(n_resamples)])
        defined = rs[~np.isnan(rs)]
        low, high = np.percentile(defined, [tail, 100.0 - tail]) if defined.size else (math.nan, math.nan)
        out[group] = stats.Interval(estimates[group], float(low), float(high), confidence, n_resamples,
                                    method, dropped=int(rs.size - defined.size))
    return out


def correlations(points: Sequence[ModelPoints], published: Mapping[str, tuple[float, int]],
                 n_resamples: int = N_RESAMPLES, confidence: float = CONFIDENCE, seed: int = SEED,
                 view: ProfileView = MINI_VIEW) -> list[CategoryCorrelation]:
    """Per group: r (the view's x vs Table 6) with both intervals, r against its second label set (mini: the 7-shape
    set), the published r."""
    x = [p.top1(view.label_set) for p in points]
    estimates = {g: stats.pearson_r(x, [p.table6[g] for p in points]) for g in GROUPS}
    boot = example_bootstrap(points, estimates, view.label_set, n_resamples, confidence, seed)
    out = []
    for g in GROUPS:
        y = [p.table6[g] for p in points]
        r_second = (stats.pearson_r([p.top1(view.second_set) for p in points], y) if view.second_set is not None
                    else math.nan)
        published_r, published_n = published.get(g, (math.nan, 0))
        out.append(CategoryCorrelation(g, len(points), stats.fisher_pearson_ci(estimates[g], len(points), confidence),
                                       boot[g], r_second, published_r, published_n))
    return out


def published_correlations(model_names: Sequence[str] | None = None, fetcher: Callable[[str], Path] | None = None
                           ) -> tuple[dict[str, tuple[float, int]], str]:
    """group -> (r, models) from the audit's recomputation of Figure 5 over ``model_names``, and its source."""
    matches, table6, source = released.figure5_inputs(fetcher, model_names=model_names)
    points = released.figure5_points(matches, table6, {**released.COLUMNS, AVERAGE: "Average"})
    out = {g: (released.pearson_r(xs, ys), len(xs)) for g, (_, xs, ys) in points.items()}
    return out, f"{source} + published Table 6"


def _num(value: float, digits: int = 4) -> str:
    return "" if math.isnan(value) else f"{value:.{digits}f}"


def draw(points: Sequence[ModelPoints], rows: Sequence[CategoryCorrelation], out_png: Path,
         view: ProfileView = MINI_VIEW) -> Path:
    """The paper's grid of panels, one per category (and the average): x = the view's top-1, y = accuracy."""
    plt = pyplot()
    fig, axes = plt.subplots(2, 4, figsize=(14, 6.6))
    if view.color_by_family:
        colors = [released.FAMILY_COLORS.get(p.family, "tab:grey") for p in points]
        labels = [p.family or "other" for p in points]
    else:
        colors = plt.get_cmap("viridis")(np.linspace(0.0, 0.85, len(points)))
        labels = [p.label for p in points]
    x = np.array([p.top1(view.label_set) for p in points])
    for ax, c in zip(axes.flat, rows):
        y = np.array([p.table6[c.category] for p in points])
        for label, xi, yi, color in zip(labels, x, y, colors):
            ax.scatter([xi], [yi], s=34, color=color, label=label, zorder=3)
        if not math.isnan(c.r):
            slope, intercept = np.polyfit(x, y, 1)
            ax.plot(x[[x.argmin(), x.argmax()]], slope * x[[x.argmin(), x.argmax()]] + intercept, color="grey",
                    lw=0.8, ls="--", zorder=2)
        published = "" if math.isnan(c.published_r) else f"  (paper: {c.published_r:.2f})"
        ax.set_title(f"{SHORT[c.category]}  r = {c.r:.2f}{published}\nbootstrap [{c.bootstrap.low:.2f}, "
                     f"{c.bootstrap.high:.2f}]  Fisher [{c.fisher.low:.2f}, {c.fisher.high:.2f}]", fontsize=9)
        ax.set_xlabel(view.axis_label, fontsize=8)
        ax.set_ylabel("SugarCrepe accuracy (%)", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    legend = dict(zip(labels, handles))  # one entry per family in the full profile (per model in the mini one)
    fig.legend(list(legend.values()), list(legend), loc="lower center", ncol=len(legend), fontsize=8, frameon=False)
    fig.suptitle(view.title.format(n=len(points)), fontsize=10)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return save_figure(fig, out_png)


def write_outputs(out_dir: Path, points: Sequence[ModelPoints], rows: Sequence[CategoryCorrelation],
                  context: dict, view: ProfileView = MINI_VIEW) -> dict[str, Path]:
    """Every output into a staging folder, then into ``out_dir`` as a group; the summary printed."""
    figure5 = [{"category": c.category, "label": SHORT[c.category], "n_models": c.n_models, "r": _num(c.r),
                "fisher_low": _num(c.fisher.low), "fisher_high": _num(c.fisher.high),
                "bootstrap_low": _num(c.bootstrap.low), "bootstrap_high": _num(c.bootstrap.high),
                "bootstrap_dropped": c.bootstrap.dropped, "r_shapes": _num(c.r_shapes),
                "published_r": _num(c.published_r), "published_n_models": c.published_n_models} for c in rows]
    columns = {view.column: view.label_set}  # figure5_points.csv's x columns
    if view.second_set is not None and view.second_column is not None:
        columns[view.second_column] = view.second_set
    points_rows = [{"model": p.model, "label": p.label, **{k: f"{p.top1(s):.2f}" for k, s in columns.items()},
                    **{g: f"{p.table6[g]:.2f}" for g in GROUPS}} for p in points]
    written = write_output_group(out_dir, lambda staging: {
        "figure5": write_csv_atomic(staging / "figure5.csv", figure5,
                                    [f for f in FIGURE5_FIELDS if f != "r_shapes" or view.second_set is not None]),
        "points": write_csv_atomic(staging / "figure5_points.csv", points_rows, ["model", "label", *columns, *GROUPS]),
        # r per group, keyed as Table 6's metrics are: ``make metrics PAPER=sugarcrepe`` shows one table whose
        # columns are the union of every file's keys, so this adds a row (r per category), not 8 columns
        "metrics": write_json_atomic(staging / "figure5_metrics.json", {c.category: round(c.r, 4) for c in rows}),
        "context": write_json_atomic(staging / "figure5_context.json", context),
        "figure": draw(points, rows, staging / "figure5.png", view),
    })
    print(summary(points, rows, view))
    return written


def summary(points: Sequence[ModelPoints], rows: Sequence[CategoryCorrelation], view: ProfileView = MINI_VIEW) -> str:
    two = view.second_set is not None
    shown = [f"{p.model} {p.top1(view.label_set):.1f}" + (f" ({p.top1(view.second_set):.1f})" if two else "")
             for p in points]
    lines = [("ImageNet-analog top-1 (56 colour-shape classes; 7 shapes): " if two else
              "ImageNet-1k top-1 (open_clip's results): ") + ", ".join(shown)]
    for c in rows:
        second = f"  r_shapes = {c.r_shapes:+.2f}" if two else ""
        lines.append(f"  {SHORT[c.category]:<12} r = {c.r:+.2f}  bootstrap [{c.bootstrap.low:+.2f}, "
                     f"{c.bootstrap.high:+.2f}]  Fisher [{c.fisher.low:+.2f}, {c.fisher.high:+.2f}]{second}  "
                     f"paper ({c.published_n_models} CLIPs) {c.published_r:.2f}")
    return "\n".join(lines)


def run_mini(models: Sequence[str], config: Figure5Config, engine: EngineConfig, set_dir: Path, out_dir: Path,
             table6_path: Path = RESULTS / "sugarcrepe" / "mini" / "table6.csv",
             predictions: Path = RESULTS / "sugarcrepe" / "mini" / "predictions",
             device: str = "cpu", *, published: tuple[dict[str, tuple[float, int]], str]) -> dict[str, Path]:
    """Build or reuse the classification set, score the models, correlate, write; returns the written files."""
    set_config = ClassificationSetConfig(config.classification_images, config.image_size, config.world_seed)
    sets, reused = ensure_classification_set(set_config, set_dir)
    print(f"classification set: {'reused' if reused else 'built'} ({config.classification_images} images)")
    table6 = read_table6(table6_path)
    outcomes = category_outcomes(models, table6, table6_path, predictions)  # read first: cheap, the scoring is not
    points = []
    for model in models:
        row = table6[model]
        fingerprint, correct = score_classification(model, sets, engine, device)
        if fingerprint != row.fingerprint:  # the weights scored here must be the ones Table 6 scored
            raise Figure5InputError(f"{table6_path}: {model} was scored with weights {row.fingerprint}, these are "
                                    f"{fingerprint}: rerun the table6 stage")
        points.append(ModelPoints(model, row.label, correct, outcomes[model], row.accuracy))
    rows = correlations(points, published[0], config.n_resamples, config.confidence, config.bootstrap_seed)
    context = {
        "profile": "mini", "config": asdict(config), "classification_set": asdict(set_config),
        "imagenet_analog": f"{IMAGENET_ANALOG} ({len(sets[COLORED_SHAPES].class_names)} classes); r_shapes uses "
                           f"{SHAPES} ({len(sets[SHAPES].class_names)} classes)",
        "models": {p.model: table6[p.model].fingerprint for p in points},
        "published_source": published[1],
        "intervals": {"fisher": f"Fisher z over the models ({fisher_width(len(points), config.confidence)})",
                      "bootstrap": "percentile bootstrap over test examples (classification images and each "
                                   "category's examples resampled, the same draw for every model)"},
        "note": f"{len(points)} tiny CLIPs on the rendered mini world: r has {len(points) - 2} degrees of freedom; "
                "not comparable to the paper's 17 CLIPs",
    }
    return write_outputs(out_dir, points, rows, context)


def run_full(models: Sequence[str], config: Figure5Config, out_dir: Path, imagenet_csv: Path, imagenet_source: dict,
             table6_path: Path = RESULTS / "sugarcrepe" / "full" / "table6.csv",
             predictions: Path = RESULTS / "sugarcrepe" / "full" / "predictions",
             *, published: tuple[dict[str, tuple[float, int]], str]) -> dict[str, Path]:
    """Match the models to open_clip's ImageNet-1k results, read this run's Table 6 and predictions, correlate,
    write; ``imagenet_source`` (where the CSV came from: key, url, sha256) goes to the context as given."""
    matches, left_out = pick_imagenet(models, read_imagenet(imagenet_csv))
    for model, why in left_out.items():
        print(f"left out of Figure 5: {model}: {why}")
    if len(matches) < 3:
        raise Figure5InputError(f"{imagenet_csv}: only {len(matches)} of the models have an ImageNet-1k top-1 "
                                f"({sorted(matches)}): r needs 3 at least")
    table6 = read_table6(table6_path)
    outcomes = category_outcomes(list(matches), table6, table6_path, predictions)
    points = [ModelPoints(model, table6[model].label, {}, outcomes[model], table6[model].accuracy,
                          {IMAGENET_1K: 100.0 * match.imagenet}, match.model.row.split(" | ", 1)[0])
              for model, match in matches.items()]
    rows = correlations(points, published[0], config.n_resamples, config.confidence, config.bootstrap_seed,
                        FULL_VIEW)
    context = {
        "profile": "full",
        "config": {"n_resamples": config.n_resamples, "confidence": config.confidence,
                   "bootstrap_seed": config.bootstrap_seed},
        "imagenet": {**imagenet_source, "column": released.IMAGENET_COLUMN,
                     "note": "open_clip's published zero-shot top-1, not run here (ImageNet-1k is not among this "
                             "workspace's data); matched on (arch, pretrained tag) as the audit matches it"},
        "models": {p.model: {"fingerprint": table6[p.model].fingerprint,
                             "openclip": f"{matches[p.model].csv_name}/{matches[p.model].csv_pretrained}",
                             "match": matches[p.model].how,
                             "imagenet_top1": round(p.top1(IMAGENET_1K), 2)} for p in points},
        "left_out": left_out,
        "published_source": published[1],
        "intervals": {"fisher": f"Fisher z over the models ({fisher_width(len(points), config.confidence)})",
                      "bootstrap": "percentile bootstrap over SugarCrepe examples (each category's examples "
                                   "resampled, the same draw for every model); ImageNet top-1 held fixed: open_clip "
                                   "publishes no per-image outcomes"},
        "note": "x is the same as the published r's; the two r differ by this run's Table 6 against the published one",
    }
    return write_outputs(out_dir, points, rows, context, FULL_VIEW)


def fisher_width(n: int, confidence: float) -> str:
    """How wide the Fisher interval is for ``n`` models, in words for the context."""
    if n <= 3:
        return f"n = {n}: undefined, the interval is [-1, 1]"
    return f"n = {n}: atanh(r) +- {scipy.stats.norm.ppf(0.5 + confidence / 2.0) / math.sqrt(n - 3):.2f}"


def imagenet_results() -> tuple[Path, dict]:
    """open_clip's results CSV through the checksum-pinned downloader, and where it came from."""
    source = get_source(released.OPENCLIP_RESULTS_KEY)
    path = fetch(released.OPENCLIP_RESULTS_KEY, progress=False)
    return path, {"key": source.key, "url": source.url, "sha256": sha256_file(path)}


def main(argv: Sequence[str] | None = None) -> int:
    """Settings: a command-line value, else the stage's ``sugarcrepe.figure5`` parameters, else this module's
    constants; the profile, the models and the mini world's seed and image size: the stage's parameters."""
    parser = stage_parser(__spec__.name, __doc__)
    parser.add_argument("--set-dir", type=Path, default=None,
                        help="mini profile: the classification set's folder, reused when built with the same config, "
                             "else built there (default: <build>/mini/classification)")
    parser.add_argument("--classification-images", type=int, default=None,
                        help=f"mini profile: images of the classification set (default {CLASSIFICATION_IMAGES})")
    parser.add_argument("--n-resamples", type=int, default=None, help=f"bootstrap resamples (default {N_RESAMPLES})")
    parser.add_argument("--seed", type=int, default=None, help=f"the bootstrap's seed (default {SEED})")
    args = parser.parse_args(argv)
    params = own_params()
    profile = params["profile"]
    if profile == "full" and (args.set_dir is not None or args.classification_images is not None):
        parser.error("--set-dir and --classification-images apply to the mini profile only")
    settings = params["sugarcrepe"].get("figure5", {})

    def setting(given: int | None, key: str, default: int) -> int:
        return given if given is not None else int(settings.get(key, default))

    n_resamples, seed = setting(args.n_resamples, "n_resamples", N_RESAMPLES), setting(args.seed, "seed", SEED)
    full_models = params["sugarcrepe"]["models"]["full"]
    out_dir = RESULTS / "sugarcrepe" / profile
    if profile == "mini":
        device = best_device()
        if device == "cpu":  # the same classification scores on any x86-64 CPU (common.pipeline.reproducible)
            reproducible.pin()
        world = params["mini"]["world"]
        config = Figure5Config(setting(args.classification_images, "classification_images", CLASSIFICATION_IMAGES),
                               world["image_size"], world["seed"], n_resamples, CONFIDENCE, seed)
        written = run_mini(params["sugarcrepe"]["models"]["mini"], config, engine_config(params),
                           args.set_dir or build_root() / "mini" / "classification", out_dir, device=device,
                           published=published_correlations(full_models))
    else:
        imagenet_csv, imagenet_source = imagenet_results()
        config = Figure5Config(n_resamples=n_resamples, bootstrap_seed=seed)
        written = run_full(full_models, config, out_dir, imagenet_csv, imagenet_source,
                           published=published_correlations(full_models, lambda key: imagenet_csv))
    return print_written(written)


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
