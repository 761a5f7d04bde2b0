"""Hard positives made by rule, where the paper used hand-written replacements (REPLACE) or an LLM (COCO, §4.1).

Kamath et al. hand-wrote one replacement per frequent VL-CheckList word ("red" -> "crimson", "next to" -> "near",
§2.4) and prompted LLaMA-2 70B for the COCO fine-tuning captions (§4.1). Neither can be rerun offline, so two
deterministic rules on spaCy Penn tags stand in (the README's "The released REPLACE text, offline" and "Full profile";
``describe()`` records them): REPLACE (``replace_positives``) puts WordNet's most frequent synonym in place of the word
c_n replaced, the rest of c kept byte for byte; SWAP (``swap_positives``) exchanges two noun phrases around "and", or
around a spatial relation, which becomes its converse. Both return None where no rule applies (never c itself).
"""
from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass
from importlib.metadata import version
from typing import Mapping, Sequence

from common.errors import WorkspaceError
from common.text.caption_text import spacy_info
from common.text.crepe_style import Parsed, parse_captions
from papers.hard_positives.lexical import wordnet, wordnet_info

WORDNET_POS = (("NN", "n"), ("VB", "v"), ("JJ", "a"), ("RB", "r"))
"""Penn tag prefix -> WordNet part of speech; other tags (IN, DT, CC, ...) have no WordNet entry."""
BASE_TAGS = frozenset({"NN", "NNP", "VB", "VBP", "JJ", "RB"})
"""Tags whose surface form is the lemma itself: no inflection."""
REASONS = ("ok", "no-edit", "several-edits", "insertion", "no-wordnet-pos", "not-in-wordnet", "no-synonym",
           "same-as-caption")
"""Why a REPLACE gave what it gave: a positive ("ok"), or why none."""

NP_PATTERN = re.compile(r"(?:<(?:DT|PRP\$|CD|PDT)>(?:<(?:JJ|JJR|JJS|VBN|VBG|NN|NNS|NNP|NNPS|HYPH)>)*"
                        r"|(?:<(?:JJ|JJR|JJS|NN|NNS|NNP|NNPS|HYPH)>)*)<(?:NN|NNS|NNP|NNPS)>")
"""A noun phrase over the tag string ``<DT><JJ><NN>...``; participles are modifiers only after a determiner ("the
crouched cat", not "holding cat")."""
ATTACHES_BEFORE = frozenset({"HYPH", "POS", "RB", "RBR", "RBS", "JJ", "JJR", "JJS", "NN", "NNS", "NNP", "NNPS", "DT",
                             "PRP$", "CD", "PDT", "VBN"})
"""A tag that, just before the first noun phrase, would belong to it ("a well-dressed man", "the man's dog", "a
parked car"): the phrase is then not whole and no swap is made. A present participle is not in it: "holding cat"
is more often a verb and its object."""
ATTACHES_AFTER = frozenset({"HYPH", "POS", "NN", "NNS", "NNP", "NNPS"})
"""Likewise just after the second noun phrase ("a cat's toy")."""
CONVERSE_RELATIONS = (("to the left of", "to the right of"), ("left of", "right of"), ("above", "below"),
                      ("in front of", "behind"))
"""Spatial relations and their converses (both ways): "X above Y" means "Y below X"."""


class RuleError(WorkspaceError):
    """Input the rules cannot take (a caption and negative lists of different lengths)."""


# WordNet look-ups (cached: the benchmark repeats a few dozen words thousands of times)
def wordnet_pos(tag: str) -> str | None:
    """WordNet part of speech of a Penn tag (None for prepositions, determiners, ...)."""
    return next((pos for prefix, pos in WORDNET_POS if tag.startswith(prefix)), None)


@functools.cache
def lemma_of(word: str, pos: str) -> str | None:
    """WordNet's base form of ``word`` as ``pos`` (``morphy``: "walking" -> "walk"), None when not a lemma."""
    return wordnet().morphy(word.lower(), pos)


@functools.cache
def wordnet_synonyms(lemma: str, pos: str) -> tuple[tuple[str, int, int], ...]:
    """Every other lemma of ``lemma``'s ``pos`` synsets, once each: (lemma with spaces, first sense rank, SemCor
    count), in WordNet's order (senses by frequency)."""
    seen: dict[str, tuple[str, int, int]] = {}
    for rank, synset in enumerate(wordnet().synsets(lemma, pos)):
        for candidate in synset.lemmas():
            name = candidate.name().replace("_", " ")
            if name.lower() != lemma.lower() and name not in seen:
                seen[name] = (name, rank, candidate.count())
    return tuple(seen.values())


@functools.cache
def choose_synonym(lemma: str, pos: str) -> str | None:
    """The first sense that has another lemma; in it the lemma with the highest SemCor count (ties: WordNet's order)."""
    candidates = wordnet_synonyms(lemma, pos)
    in_sense = [c for c in candidates if c[1] == candidates[0][1]]
    return max(in_sense, key=lambda c: c[2])[0] if in_sense else None  # max keeps the first of equal counts


