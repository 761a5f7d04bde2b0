"""Blind attacks in the mini world: SugarCrepe's Table 8 / Fig. 2, Table 4 and Algorithm 1 on rendered benchmarks.

Two mini benchmarks share their positives: ``mini-aro-crepe`` (the world's rule-based negatives, ``mini_templates``)
and ``mini-sugarcrepe`` (its fluent, prior-drawn negatives, ``sets_mini``); the claim to check is that a model which
never sees the image solves the first far above chance and the second not. The language model is fitted on the
world's *training* captions (their scenes come from another random stream, so nothing needs cross-fitting); the
classifier is cross-fitted as in ``blind_real``, whose helpers are reused. Scorers and outputs: the README's "Blind
attacks in the mini world".
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from common.benchmarks.caption_negatives import PreparedSet, read_category
from common.blind.crossfit import PairScores, TextPair, crossfit, fold_of
from common.blind.ngram import NgramFluency
from common.blind.refine import DEFAULT_AXIS_BINS, refine
from common.files.io import output_group, write_csv_atomic, write_json_atomic
from common.files.jsonl import read_json
from common.files.tasks import DatasetError
from common.paths import RESULTS, build_root
from common.pipeline.cli import stage_parser
from common.pipeline.params import add_stage_option, own_params
from common.reporting.figures import save_figure
from papers.sugarcrepe import blind_real
from papers.sugarcrepe.aro_crepe import load_template_set
from papers.sugarcrepe.table4 import FIELDS as TABLE4_COLUMNS, by_image, paired_table4

OUT_DIR = RESULTS / "sugarcrepe" / "mini"
TEMPLATES, SUGARCREPE = "mini-aro-crepe", "mini-sugarcrepe"
SCORERS = ("ngram-lm", "text-classifier")
ACCURACY_FIELDS = ["benchmark", "category", "scorer", "n", "accuracy", "ci_low", "ci_high"]
REFINEMENT_FIELDS = ["benchmark", "category", "n", "n_kept", "kept_share", "lm_before", "lm_after",
                     "classifier_before", "classifier_after", "retrained_classifier_after"]


@dataclass(frozen=True)
class Config(blind_real.Config):
    """The real-text stage's settings (folds, seed, refinement bins, bootstrap), plus the language model's corpus."""

    lm_train_images: int = 8000
    """Training images whose captions fit the language model (3 each): 8000 fit in about 5 s on one core and
    give it every word and most trigrams of the world's grammar; all 32000 take four times as long."""


def read_pairs(benchmark: str, files: dict[str, Path]) -> list[TextPair]:
    """Every example of SugarCrepe-format category files as a text pair; the group is the image (cross-fitting)."""
    return [TextPair(benchmark, category, record["filename"], record["caption"], record["negative_caption"], key)
            for category, path in files.items() for key, record in read_category(path).items()]


def load_pairs(mini_dir: Path, templates_dir: Path) -> list[TextPair]:
    pairs = (read_pairs(TEMPLATES, load_template_set(templates_dir).files)
             + read_pairs(SUGARCREPE, PreparedSet.load(mini_dir / "manifest.json").files()))
    positive_of: dict[str, str] = {}
    for p in pairs:  # the benchmarks are comparable only with the same positives
        if positive_of.setdefault(p.group, p.positive) != p.positive:
            raise DatasetError(f"{templates_dir}: image {p.group!r} has positive {p.positive!r} in {p.benchmark} "
                               f"but {positive_of[p.group]!r} elsewhere: rebuild the template set from this mini set")
    return pairs


def read_train_captions(path: Path, n_images: int) -> list[str]:
    """The captions of the first ``n_images`` training images (``captions.json``: one list per image)."""
    if not path.is_file():
        raise DatasetError(f"{path}: the mini world's training captions are missing; run `dvc repro mini/world`")
    per_image = read_json(path, list)
    if len(per_image) < n_images:
        raise DatasetError(f"{path}: expected a list of at least {n_images} caption lists (lm_train_images), got "
                           f"{len(per_image)}")
    captions = []
    for i, entry in enumerate(per_image[:n_images]):
        if not isinstance(entry, list) or not all(isinstance(c, str) and c for c in entry):
            raise DatasetError(f"{path}: image {i}: expected a list of non-empty captions, got {entry!r}")
        captions += entry
    return captions


