"""The released REPLACE text, offline: WordNet rules against the authors' hard positives, and a blind look at it.

Two analyses of the released files, per type and over both (stage ``real-text``; results and outputs: the README's
"The released REPLACE text, offline" and "Outputs and notebooks"). a) Rule vs released: ``rules.replace_positives``'
c_p against the released one, row by row and per rule of the authors (``released.replacement_rules``), each row it
does not reproduce put in the first of ``FAILURE_CATEGORIES`` that applies. b) Blind (text only), cross-fitted by image
(``common.blind.crossfit``): a word trigram LM fitted on c and c_p, and a pairwise TF-IDF classifier trained to rank c
above c_n. A benchmark whose hard positives are less fluent than their originals rewards a model for fluency, not for
composition: a blind model then ranks c_p below c_n more often than c.
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from common.blind.classifier import PairwiseTextClassifier
from common.blind.crossfit import TextPair, crossfit
from common.blind.ngram import NgramFluency
from common.evaluation.stats import bootstrap_mean_ci
from common.files.io import output_group, sha256_file, write_csv_atomic, write_json_atomic
from common.paths import RESULTS
from common.pipeline.cli import stage_parser
from common.registry.fetch import quiet_fetch
from common.reporting.figures import pyplot, save_figure
from common.text.crepe_style import Parsed, parse_captions
from papers.hard_positives import rules
from papers.hard_positives.released import file_keys, load_aligned, replacement_rules

OUT_DIR = RESULTS / "hard_positives" / "real_text"
ALL = "all"
"""The row over both types."""
SCORERS = ("ngram-lm", "text-classifier")
RANK_METRICS = ("c_above_cn", "cp_above_cn", "c_above_cp", "aug", "brittleness")
"""Percentages of examples: c > c_n, c_p > c_n, c > c_p (strict: a tie counts as not above), both of the first two
(the blind augmented test accuracy), and c > c_n > c_p or c_p > c_n > c (brittleness, §3.1)."""
FLUENCY_METRICS = ("mean_log2prob_c", "mean_log2prob_cp", "mean_log2prob_cn", "log2prob_cp_minus_c")
"""The LM's mean log2-probability per token of each caption, and the paired difference c_p - c (bits per token)."""

CATEGORIES = {
    "exact": "exact match",
    "unexplained": "no authors' rule explains the released edit",
    "no-edit": "c_n equals c (nothing to replace)",
    "several-edits": "c_n edits several places or only inserts words",
    "outside": "authors replaced a word outside c_n's edit",
    "multi-word": "multi-word phrase (the authors' word is a phrase)",
    "no-pos": "preposition or other word WordNet has no part of speech for",
    "phrase-no-head": "c_n's edit is a phrase with no verb or adjective",
    "other-word": "rule replaced another word of c_n's edit",
    "not-in-wordnet": "word not in WordNet for its tag",
    "no-synonym": "WordNet has no synonym for the word",
    "inflection": "inflection (same WordNet lemma, other surface form)",
    "sense": "sense or lemma choice (authors' replacement is another WordNet synonym)",
    "pos": "part of speech (authors' replacement is a WordNet synonym under another part of speech)",
    "not-synonym": "authors' replacement is no WordNet synonym of the word",
    "string-replace": "released c_p also changes other text (string replacement)",
    "other": "other",
}
FAILURE_CATEGORIES = tuple(CATEGORIES.values())
"""Why the rule's c_p is not the released one; a row gets the first category that applies, in this order."""


@dataclass(frozen=True)
class Config:
    folds: int = 5
    seed: int = 0
    n_resamples: int = 2000


@dataclass(frozen=True)
class Example:
    """One released REPLACE example: an image with its caption c, hard negative c_n and the authors' c_p."""

    kind: str
    index: int
    image_id: str
    caption: str
    negative: str
    positive: str


@dataclass(frozen=True)
class Comparison:
    """The rule's c_p for one example, set against the authors' edit."""

    example: Example
    rule: rules.Replacement
    authors_word: str
    """The authors' original word or phrase ("" when none of their rules explains the released c_p)."""
    authors_replacement: str
    category: str

    @property
    def same_word(self) -> bool:
        return bool(self.rule.word) and self.rule.word.lower() == self.authors_word.lower()

    @property
    def same_replacement(self) -> bool:
        return self.same_word and self.rule.replacement.lower() == self.authors_replacement.lower()

    @property
    def exact(self) -> bool:
        return self.rule.positive == self.example.positive


