"""The scene a hard negative caption describes: the negative's edit applied to the scene graph, ready to render
(docs/mini-world.md, "Negative scenes").
"""
from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace
from typing import Sequence

from common.miniworld import lexicon
from common.miniworld.claims import Claim, assignment, satisfies
from common.miniworld.scene import (
    GRID, RADIUS_IN_CELLS, Scene, SceneObject, layout_is_clear, place_objects, weighted_choice)

ADD_EDITS: frozenset[str] = frozenset({"add_obj", "add_att"})
"""Edits whose negative scene still shows the positive caption: the negative only adds to it."""
MAX_LAYOUT_TRIES = 40


def _permutation(positive: Claim, negative: Claim) -> tuple[int, ...] | None:
    """``p`` with negative.phrases[i] == positive.phrases[p[i]] when the negative only reorders the phrases."""
    if len(positive.phrases) != len(negative.phrases) or Counter(positive.phrases) != Counter(negative.phrases):
        return None
    if positive.phrases == negative.phrases:
        return None
    used: set[int] = set()
    perm = []
    for phrase in negative.phrases:
        j = next(k for k, p in enumerate(positive.phrases) if p == phrase and k not in used)
        used.add(j)
        perm.append(j)
    return tuple(perm)


def edited_objects(scene: Scene, positive: Claim, negative: Claim, rng: random.Random) -> list[SceneObject] | None:
    """The scene's objects with the negative's identities applied (positions not yet checked); None when the
    positive does not hold of the scene."""
    matched = assignment(scene, positive)
    if matched is None:
        return None
    objects = list(scene.objects)
    perm = _permutation(positive, negative)
    if perm is not None:  # swap_obj: phrase i now names what phrase perm[i] named, so the objects trade identities
        originals = [scene.objects[k] for k in matched]
        for i, j in enumerate(perm):
            here = originals[i]
            objects[matched[i]] = replace(originals[j], x=here.x, y=here.y, rotation=here.rotation)
        return objects
    for i, phrase in enumerate(negative.phrases):  # what the phrase states (shape always; colour and size if stated)
        if i < len(matched):
            base = objects[matched[i]]
            color, size = phrase.color or base.color, phrase.size or base.size
            objects[matched[i]] = replace(base, shape=phrase.shape, color=color, size=size,
                                          radius=RADIUS_IN_CELLS[size] / GRID)
        else:
            color = phrase.color or weighted_choice(rng, lexicon.color_prior(phrase.shape))
            size = phrase.size or weighted_choice(rng, lexicon.size_prior(phrase.shape))
            objects.append(SceneObject(shape=phrase.shape, color=color, size=size, x=0.5, y=0.5,
                                       radius=RADIUS_IN_CELLS[size] / GRID, rotation=rng.uniform(-10.0, 10.0)))
    return objects


def _placed(rng: random.Random, objects: Sequence[SceneObject], keep: Sequence[bool]) -> tuple[SceneObject, ...] | None:
    """Objects at their positions where ``keep``, the others redrawn on the grid (as ``place_objects`` draws)."""
    moving = [o for o, k in zip(objects, keep) if not k]
    if not moving:
        return tuple(objects) if layout_is_clear(objects) else None
    for _ in range(MAX_LAYOUT_TRIES):
        drawn = place_objects(rng, [(o.shape, o.color, o.size) for o in moving], max_tries=1)
        if drawn is None:
            continue
        it = iter(drawn)
        out = [o if k else replace(next(it), rotation=o.rotation) for o, k in zip(objects, keep)]
        if layout_is_clear(out):
            return tuple(out)
    return None


def negative_scene(scene: Scene, positive: Claim, negative: Claim, rng: random.Random, *,
                   allow_positive: bool = False, tries: int = 60) -> Scene | None:
    """A scene of which ``negative`` is true (and ``positive`` false unless ``allow_positive``), made by editing
    ``scene``; None when the edit cannot be realized (two objects would share a colour and shape, or no layout
    within ``tries`` makes the claims come out right)."""
    objects = edited_objects(scene, positive, negative, rng)
    if objects is None:
        return None
    identities = [(o.shape, o.color) for o in objects]
    if len(set(identities)) != len(identities):  # the world never shows two objects of one colour and shape
        return None
    old = {id(o) for o in scene.objects}
    keep = [id(o) in old or any(o.x == s.x and o.y == s.y and o.size == s.size for s in scene.objects)
            for o in objects]

    def good(candidate: Scene) -> bool:
        return satisfies(candidate, negative) and (allow_positive or not satisfies(candidate, positive))

    for attempt in range(tries):
        # first try keeping every position that still fits, then redraw everything
        placed = _placed(rng, objects, keep if attempt < tries // 2 else [False] * len(objects))
        if placed is not None:
            candidate = Scene(objects=placed, background=scene.background)
            if good(candidate):
                return candidate
    return None


__all__ = ["ADD_EDITS", "assignment", "edited_objects", "negative_scene"]
