"""Captions as claims about a scene graph, their truth (``satisfies``), and their realization in English
(docs/mini-world.md, "Claims").
"""
from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field, replace
from typing import Sequence

from common.miniworld import lexicon
from common.miniworld.scene import Scene, SceneObject


@dataclass(frozen=True)
class NounPhrase:
    shape: str
    color: str | None = None
    size: str | None = None

    def attribute(self, kind: str) -> str | None:
        return {"color": self.color, "size": self.size}[kind]

    def with_attribute(self, kind: str, value: str | None) -> "NounPhrase":
        return replace(self, **{kind: value})

    def matches(self, obj: SceneObject) -> bool:
        return (
            obj.shape == self.shape
            and (self.color is None or obj.color == self.color)
            and (self.size is None or obj.size == self.size)
        )

    def concepts(self) -> tuple[str, ...]:
        return tuple(c for c in (self.size, self.color, self.shape) if c is not None)


@dataclass(frozen=True)
class RelationClaim:
    subject: int
    predicate: str
    object: int


@dataclass(frozen=True)
class Pattern:
    """A sentence shape: how many noun phrases, which relations between them, its templates."""

    name: str
    n_phrases: int
    relation_slots: tuple[tuple[int, int], ...]
    templates: tuple[str, ...]


PATTERNS: dict[str, Pattern] = {p.name: p for p in (
    Pattern("one", 1, (), ("{n0}", "there is {n0}")),
    Pattern("pair", 2, (), ("{n0} and {n1}", "there is {n0} and {n1}")),
    Pattern("relation", 2, ((0, 1),), ("{n0} {r0} {n1}", "{n0} is {r0} {n1}", "there is {n0} {r0} {n1}")),
    Pattern("fork", 3, ((0, 1), (0, 2)), ("{n0} is {r0} {n1} and {r1} {n2}",)),
    Pattern("chain", 3, ((0, 1), (1, 2)), ("{n0} is {r0} {n1}, which is {r1} {n2}",)),
    Pattern("triple", 3, (), ("{n0}, {n1} and {n2}", "there is {n0}, {n1} and {n2}")),
)}

PATTERN_WEIGHTS: dict[str, float] = {
    "one": 0.10, "pair": 0.17, "relation": 0.38, "fork": 0.10, "chain": 0.10, "triple": 0.15,
}
MENTION_RATE = {"color": 0.85, "size": 0.45}


@dataclass(frozen=True)
class Claim:
    phrases: tuple[NounPhrase, ...]
    relations: tuple[RelationClaim, ...]
    template: str
    lexical_seed: int = field(default=0, compare=False)
    """Seeds the choice of surface forms, so an edited claim keeps the unchanged words as they were."""

    def text(self) -> str:
        return realize(self)


def assignment(scene: Scene, claim: Claim) -> tuple[int, ...] | None:
    """The first mapping of the claim's phrases to distinct scene objects under which every stated fact holds."""
    candidates = [[i for i, o in enumerate(scene.objects) if p.matches(o)] for p in claim.phrases]
    for chosen in itertools.product(*candidates):
        if len(set(chosen)) == len(chosen) and all(
                scene.relation(chosen[r.subject], chosen[r.object]) == r.predicate for r in claim.relations):
            return tuple(chosen)
    return None


def satisfies(scene: Scene, claim: Claim) -> bool:
    """True when the claim holds of the scene (``assignment`` finds a mapping)."""
    return assignment(scene, claim) is not None


def surface_form(concept: str, lexical_seed: int) -> str:
    """The word(s) used for a concept in one realization: canonical, or now and then a synonym."""
    forms = lexicon.SURFACE[concept]
    if len(forms) == 1:
        return forms[0]
    rng = random.Random(f"{lexical_seed}:{concept}")
    if rng.random() >= lexicon.SYNONYM_RATE:
        return forms[0]
    return rng.choice(forms[1:])


def realize_phrase(phrase: NounPhrase, lexical_seed: int) -> str:
    words = " ".join(surface_form(c, lexical_seed) for c in phrase.concepts())
    return f"{lexicon.indefinite_article(words)} {words}"


def realize(claim: Claim) -> str:
    """The claim as one fluent English sentence."""
    slots = {f"n{i}": realize_phrase(p, claim.lexical_seed) for i, p in enumerate(claim.phrases)}
    slots.update({
        f"r{k}": surface_form(r.predicate, claim.lexical_seed) for k, r in enumerate(claim.relations)
    })
    sentence = claim.template.format(**slots)
    return sentence[0].upper() + sentence[1:] + "."


def describe_object(rng: random.Random, obj: SceneObject) -> NounPhrase:
    """A noun phrase true of ``obj`` that mentions its attributes at the world's usual rates."""
    return NounPhrase(
        shape=obj.shape,
        color=obj.color if rng.random() < MENTION_RATE["color"] else None,
        size=obj.size if rng.random() < MENTION_RATE["size"] else None,
    )


def sample_claim(
    rng: random.Random, scene: Scene, pattern: str | None = None, lexical_seed: int | None = None
) -> Claim:
    """A true caption of ``scene``: a pattern that fits its object count, over a random subgraph."""
    n = len(scene.objects)
    if pattern is None:
        feasible = {k: w for k, w in PATTERN_WEIGHTS.items() if PATTERNS[k].n_phrases <= n}
        names, weights = zip(*feasible.items())
        pattern = rng.choices(names, weights=weights)[0]
    shape = PATTERNS[pattern]
    if shape.n_phrases > n:
        raise ValueError(f"pattern {pattern!r} needs {shape.n_phrases} objects, scene has {n}")
    chosen = rng.sample(range(n), shape.n_phrases)
    phrases = tuple(describe_object(rng, scene.objects[i]) for i in chosen)
    claim = Claim(
        phrases=phrases, relations=_relations(scene, shape, chosen), template=rng.choice(shape.templates),
        lexical_seed=rng.randrange(2**31) if lexical_seed is None else lexical_seed,
    )
    if not satisfies(scene, claim):  # pragma: no cover - a bug in the world, never data
        raise AssertionError(f"sampled claim is false for its own scene: {claim}")
    return claim


def claim_from_objects(
    scene: Scene, indices: Sequence[int], pattern: str, template_index: int = 0, lexical_seed: int = 0,
    mention: Sequence[str] = ("size", "color"),
) -> Claim:
    """A deterministic true claim about chosen objects (used by tests and hand-built examples)."""
    shape = PATTERNS[pattern]
    phrases = tuple(
        NounPhrase(
            shape=scene.objects[i].shape,
            color=scene.objects[i].color if "color" in mention else None,
            size=scene.objects[i].size if "size" in mention else None,
        ) for i in indices
    )
    return Claim(phrases, _relations(scene, shape, indices), shape.templates[template_index], lexical_seed)


def _relations(scene: Scene, shape: Pattern, indices: Sequence[int]) -> tuple[RelationClaim, ...]:
    """The relations the pattern states between the chosen objects, as the scene has them."""
    return tuple(RelationClaim(s, scene.relation(indices[s], indices[o]), o) for s, o in shape.relation_slots)