def load_examples(fetch: Callable[[str], Path]) -> tuple[list[Example], dict[str, Counter], dict[str, Path]]:
    """Every example of both types (attributes first), the authors' rules per type, and the files read."""
    examples, authors, files = [], {}, {}
    for kind in ("attributes", "relations"):
        files |= {key: fetch(key) for key in file_keys(kind)}
        pairs = load_aligned(*(files[key] for key in file_keys(kind)))
        authors[kind] = replacement_rules(pairs)
        examples += [Example(kind, i, a["image_id"], a["true_caption"], a["false_caption"], b["true_caption"])
                     for i, (a, b) in enumerate(pairs)]
    return examples, authors, files


def authors_rule(caption: str, positive: str, ordered_rules: Sequence[tuple[str, str]]) -> tuple[str, str] | None:
    """The authors' (word, replacement) that turns ``caption`` into ``positive``: applied as a string replacement
    of every occurrence (their edits replace substrings too: "covered" -> "covecrimson"), of every whole word, or of
    the first occurrence only; the most frequent rule first."""
    for apply in (lambda w, r: caption.replace(w, r),
                  lambda w, r: re.sub(rf"\b{re.escape(w)}\b", r, caption),
                  lambda w, r: caption.replace(w, r, 1)):
        for word, replacement in ordered_rules:
            if word and apply(word, replacement) == positive:
                return word, replacement
    return None


# a) Rule vs released
def _lemma_or_text(text: str, pos: str) -> str:
    return (rules.lemma_of(text.replace(" ", "_"), pos) or text).replace("_", " ").lower()


def wordnet_standing(word: str, replacement: str, tag: str) -> tuple[str, int | None, int]:
    """Where the authors' ``replacement`` stands among WordNet's synonyms of ``word`` (a ``rule_by_word.csv``
    column), its sense rank in the same part of speech (or None) and the number of synonyms there."""
    pos = rules.wordnet_pos(tag)
    ranks: dict[str, dict[str, int]] = {}
    for p in ("n", "v", "a", "r"):
        lemma = rules.lemma_of(word.replace(" ", "_"), p)
        if lemma is not None:
            ranks[p] = {name.lower(): rank for name, rank, _ in rules.wordnet_synonyms(lemma, p)}
    n_same = len(ranks.get(pos, {})) if pos else 0
    if pos is not None and pos in ranks:
        rank = ranks[pos].get(_lemma_or_text(replacement, pos))
        if rank is not None:
            return "same-pos", rank, n_same
    other = [p for p in ranks if p != pos and _lemma_or_text(replacement, p) in ranks[p]]
    if other:
        return "other-pos:" + "".join(other), None, n_same
    if pos is None:
        return "no-wordnet-pos", None, 0
    return ("no" if ranks else "word-not-in-wordnet"), None, n_same


def _phrase_tag(p: Parsed, phrase: str) -> str:
    """Penn tags of ``phrase``'s tokens where it first occurs in ``p`` as whole tokens ("JJ", "IN+NN+IN"); ""."""
    words = phrase.lower().split()
    lower = [t.lower() for t in p.tokens]
    for i in range(len(lower) - len(words) + 1):
        if lower[i:i + len(words)] == words:
            return "+".join(p.tags[i:i + len(words)])
    return ""


def _contains_words(span: str, phrase: str) -> bool:
    return re.search(rf"(?<!\S){re.escape(phrase.lower())}(?!\S)", span.lower()) is not None


