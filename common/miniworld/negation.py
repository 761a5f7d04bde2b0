"""Negated captions whose truth follows from the scene graph: the mini world's analog of CC-Neg (CoN-CLIP;
docs/mini-world.md, "Negation").
"""
from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, replace

from common.miniworld import lexicon
from common.miniworld.claims import NounPhrase, realize_phrase, surface_form
from common.miniworld.scene import Scene

NEGATION_WORDS: tuple[str, ...] = ("no", "not", "without")
WITH = "with"
"""The co-occurrence predicate: "a red circle with a blue square" says the square is in the scene."""
MAX_PAIRS = 5
RELATION_RATE = 0.6
"""Share of pairs whose predicate is the subject's spatial relation to the object (the rest: "with")."""


@dataclass(frozen=True)
class PredicateObject:
    predicate: str
    """A relation of ``lexicon.RELATIONS`` (the subject's relation to the object) or ``WITH``."""
    object: NounPhrase


@dataclass(frozen=True)
class NegationClaim:
    """A subject and K predicate-object pairs; ``negated`` (a pair's index) with ``word`` negates one of them."""

    subject: NounPhrase
    pairs: tuple[PredicateObject, ...]
    negated: int | None = None
    word: str | None = None
    lexical_seed: int = 0

    def __post_init__(self):
        if not 1 <= len(self.pairs) <= MAX_PAIRS:
            raise ValueError(f"NegationClaim: 1..{MAX_PAIRS} predicate-object pairs, got {len(self.pairs)}")
        if (self.negated is None) != (self.word is None):
            raise ValueError("NegationClaim: a negated pair needs its negation word, and only then")
        if self.word is not None and (self.word not in NEGATION_WORDS or not 0 <= self.negated < len(self.pairs)):
            raise ValueError(f"NegationClaim: word {self.word!r} / pair {self.negated} is not a negation of this claim")

    @property
    def k(self) -> int:
        """CC-Neg's K: the number of predicate-object pairs."""
        return len(self.pairs)

    def negate(self, index: int, word: str) -> "NegationClaim":
        return replace(self, negated=index, word=word)

    def text(self) -> str:
        """One sentence: "A red circle above a blue square, with a green star and not left of a white heart."."""
        parts = [self._pair_text(i, p) for i, p in enumerate(self.pairs)]
        listed = parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"
        sentence = f"{realize_phrase(self.subject, self.lexical_seed)} {listed}"
        return sentence[0].upper() + sentence[1:] + "."

    def _pair_text(self, index: int, pair: PredicateObject) -> str:
        obj = realize_phrase(pair.object, self.lexical_seed)
        predicate = WITH if pair.predicate == WITH else surface_form(pair.predicate, self.lexical_seed)
        if index != self.negated:
            return f"{predicate} {obj}"
        if self.word == "not":
            return f"not {predicate} {obj}"
        if self.word == "without":
            return f"without {obj}"
        return "with no " + " ".join(surface_form(c, self.lexical_seed) for c in pair.object.concepts())

    def holds(self, scene: Scene) -> bool:
        """True when some assignment of distinct objects makes every stated pair hold and the negated one fail."""
        objects = scene.objects
        for s, subject in enumerate(objects):
            if not self.subject.matches(subject):
                continue
            others = [i for i in range(len(objects)) if i != s]
            candidates = []
            for k, pair in enumerate(self.pairs):
                if k == self.negated:
                    continue
                candidates.append([i for i in others if pair.object.matches(objects[i])
                                   and (pair.predicate == WITH or scene.relation(s, i) == pair.predicate)])
            if self.negated is not None and self._negated_present(scene, s, others):
                continue
            if any(len(set(a)) == len(a) for a in itertools.product(*candidates)):
                return True
        return False

    def _negated_present(self, scene: Scene, s: int, others: list[int]) -> bool:
        """Whether the negated pair holds for subject ``s`` (which makes the negation false)."""
        pair = self.pairs[self.negated]  # type: ignore[index]
        matching = [i for i in others if pair.object.matches(scene.objects[i])]
        if self.word == "not" and pair.predicate != WITH:
            return any(scene.relation(s, i) == pair.predicate for i in matching)
        return bool(matching)


def name_object(scene: Scene, index: int) -> NounPhrase:
    """The object by colour and shape: unique in a scene (``scene.sample_object_identity`` keeps pairs distinct)."""
    obj = scene.objects[index]
    return NounPhrase(shape=obj.shape, color=obj.color)


@dataclass(frozen=True)
class NegationExample:
    """A true caption, its negation (false of the scene) and which object the negation is about."""

    caption: NegationClaim
    negated: NegationClaim
    subject_index: int
    object_indices: tuple[int, ...]

    @property
    def negated_object(self) -> int:
        """Scene index of the negated pair's object."""
        return self.object_indices[self.negated.negated]  # type: ignore[index]


def sample_negation(rng: random.Random, scene: Scene, k: int, word: str,
                    lexical_seed: int | None = None) -> NegationExample:
    """A caption with ``k`` pairs about a random subject of ``scene`` (which needs at least k + 1 objects) and its
    negation of one random pair with ``word``; both checked against the scene."""
    n = len(scene.objects)
    if k + 1 > n:
        raise ValueError(f"sample_negation: {k} pairs need {k + 1} objects, the scene has {n}")
    if word not in NEGATION_WORDS:
        raise ValueError(f"sample_negation: unknown negation word {word!r} (one of {NEGATION_WORDS})")
    chosen = rng.sample(range(n), k + 1)
    s, objects = chosen[0], tuple(chosen[1:])
    pairs = tuple(PredicateObject(scene.relation(s, o) if rng.random() < RELATION_RATE else WITH,
                                  name_object(scene, o)) for o in objects)
    caption = NegationClaim(name_object(scene, s), pairs,
                            lexical_seed=rng.randrange(2**31) if lexical_seed is None else lexical_seed)
    negated = caption.negate(rng.randrange(k), word)
    if not caption.holds(scene) or negated.holds(scene):  # pragma: no cover - a bug in the world, never data
        raise AssertionError(f"negation example does not follow its scene: {caption.text()!r} / {negated.text()!r}")
    return NegationExample(caption, negated, s, objects)


def distractor_scene(scene: Scene, example: NegationExample) -> Scene:
    """The scene without the negated object: the negated caption holds there and the caption does not."""
    gone = example.negated_object
    out = Scene(tuple(o for i, o in enumerate(scene.objects) if i != gone), scene.background)
    if not example.negated.holds(out) or example.caption.holds(out):  # pragma: no cover - a bug in the world
        raise AssertionError(f"distractor scene does not invert {example.negated.text()!r}")
    return out


__all__ = ["NEGATION_WORDS", "WITH", "MAX_PAIRS", "PredicateObject", "NegationClaim", "NegationExample",
           "name_object", "sample_negation", "distractor_scene", "lexicon"]
