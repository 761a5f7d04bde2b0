"""Blind attacks on real benchmark text, offline: SugarCrepe's Table 8 / Fig. 2, Algorithm 1 and Table 4, analogs.

The paper's blind models (Vera, a plausibility model; a CoLA grammar classifier) are not available offline, so two
scorers are fitted here (``ngram-lm``, ``text-classifier``), both cross-fitted by image (``common.blind.crossfit``: no
text is scored by a model that saw its image's captions), on real text through the checksum-verifying downloader:
SugarCrepe refined (``data/``) and unrefined (``data_unrefined/``), VL-CheckList REPLACE as the hard-positives release
ships it, NegCLIP's validation swaps, ARO's Order perturbations of the same captions (ARO's ``real-text`` stage, seed
0) and ARO+CREPE regenerated on SugarCrepe's own positives with CREPE-style rules (``common.text.crepe_style``; CREPE's
generator is not public). The scorers, the sets and the outputs: the README's "Blind attacks on real benchmark text".
"""
from __future__ import annotations

import csv
from collections import defaultdict
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import Callable, Hashable, Sequence

import numpy as np

from common.benchmarks.caption_negatives import CATEGORIES, COLUMNS, read_category
from common.blind.classifier import PairwiseTextClassifier
from common.blind.crossfit import PairScores, TextPair, coco_group, crossfit
from common.blind.ngram import NgramFluency
from common.blind.refine import DEFAULT_AXIS_BINS, refine
from common.evaluation.stats import bootstrap_mean_ci
from common.files.io import output_group, sha256_file, write_csv_atomic, write_json_atomic
from common.files.jsonl import read_json
from common.files.tasks import DatasetError
from common.paths import RESULTS
from common.pipeline.cli import stage_parser
from common.pipeline.inputs import full_inputs
from common.pipeline.params import add_stage_option, own_params
from common.registry.fetch import quiet_fetch
from common.reporting.figures import pyplot, save_figure
from common.reporting.published import load_cells
from common.text.crepe_style import CREPE_KINDS, crepe_negatives, describe as crepe_describe
from common.text.released_text import read_negclip_tsv
from papers.sugarcrepe.table4 import FIELDS as TABLE4_COLUMNS, by_caption, paired_table4

DATA_FILES = ("papers/sugarcrepe/sources.toml", "results/published/sugarcrepe.csv")
"""Read at run time: this paper's registry entries and published numbers (VL-CheckList's and NegCLIP's are shared)."""
OUT_DIR = RESULTS / "sugarcrepe" / "real_text"
ORDER_CSV = RESULTS / "aro" / "real_text" / "order_perturbed.csv"
ORDER_COLUMNS = ("shuffle_nouns_and_adj", "shuffle_allbut_nouns_and_adj", "shuffle_within_trigrams",
                 "shuffle_trigrams")
VL_CHECKLIST = {"attribute": "hard_positives/data/vl_checklist_attributes.json",
                "relation": "hard_positives/data/vl_checklist_relations.json"}
NEGCLIP_KEY = "aro/negclip/valid_neg_clip.tsv"
ARO_CREPE = "aro-crepe"
RELEASED = ("grammar", "vera")
"""The paper's own scorers (full profile, ``--scorers released``), beside those fitted here (any profile: ``ngram-lm``,
``text-classifier``). In each set the two are Algorithm 1's M1 and M2, and the first (a fluency score in (0, 1))
fills Table 4."""
HIST_EDGES = np.linspace(-1.0, 1.0, 41)

PUBLISHED_COLUMNS = {
    ("vl-checklist", "attribute"): ("Table 8", "VL-CheckList | Attribute"),
    ("vl-checklist", "relation"): ("Table 8", "VL-CheckList | Relation"),
    ("aro-order", "5-way"): ("Table 8", "ARO | COCO-Order"),
    **{("sugarcrepe", c): ("Table 6", column) for c, column in COLUMNS.items()},
}
"""Where the paper printed Vera's and the grammar model's accuracy on the same benchmark column."""


@dataclass(frozen=True)
class Config:
    folds: int = 5
    seed: int = 0
    refine_bins: int = 50
    bootstrap: int = 1000