def _category_key(example: Example, rule: rules.Replacement, authors: tuple[str, str] | None) -> str:
    """The key in ``CATEGORIES`` of the first of ``FAILURE_CATEGORIES`` that applies to the rule's c_p."""
    if rule.positive == example.positive:
        return "exact"
    if authors is None:
        return "unexplained"
    if rule.reason == "no-edit":
        return "no-edit"
    if rule.reason in ("several-edits", "insertion"):
        return "several-edits"
    word, replacement = authors
    if not _contains_words(rule.span, word):
        return "outside"
    if " " in word:
        return "multi-word"
    if rule.reason == "no-wordnet-pos":
        return "phrase-no-head" if " " in rule.span else "no-pos"
    if rule.word.lower() != word.lower():
        return "other-word"
    if rule.reason in ("not-in-wordnet", "no-synonym"):
        return rule.reason
    if rule.replacement.lower() == replacement.lower():
        return "string-replace"
    pos = rules.wordnet_pos(rule.tag)
    if pos is not None and _lemma_or_text(replacement, pos) == rule.synonym.lower():
        return "inflection"
    standing, _, _ = wordnet_standing(word, replacement, rule.tag)
    if standing == "same-pos":
        return "sense"
    if standing.startswith("other-pos"):
        return "pos"
    return "not-synonym" if standing == "no" else "other"


def compare(examples: Sequence[Example], authors: Mapping[str, Counter],
            parsed: Mapping[str, Parsed]) -> list[Comparison]:
    """The rule's c_p for every example, with the authors' edit and the failure category."""
    made = rules.replace_positives([e.caption for e in examples], [e.negative for e in examples], parsed=parsed)
    ordered = {kind: [rule for rule, _ in counts.most_common()] for kind, counts in authors.items()}
    out = []
    for example, rule in zip(examples, made):
        edit = authors_rule(example.caption, example.positive, ordered[example.kind])
        out.append(Comparison(example, rule, *(edit or ("", "")), CATEGORIES[_category_key(example, rule, edit)]))
    return out


def _pct(count: int, total: int) -> float | str:
    return round(100 * count / total, 2) if total else ""


def _by_kind(comparisons: Sequence[Comparison]) -> dict[str, list[Comparison]]:
    groups: dict[str, list[Comparison]] = defaultdict(list)
    for c in comparisons:
        groups[c.example.kind].append(c)
    return {**dict(groups), ALL: list(comparisons)}


def rule_vs_released(comparisons: Sequence[Comparison]) -> list[dict]:
    """Per type and over both: how often the rule makes a c_p, makes the released one, replaces the authors' word,
    and with the authors' text; and how often the authors' word lies inside c_n's edit (where the rule looks)."""
    rows = []
    for kind, group in _by_kind(comparisons).items():
        n = len(group)
        covered = sum(c.rule.positive is not None for c in group)
        exact = sum(c.exact for c in group)
        inside = sum(bool(c.authors_word) and _contains_words(c.rule.span, c.authors_word) for c in group)
        rows.append({
            "type": kind, "n": n, "n_rule_made": covered, "coverage_pct": _pct(covered, n),
            "exact_match_pct": _pct(exact, n), "exact_match_of_made_pct": _pct(exact, covered),
            "same_word_pct": _pct(sum(c.same_word for c in group), n),
            "same_replacement_pct": _pct(sum(c.same_replacement for c in group), n),
            "authors_word_in_cn_edit_pct": _pct(inside, n),
            "n_exact": exact,
        })
    return rows


def rule_by_word(comparisons: Sequence[Comparison], authors: Mapping[str, Counter],
                 parsed: Mapping[str, Parsed]) -> list[dict]:
    """One row per rule of the authors: what the WordNet rule does with that word."""
    rows = []
    for kind, counts in authors.items():
        for (word, replacement), n_edits in counts.most_common():
            group = [c for c in comparisons if c.example.kind == kind
                     and (c.authors_word, c.authors_replacement) == (word, replacement)]
            tags = Counter(_phrase_tag(parsed[c.example.caption], word) for c in group)
            tag = tags.most_common(1)[0][0] if tags else ""
            pos = rules.wordnet_pos(tag.split("+")[0]) if tag else None
            lemma = rules.lemma_of(word.replace(" ", "_"), pos) if pos else None
            standing, rank, n_synonyms = wordnet_standing(word, replacement, tag.split("+")[0] if tag else "")
            same_word = [c for c in group if c.same_word]
            made = Counter(c.rule.replacement for c in same_word)
            categories = Counter(c.category for c in group if c.category != CATEGORIES["exact"])
            rows.append({
                "type": kind, "word": word, "authors_replacement": replacement, "n_edits": n_edits,
                "n_examples": len(group), "spacy_tag": tag, "wordnet_pos": pos or "",
                "wordnet_lemma": (lemma or "").replace("_", " "),
                "rule_synonym": (rules.choose_synonym(lemma, pos) or "") if lemma and pos else "",
                "rule_replacement": made.most_common(1)[0][0] if made else "",
                "rule_same_word_pct": _pct(len(same_word), len(group)),
                "rule_same_replacement_pct": _pct(sum(c.same_replacement for c in group), len(group)),
                "rule_exact_pct": _pct(sum(c.exact for c in group), len(group)),
                "authors_in_wordnet": standing,
                "authors_sense_rank": "" if rank is None else rank,
                "n_wordnet_synonyms": n_synonyms,
                "main_failure": categories.most_common(1)[0][0] if categories else "",
            })
    return rows