def inflect(lemma: str, tag: str) -> str:
    """``lemma`` (a WordNet lemma, maybe several words) in the form of ``tag``: its first word is inflected."""
    if tag in BASE_TAGS:
        return lemma
    # deferred: loads lemminflect only when called
    from lemminflect import getInflection

    first, _, rest = lemma.partition(" ")
    forms = getInflection(first, tag, inflect_oov=True)
    return " ".join(filter(None, (forms[0] if forms else first, rest)))


def _cased_like(word: str, model: str) -> str:
    if len(model) > 1 and model.isupper():
        return word.upper()
    return word[:1].upper() + word[1:] if model[:1].isupper() else word


@dataclass(frozen=True)
class Replacement:
    """What REPLACE did with one (caption, negative): the positive, or None with the reason."""

    caption: str
    negative: str
    positive: str | None
    reason: str
    span: str = ""
    """The words of the caption that the negative replaced ("" when there is no single replaced span)."""
    word: str = ""
    """The word of the span that the rule replaced ("" when none was chosen)."""
    tag: str = ""
    lemma: str = ""
    synonym: str = ""
    """The chosen WordNet lemma (spaces, not underscores), before inflection."""
    replacement: str = ""
    """What took the word's place in the positive."""


def replaced_span(caption: Sequence[str], negative: Sequence[str]) -> tuple[int, int] | str:
    """Token positions [start, end) of ``caption`` that ``negative`` replaced, or the reason there is no one span."""
    ops = [op for op in difflib.SequenceMatcher(None, list(caption), list(negative), autojunk=False).get_opcodes()
           if op[0] != "equal"]
    if not ops:
        return "no-edit"
    if len(ops) > 1:
        return "several-edits"
    _, start, end, _, _ = ops[0]
    return (start, end) if end > start else "insertion"


def _head(p: Parsed, positions: Sequence[int]) -> int | None:
    """The span's word to replace: its one token, or its first verb, else its first adjective."""
    if len(positions) == 1:
        return positions[0] if wordnet_pos(p.tags[positions[0]]) else None
    for wanted in (lambda i: p.pos[i] == "VERB", lambda i: p.tags[i].startswith("JJ")):
        found = next((i for i in positions if wanted(i) and p.tokens[i].isalpha()), None)
        if found is not None:
            return found
    return None


def _words(p: Parsed) -> list[int]:
    """Positions of the tokens that are not whitespace (spaCy makes a token of a double space)."""
    return [i for i, token in enumerate(p.tokens) if not token.isspace()]


def replace_one(p: Parsed, n: Parsed, caption: str, negative: str) -> Replacement:
    """REPLACE on one parsed (caption, negative)."""
    at, n_at = _words(p), _words(n)
    span = replaced_span([p.tokens[i].lower() for i in at], [n.tokens[i].lower() for i in n_at])
    if isinstance(span, str):
        return Replacement(caption, negative, None, span)
    positions = at[span[0]:span[1]]
    words = " ".join(p.tokens[i] for i in positions)
    i = _head(p, positions)
    if i is None:
        return Replacement(caption, negative, None, "no-wordnet-pos", span=words)
    word, tag = p.tokens[i], p.tags[i]
    pos = wordnet_pos(tag)
    assert pos is not None
    lemma = lemma_of(word, pos)
    if lemma is None:
        return Replacement(caption, negative, None, "not-in-wordnet", span=words, word=word, tag=tag)
    synonym = choose_synonym(lemma, pos)
    if synonym is None:
        return Replacement(caption, negative, None, "no-synonym", span=words, word=word, tag=tag, lemma=lemma)
    replacement = _cased_like(inflect(synonym, tag), word)
    tokens = list(p.tokens)
    tokens[i] = replacement
    positive = p.text(tokens)
    if positive.lower() == caption.lower():
        return Replacement(caption, negative, None, "same-as-caption", words, word, tag, lemma, synonym, replacement)
    return Replacement(caption, negative, positive, "ok", words, word, tag, lemma, synonym, replacement)


def replace_positives(captions: Sequence[str], negatives: Sequence[str], *,
                      parsed: Mapping[str, Parsed] | None = None) -> list[Replacement]:
    """REPLACE for each (c, c_n); ``parsed``: ``parse_captions`` of both, when the caller has it already."""
    if len(captions) != len(negatives):
        raise RuleError(f"replace_positives: {len(captions)} captions but {len(negatives)} negatives")
    if parsed is None:
        parsed = parse_captions(list(captions) + list(negatives))
    made = {(c, n): replace_one(parsed[c], parsed[n], c, n) for c, n in dict.fromkeys(zip(captions, negatives))}
    return [made[key] for key in zip(captions, negatives)]