def sugarcrepe_pairs(benchmark: str, folder: str, fetch: Callable[[str], Path]) -> list[TextPair]:
    pairs = []
    for category in CATEGORIES:
        path = fetch(f"sugarcrepe/{folder}/{category}.json")
        for key, record in read_category(path).items():
            try:
                group = coco_group(record["filename"])
            except ValueError as exc:
                raise DatasetError(f"{path}: example {key!r}: {exc}") from exc
            pairs.append(TextPair(benchmark, category, group, record["caption"], record["negative_caption"], key))
    return pairs


def vl_checklist_pairs(fetch: Callable[[str], Path]) -> list[TextPair]:
    pairs = []
    for category, key in VL_CHECKLIST.items():
        path = fetch(key)
        rows = read_json(path, list, f"fetch it (`python -m common fetch {key}`)")
        for number, row in enumerate(rows):
            fields = ("image_id", "true_caption", "false_caption")
            if not isinstance(row, dict) or not all(isinstance(row.get(f), str) and row[f] for f in fields):
                raise DatasetError(f"{path}: record {number}: needs non-empty strings {list(fields)}")
            pairs.append(TextPair("vl-checklist", category, f"vg:{row['image_id']}", row["true_caption"],
                                  row["false_caption"], str(number)))
    return pairs


def negclip_and_order_pairs(fetch: Callable[[str], Path], order_csv: Path) -> list[TextPair]:
    """NegCLIP's released swaps of its validation captions, and ARO's Order perturbations of the same captions."""
    tsv = fetch(NEGCLIP_KEY)
    rows = read_negclip_tsv(tsv)
    group_of = {row.index: coco_group(row.filepath) for row in rows}
    pairs = [TextPair("negclip-swap", "swap", coco_group(row.filepath), row.title, negative, f"{row.index}/{k}")
             for row in rows for k, negative in enumerate(row.negatives)]
    try:
        fh = open(order_csv, newline="", encoding="utf-8")
    except OSError as exc:
        raise DatasetError(f"{order_csv}: ARO's Order perturbations are missing ({exc}); they come from "
                           "`dvc repro papers/aro` (its real-text stage)") from exc
    with fh:
        for number, row in enumerate(csv.DictReader(fh), start=2):
            if row.get("seed") != "0":
                continue
            try:
                group = group_of[int(row["index"])]
            except (KeyError, ValueError) as exc:
                raise DatasetError(f"{order_csv}: line {number}: index {row.get('index')!r} is not a row of "
                                   f"{tsv.name}") from exc
            pairs += [TextPair("aro-order", column, group, row["original_normalised"], row[column], row["index"])
                      for column in ORDER_COLUMNS]
    return pairs


def aro_crepe_pairs(sugarcrepe: Sequence[TextPair], seed: int) -> list[TextPair]:
    """ARO+CREPE on the released positives: each distinct (image, caption) once, one negative per kind where the
    kind applies (``crepe_negatives`` gives None where it does not: no two nouns to swap, ...)."""
    positives = list(dict.fromkeys((p.group, p.positive) for p in sugarcrepe))
    negatives = crepe_negatives([caption for _, caption in positives], CREPE_KINDS, seed=seed)
    return [TextPair(ARO_CREPE, kind, group, caption, negative, f"{k}/{kind}")
            for kind in CREPE_KINDS for k, ((group, caption), negative) in enumerate(zip(positives, negatives[kind]))
            if negative is not None]


def load_pairs(fetch: Callable[[str], Path], order_csv: Path = ORDER_CSV, seed: int = 0,
               cap: int | None = None) -> list[TextPair]:
    """Every benchmark's pairs; ``cap`` (``params.yaml full_inputs.cap``): the first ``cap`` of each benchmark and
    category, ARO+CREPE's made from the capped SugarCrepe positives."""
    refined = capped(sugarcrepe_pairs("sugarcrepe", "data", fetch), cap)
    return capped(refined + sugarcrepe_pairs("sugarcrepe-unrefined", "data_unrefined", fetch)
                  + vl_checklist_pairs(fetch) + negclip_and_order_pairs(fetch, order_csv)
                  + aro_crepe_pairs(refined, seed), cap)