def rule_failures(comparisons: Sequence[Comparison]) -> list[dict]:
    rows = []
    for kind, group in _by_kind(comparisons).items():
        counts = Counter(c.category for c in group)
        first = {c.category: c for c in reversed(group)}
        for category in FAILURE_CATEGORIES:
            if counts[category]:
                c = first[category]
                rows.append({"type": kind, "category": category, "n": counts[category],
                             "share_pct": _pct(counts[category], len(group)),
                             "example_c": c.example.caption, "example_cn": c.example.negative,
                             "example_cp_released": c.example.positive, "example_cp_rule": c.rule.positive or "",
                             "example_rule_reason": c.rule.reason})
    return rows


# b) Blind
@dataclass
class LogProbScorer:
    """The n-gram LM scoring a text by its mean log2-probability per token (``NgramFluency.scores``' calibration
    differs between folds)."""

    lm: NgramFluency
    name: str = "ngram-lm"

    def scores(self, texts: Sequence[str]) -> np.ndarray:
        return self.lm.mean_logprob(texts)


ORIGINAL, HARD_POSITIVE = "c", "c_p"
"""``TextPair.benchmark`` of the (c, c_n) and (c_p, c_n) pairs scored together."""


def fit_lm(seed: int) -> Callable[[Sequence[TextPair]], LogProbScorer]:
    """The LM on the training folds' positives: c (from the (c, c_n) pairs) and c_p (from the (c_p, c_n) pairs)."""
    return lambda train: LogProbScorer(NgramFluency(seed=seed).fit(p.positive for p in train))


def fit_classifier(train: Sequence[TextPair]) -> PairwiseTextClassifier:
    """Trained to rank c above c_n only: the hard positives are what it is tested on."""
    pairs = [p for p in train if p.benchmark == ORIGINAL]
    return PairwiseTextClassifier().fit([p.positive for p in pairs], [p.negative for p in pairs])


@dataclass(frozen=True)
class TripleScores:
    """Cross-fitted scores of each example's c, c_p and c_n by one scorer."""

    scorer: str
    c: np.ndarray
    cp: np.ndarray
    cn: np.ndarray

    def outcomes(self) -> dict[str, np.ndarray]:
        c_above, cp_above = self.c > self.cn, self.cp > self.cn
        return {"c_above_cn": c_above, "cp_above_cn": cp_above, "c_above_cp": self.c > self.cp,
                "aug": c_above & cp_above,
                "brittleness": ((self.c > self.cn) & (self.cn > self.cp)) | ((self.cp > self.cn) & (self.cn > self.c)),
                "c_ties_cp": self.c == self.cp}


def score_blind(examples: Sequence[Example], config: Config) -> dict[str, TripleScores]:
    """Both scorers, cross-fitted by Visual Genome image (an image's (c, c_n) and (c_p, c_n) pairs share a fold)."""
    pairs = ([TextPair(ORIGINAL, e.kind, f"vg:{e.image_id}", e.caption, e.negative, str(e.index)) for e in examples]
             + [TextPair(HARD_POSITIVE, e.kind, f"vg:{e.image_id}", e.positive, e.negative, str(e.index))
                for e in examples])
    n = len(examples)
    out = {}
    for name, fit in (("ngram-lm", fit_lm(config.seed)), ("text-classifier", fit_classifier)):
        scores = crossfit(pairs, fit, config.folds, config.seed)
        if not np.array_equal(scores.negative[:n], scores.negative[n:]):  # same fold, same model: same c_n score
            raise AssertionError(f"{name}: c_n scored differently in its two pairs")
        out[name] = TripleScores(name, scores.positive[:n], scores.positive[n:], scores.negative[:n])
    return out