def refinement_table(pairs: Sequence[TextPair], scores: dict[str, PairScores], config: Config) -> list[dict]:
    """Algorithm 1 per (benchmark, category), the language model as M1 and the classifier as M2; then a classifier
    cross-fitted on each benchmark's kept examples only (refinement balanced the old one's gaps, not a new one's)."""
    lm, classifier = scores["ngram-lm"], scores["text-classifier"]
    cells = blind_real.indices_by(pairs, "benchmark", "category")
    kept_mask = np.zeros(len(pairs), dtype=bool)
    rows = []
    for (benchmark, category), ix in cells.items():
        kept = ix[refine(lm.gap[ix], classifier.gap[ix], bins=config.refine_bins, seed=config.seed)]
        kept_mask[kept] = True
        rows.append({"benchmark": benchmark, "category": category, "n": int(ix.size), "n_kept": int(kept.size),
                     "kept_share": round(100 * kept.size / ix.size, 2),
                     **{f"{name}_{when}": blind_real.percent(s.correct[at])
                        for name, s in (("lm", lm), ("classifier", classifier))
                        for when, at in (("before", ix), ("after", kept))}})
    retrained = np.zeros(len(pairs), dtype=bool)
    fitted = np.zeros(len(pairs), dtype=bool)
    for ix in blind_real.indices_by(pairs, "benchmark").values():
        kept = ix[kept_mask[ix]]
        if len({fold_of(pairs[i].group, config.folds, config.seed) for i in kept}) >= 2:  # else no fold to fit on
            retrained[kept] = crossfit([pairs[i] for i in kept], blind_real.fit_classifier, config.folds,
                                       config.seed).correct
            fitted[kept] = True
    for row in rows:
        kept = [i for i in cells[(row["benchmark"], row["category"])] if kept_mask[i] and fitted[i]]
        row["retrained_classifier_after"] = blind_real.percent(retrained[kept])
    return rows


def draw_accuracy(rows: Sequence[dict], out_png: Path) -> None:
    """Fig. 2's analog: each scorer's blind accuracy per category, the two benchmarks side by side, chance dashed.
    (``blind_real.draw_accuracy`` cuts off two-line tick labels at this size; this one lays the figure out tight.)"""
    fig, ax, cells = blind_real.accuracy_bars(rows, 0.8 / len(SCORERS), (8, 4))
    boundary = sum(b == TEMPLATES for b, _ in cells) - 0.5
    ax.axvline(boundary, color="grey", lw=0.8)
    ax.text(boundary - 0.1, 105, TEMPLATES, ha="right", va="center", fontsize=8)
    ax.text(boundary + 0.1, 105, SUGARCREPE, ha="left", va="center", fontsize=8)
    ax.axhline(50, color="black", lw=0.7, ls="--")
    ax.set_xticks(np.arange(len(cells)), [c for _, c in cells], rotation=45, ha="right", fontsize=7)
    ax.set_ylim(0, 110)
    ax.set_yticks(range(0, 101, 20))
    ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    save_figure(fig, out_png)


def summary_metrics(accuracy: Sequence[dict], fluency: Sequence[dict], refinement: Sequence[dict]) -> dict:
    """Eight numbers for `dvc metrics show`: micro accuracies, Table 4's three shares, Algorithm 1's kept share."""
    cell = {(r["benchmark"], r["category"], r["scorer"]): r["accuracy"] for r in accuracy}
    metrics = {f"{b.removeprefix('mini-').replace('-', '_')}_{s.split('-')[-1]}": cell[(b, "all (micro)", s)]
               for b in (TEMPLATES, SUGARCREPE) for s in SCORERS}
    for row in fluency:
        metrics[f"table4_{row['aro_crepe_kind']}_sugarcrepe_more_fluent"] = row["sugarcrepe_more_fluent_share"]
    sugar = [r for r in refinement if r["benchmark"] == SUGARCREPE]
    kept, total = sum(r["n_kept"] for r in sugar), sum(r["n"] for r in sugar)
    metrics["sugarcrepe_refined_kept_share"] = round(100 * kept / total, 2)
    return metrics


