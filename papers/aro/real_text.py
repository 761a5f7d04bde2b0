"""NegCLIP's generator against its released negatives, and the Order perturbations, on real COCO captions.

Input: NegCLIP's released validation file (``aro/negclip/valid_neg_clip.tsv``, the release's
``mertyg/vision-language-models-are-bows@81fdd20d temp_data/valid_neg_clip.tsv``: 4,839 COCO val2014 captions with 1-5
negatives); the generator that made it is not in the release (``papers.aro.negatives``). Each released negative gets a
kind inferred from the words that moved (``infer_kind``) and counts as *generated* when the generator's own draw for
that caption (seed ``NEGATIVES_SEED``) contains it, *reachable* when some swap the generator may draw (any pair, any
kind) gives it: the released generator drew one random pair per kind, so a draw matches only by chance where a kind
has several pairs. Strings are compared as lowercase alphanumeric words (``words``): the released phrase swaps keep
the caption's spacing, its token swaps are space-joined tokens. The 4 Order perturbations of every caption for every
seed of ``aro.seeds`` (``papers.aro.order.order_cases``) are the real-text ARO negatives SugarCrepe's blind attacks
read. Outputs: README.md's Outputs. Stage ``real-text``: ``python -m papers.aro.real_text``.
"""
from __future__ import annotations

import bisect
import re
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from common.files.io import output_group, sha256_file, staged_to_final, write_csv_atomic, write_json_atomic
from common.paths import RESULTS
from common.pipeline.cli import print_written, stage_parser
from common.pipeline.params import own_params
from common.registry.fetch import fetch
from common.text.caption_text import ORDER_PERTURBATIONS, caption_rng, spacy_info, tag_captions
from common.text.released_text import NegClipRow as ReleasedRow, read_negclip_tsv as read_released
from papers.aro.negatives import (
    NEGATIVE_KINDS, RNG_PURPOSE, ParsedCaption, candidates, parse_captions, sample_negatives)
from papers.aro.order import OPTION_NAMES, order_cases

SOURCE_KEY = "aro/negclip/valid_neg_clip.tsv"
OUT_DIR = RESULTS / "aro" / "real_text"
NEGATIVES_SEED = 0
"""The generator's seed for the comparison (a candidate for ``aro.negatives_seed`` in params.yaml)."""

NOUN_LIKE = frozenset({"NOUN", "PROPN", "PRON", "NUM"})
INFERRED_KINDS = (*NEGATIVE_KINDS, "token_other", "unchanged", "other")
"""``token_other``: two words swapped that share no swappable class under en_core_web_sm (the released file was
made with en_core_web_lg, which tagged them alike); ``unchanged``: the caption's own words (a case-only swap such as
"Large"/"large", or a retokenised "it's"), which upstream's case- and spacing-sensitive check kept; ``other``: not
one swap of the caption's words (upstream's ``str.replace`` also rewrites repeated phrases and substrings)."""


_WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> tuple[str, ...]:
    """Lowercase alphanumeric runs: what two negatives must share to count as the same."""
    return tuple(_WORD.findall(text.lower()))


@dataclass(frozen=True)
class WordView:
    """A caption as ``words``, each with the Penn tag and Universal POS of the spaCy token it comes from."""

    words: tuple[str, ...]
    tags: tuple[str, ...]
    pos: tuple[str, ...]

    @classmethod
    def of(cls, caption: str, parsed: ParsedCaption) -> "WordView":
        """``words(caption)``, each labelled by the spaCy token its first character falls in."""
        # each word with the last token starting at or before it (the first token for a word before every token)
        found = [(m.group(), max(bisect.bisect_right(parsed.starts, m.start()) - 1, 0))
                 for m in _WORD.finditer(caption.lower())]
        return cls(tuple(w for w, _ in found), tuple(parsed.tags[t] for _, t in found),
                   tuple(parsed.pos[t] for _, t in found))


def _two_span_swap(a: Sequence[str], b: Sequence[str]) -> tuple[range, range] | None:
    """Positions (in ``a``) of two spans whose exchange turns ``a`` into ``b``, or None; ``a != b``, same length."""
    lo = next(i for i in range(len(a)) if a[i] != b[i])
    hi = max(i for i in range(len(a)) if a[i] != b[i]) + 1
    n = hi - lo
    for len_a in range(1, n):
        for len_b in range(1, n - len_a + 1):
            mid = n - len_a - len_b
            if (a[lo:lo + len_a] == b[hi - len_a:hi] and a[hi - len_b:hi] == b[lo:lo + len_b]
                    and a[lo + len_a:lo + len_a + mid] == b[lo + len_b:lo + len_b + mid]):
                return range(lo, lo + len_a), range(hi - len_b, hi)
    return None