def _interval_row(kind: str, scorer: str, metric: str, values: np.ndarray, config: Config, percent: bool) -> dict:
    """Mean and percentile-bootstrap 95% interval of ``values`` (0/1 outcomes in percent, or log2-probabilities)."""
    ci = bootstrap_mean_ci(values.astype(np.float64), n_resamples=config.n_resamples, seed=config.seed)
    scale, digits = (100.0, 2) if percent else (1.0, 4)
    return {"type": kind, "scorer": scorer, "metric": metric, "n": int(values.size),
            "value": round(scale * ci.estimate, digits), "ci_low": round(scale * ci.low, digits),
            "ci_high": round(scale * ci.high, digits),
            "unit": "percent of examples" if percent else "log2-probability per token"}


def blind_table(examples: Sequence[Example], scores: Mapping[str, TripleScores], config: Config) -> list[dict]:
    kinds = np.array([e.kind for e in examples])
    masks = {kind: kinds == kind for kind in ("attributes", "relations")} | {ALL: np.ones(len(examples), bool)}
    rows = []
    for scorer, triple in scores.items():
        outcomes = triple.outcomes()
        for kind, mask in masks.items():
            rows += [_interval_row(kind, scorer, metric, outcomes[metric][mask], config, percent=True)
                     for metric in (*RANK_METRICS, "c_ties_cp")]
            if scorer == "ngram-lm":  # FLUENCY_METRICS' values, in its order
                values = (triple.c, triple.cp, triple.cn, triple.cp - triple.c)
                rows += [_interval_row(kind, scorer, metric, v[mask], config, percent=False)
                         for metric, v in zip(FLUENCY_METRICS, values)]
    return rows


def summary_metrics(versus: Sequence[dict], blind: Sequence[dict]) -> dict[str, float]:
    """Twelve flat numbers for ``dvc metrics show`` (the rest is in the CSVs)."""
    rule = {r["type"]: r for r in versus}
    metrics = {"rule_coverage_pct": rule[ALL]["coverage_pct"], "rule_exact_match_pct": rule[ALL]["exact_match_pct"],
               "rule_exact_match_attributes_pct": rule["attributes"]["exact_match_pct"]}
    cell = {(r["type"], r["scorer"], r["metric"]): r["value"] for r in blind}
    for scorer, short in (("ngram-lm", "lm"), ("text-classifier", "classifier")):
        for metric in ("c_above_cn", "cp_above_cn", "c_above_cp", "brittleness"):
            metrics[f"blind_{short}_{metric}_pct"] = cell[(ALL, scorer, metric)]
    metrics["blind_lm_log2prob_cp_minus_c"] = cell[(ALL, "ngram-lm", "log2prob_cp_minus_c")]
    return metrics


def draw_blind(rows: Sequence[dict], out_png: Path) -> None:
    plt = pyplot()
    kinds = ("attributes", "relations", ALL)
    labels = {"c_above_cn": "c > c_n", "cp_above_cn": "c_p > c_n", "c_above_cp": "c > c_p", "aug": "Aug (both)",
              "brittleness": "Brittleness"}
    cell = {(r["type"], r["scorer"], r["metric"]): r for r in rows}
    fig, axes = plt.subplots(1, len(SCORERS), figsize=(11, 3.8), sharey=True, squeeze=False)
    x = np.arange(len(RANK_METRICS))
    width = 0.8 / len(kinds)
    for ax, scorer in zip(axes[0], SCORERS):
        for k, kind in enumerate(kinds):
            cells = [cell[(kind, scorer, m)] for m in RANK_METRICS]
            values = np.array([c["value"] for c in cells])
            err = np.array([[c["value"] - c["ci_low"], c["ci_high"] - c["value"]] for c in cells]).T
            ax.bar(x + (k - 1) * width, values, width=width, yerr=err, capsize=2, label=kind)
        ax.axhline(50, color="black", lw=0.7, ls="--")
        ax.set_xticks(x, [labels[m] for m in RANK_METRICS], fontsize=8)
        ax.set_title(f"{scorer} (blind, cross-fitted by image)", fontsize=9)
        ax.set_ylim(0, 100)
    axes[0][0].set_ylabel("% of REPLACE examples, 95% bootstrap CI")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, out_png)