def capped(pairs: Sequence[TextPair], cap: int | None) -> list[TextPair]:
    """The first ``cap`` pairs of every (benchmark, category), in order; all of them when ``cap`` is None."""
    if cap is None:
        return list(pairs)
    return [pairs[i] for i in sorted(i for ix in indices_by(pairs, "benchmark", "category").values() for i in ix[:cap])]


def fit_lm(seed: int) -> Callable[[Sequence[TextPair]], NgramFluency]:
    """ARO+CREPE's positives are SugarCrepe's: fitted once, with SugarCrepe."""
    return lambda train: NgramFluency(seed=seed).fit(p.positive for p in train if p.benchmark != ARO_CREPE)


def fit_classifier(train: Sequence[TextPair]) -> PairwiseTextClassifier:
    return PairwiseTextClassifier().fit([p.positive for p in train], [p.negative for p in train])


def indices_by(pairs: Sequence[TextPair], *fields: str) -> dict[Hashable, np.ndarray]:
    """The indices of the pairs per value of ``fields`` (one field: its value; several: their tuple), in order of
    first appearance."""
    key, index = attrgetter(*fields), defaultdict(list)
    for i, p in enumerate(pairs):
        index[key(p)].append(i)
    return {b: np.asarray(ix) for b, ix in index.items()}


def text_scores(name: str, score: Callable[[list[str]], Sequence[float]], pairs: Sequence[TextPair]) -> PairScores:
    """A scorer of single texts on every distinct caption once (nothing to cross-fit)."""
    texts = sorted({p.positive for p in pairs} | {p.negative for p in pairs})
    value = dict(zip(texts, score(texts)))
    return PairScores(name, np.array([value[p.positive] for p in pairs]), np.array([value[p.negative] for p in pairs]))


def classifier_scores(pairs: Sequence[TextPair], config: Config) -> PairScores:
    """The classifier cross-fitted within each benchmark (its own artifacts)."""
    positive, negative = np.full(len(pairs), np.nan), np.full(len(pairs), np.nan)
    for ix in indices_by(pairs, "benchmark").values():
        part = crossfit([pairs[i] for i in ix], fit_classifier, config.folds, config.seed)
        positive[ix], negative[ix] = part.positive, part.negative
    return PairScores("text-classifier", positive, negative)


def score_released(pairs: Sequence[TextPair], device: str) -> dict[str, PairScores]:
    """The paper's grammar model and Vera on every caption."""
    # deferred: loads torch only when called
    from common.blind.pretrained import load_text_scorer

    return {name: text_scores(name, load_text_scorer(name, device=device).scores, pairs) for name in RELEASED}


def _accuracy_row(benchmark: str, category: str, scorer: str, correct: np.ndarray, config: Config,
                  published: dict) -> dict:
    ci = bootstrap_mean_ci(correct.astype(np.float64), n_resamples=config.bootstrap, seed=config.seed)
    where = PUBLISHED_COLUMNS.get((benchmark, category))
    return {"benchmark": benchmark, "category": category, "scorer": scorer, "n": int(correct.size),
            "accuracy": round(100 * ci.estimate, 2), "ci_low": round(100 * ci.low, 2),
            "ci_high": round(100 * ci.high, 2),
            "paper_vera": published.get((where, "Vera"), "") if where else "",
            "paper_grammar": published.get((where, "Grammar"), "") if where else ""}


def accuracy_table(pairs: Sequence[TextPair], scores: dict[str, PairScores], config: Config,
                   published: dict) -> list[dict]:
    rows = [_accuracy_row(benchmark, category, scorer, scores[scorer].correct[ix], config, published)
            for (benchmark, category), ix in indices_by(pairs, "benchmark", "category").items() for scorer in scores]
    for benchmark, ix in indices_by(pairs, "benchmark").items():
        for scorer in scores:
            correct = scores[scorer].correct[ix]
            if benchmark == "aro-order":  # COCO-Order's task: the original above all 4 perturbations
                rows.append(_accuracy_row(benchmark, "5-way", scorer, correct.reshape(-1, 4).all(axis=1), config,
                                          published))
            rows.append(_accuracy_row(benchmark, "all (micro)", scorer, correct, config, published))
    return rows


def percent(correct: np.ndarray) -> float | str:
    """Accuracy in percent, or "" where there is nothing to count (a category refinement emptied)."""
    return round(100 * float(correct.mean()), 2) if correct.size else ""


