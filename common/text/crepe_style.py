"""CREPE-style rule-based hard negatives for real captions: REPLACE, SWAP, NEGATE, and ARO's SHUFFLE.

SugarCrepe (Sec. 5, "ARO+CREPE") regenerates the older benchmarks' negatives for its own COCO positives: REPLACE,
SWAP and NEGATE "using source code from CREPE", SHUFFLE as released by ARO. CREPE's public repository
(RAIVNLab/CREPE) holds only its evaluation scripts (its negatives were made from Visual Genome scene graphs, and that
code is not in it), so the rules below are reconstructed from the paper's Table 3 examples, on spaCy tags:

- REPLACE: one noun (object), adjective (attribute) or relation word (preposition or verb) becomes another word of
  the same Penn tag drawn from a vocabulary of the caption corpus ("Two adult bears play fight in the soda.", "A man
  sitting around front of a laptop computer."). The word class is drawn first (among those the caption has), then
  a position, then the new word: never the same word and never one already in the caption. No plausibility filter:
  the nonsense is what made CREPE's negatives easy to spot blind.
- SWAP: two nouns, or two adjectives, exchange places ("A fence standing behind a woman looking at an elephant.",
  "Group swinging tennis racket while man of people watches."); the two must differ as words. Each position keeps
  its own capitalisation.
- NEGATE: one of CREPE's two forms, drawn with equal odds: "There is no <noun phrase>." appended (the noun phrase is
  the run of nouns holding a drawn noun: "... stuffed fish. There is no teddy bear."), or "not" inserted before a
  drawn noun ("A red fire not hydrant on a city sidewalk.").
- SHUFFLE: ARO's nouns-and-adjectives shuffle (``common.text.caption_text.shuffle_nouns_and_adj``, ARO's
  ``TextShuffler``), on the same tags.

Every edit keeps the rest of the caption byte for byte (spaCy tokens with their trailing whitespace), except
SHUFFLE, whose output is ARO's: tokens joined by single spaces. A kind that does not apply (no two distinct nouns or
adjectives to swap, no noun to negate, a shuffle that leaves the words in place, no replacement word left) gives
None, as does an edit equal to the caption up to case (CLIP's tokenizer lowercases). Each (seed, kind, caption)
has its own generator (``caption_rng``), so a caption gets the same negative in any list (REPLACE's, given one
vocabulary).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

import numpy as np

from common.errors import WorkspaceError
from common.text.caption_text import ADJ_TAGS, Tagged, caption_rng, load_spacy, shuffle_nouns_and_adj, spacy_info

CREPE_KINDS: tuple[str, ...] = ("replace", "swap", "negate", "shuffle")
"""ARO+CREPE's four kinds, in Table 5's column order."""
NOUN_TAGS = frozenset({"NN", "NNS"})
"""Common nouns (objects). Proper nouns are left alone: replacing or negating a name is not an object edit."""
PIPES = ("tok2vec", "tagger", "attribute_ruler")
"""Penn tags come from the tagger; coarse ``pos_`` (a verb vs an auxiliary, a preposition vs a subordinator) from the
attribute ruler. The parser, lemmatizer and NER are skipped."""
RELATION_POS = frozenset({"ADP", "VERB"})
"""Relation words: prepositions (``IN`` tagged ``ADP``, not subordinators such as "while") and full verbs."""
WORD_CLASSES = ("object", "attribute", "relation")
NEGATE_FORMS = ("there_is_no", "not")


class CrepeStyleError(WorkspaceError):
    """A request the generator cannot serve (an unknown kind)."""


@dataclass(frozen=True)
class Parsed:
    """A caption's spaCy tokens with their trailing whitespace, Penn tags and coarse POS."""

    tokens: tuple[str, ...]
    spaces: tuple[str, ...]
    tags: tuple[str, ...]
    pos: tuple[str, ...]

    def word_class(self, i: int) -> str | None:
        tag, pos = self.tags[i], self.pos[i]
        if tag in NOUN_TAGS:
            return "object"
        if tag in ADJ_TAGS:
            return "attribute"
        if pos in RELATION_POS and (pos == "VERB" or tag == "IN"):
            return "relation"
        return None

    def text(self, tokens: Sequence[str] | None = None) -> str:
        return "".join(t + s for t, s in zip(tokens or self.tokens, self.spaces))