def noun_phrases(p: Parsed) -> list[tuple[int, int]]:
    """Every (start, end) token range that is a noun phrase (``NP_PATTERN``, matched on the tag string)."""
    starts, text = [], ""
    for tag in p.tags:
        starts.append(len(text))
        text += f"<{tag}>"
    ends = {s + len(f"<{t}>"): i + 1 for i, (s, t) in enumerate(zip(starts, p.tags))}
    # every match starting at a token (each possible length), found by trying every end
    return [(i, ends[end]) for i, s in enumerate(starts) for end in range(len(text), s, -1)
            if text[end - 1] == ">" and NP_PATTERN.fullmatch(text, s, end)]


def _whole(p: Parsed, spans: list[tuple[int, int]], at: int, ending: bool) -> tuple[int, int] | None:
    """The longest noun phrase ending (else starting) at token ``at``, when it is whole (nothing next to it would
    belong to it)."""
    found = [s for s in spans if s[1 if ending else 0] == at]
    if not found:
        return None
    if ending:
        start = min(found)[0]
        return (start, at) if start == 0 or p.tags[start - 1] not in ATTACHES_BEFORE else None
    end = max(found)[1]
    return (at, end) if end == len(p.tags) or p.tags[end] not in ATTACHES_AFTER else None


def _swap(p: Parsed, left: tuple[int, int], middle: Sequence[str], right: tuple[int, int]) -> str | None:
    """``p`` with noun phrases ``left`` and ``right`` exchanged and ``middle`` between them; the first position keeps
    its capital (a word moved away from it is lower-cased unless all capitals)."""
    a, b = ([[t, s] for t, s in zip(p.tokens[i:j], p.spaces[i:j])] for i, j in (left, right))
    if [t.lower() for t, _ in a] == [t.lower() for t, _ in b]:
        return None
    if left[0] == 0 and p.tokens[0][:1].isupper():
        b[0][0] = b[0][0][:1].upper() + b[0][0][1:]
        if not (len(p.tokens[0]) > 1 and p.tokens[0].isupper()):  # not an acronym: spaCy's NNP is unreliable here
            a[0][0] = a[0][0][:1].lower() + a[0][0][1:]
    b[-1][1] = " "
    a[-1][1] = p.spaces[right[1] - 1]
    pieces = (list(zip(p.tokens[:left[0]], p.spaces[:left[0]])) + b + [(w, " ") for w in middle] + a
              + list(zip(p.tokens[right[1]:], p.spaces[right[1]:])))
    return "".join(t + s for t, s in pieces)


def swap_one(p: Parsed) -> str | None:
    """SWAP on one parsed caption: "NP1 and NP2" -> "NP2 and NP1", else "NP1 REL NP2" -> "NP2 CONVERSE NP1"."""
    spans = noun_phrases(p)
    lower = [t.lower() for t in p.tokens]
    joints = [(i, 1, [p.tokens[i]]) for i, token in enumerate(lower) if token == "and" and p.tags[i] == "CC"]
    for relation, converse in CONVERSE_RELATIONS + tuple((b, a) for a, b in CONVERSE_RELATIONS):
        words = relation.split()
        joints += [(i, len(words), converse.split()) for i in range(len(lower) - len(words) + 1)
                   if lower[i:i + len(words)] == words]
    for i, length, middle in joints:
        left, right = _whole(p, spans, i, ending=True), _whole(p, spans, i + length, ending=False)
        swapped = _swap(p, left, middle, right) if left and right else None
        if swapped is not None:
            return swapped
    return None


def swap_positives(captions: Sequence[str], *, parsed: Mapping[str, Parsed] | None = None) -> list[str | None]:
    """SWAP for each caption (None where no rule applies); ``parsed`` as ``replace_positives``."""
    if parsed is None:
        parsed = parse_captions(captions)
    swapped = [swap_one(parsed[caption]) for caption in captions]
    return [None if s is None or s.lower() == c.lower() else s for c, s in zip(captions, swapped)]


def describe() -> dict:
    """Provenance of the rules (for a stage's context sidecar)."""
    return {
        "generator": "papers.hard_positives.rules",
        "replace": {
            "span": "token diff of (c, c_n) (difflib); exactly one replaced span of c, else no positive",
            "word": "the span if one token; else its first verb (spaCy pos VERB), else its first adjective (JJ*)",
            "part_of_speech": {prefix + "*": pos for prefix, pos in WORDNET_POS},
            "lemma": "WordNet morphy of the word for that part of speech",
            "synonym": "first synset (WordNet's sense order) holding a lemma other than the word; in it the lemma "
                       "with the highest Lemma.count(), ties by WordNet's order",
            "inflection": f"lemminflect {version('lemminflect')} getInflection(first word, Penn tag, "
                          "inflect_oov=True); tags kept as lemma: " + ", ".join(sorted(BASE_TAGS)),
            "reasons": list(REASONS),
        },
        "swap": {
            "and": "NP1 and NP2 -> NP2 and NP1 (the first 'and' with noun phrases on both sides that differ)",
            "converse": [list(pair) for pair in CONVERSE_RELATIONS],
            "noun_phrase": NP_PATTERN.pattern,
        },
        "wordnet": wordnet_info(),
        "spacy": spacy_info().as_dict(),
    }