def refinement_table(pairs: Sequence[TextPair], scores: dict[str, PairScores], config: Config
                     ) -> tuple[list[dict], np.ndarray]:
    """Algorithm 1 on the unrefined release, per category, with the set's first two scorers as M1 and M2; then a
    text classifier trained (cross-fitted) on the kept examples only, which the refinement never saw."""
    cells = indices_by(pairs, "benchmark", "category")
    identity = attrgetter("group", "positive", "negative")
    m1, m2 = list(scores.values())[:2]
    kept_mask = np.zeros(len(pairs), dtype=bool)
    rows = []
    for category in CATEGORIES:
        ix = cells[("sugarcrepe-unrefined", category)]
        kept = ix[refine(m1.gap[ix], m2.gap[ix], bins=config.refine_bins, seed=config.seed)]
        kept_mask[kept] = True
        released = {identity(pairs[i]) for i in cells.get(("sugarcrepe", category), ())}
        rows.append({
            "category": category, "n_unrefined": int(ix.size), "n_kept": int(kept.size),
            "n_released_refined": len(released),
            "kept_also_in_released": len({identity(pairs[i]) for i in kept} & released),
            "m1": m1.scorer, "m1_before": percent(m1.correct[ix]), "m1_after": percent(m1.correct[kept]),
            "m2": m2.scorer, "m2_before": percent(m2.correct[ix]), "m2_after": percent(m2.correct[kept]),
        })
    kept_pairs = [pairs[i] for i in np.flatnonzero(kept_mask)]
    fresh = crossfit(kept_pairs, fit_classifier, config.folds, config.seed).correct if kept_pairs else np.zeros(0, bool)
    categories = np.asarray([p.category for p in kept_pairs])
    for row in rows:
        row["retrained_classifier_after"] = percent(fresh[categories == row["category"]])
    return rows, kept_mask


def table4(pairs: Sequence[TextPair], scores: dict[str, PairScores]) -> list[dict]:
    """Table 4 for each fluency / plausibility scorer of the set (the classifier is a pairwise ranker, not a score
    of one text): ARO+CREPE's negatives against SugarCrepe's of the same positive."""
    return [row for name, pair_scores in scores.items() if name != "text-classifier"
            for row in paired_table4(pairs, pair_scores, ARO_CREPE, "sugarcrepe", by_caption)]


def gap_histograms(pairs: Sequence[TextPair], scores: dict[str, PairScores], kept_mask: np.ndarray) -> list[dict]:
    sets = {b: np.asarray([i for i, p in enumerate(pairs) if p.benchmark == b])
            for b in ("vl-checklist", "negclip-swap", "aro-order", ARO_CREPE, "sugarcrepe-unrefined", "sugarcrepe")}
    sets["refined-here"] = np.flatnonzero(kept_mask)
    rows = []
    for scorer in scores:
        for name, ix in sets.items():
            counts, _ = np.histogram(np.clip(scores[scorer].gap[ix], -1, 1), bins=HIST_EDGES)
            for low, high, count in zip(HIST_EDGES[:-1], HIST_EDGES[1:], counts):
                rows.append({"scorer": scorer, "set": name, "gap_low": round(float(low), 2),
                             "gap_high": round(float(high), 2), "count": int(count)})
    return rows


def draw_gaps(rows: Sequence[dict], out_png: Path) -> None:
    plt = pyplot()
    sets = list(dict.fromkeys(r["set"] for r in rows))
    scorers = list(dict.fromkeys(r["scorer"] for r in rows))
    fig, axes = plt.subplots(len(scorers), len(sets), figsize=(2.6 * len(sets), 4.6), sharex=True, squeeze=False)
    for r_i, scorer in enumerate(scorers):
        for c_i, name in enumerate(sets):
            ax = axes[r_i][c_i]
            cells = [r for r in rows if r["scorer"] == scorer and r["set"] == name]
            ax.bar([r["gap_low"] for r in cells], [r["count"] for r in cells], width=0.05, align="edge",
                   color="tab:blue" if r_i == 0 else "tab:orange")
            ax.axvline(0, color="black", lw=0.6)
            if r_i == 0:
                ax.set_title(name, fontsize=8)
            if c_i == 0:
                ax.set_ylabel(f"{scorer}\ncount", fontsize=8)
            ax.tick_params(labelsize=6)
    fig.supxlabel("score gap: score(positive) - score(negative)", fontsize=8)
    fig.tight_layout()
    save_figure(fig, out_png)