def parse_captions(captions: Iterable[str], batch_size: int = 256) -> dict[str, Parsed]:
    """Each distinct caption through one ``nlp.pipe`` pass (``PIPES`` only)."""
    distinct = list(dict.fromkeys(captions))
    if not distinct:
        return {}
    nlp = load_spacy()
    disable = [name for name in nlp.pipe_names if name not in PIPES]
    return {text: Parsed(tuple(t.text for t in doc), tuple(t.whitespace_ for t in doc), tuple(t.tag_ for t in doc),
                         tuple(t.pos_ for t in doc))
            for text, doc in zip(distinct, nlp.pipe(distinct, disable=disable, batch_size=batch_size))}


@dataclass(frozen=True)
class Vocabulary:
    """REPLACE's word pool: per Penn tag, the lowercased words of a corpus seen at least ``min_count`` times with
    that tag, sorted (so the pool does not depend on the corpus' order)."""

    words: Mapping[str, tuple[str, ...]]
    min_count: int = 1
    counts: Mapping[str, int] = field(default_factory=dict)
    """Distinct words per tag before the ``min_count`` cut (for provenance)."""

    @classmethod
    def from_parsed(cls, parsed: Iterable[Parsed], min_count: int = 1) -> "Vocabulary":
        seen: dict[str, Counter] = {}
        for p in parsed:
            for i, (token, tag) in enumerate(zip(p.tokens, p.tags)):
                if p.word_class(i) is not None and token.isalpha():
                    seen.setdefault(tag, Counter())[token.lower()] += 1
        words = {tag: tuple(sorted(w for w, n in c.items() if n >= min_count)) for tag, c in sorted(seen.items())}
        return cls({t: w for t, w in words.items() if w}, min_count, {t: len(c) for t, c in sorted(seen.items())})

    def describe(self) -> dict:
        return {"min_count": self.min_count, "words_per_tag": {t: len(w) for t, w in self.words.items()},
                "distinct_words_per_tag": dict(self.counts)}


def _cased_like(word: str, model: str) -> str:
    """``word`` with the capitalisation of the token whose place it takes (sentence-initial or not)."""
    return word[:1].upper() + word[1:] if model[:1].isupper() else word.lower()


def _positions(p: Parsed, word_class: str) -> list[int]:
    return [i for i in range(len(p.tokens)) if p.word_class(i) == word_class and p.tokens[i].isalpha()]


def replace_negative(p: Parsed, vocabulary: Vocabulary, rng: np.random.Generator) -> str | None:
    """One object, attribute or relation word replaced by another of its tag (class, position, word drawn)."""
    present = frozenset(t.lower() for t in p.tokens)
    options: dict[str, list[tuple[int, tuple[str, ...]]]] = {}
    for word_class in WORD_CLASSES:
        for i in _positions(p, word_class):
            pool = tuple(w for w in vocabulary.words.get(p.tags[i], ()) if w not in present)
            if pool:
                options.setdefault(word_class, []).append((i, pool))
    if not options:
        return None
    classes = sorted(options, key=WORD_CLASSES.index)
    chosen = options[classes[int(rng.integers(len(classes)))]]
    i, pool = chosen[int(rng.integers(len(chosen)))]
    tokens = list(p.tokens)
    tokens[i] = _cased_like(pool[int(rng.integers(len(pool)))], p.tokens[i])
    return p.text(tokens)


