"""Rule-based hard negatives in the style of ARO, CREPE and VL-CheckList: the artifacts SugarCrepe removes
(docs/mini-world.md, "Rule-based negatives").
"""
from __future__ import annotations

import itertools
import random
import re
import string
from dataclasses import dataclass, replace
from typing import Callable, Sequence

from common.errors import unknown_name
from common.miniworld import lexicon
from common.miniworld.claims import Claim, NounPhrase, satisfies, surface_form
from common.miniworld.scene import Scene

TEMPLATE_KINDS: tuple[str, ...] = ("replace", "swap", "negate", "shuffle")
"""The four rule-based forms, named as SugarCrepe Table 5 names ARO+CREPE's columns (REPLACE, SWAP, NEGATE,
SHUFFLE)."""

MAX_TRIES = 8
PHRASE_ROLES: tuple[str, ...] = ("size", "color", "shape")
"""A noun phrase's content words in English order (``NounPhrase.concepts``)."""
CONTENT_ROLES: tuple[str, ...] = (*PHRASE_ROLES, "relation")
VOCABULARY: dict[str, tuple[str, ...]] = {"shape": lexicon.SHAPES, "color": lexicon.COLORS, "size": lexicon.SIZES,
                                          "relation": lexicon.RELATIONS}
"""What a replacement is drawn from, uniformly: the whole lexicon of the atom's kind."""
NOUN_ROLES = frozenset({"shape"})
ADJECTIVE_ROLES = frozenset({"size", "color"})
SHUFFLES: tuple[str, ...] = ("shuffle_nouns_and_adj", "shuffle_allbut_nouns_and_adj", "shuffle_within_trigrams",
                             "shuffle_trigrams")
"""ARO's four Order perturbations (COCO-Order options 2-5), by their upstream names."""


# ----------------------------------------------------------------------------------------------------------------
# The sentence as units with roles
# ----------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Atom:
    """One stated fact of a claim: an attribute or the shape of phrase ``index`` (``kind`` in ``PHRASE_ROLES``), or
    relation ``index`` (``kind == "relation"``)."""

    kind: str
    index: int


@dataclass(frozen=True)
class Unit:
    """A word of the realized sentence, or a multi-word surface form of one concept ("to the left of", "plus
    sign"), with its role: ``article``, ``function`` (the template's own words), ``punct``, or a content role
    (``CONTENT_ROLES``, then ``atom`` says which fact it states)."""

    text: str
    role: str
    atom: Atom | None = None


def sentence_units(claim: Claim) -> list[Unit]:
    """The claim's sentence as ``realize`` writes it, unit by unit (``render(sentence_units(c)) == c.text()``)."""
    units: list[Unit] = []
    for literal, field, _, _ in string.Formatter().parse(claim.template):
        units += [Unit(piece, "punct" if piece == "," else "function") for piece in re.findall(r"[^\s,]+|,", literal)]
        if field is None:
            continue
        index = int(field[1:])
        if field[0] == "n":
            phrase = claim.phrases[index]
            words = [Unit(surface_form(value, claim.lexical_seed), role, Atom(role, index))
                     for role in PHRASE_ROLES if (value := _value(phrase, role)) is not None]
            units += [Unit(lexicon.indefinite_article(words[0].text), "article"), *words]
        else:
            units.append(Unit(surface_form(claim.relations[index].predicate, claim.lexical_seed), "relation",
                              Atom("relation", index)))
    units.append(Unit(".", "punct"))
    return units


def render(units: Sequence[Unit]) -> str:
    """Units joined by spaces, punctuation attached to the word before it, the first letter capitalized."""
    text = ""
    for unit in units:
        text += unit.text if (unit.role == "punct" or not text) else " " + unit.text
    return text[:1].upper() + text[1:]


def _value(phrase: NounPhrase, role: str) -> str | None:
    return phrase.shape if role == "shape" else phrase.attribute(role)