def run(config: Config, out_dir: Path = OUT_DIR, mini_dir: Path | None = None, templates_dir: Path | None = None,
        train_captions: Path | None = None) -> dict:
    mini = build_root() / "mini"
    mini_dir = mini_dir or mini / "sugarcrepe"
    templates_dir = templates_dir or mini / "sugarcrepe_templates"
    train_captions = train_captions or mini / "world" / "train" / "captions.json"
    pairs = load_pairs(mini_dir, templates_dir)
    lm = NgramFluency(seed=config.seed).fit(read_train_captions(train_captions, config.lm_train_images))
    scores = {"ngram-lm": blind_real.text_scores("ngram-lm", lm.scores, pairs),  # on every caption
              "text-classifier": blind_real.classifier_scores(pairs, config)}
    accuracy = blind_real.accuracy_table(pairs, scores, config, published={})
    # Table 4 with the language model, template negatives against mini SugarCrepe's of the same image's positive: the
    # positives are shared, so the paper's paired ratio needs no stand-in
    fluency = paired_table4(pairs, scores["ngram-lm"], TEMPLATES, SUGARCREPE, by_image)
    refinement = refinement_table(pairs, scores, config)
    metrics = summary_metrics(accuracy, fluency, refinement)
    context = {
        "config": asdict(config),
        "pairs_per_benchmark": {b: int(ix.size) for b, ix in blind_real.indices_by(pairs, "benchmark").items()},
        "n_images": len({p.group for p in pairs}),
        "scorers": {"ngram-lm": f"word trigram, Witten-Bell (nltk.lm), fitted on the captions of the first "
                                f"{config.lm_train_images} mini-world training images; score = logistic of the "
                                "standardised mean log2-prob/token",
                    "text-classifier": "pairwise logistic regression on TF-IDF word 1-2-grams (scikit-learn), "
                                       f"cross-fitted per benchmark, {config.folds} folds grouped by image"},
        "table4": "ngram-lm in place of the paper's grammar model; no commonsense (Vera) column",
        "refinement": f"Algorithm 1 (common.blind.refine), M1 = ngram-lm, M2 = text-classifier, {config.refine_bins} "
                      f"bins per half-axis on the plane, {DEFAULT_AXIS_BINS} on a zero-gap axis (the authors'), "
                      "per (benchmark, category)",
        "sets": {"templates": load_template_set(templates_dir).info,
                 "sugarcrepe": {k: v for k, v in PreparedSet.load(mini_dir / "manifest.json").info.items()
                                if k in ("world_version", "config", "counts", "n_images")}},
    }
    with output_group(out_dir) as staging:
        write_csv_atomic(staging / "blind_accuracy.csv", accuracy, ACCURACY_FIELDS)
        write_csv_atomic(staging / "table4.csv", fluency, TABLE4_COLUMNS)
        write_csv_atomic(staging / "blind_refinement.csv", refinement, REFINEMENT_FIELDS)
        write_json_atomic(staging / "blind_metrics.json", metrics)
        write_json_atomic(staging / "blind_context.json", context)
        draw_accuracy(accuracy, staging / "blind_accuracy.png")
    return {"accuracy": accuracy, "table4": fluency, "refinement": refinement, "metrics": metrics}


def config_from_params(params: dict) -> Config:
    return Config(**asdict(blind_real.config_from_params(params)),
                  lm_train_images=params["sugarcrepe"]["mini_blind"]["lm_train_images"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = stage_parser(__spec__.name, __doc__)
    parser.add_argument("--out", type=Path, default=OUT_DIR)
    add_stage_option(parser)
    args = parser.parse_args(argv)
    result = run(config_from_params(own_params(args.stage)), args.out)
    for row in result["accuracy"]:
        print(f"{row['benchmark']:16s} {row['category']:12s} {row['scorer']:16s} {row['accuracy']:6.2f} "
              f"[{row['ci_low']:.2f}, {row['ci_high']:.2f}] n={row['n']}")
    for row in result["table4"]:
        print({k: row[k] for k in ("type", "mean_aro_crepe", "mean_sugarcrepe", "n_pairs",
                                   "sugarcrepe_more_fluent_share")})
    for row in result["refinement"]:
        print(row)
    print(json.dumps(result["metrics"], indent=2))
    return 0


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
