"""Hard positives: captions that differ from a true caption in a word or in word order but keep its meaning
(docs/mini-world.md, "Hard positives").
"""
from __future__ import annotations

import itertools
import random
from collections import Counter
from dataclasses import dataclass, replace
from typing import Sequence

from common.errors import unknown_name
from common.miniworld import lexicon
from common.miniworld.claims import Claim, RelationClaim, satisfies, surface_form
from common.miniworld.scene import Scene
from common.miniworld.templates import Atom, Unit, atom_value, atoms, differs, render, sentence_units

POSITIVE_KINDS: tuple[str, ...] = ("replace", "swap")
"""The two perturbations of the paper's benchmark and fine-tuning data (REPLACE and SWAP)."""


@dataclass(frozen=True)
class HardPositive:
    """A hard positive caption and its meaning (``claim``, true of the scene); ``variant`` names the rule
    ("synonym_size", ..., "reorder_pair", ...), ``atom`` the fact whose wording a replacement changed."""

    text: str
    claim: Claim
    kind: str
    variant: str
    atom: Atom | None = None


def synonym_atoms(claim: Claim) -> list[Atom]:
    """The stated facts whose concept has another surface form (the only ones a replacement can reword)."""
    return [a for a in atoms(claim) if len(lexicon.SURFACE[atom_value(claim, a)]) > 1]


def _with_articles(units: list[Unit]) -> list[Unit]:
    """Each article agreeing with the word after it ("a" / "an"), as ``claims.realize_phrase`` writes it."""
    return [Unit(lexicon.indefinite_article(units[i + 1].text), "article") if u.role == "article" else u
            for i, u in enumerate(units)]


def synonym_positive(scene: Scene, claim: Claim, atom: Atom, rng: random.Random) -> HardPositive | None:
    """The caption with the words of ``atom`` replaced by another surface form of the same concept (drawn
    uniformly among the others), or None when the concept has no other form."""
    concept = atom_value(claim, atom)
    current = surface_form(concept, claim.lexical_seed)
    others = [form for form in lexicon.SURFACE[concept] if form != current]
    if not others or not satisfies(scene, claim):
        return None
    units = sentence_units(claim)
    if sum(u.atom == atom for u in units) != 1:  # pragma: no cover - every atom is written once
        raise AssertionError(f"atom {atom} is not written exactly once in {claim}")
    word = rng.choice(others)
    text = render(_with_articles([Unit(word, u.role, u.atom) if u.atom == atom else u for u in units]))
    if not differs(text, claim.text()):  # pragma: no cover - another form is another word
        return None
    return HardPositive(text, claim, "replace", f"synonym_{atom.kind}", atom)


def replace_positive(scene: Scene, claim: Claim, rng: random.Random) -> HardPositive | None:
    """A synonym replacement of one fact drawn uniformly among those that have one."""
    candidates = synonym_atoms(claim)
    return synonym_positive(scene, claim, rng.choice(candidates), rng) if candidates else None


def replaced_atom(claim: Claim, negative: Claim) -> Atom | None:
    """The one fact a replace negative changed (same sentence, one atom's value different), or None when the
    negative is not a single replacement of ``claim``."""
    if negative.template != claim.template or len(negative.phrases) != len(claim.phrases) \
            or len(negative.relations) != len(claim.relations):
        return None
    mine, theirs = atoms(claim), atoms(negative)
    if mine != theirs:  # a fact stated in one and not the other (an added attribute) is no replacement
        return None
    changed = [a for a in mine if atom_value(claim, a) != atom_value(negative, a)]
    if any((r.subject, r.object) != (s.subject, s.object) for r, s in zip(claim.relations, negative.relations)):
        return None
    return changed[0] if len(changed) == 1 else None


def positive_for_negative(scene: Scene, claim: Claim, negative: Claim, rng: random.Random) -> HardPositive | None:
    """The benchmark's pairing: c_p rewords the very fact c_n replaced (None when c_n is not a one-fact
    replacement or that fact's concept has no other surface form)."""
    atom = replaced_atom(claim, negative)
    return None if atom is None else synonym_positive(scene, claim, atom, rng)