def atoms(claim: Claim) -> list[Atom]:
    """Every fact the claim states, phrase by phrase (size, colour, shape), then its relations."""
    found = [Atom(role, i) for i, p in enumerate(claim.phrases) for role in PHRASE_ROLES if _value(p, role)]
    return found + [Atom("relation", k) for k in range(len(claim.relations))]


def atom_value(claim: Claim, atom: Atom) -> str:
    if atom.kind == "relation":
        return claim.relations[atom.index].predicate
    return _value(claim.phrases[atom.index], atom.kind)


def with_atom(claim: Claim, atom: Atom, value: str) -> Claim:
    """The claim with one fact changed to ``value`` (a concept id)."""
    if atom.kind == "relation":
        relations = list(claim.relations)
        relations[atom.index] = replace(relations[atom.index], predicate=value)
        return replace(claim, relations=tuple(relations))
    phrases = list(claim.phrases)
    phrase = phrases[atom.index]
    phrases[atom.index] = (replace(phrase, shape=value) if atom.kind == "shape"
                           else phrase.with_attribute(atom.kind, value))
    return replace(claim, phrases=tuple(phrases))


def negated_atom_holds(scene: Scene, claim: Claim, negated: Atom) -> bool:
    """Whether the claim with one fact negated ("a red circle *not* above a square") is true of the scene: whether
    it holds with some other value of the atom (every pair of objects stands in exactly one relation)."""
    value = atom_value(claim, negated)
    return any(satisfies(scene, with_atom(claim, negated, other))
               for other in VOCABULARY[negated.kind] if other != value)


# ----------------------------------------------------------------------------------------------------------------
# The four kinds
# ----------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TemplateEdit:
    """A rule-based negative and how it was made (``variant``: which rule of the kind). ``reading``: the claim the
    negative states, false of the scene, where the grammar can state it (None for word salad and negations)."""

    text: str
    kind: str
    variant: str
    reading: Claim | None = None


def differs(text: str, positive: str) -> bool:
    """Whether ``text`` reads differently from ``positive`` (ignoring case: CLIP's tokenizer lowercases)."""
    return text.lower() != positive.lower()


def replace_edit(scene: Scene, claim: Claim, rng: random.Random) -> TemplateEdit | None:
    """One atom to a uniformly drawn other value of its kind, written with a uniformly drawn surface form."""
    candidates = atoms(claim)
    units = sentence_units(claim)
    positive = render(units)
    for _ in range(MAX_TRIES):
        atom = rng.choice(candidates)
        value = rng.choice([v for v in VOCABULARY[atom.kind] if v != atom_value(claim, atom)])
        edited = with_atom(claim, atom, value)
        if satisfies(scene, edited):
            continue
        word = rng.choice(lexicon.SURFACE[value])
        text = render([Unit(word, u.role, u.atom) if u.atom == atom else u for u in units])
        if differs(text, positive):
            return TemplateEdit(text, "replace", f"replace_{atom.kind}", edited)
    return None


def swap_edit(scene: Scene, claim: Claim, rng: random.Random) -> TemplateEdit | None:
    """Two shape nouns across phrases (when false of the scene), or two content words of different roles."""
    units = sentence_units(claim)
    positive = render(units)
    content = [i for i, u in enumerate(units) if u.role in CONTENT_ROLES]
    nouns = [(a, b) for a, b in itertools.combinations(content, 2)
             if units[a].role == units[b].role == "shape"
             and atom_value(claim, units[a].atom) != atom_value(claim, units[b].atom)]
    mixed = [(a, b) for a, b in itertools.combinations(content, 2) if units[a].role != units[b].role]

    def swapped(a: int, b: int) -> str:
        out = list(units)
        out[a], out[b] = Unit(units[b].text, units[a].role), Unit(units[a].text, units[b].role)
        return render(out)

    if nouns and rng.random() < 0.5:
        rng.shuffle(nouns)
        for a, b in nouns:
            first, second = units[a].atom, units[b].atom
            edited = with_atom(with_atom(claim, first, atom_value(claim, second)), second, atom_value(claim, first))
            if not satisfies(scene, edited):
                return TemplateEdit(swapped(a, b), "swap", "swap_nouns", edited)
    if not mixed:
        return None
    a, b = rng.choice(mixed)
    text = swapped(a, b)
    return TemplateEdit(text, "swap", "swap_roles") if differs(text, positive) else None


