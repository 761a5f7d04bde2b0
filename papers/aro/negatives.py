"""NegCLIP's hard-negative captions: swap two elements of a caption (ARO Appendix C.1).

The authors' generator is not in the release (neither mertyg/vision-language-models-are-bows@81fdd20d nor
vinid/neg_clip@e680f8e4 holds it; the authors later posted it as a gist, linked from upstream issue #13, which this
workspace has not read). "The released generator" below means what its output, the released negatives
(``papers.aro.real_text``), shows, and the paper's rule (the ARO paper, Appendix C.1: "we use spacy to swap the
position of two elements of the caption"); where the text below says what upstream did (en_core_web_lg,
``str.replace``, how it dropped candidates), that is unverified against the generator's code.

Six kinds, as in the released generator: two noun chunks of 3+ words (``noun_chunk``; shorter chunks would repeat
the noun swaps), two verb phrases (``verb_phrase``: an optional verb, adverbs, auxiliaries, then one or more verbs;
overlapping matches resolved to the longest), two tokens tagged ``NN``, two tagged ``NNS``, two adverbs (``ADV``),
two adjectives (``ADJ``). ``NN``/``NNS`` are Penn tags (``token.tag_``); ``ADV``/``ADJ`` are Universal POS
(``token.pos_``): the Penn tag set has no ``ADV``/``ADJ`` labels, and the released file's adjective swaps include
comparatives and superlatives (JJR, JJS), which ``pos_ == "ADJ"`` covers and ``tag_ == "JJ"`` would not. A candidate
equal to the original once "." and "," and case are ignored is dropped (upstream ignored "." and "," only, so it
kept case-only swaps such as "Large elephant ... a large tree" -> "large elephant ... a Large tree", which CLIP's
lowercasing tokenizer cannot tell from the original). One swap is drawn per kind, so a caption has up to
six negatives.

Where this differs from the released generator (judged against its file in ``papers.aro.real_text``):
- swaps are done on tokens, not by ``str.replace`` on the caption text, so a phrase that occurs twice or inside a
  longer word is not replaced everywhere; every negative is spaCy's tokens joined by spaces (the released
  token swaps look like that, its phrase swaps keep the caption's spacing); phrase swaps are lowercased, as upstream;
- the pair is drawn among the pairs whose swap changes the caption (upstream draws any pair and gives up on that
  kind when the swap is a no-op, e.g. two "man" tokens);
- the model is en_core_web_sm (upstream used en_core_web_lg, not installable here), so tags and chunks differ;
- randomness per (seed, caption text) (``common.text.caption_text.caption_rng``), never global state.
"""
from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from typing import Sequence

from common.text.caption_text import caption_rng, load_spacy

NEGATIVE_KINDS = ("noun_chunk", "verb_phrase", "NN", "NNS", "ADV", "ADJ")
TAG_KINDS = {"NN": "tag", "NNS": "tag", "ADV": "pos", "ADJ": "pos"}
"""Token kinds and the spaCy attribute they test (``tag_`` or ``pos_``), see the module docstring."""
PHRASE_KINDS = ("noun_chunk", "verb_phrase")
MIN_CHUNK_WORDS = 3
IGNORED = frozenset({".", ","})
PARSE_PIPES = ("tok2vec", "tagger", "parser", "attribute_ruler")
"""Noun chunks need the parser, ``pos_`` the attribute ruler; NER and the lemmatizer are skipped."""
RNG_PURPOSE = "negclip"

Span = tuple[int, int]


@dataclass(frozen=True)
class NegativeCaption:
    text: str
    kind: str


@dataclass(frozen=True)
class ParsedCaption:
    """What the swaps need from spaCy: tokens with their character offsets, Penn tags and Universal POS, and per
    kind the elements that may be swapped (token positions ``(start, end)``)."""

    tokens: tuple[str, ...]
    starts: tuple[int, ...]
    tags: tuple[str, ...]
    pos: tuple[str, ...]
    spans: dict[str, tuple[Span, ...]]