def reordered(claim: Claim, order: Sequence[int]) -> Claim | None:
    """The claim with its phrases in ``order`` (new position p says old phrase ``order[p]``) and the same facts, or
    None when the kept template cannot say them in that order (each relation slot must join two phrases the claim
    relates, either way round, and say each stated relation once)."""
    if sorted(order) != list(range(len(claim.phrases))):
        raise ValueError(f"reordered: {list(order)} is not a permutation of the claim's {len(claim.phrases)} phrases")
    stated = {(r.subject, r.object): k for k, r in enumerate(claim.relations)}
    used: set[int] = set()
    relations = []
    for r in claim.relations:
        a, b = order[r.subject], order[r.object]
        if (a, b) in stated:
            k, predicate = stated[a, b], claim.relations[stated[a, b]].predicate
        elif (b, a) in stated:
            k, predicate = stated[b, a], lexicon.CONVERSE[claim.relations[stated[b, a]].predicate]
        else:
            return None
        if k in used:
            return None
        used.add(k)
        relations.append(RelationClaim(r.subject, predicate, r.object))
    return replace(claim, phrases=tuple(claim.phrases[i] for i in order), relations=tuple(relations))


def _facts(claim: Claim, mapping: Sequence[int]) -> Counter:
    """The claim's relation facts with phrases renamed by ``mapping``, each fact in one canonical direction."""
    out: Counter = Counter()
    for r in claim.relations:
        s, o, p = mapping[r.subject], mapping[r.object], r.predicate
        if (s, o) > (o, s):
            s, o, p = o, s, lexicon.CONVERSE[p]
        out[(s, p, o)] += 1
    return out


def same_meaning(a: Claim, b: Claim) -> bool:
    """Whether two claims state the same facts: a matching of their phrases (equal noun phrases) under which their
    relations coincide, each read in either direction (``left_of`` from x to y is ``right_of`` from y to x)."""
    if len(a.phrases) != len(b.phrases) or len(a.relations) != len(b.relations):
        return False
    target = _facts(b, range(len(b.phrases)))
    return any(all(a.phrases[i] == b.phrases[mapping[i]] for i in range(len(a.phrases)))
               and _facts(a, mapping) == target for mapping in itertools.permutations(range(len(b.phrases))))


SHAPE_OF_RELATIONS = {((0, 1),): "relation", ((0, 1), (0, 2)): "fork", ((0, 1), (1, 2)): "chain"}
"""The sentence shapes of ``claims.PATTERNS`` with relations, by their relation slots (for the variant's name)."""
PHRASE_LISTS = {2: "pair", 3: "triple"}


def _sentence_shape(claim: Claim) -> str:
    slots = tuple((r.subject, r.object) for r in claim.relations)
    if not slots:
        return PHRASE_LISTS.get(len(claim.phrases), f"{len(claim.phrases)}_phrases")
    return SHAPE_OF_RELATIONS.get(slots, "other")


def swap_positive(scene: Scene, claim: Claim, rng: random.Random) -> HardPositive | None:
    """The phrases said in another order, every fact kept (a permutation drawn uniformly among those the sentence
    can say and that change its text)."""
    identity = tuple(range(len(claim.phrases)))
    orders = [p for p in itertools.permutations(identity) if p != identity]
    rng.shuffle(orders)
    caption = claim.text()
    for order in orders:
        edited = reordered(claim, order)
        if edited is None or not differs(edited.text(), caption):
            continue
        if not same_meaning(claim, edited) or not satisfies(scene, edited):  # pragma: no cover - by construction
            raise AssertionError(f"reordering {claim} as {order} changed its meaning")
        return HardPositive(edited.text(), edited, "swap", f"reorder_{_sentence_shape(claim)}")
    return None


def hard_positive(scene: Scene, claim: Claim, kind: str, rng: random.Random) -> HardPositive | None:
    """A hard positive of ``kind`` ("replace" or "swap") for a true claim about the scene, or None when the claim
    offers none."""
    if kind == "replace":
        return replace_positive(scene, claim, rng)
    if kind == "swap":
        return swap_positive(scene, claim, rng)
    raise unknown_name("hard positive kind", kind, POSITIVE_KINDS)