def infer_kind(original: WordView, negative: str) -> str:
    """The swap kind that turns ``original`` into ``negative``, judged from which words moved: only phrase swaps move
    several words (trimmed of the words they share at their ends, so a span may have lost its noun)."""
    a, b = original.words, words(negative)
    if a == b:
        return "unchanged"
    if sorted(a) != sorted(b):
        return "other"
    spans = _two_span_swap(a, b)
    if spans is None:
        return "other"
    first, second = spans
    if len(first) == len(second) == 1:
        i, j = first[0], second[0]
        if original.tags[i] == original.tags[j] and original.tags[i] in ("NN", "NNS"):
            return original.tags[i]
        if original.pos[i] == original.pos[j] and original.pos[i] in ("ADJ", "ADV", "VERB"):
            return "verb_phrase" if original.pos[i] == "VERB" else original.pos[i]
        return "token_other"
    pos_1 = {original.pos[i] for i in first}
    pos_2 = {original.pos[i] for i in second}
    if "VERB" in pos_1 and "VERB" in pos_2 and not (pos_1 | pos_2) & NOUN_LIKE:
        return "verb_phrase"
    return "noun_chunk"


@dataclass(frozen=True)
class Match:
    """One released negative against the generator."""

    row: ReleasedRow
    negative: str
    kind: str
    generated: bool
    reachable: bool
    reachable_same_kind: bool
    same_kind_candidates: tuple[str, ...]


def compare(rows: Sequence[ReleasedRow], seed: int = NEGATIVES_SEED):
    """Each released negative matched against the generator; and the generator's own draw per row."""
    parsed = parse_captions([r.title for r in rows])
    matches: list[Match] = []
    drawn = []
    for row in rows:
        p = parsed[row.title]
        view = WordView.of(row.title, p)
        by_kind = {kind: candidates(p, kind) for kind in NEGATIVE_KINDS}
        keys_by_kind = {kind: {words(c) for c in texts} for kind, texts in by_kind.items()}
        reachable = set().union(*keys_by_kind.values())
        sample = sample_negatives(p, caption_rng(seed, RNG_PURPOSE, row.title))
        drawn.append(sample)
        sampled = {words(n.text) for n in sample}
        for negative in row.negatives:
            key, kind = words(negative), infer_kind(view, negative)
            matches.append(Match(row, negative, kind, key in sampled, key in reachable,
                                 key in keys_by_kind.get(kind, set()), tuple(by_kind.get(kind, ()))))
    return matches, drawn