@functools.cache
def _verb_matcher(nlp):
    # deferred: loads spacy only when called
    from spacy.matcher import Matcher

    matcher = Matcher(nlp.vocab)
    matcher.add("verb_phrase", [[{"POS": "VERB", "OP": "?"}, {"POS": "ADV", "OP": "*"}, {"POS": "AUX", "OP": "*"},
                                 {"POS": "VERB", "OP": "+"}]])
    return matcher


def _parse(doc, matcher) -> ParsedCaption:
    # deferred: loads spacy only when called
    from spacy.util import filter_spans

    spans: dict[str, tuple[Span, ...]] = {
        "noun_chunk": tuple((c.start, c.end) for c in doc.noun_chunks if len(c.text.split()) >= MIN_CHUNK_WORDS),
        "verb_phrase": tuple(sorted((s.start, s.end) for s in filter_spans([doc[a:b] for _, a, b in matcher(doc)]))),
    }
    for kind, attribute in TAG_KINDS.items():
        spans[kind] = tuple((t.i, t.i + 1) for t in doc if getattr(t, f"{attribute}_") == kind)
    return ParsedCaption(tuple(t.text for t in doc), tuple(t.idx for t in doc), tuple(t.tag_ for t in doc),
                         tuple(t.pos_ for t in doc), spans)


def parse_captions(captions: Sequence[str], batch_size: int = 256) -> dict[str, ParsedCaption]:
    """Each distinct caption parsed once, through one ``nlp.pipe`` pass (the parser dominates: about 450-600
    captions/s on one shared CPU core; spaCy's ``n_process=2`` was slower on this 2-core machine)."""
    distinct = list(dict.fromkeys(captions))
    if not distinct:
        return {}
    nlp = load_spacy()
    matcher = _verb_matcher(nlp)
    disable = [name for name in nlp.pipe_names if name not in PARSE_PIPES]
    return {text: _parse(doc, matcher)
            for text, doc in zip(distinct, nlp.pipe(distinct, disable=disable, batch_size=batch_size))}


def swap(tokens: Sequence[str], a: Span, b: Span) -> list[str]:
    """``tokens`` with the non-overlapping spans ``a`` and ``b`` exchanged."""
    (s1, e1), (s2, e2) = sorted((a, b))
    return [*tokens[:s1], *tokens[s2:e2], *tokens[e1:s2], *tokens[s1:e1], *tokens[e2:]]


def _key(tokens: Sequence[str]) -> tuple[str, ...]:
    return tuple(t.lower() for t in tokens if t not in IGNORED)


def candidates(parsed: ParsedCaption, kind: str) -> list[str]:
    """Every negative of ``kind`` (one per pair of elements whose swap changes the caption), in pair order."""
    original = _key(parsed.tokens)
    out = []
    for a, b in itertools.combinations(parsed.spans[kind], 2):
        swapped = swap(parsed.tokens, a, b)
        if _key(swapped) != original:
            text = " ".join(swapped)
            out.append(text.lower() if kind in PHRASE_KINDS else text)
    return out


def sample_negatives(parsed: ParsedCaption, rng) -> list[NegativeCaption]:
    """One negative per kind that has one (drawn with ``rng``), duplicates across kinds dropped."""
    found: dict[str, NegativeCaption] = {}
    for kind in NEGATIVE_KINDS:
        options = candidates(parsed, kind)
        if options:
            text = options[int(rng.integers(len(options)))]
            found.setdefault(text, NegativeCaption(text, kind))  # two kinds can give the same string: keep one
    return list(found.values())


def generate_negatives(captions: Sequence[str], seed: int = 0) -> list[list[NegativeCaption]]:
    """Hard negatives of each caption (possibly none), in ``NEGATIVE_KINDS`` order: one spaCy pass over the distinct
    captions, each caption's negatives depending only on (``seed``, its text)."""
    drawn = {caption: sample_negatives(p, caption_rng(seed, RNG_PURPOSE, caption))
             for caption, p in parse_captions(captions).items()}
    return [list(drawn[caption]) for caption in captions]