def negate_edit(scene: Scene, claim: Claim, rng: random.Random) -> TemplateEdit | None:
    """ "There is no X." appended, or "not" before an atom whose negation is false of the scene."""
    units = sentence_units(claim)
    if rng.random() >= 0.5:
        candidates = atoms(claim)
        rng.shuffle(candidates)
        for atom in candidates:
            if negated_atom_holds(scene, claim, atom):
                continue
            at = next(i for i, u in enumerate(units) if u.atom == atom)
            text = render([*units[:at], Unit("not", "function"), *units[at:]])
            return TemplateEdit(text, "negate", f"not_{atom.kind}")
    index = rng.randrange(len(claim.phrases))
    phrase = claim.phrases[index]
    if not any(phrase.matches(obj) for obj in scene.objects):  # pragma: no cover - the positive is true
        return None
    words = [u.text for u in units if u.atom is not None and u.atom.kind != "relation" and u.atom.index == index]
    return TemplateEdit(f"{render(units)} There is no {' '.join(words)}.", "negate", "there_is_no")


def _permute(words: list[tuple[str, str]], positions: Sequence[int], rng: random.Random) -> None:
    values = [words[i] for i in positions]
    rng.shuffle(values)
    for i, value in zip(positions, values):
        words[i] = value


def _shuffled(words: list[tuple[str, str]], how: str, rng: random.Random) -> list[tuple[str, str]]:
    """ARO's perturbation ``how`` on (word, role) pairs."""
    out = list(words)
    if how == "shuffle_nouns_and_adj":
        _permute(out, [i for i, (_, r) in enumerate(out) if r in NOUN_ROLES], rng)
        _permute(out, [i for i, (_, r) in enumerate(out) if r in ADJECTIVE_ROLES], rng)
    elif how == "shuffle_allbut_nouns_and_adj":
        _permute(out, [i for i, (_, r) in enumerate(out) if r not in NOUN_ROLES | ADJECTIVE_ROLES], rng)
    else:
        chunks = [out[i:i + 3] for i in range(0, len(out), 3)]
        if how == "shuffle_within_trigrams":
            for chunk in chunks:
                rng.shuffle(chunk)
        else:
            rng.shuffle(chunks)
        out = [w for chunk in chunks for w in chunk]
    return out


def shuffle_edit(scene: Scene, claim: Claim, rng: random.Random) -> TemplateEdit | None:
    """One of ARO's four word-order perturbations (tried in a random order until one changes the sentence)."""
    units = sentence_units(claim)
    positive = render(units)
    words = [(w, u.role) for u in units[:-1] for w in u.text.split(" ")]  # the final period stays last
    order = list(SHUFFLES)
    rng.shuffle(order)
    for how in order:
        for _ in range(MAX_TRIES):
            shuffled = _shuffled(words, how, rng)
            text = render([Unit(w, "punct" if w == "," else r) for w, r in shuffled] + [units[-1]])
            if differs(text, positive):
                return TemplateEdit(text, "shuffle", how)
    return None


TEMPLATE_EDITS: dict[str, Callable[[Scene, Claim, random.Random], TemplateEdit | None]] = {
    "replace": replace_edit, "swap": swap_edit, "negate": negate_edit, "shuffle": shuffle_edit,
}


def template_edit(scene: Scene, claim: Claim, kind: str, rng: random.Random) -> TemplateEdit | None:
    """``template_negative`` with the rule that made it."""
    if kind not in TEMPLATE_EDITS:
        raise unknown_name("template kind", kind, TEMPLATE_KINDS)
    return TEMPLATE_EDITS[kind](scene, claim, rng)


def template_negative(scene: Scene, claim: Claim, kind: str, rng: random.Random) -> str | None:
    """A rule-based hard negative caption for a true claim about the scene, or None when the kind does not apply."""
    edit = template_edit(scene, claim, kind, rng)
    return None if edit is None else edit.text
