"""Hard negatives as edits of a claim: seven types (replace, swap, add), fluent and false by construction
(docs/mini-world.md, "Hard negatives").
"""
from __future__ import annotations

import random
import re
from dataclasses import replace
from typing import Callable

from common.miniworld import lexicon
from common.miniworld.claims import Claim, NounPhrase, RelationClaim, satisfies
from common.miniworld.scene import Scene, weighted_choice

NegativeGenerator = Callable[[Scene, Claim, random.Random], "Claim | None"]
MAX_TRIES = 8


def _accept(scene: Scene, positive: Claim, negative: Claim) -> Claim | None:
    if satisfies(scene, negative) or negative.text() == positive.text():
        return None
    return negative


def _with_phrase(claim: Claim, index: int, phrase: NounPhrase) -> Claim:
    phrases = list(claim.phrases)
    phrases[index] = phrase
    return replace(claim, phrases=tuple(phrases))


def replace_obj(scene: Scene, claim: Claim, rng: random.Random) -> Claim | None:
    """Replace one phrase's object (shape) with another that makes the caption false."""
    for _ in range(MAX_TRIES):
        i = rng.randrange(len(claim.phrases))
        phrase = claim.phrases[i]
        shape = rng.choice([s for s in lexicon.SHAPES if s != phrase.shape])
        found = _accept(scene, claim, _with_phrase(claim, i, replace(phrase, shape=shape)))
        if found:
            return found
    return None


def replace_att(scene: Scene, claim: Claim, rng: random.Random) -> Claim | None:
    """Replace one stated attribute (colour or size) with a plausible value that is false."""
    slots = [(i, k) for i, p in enumerate(claim.phrases) for k in lexicon.ATTRIBUTE_KINDS if p.attribute(k)]
    for _ in range(MAX_TRIES if slots else 0):
        i, kind = rng.choice(slots)
        phrase = claim.phrases[i]
        value = weighted_choice(rng, lexicon.attribute_prior(kind, phrase.shape), exclude=[phrase.attribute(kind)])
        found = _accept(scene, claim, _with_phrase(claim, i, phrase.with_attribute(kind, value)))
        if found:
            return found
    return None


def replace_rel(scene: Scene, claim: Claim, rng: random.Random) -> Claim | None:
    """Replace one stated relation with another one that does not hold."""
    for _ in range(MAX_TRIES if claim.relations else 0):
        k = rng.randrange(len(claim.relations))
        old = claim.relations[k]
        relations = list(claim.relations)
        relations[k] = replace(old, predicate=rng.choice([r for r in lexicon.RELATIONS if r != old.predicate]))
        found = _accept(scene, claim, replace(claim, relations=tuple(relations)))
        if found:
            return found
    return None


def swap_obj(scene: Scene, claim: Claim, rng: random.Random) -> Claim | None:
    """Swap two related noun phrases in the sentence ("A above B" -> "B above A")."""
    if not claim.relations:
        return None
    for _ in range(MAX_TRIES):
        r = rng.choice(claim.relations)
        i, j = r.subject, r.object
        phrases = list(claim.phrases)
        phrases[i], phrases[j] = phrases[j], phrases[i]
        found = _accept(scene, claim, replace(claim, phrases=tuple(phrases)))
        if found:
            return found
    return None


def swap_att(scene: Scene, claim: Claim, rng: random.Random) -> Claim | None:
    """Exchange the values of one attribute kind between two phrases ("red A, blue B" -> "blue A, red B")."""
    pairs = [
        (i, j, kind)
        for kind in lexicon.ATTRIBUTE_KINDS
        for i in range(len(claim.phrases)) for j in range(i + 1, len(claim.phrases))
        if claim.phrases[i].attribute(kind) and claim.phrases[j].attribute(kind)
        and claim.phrases[i].attribute(kind) != claim.phrases[j].attribute(kind)
    ]
    rng.shuffle(pairs)
    for i, j, kind in pairs:
        a, b = claim.phrases[i], claim.phrases[j]
        edited = _with_phrase(claim, i, a.with_attribute(kind, b.attribute(kind)))
        edited = _with_phrase(edited, j, b.with_attribute(kind, a.attribute(kind)))
        found = _accept(scene, claim, edited)
        if found:
            return found
    return None


def _conjoin(template: str, anchor: int, new: int) -> str:
    """Insert "and {n<new>}" after phrase ``anchor``; a conjoined subject takes a plural verb."""
    slot = "{n%d}" % anchor
    joined = "{n%d} and {n%d}" % (anchor, new)
    template = template.replace(slot, joined, 1)
    return re.sub(re.escape(joined) + r"(,? which)? is\b", lambda m: joined + (m.group(1) or "") + " are", template)


def add_obj(scene: Scene, claim: Claim, rng: random.Random) -> Claim | None:
    """Add a new, absent object next to one phrase ("A above B" -> "A and C above B")."""
    for _ in range(MAX_TRIES):
        shape = rng.choice(lexicon.SHAPES)
        color = weighted_choice(rng, lexicon.color_prior(shape))
        new = NounPhrase(shape=shape, color=color if rng.random() < 0.85 else None)
        anchor = rng.randrange(len(claim.phrases))
        k = len(claim.phrases)
        template = _conjoin(claim.template, anchor, k)
        edited = replace(claim, phrases=claim.phrases + (new,), template=template)
        found = _accept(scene, claim, edited)
        if found:
            return found
    return None


def add_att(scene: Scene, claim: Claim, rng: random.Random) -> Claim | None:
    """Give one phrase an attribute it did not state, with a plausible value that is false."""
    slots = [(i, k) for i, p in enumerate(claim.phrases) for k in lexicon.ATTRIBUTE_KINDS if p.attribute(k) is None]
    for _ in range(MAX_TRIES if slots else 0):
        i, kind = rng.choice(slots)
        phrase = claim.phrases[i]
        value = weighted_choice(rng, lexicon.attribute_prior(kind, phrase.shape))
        found = _accept(scene, claim, _with_phrase(claim, i, phrase.with_attribute(kind, value)))
        if found:
            return found
    return None


EDIT_TYPES: dict[str, NegativeGenerator] = {
    "add_att": add_att,
    "add_obj": add_obj,
    "replace_att": replace_att,
    "replace_obj": replace_obj,
    "replace_rel": replace_rel,
    "swap_att": swap_att,
    "swap_obj": swap_obj,
}
"""The seven hard-negative edits, named as SugarCrepe's released files name its categories (the taxonomy BiVLC and
the hard-positives paper reuse)."""

__all__ = ["EDIT_TYPES", "NegativeGenerator", "RelationClaim"]