def run(config: Config, out_dir: Path = OUT_DIR, fetch: Callable[[str], Path] | None = None) -> dict:
    examples, authors, files = load_examples(fetch or quiet_fetch)
    parsed = parse_captions([e.caption for e in examples] + [e.negative for e in examples])
    comparisons = compare(examples, authors, parsed)
    versus = rule_vs_released(comparisons)
    by_word = rule_by_word(comparisons, authors, parsed)
    failures = rule_failures(comparisons)
    blind = blind_table(examples, score_blind(examples, config), config)
    summary = summary_metrics(versus, blind)
    context = {
        "files": {key: {"name": Path(path).name, "sha256": sha256_file(path)} for key, path in files.items()},
        "examples": dict(Counter(e.kind for e in examples)),
        "folds": config.folds, "seed": config.seed, "bootstrap_resamples": config.n_resamples,
        "rules": rules.describe(),
        "authors_rules": {kind: [[w, r, n] for (w, r), n in counts.most_common()] for kind, counts in authors.items()},
        "failure_categories": list(FAILURE_CATEGORIES),
        "scorers": {
            "ngram-lm": "word trigram, Witten-Bell (nltk.lm; common.blind.ngram.NgramFluency), fitted on the training "
                        "folds' c and c_p; score = mean log2-probability per token, end of sentence included",
            "text-classifier": "pairwise logistic regression on TF-IDF 1-2-grams (common.blind.classifier), trained "
                               "on the training folds' (c, c_n) pairs only; score = sigmoid(w . phi(text))",
        },
        "cross_fitting": "groups = Visual Genome image id; a text is scored by a model fitted on the other folds; "
                         "the (c, c_n) and (c_p, c_n) pairs of an image share a fold",
        "metrics": {"c_above_cn": "s(c) > s(c_n)", "cp_above_cn": "s(c_p) > s(c_n)", "c_above_cp": "s(c) > s(c_p)",
                    "aug": "s(c) > s(c_n) and s(c_p) > s(c_n)",
                    "brittleness": "s(c) > s(c_n) > s(c_p) or s(c_p) > s(c_n) > s(c) (the paper's, §3.1)",
                    "c_ties_cp": "s(c) == s(c_p) (counted as not above in c_above_cp)"},
    }
    with output_group(out_dir) as staging:
        for name, table in (("rule_vs_released", versus), ("rule_by_word", by_word), ("rule_failures", failures),
                            ("blind", blind)):
            write_csv_atomic(staging / f"{name}.csv", table, list(table[0]))
        write_json_atomic(staging / "summary.json", summary)
        write_json_atomic(staging / "context.json", context)
        draw_blind(blind, staging / "blind.png")
    return {"rule_vs_released": versus, "rule_by_word": by_word, "rule_failures": failures, "blind": blind,
            "summary": summary, "comparisons": comparisons}


def main(argv: Sequence[str] | None = None) -> int:
    parser = stage_parser(__spec__.name, __doc__)
    defaults = Config()
    parser.add_argument("--folds", type=int, default=defaults.folds, help="cross-fitting folds (by image)")
    parser.add_argument("--seed", type=int, default=defaults.seed, help="fold assignment, LM calibration, bootstrap")
    parser.add_argument("--n-resamples", type=int, default=defaults.n_resamples, help="bootstrap resamples")
    parser.add_argument("--out", type=Path, default=OUT_DIR)
    args = parser.parse_args(argv)
    result = run(Config(folds=args.folds, seed=args.seed, n_resamples=args.n_resamples), args.out)
    for row in result["rule_vs_released"]:
        print("rule vs released:", row)
    for row in result["rule_failures"]:
        print(f"{row['type']:10s} {row['n']:6d} {row['share_pct']:6.2f}%  {row['category']}")
    for row in result["blind"]:
        print(f"{row['type']:10s} {row['scorer']:15s} {row['metric']:20s} {row['value']:9.3f} "
              f"[{row['ci_low']:.3f}, {row['ci_high']:.3f}] n={row['n']}")
    return 0


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