def accuracy_bars(rows: Sequence[dict], width: float, figsize: tuple[float, float] | None = None):
    """Fig. 2's bars, for this stage's figure and ``mini_blind``'s: each scorer's blind accuracy per (benchmark,
    category) with its interval; returns (figure, axes, cells) for the caller to label."""
    shown = [r for r in rows if r["category"] != "all (micro)"]
    cells = list(dict.fromkeys((r["benchmark"], r["category"]) for r in shown))
    scorers = list(dict.fromkeys(r["scorer"] for r in shown))
    fig, ax = pyplot().subplots(figsize=figsize or (max(8, 0.42 * len(cells)), 4))
    for k, scorer in enumerate(scorers):
        by_cell = {(r["benchmark"], r["category"]): r for r in shown if r["scorer"] == scorer}
        acc = np.array([by_cell[c]["accuracy"] for c in cells])
        err = np.array([[by_cell[c]["accuracy"] - by_cell[c]["ci_low"], by_cell[c]["ci_high"] - by_cell[c]["accuracy"]]
                        for c in cells]).T
        ax.bar(np.arange(len(cells)) + (k - (len(scorers) - 1) / 2) * width, acc, width=width, yerr=err, capsize=1.5,
               label=scorer)
    ax.set_ylabel("blind accuracy (%), 95% bootstrap CI")
    return fig, ax, cells


def draw_accuracy(rows: Sequence[dict], out_png: Path) -> None:
    fig, ax, cells = accuracy_bars(rows, 0.38)
    ax.axhline(50, color="black", lw=0.7, ls="--")
    ax.set_xticks(np.arange(len(cells)), [f"{b}\n{c}" for b, c in cells], rotation=90, fontsize=6)
    ax.set_ylim(0, 100)
    ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, out_png)


def published_blind() -> dict:
    return {((c.table, c.column), c.row.split("| ", 1)[1]): c.value for c in load_cells("sugarcrepe")
            if c.table in ("Table 6", "Table 8") and c.row.startswith("Text-only model |") and c.value is not None}


def run(config: Config, out_dir: Path = OUT_DIR, fetch: Callable[[str], Path] | None = None,
        order_csv: Path = ORDER_CSV, scorers: str = "offline", device: str = "cpu", cap: int | None = None) -> dict:
    """``scorers="offline"``: the n-gram LM and the classifier fitted here; ``"released"``: the paper's grammar model
    and Vera (full profile: downloads about 45 GB, wants a GPU). ``cap``: ``full_inputs.cap`` (``load_pairs``)."""
    pairs = load_pairs(fetch or quiet_fetch, order_csv, config.seed, cap)
    scores = ({"ngram-lm": crossfit(pairs, fit_lm(config.seed), config.folds, config.seed),  # over every pair at once
               "text-classifier": classifier_scores(pairs, config)}
              if scorers == "offline" else score_released(pairs, device))
    published = published_blind()
    accuracy = accuracy_table(pairs, scores, config, published)
    refinement, kept_mask = refinement_table(pairs, scores, config)
    fluency = table4(pairs, scores)
    histograms = gap_histograms(pairs, scores, kept_mask)
    summary = summary_metrics(accuracy, refinement, list(scores))
    context = {"scorer_set": scorers, "folds": config.folds, "seed": config.seed, "refine_bins": config.refine_bins,
               "refine_axis_bins": DEFAULT_AXIS_BINS,
               "bootstrap_resamples": config.bootstrap, "n_pairs": len(pairs),
               **({"cap_per_group": cap} if cap is not None else {}),
               "pairs_per_benchmark": {b: int(ix.size) for b, ix in indices_by(pairs, "benchmark").items()},
               "aro_crepe": {**crepe_describe(), "seed": config.seed,
                             "rules": "CREPE-style, reconstructed from the paper's Table 3 (CREPE's generator is not "
                                      "public)"},
               "order_perturbations": {"file": "results/aro/real_text/order_perturbed.csv", "seed": 0,
                                       "sha256": sha256_file(order_csv)},
               "scorers": {"grammar": "textattack/distilbert-base-uncased-CoLA, P(LABEL_1) (the paper's)",
                           "vera": "liujch1998/vera, calibrated plausibility (the paper's)"} if scorers == "released" else {
                           "ngram-lm": "word trigram, Witten-Bell (nltk.lm), fitted on the training folds' positives "
                                       "of every benchmark; score = logistic of the standardised mean log2-prob/token",
                           "text-classifier": "pairwise logistic regression on TF-IDF 1-2-grams of words and of "
                                              "whitespace tokens as written (scikit-learn), fitted per benchmark on "
                                              "its training folds"},
               "cross_fitting": "groups = COCO image id (2014 and 2017 names alike) or VG image id; a text is scored by "
                                "a model fitted on the other folds"}
    with output_group(out_dir) as staging:
        write_csv_atomic(staging / "blind_accuracy.csv", accuracy, list(accuracy[0]))
        write_csv_atomic(staging / "refinement.csv", refinement, list(refinement[0]))
        write_csv_atomic(staging / "table4.csv", fluency, TABLE4_COLUMNS)
        write_csv_atomic(staging / "gap_histograms.csv", histograms, list(histograms[0]))
        write_json_atomic(staging / "summary.json", summary)
        write_json_atomic(staging / "context.json", context)
        draw_gaps(histograms, staging / "blind_gaps.png")
        draw_accuracy(accuracy, staging / "blind_accuracy.png")
    return {"accuracy": accuracy, "refinement": refinement, "table4": fluency, "summary": summary}


