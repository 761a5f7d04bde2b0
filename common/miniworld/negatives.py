"""Hard negatives as edits of a claim: seven types (replace, swap, add), fluent and false by construction
(docs/mini-world.md, "Hard negatives").
"""
from __future__ import annotations

import random
import re
from dataclasses import replace
from typing import Callable, Iterable

from common.miniworld import lexicon
from common.miniworld.claims import Claim, NounPhrase, RelationClaim, satisfies
from common.miniworld.scene import Scene, weighted_choice

NegativeGenerator = Callable[[Scene, Claim, random.Random], "Claim | None"]
MAX_TRIES = 8


def _first_false(scene: Scene, positive: Claim, edits: Iterable[Claim]) -> Claim | None:
    """The first of ``edits`` (drawn one at a time: the rest never touch the rng) false of the scene and worded
    otherwise than ``positive``."""
    return next((e for e in edits if not satisfies(scene, e) and e.text() != positive.text()), None)


def _with_phrase(claim: Claim, index: int, phrase: NounPhrase) -> Claim:
    phrases = list(claim.phrases)
    phrases[index] = phrase
    return replace(claim, phrases=tuple(phrases))


def replace_obj(scene: Scene, claim: Claim, rng: random.Random) -> Claim | None:
    """Replace one phrase's object (shape) with another that makes the caption false."""
    def edit() -> Claim:
        i = rng.randrange(len(claim.phrases))
        phrase = claim.phrases[i]
        shape = rng.choice([s for s in lexicon.SHAPES if s != phrase.shape])
        return _with_phrase(claim, i, replace(phrase, shape=shape))

    return _first_false(scene, claim, (edit() for _ in range(MAX_TRIES)))


def replace_att(scene: Scene, claim: Claim, rng: random.Random) -> Claim | None:
    """Replace one stated attribute (colour or size) with a plausible value that is false."""
    slots = [(i, k) for i, p in enumerate(claim.phrases) for k in lexicon.ATTRIBUTE_KINDS if p.attribute(k)]

    def edit() -> Claim:
        i, kind = rng.choice(slots)
        phrase = claim.phrases[i]
        value = weighted_choice(rng, lexicon.attribute_prior(kind, phrase.shape), exclude=[phrase.attribute(kind)])
        return _with_phrase(claim, i, phrase.with_attribute(kind, value))

    return _first_false(scene, claim, (edit() for _ in range(MAX_TRIES if slots else 0)))


def replace_rel(scene: Scene, claim: Claim, rng: random.Random) -> Claim | None:
    """Replace one stated relation with another one that does not hold."""
    def edit() -> Claim:
        k = rng.randrange(len(claim.relations))
        old = claim.relations[k]
        relations = list(claim.relations)
        relations[k] = replace(old, predicate=rng.choice([r for r in lexicon.RELATIONS if r != old.predicate]))
        return replace(claim, relations=tuple(relations))

    return _first_false(scene, claim, (edit() for _ in range(MAX_TRIES if claim.relations else 0)))


def swap_obj(scene: Scene, claim: Claim, rng: random.Random) -> Claim | None:
    """Swap two related noun phrases in the sentence ("A above B" -> "B above A")."""
    def edit() -> Claim:
        r = rng.choice(claim.relations)
        phrases = list(claim.phrases)
        phrases[r.subject], phrases[r.object] = phrases[r.object], phrases[r.subject]
        return replace(claim, phrases=tuple(phrases))

    return _first_false(scene, claim, (edit() for _ in range(MAX_TRIES if claim.relations else 0)))


def swap_att(scene: Scene, claim: Claim, rng: random.Random) -> Claim | None:
    """Exchange the values of one attribute kind between two phrases ("red A, blue B" -> "blue A, red B")."""
    pairs = [
        (i, j, kind)
        for kind in lexicon.ATTRIBUTE_KINDS
        for i in range(len(claim.phrases)) for j in range(i + 1, len(claim.phrases))
        if claim.phrases[i].attribute(kind) and claim.phrases[j].attribute(kind)
        and claim.phrases[i].attribute(kind) != claim.phrases[j].attribute(kind)
    ]

    def swapped(i: int, j: int, kind: str) -> Claim:
        a, b = claim.phrases[i], claim.phrases[j]
        edited = _with_phrase(claim, i, a.with_attribute(kind, b.attribute(kind)))
        return _with_phrase(edited, j, b.with_attribute(kind, a.attribute(kind)))

    rng.shuffle(pairs)
    return _first_false(scene, claim, (swapped(i, j, kind) for i, j, kind in pairs))


def _conjoin(template: str, anchor: int, new: int) -> str:
    """Insert "and {n<new>}" after phrase ``anchor``; a conjoined subject takes a plural verb."""
    slot = "{n%d}" % anchor
    joined = "{n%d} and {n%d}" % (anchor, new)
    template = template.replace(slot, joined, 1)
    return re.sub(re.escape(joined) + r"(,? which)? is\b", lambda m: joined + (m.group(1) or "") + " are", template)


def add_obj(scene: Scene, claim: Claim, rng: random.Random) -> Claim | None:
    """Add a new, absent object next to one phrase ("A above B" -> "A and C above B")."""
    def edit() -> Claim:
        shape = rng.choice(lexicon.SHAPES)
        color = weighted_choice(rng, lexicon.color_prior(shape))
        new = NounPhrase(shape=shape, color=color if rng.random() < 0.85 else None)
        template = _conjoin(claim.template, rng.randrange(len(claim.phrases)), len(claim.phrases))
        return replace(claim, phrases=claim.phrases + (new,), template=template)

    return _first_false(scene, claim, (edit() for _ in range(MAX_TRIES)))


def add_att(scene: Scene, claim: Claim, rng: random.Random) -> Claim | None:
    """Give one phrase an attribute it did not state, with a plausible value that is false."""
    slots = [(i, k) for i, p in enumerate(claim.phrases) for k in lexicon.ATTRIBUTE_KINDS if p.attribute(k) is None]

    def edit() -> Claim:
        i, kind = rng.choice(slots)
        phrase = claim.phrases[i]
        value = weighted_choice(rng, lexicon.attribute_prior(kind, phrase.shape))
        return _with_phrase(claim, i, phrase.with_attribute(kind, value))

    return _first_false(scene, claim, (edit() for _ in range(MAX_TRIES if slots else 0)))


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