def _ratio(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


def comparison_rows(matches: Sequence[Match]) -> list[dict]:
    rows = []
    for kind in (*INFERRED_KINDS, "all"):
        group = [m for m in matches if kind in (m.kind, "all")]
        n, generated, reachable = len(group), sum(m.generated for m in group), sum(m.reachable for m in group)
        rows.append({"released_kind": kind, "n_released": n, "n_generated": generated, "n_reachable": reachable,
                     "n_reachable_same_kind": sum(m.reachable_same_kind for m in group),
                     "recall_generated": _ratio(generated, n), "recall_reachable": _ratio(reachable, n)})
    return rows


MISSED_FIELDS = ("index", "released_kind", "original", "released_negative", "generator_same_kind")
ORDER_FIELDS = ("index", "seed", "original", "original_normalised", *ORDER_PERTURBATIONS)


def order_rows(rows: Sequence[ReleasedRow], seeds: Sequence[int]) -> tuple[list[dict], dict[str, float | None]]:
    """The perturbed set, and per perturbation the share of options equal to the normalised original (upstream
    keeps them as options; a model cannot tell them apart)."""
    titles = [r.title for r in rows]
    tagged = tag_captions(titles)
    out, same = [], Counter()
    for seed in seeds:
        for row, case in zip(rows, order_cases(titles, seed, tagged=tagged)):
            record = {"index": row.index, "seed": seed, "original": row.title}
            record.update(zip(("original_normalised", *OPTION_NAMES[1:]), case.options))
            out.append(record)
            same.update(k for k in ORDER_PERTURBATIONS if record[k] == record["original_normalised"])
    total = len(rows) * len(seeds)
    return out, {k: _ratio(same[k], total) for k in ORDER_PERTURBATIONS}


def run(tsv: Path, out_dir: Path, seeds: Sequence[int]) -> dict:
    """Compare, perturb, write the group; returns the summary."""
    released = read_released(tsv)
    matches, drawn = compare(released)
    table = comparison_rows(matches)
    overall = table[-1]
    generated_kinds = Counter(n.kind for sample in drawn for n in sample)
    perturbed, same_share = order_rows(released, seeds)
    metrics = {  # DVC metrics: a handful of flat numbers, so `dvc metrics show` stays one readable row
        "n_captions": len(released),
        "n_released_negatives": overall["n_released"],
        "n_generated_negatives": sum(generated_kinds.values()),
        "recall_generated": overall["recall_generated"],
        "recall_reachable": overall["recall_reachable"],
    }
    breakdown = {
        "n_captions_without_generated_negative": sum(1 for s in drawn if not s),
        "released_per_kind": {r["released_kind"]: r["n_released"] for r in table[:-1]},
        "recall_reachable_per_kind": {r["released_kind"]: r["recall_reachable"] for r in table[:-1]},
        "generated_per_kind": {k: generated_kinds.get(k, 0) for k in NEGATIVE_KINDS},
        "order_same_as_original_share": same_share,
        "order_rows": len(perturbed),
    }
    missed = [{"index": m.row.index, "released_kind": m.kind, "original": m.row.title,
               "released_negative": m.negative, "generator_same_kind": " | ".join(m.same_kind_candidates[:3])}
              for m in matches if not m.reachable]
    generated = [{"index": row.index, "kind": n.kind, "negative": n.text}
                 for row, sample in zip(released, drawn) for n in sample]
    context = {
        "source": {"key": SOURCE_KEY, "file": tsv.name, "sha256": sha256_file(tsv)},
        "spacy": spacy_info().as_dict(),
        "negatives_seed": NEGATIVES_SEED,
        "order_seeds": list(seeds),
        "compared_as": "lowercase alphanumeric words (punctuation, case and spacing ignored)",
        "note": "the released negatives were made with en_core_web_lg and str.replace; see papers/aro/negatives.py",
    }
    with output_group(out_dir) as staging:
        paths = {
            "comparison": write_csv_atomic(staging / "generator_vs_released.csv", table, list(table[0])),
            "summary": write_json_atomic(staging / "summary.json", metrics),
            "breakdown": write_json_atomic(staging / "breakdown.json", breakdown),
            "missed": write_csv_atomic(staging / "examples_missed.csv", missed, MISSED_FIELDS),
            "generated": write_csv_atomic(staging / "generated_negatives.csv", generated,
                                          ("index", "kind", "negative")),
            "order": write_csv_atomic(staging / "order_perturbed.csv", perturbed, ORDER_FIELDS),
            "context": write_json_atomic(staging / "context.json", context),
        }
    final = {name: str(staged_to_final(p, staging, out_dir)) for name, p in paths.items()}
    return {**metrics, **breakdown, "paths": final, "missed_examples": missed}


def main(argv: Sequence[str] | None = None) -> int:
    parser = stage_parser(__spec__.name, __doc__)
    parser.add_argument("--tsv", type=Path, help=f"the released TSV (default: fetch {SOURCE_KEY})")
    parser.add_argument("--out", type=Path, default=OUT_DIR)
    parser.add_argument("--seeds", type=int, nargs="+", help="Order seeds (default: params aro.seeds)")
    args = parser.parse_args(argv)
    seeds = args.seeds or list(own_params()["aro"]["seeds"])
    tsv = args.tsv or fetch(SOURCE_KEY)
    start = time.perf_counter()
    summary = run(tsv, args.out, seeds)
    print(f"{summary['n_captions']} captions, {summary['n_released_negatives']} released negatives; the generator "
          f"draws {summary['n_generated_negatives']} ({summary['n_captions_without_generated_negative']} captions "
          f"without any)")
    print(f"released negatives the generator drew (seed {NEGATIVES_SEED}): {summary['recall_generated']}; "
          f"could draw (any pair): {summary['recall_reachable']}")
    for kind, n in summary["released_per_kind"].items():
        if n:
            print(f"  {kind:12s} {n:5d} released, reachable {summary['recall_reachable_per_kind'][kind]}")
    shown = Counter()
    for m in summary["missed_examples"]:
        if shown[m["released_kind"]] < 2:
            shown[m["released_kind"]] += 1
            print(f"  missed {m['released_kind']}: {m['original']!r} -> {m['released_negative']!r}")
    print_written(summary["paths"])
    print(f"wall time: {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