def summary_metrics(accuracy: Sequence[dict], refinement: Sequence[dict], scorers: Sequence[str]) -> dict:
    """At most 12 numbers for `dvc metrics show`: micro accuracies per scorer and benchmark, what Algorithm 1 kept."""
    cell = {(r["benchmark"], r["category"], r["scorer"]): r["accuracy"] for r in accuracy}
    kept = sum(r["n_kept"] for r in refinement)
    n = sum(r["n_unrefined"] for r in refinement)
    short = {"ngram-lm": "lm", "text-classifier": "classifier", "grammar": "grammar", "vera": "vera"}
    metrics = {}
    for benchmark, category in (("vl-checklist", "all (micro)"), ("negclip-swap", "all (micro)"),
                                ("aro-order", "5-way"), ("sugarcrepe", "all (micro)")):
        for scorer in scorers[:2]:
            metrics[f"{benchmark.replace('-', '_')}_{short.get(scorer, scorer)}"] = cell[(benchmark, category, scorer)]
    metrics["refined_here_kept_share"] = round(100 * kept / max(n, 1), 2)
    for name in ("m1", "m2", "retrained_classifier"):  # each mean weighted by the examples kept
        metrics[f"refined_here_{name}"] = round(sum(r[f"{name}_after"] * r["n_kept"] for r in refinement
                                                    if r["n_kept"]) / max(kept, 1), 2)
    return metrics


def config_from_params(params: dict) -> Config:
    blind = params["sugarcrepe"]["blind"]
    return Config(folds=blind["folds"], seed=blind["seed"], refine_bins=blind["refine_bins"],
                  bootstrap=blind["bootstrap_resamples"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = stage_parser(__spec__.name, __doc__)
    parser.add_argument("--out", type=Path, default=OUT_DIR)
    parser.add_argument("--scorers", choices=("offline", "released"), default="offline",
                        help="offline: fitted here (default); released: the paper's Vera and grammar model (full)")
    parser.add_argument("--device", default="cpu")
    add_stage_option(parser)
    args = parser.parse_args(argv)

    values = own_params(args.stage)
    result = run(config_from_params(values), args.out, scorers=args.scorers, device=args.device,
                 cap=full_inputs(values).cap)
    for row in result["accuracy"]:
        print(f"{row['benchmark']:22s} {row['category']:30s} {row['scorer']:16s} {row['accuracy']:6.2f} "
              f"[{row['ci_low']:.2f}, {row['ci_high']:.2f}] n={row['n']}")
    for row in (*result["refinement"], *result["table4"]):
        print(row)
    return 0


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