def swap_negative(p: Parsed, rng: np.random.Generator) -> str | None:
    """Two nouns (or two adjectives) that differ as words exchange places, each place keeping its casing."""
    options: dict[str, list[tuple[int, int]]] = {}
    for word_class in ("object", "attribute"):
        at = _positions(p, word_class)
        pairs = [(a, b) for k, a in enumerate(at) for b in at[k + 1:] if p.tokens[a].lower() != p.tokens[b].lower()]
        if pairs:
            options[word_class] = pairs
    if not options:
        return None
    classes = sorted(options)
    pairs = options[classes[int(rng.integers(len(classes)))]]
    a, b = pairs[int(rng.integers(len(pairs)))]
    tokens = list(p.tokens)
    tokens[a], tokens[b] = _cased_like(p.tokens[b], p.tokens[a]), _cased_like(p.tokens[a], p.tokens[b])
    return p.text(tokens)


def negate_negative(p: Parsed, rng: np.random.Generator) -> str | None:
    """"There is no <noun phrase>." appended, or "not" inserted before a noun (equal odds)."""
    nouns = _positions(p, "object")
    if not nouns:
        return None
    form = NEGATE_FORMS[int(rng.integers(len(NEGATE_FORMS)))]
    i = nouns[int(rng.integers(len(nouns)))]
    if form == "not":
        tokens = list(p.tokens)
        tokens[i] = f"Not {p.tokens[i].lower()}" if i == 0 else f"not {p.tokens[i]}"
        return p.text(tokens)
    start, end = i, i + 1  # the consecutive nouns around it ("teddy bear", "fire hydrant")
    while start > 0 and p.tags[start - 1] in NOUN_TAGS:
        start -= 1
    while end < len(p.tokens) and p.tags[end] in NOUN_TAGS:
        end += 1
    phrase = " ".join(t.lower() for t in p.tokens[start:end])
    sentence = p.text().rstrip()
    if not sentence.endswith((".", "!", "?")):
        sentence += "."
    return f"{sentence} There is no {phrase}."


def shuffle_negative(p: Parsed, rng: np.random.Generator) -> str | None:
    """ARO's nouns-and-adjectives shuffle; None when it leaves every word in place."""
    out = shuffle_nouns_and_adj(Tagged(p.tokens, p.tags), rng)
    return None if out.split(" ") == list(p.tokens) else out


def crepe_negatives(captions: Sequence[str], kinds: Sequence[str] = CREPE_KINDS, seed: int = 0,
                    vocabulary: Vocabulary | None = None, *,
                    parsed: Mapping[str, Parsed] | None = None) -> dict[str, list[str | None]]:
    """For every caption one negative of each kind in ``kinds`` (None where the kind does not apply), in the captions'
    order; caption i of kind k depends only on (``seed``, k, ``captions[i]``) and, for REPLACE, ``vocabulary`` (default:
    built from these captions). ``parsed``: ``parse_captions(captions)`` when the caller has it already."""
    unknown = [k for k in kinds if k not in CREPE_KINDS]
    if unknown:
        raise CrepeStyleError(f"unknown CREPE-style kind(s) {unknown}; known: {list(CREPE_KINDS)}")
    if parsed is None:
        parsed = parse_captions(captions)
    if vocabulary is None and "replace" in kinds:
        vocabulary = Vocabulary.from_parsed(parsed.values())
    make = {"replace": lambda p, rng: replace_negative(p, vocabulary, rng), "swap": swap_negative,
            "negate": negate_negative, "shuffle": shuffle_negative}
    out: dict[str, list[str | None]] = {}
    for kind in kinds:
        negatives = [make[kind](parsed[c], caption_rng(seed, f"crepe-{kind}", c)) for c in captions]
        out[kind] = [None if n is None or n.lower() == c.lower() else n for n, c in zip(negatives, captions)]
    return out


def describe(vocabulary: Vocabulary | None = None) -> dict:
    """Provenance for outputs: the spaCy model (tags, and so negatives, depend on it) and the vocabulary."""
    return {"generator": "common.text.crepe_style", "kinds": list(CREPE_KINDS),
            "spacy": spacy_info().as_dict(), **({"vocabulary": vocabulary.describe()} if vocabulary else {})}
