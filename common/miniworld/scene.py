"""Scenes as small scene graphs: objects with attributes and positions on a grid; relations follow from geometry
(docs/mini-world.md, "Scenes").
"""
from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from typing import Iterable, Sequence

from common.miniworld import lexicon

GRID = 6
RADIUS_IN_CELLS = {"small": 0.42, "large": 0.9}
DOMINANCE = 1.8
MIN_AXIS_GAP = 0.12
N_OBJECTS_WEIGHTS = {1: 0.08, 2: 0.42, 3: 0.38, 4: 0.12}


@dataclass(frozen=True)
class SceneObject:
    shape: str
    color: str
    size: str
    x: float
    y: float
    radius: float
    rotation: float = 0.0

    def attribute(self, kind: str) -> str:
        return {"color": self.color, "size": self.size}[kind]

    def cells(self) -> frozenset[tuple[int, int]]:
        """Grid cells the object covers (one for small, a 2x2 block for large)."""
        if self.size == "small":
            return frozenset({(int(self.x * GRID), int(self.y * GRID))})
        i, j = round(self.x * GRID), round(self.y * GRID)
        return frozenset({(i - 1, j - 1), (i, j - 1), (i - 1, j), (i, j)})


@dataclass(frozen=True)
class Scene:
    objects: tuple[SceneObject, ...]
    background: tuple[int, int, int] = (200, 200, 200)

    def relation(self, i: int, j: int) -> str:
        return spatial_relation(self.objects[i], self.objects[j])


def spatial_relation(a: SceneObject, b: SceneObject) -> str:
    """The relation of ``a`` to ``b`` along the dominant axis ("left_of": a is left of b)."""
    dx, dy = a.x - b.x, a.y - b.y
    if abs(dx) >= abs(dy):
        return "left_of" if dx < 0 else "right_of"
    return "above" if dy < 0 else "below"


def pair_is_clear(a: SceneObject, b: SceneObject) -> bool:
    """Objects share no cell and one axis clearly dominates their offset."""
    dx, dy = abs(a.x - b.x), abs(a.y - b.y)
    big, small = max(dx, dy), min(dx, dy)
    if big < MIN_AXIS_GAP or big < DOMINANCE * small:
        return False
    return not (a.cells() & b.cells())


def layout_is_clear(objects: Sequence[SceneObject]) -> bool:
    return all(pair_is_clear(a, b) for a, b in itertools.combinations(objects, 2))


def weighted_choice(rng: random.Random, probs: dict[str, float], exclude: Iterable[str] = ()) -> str:
    excluded = set(exclude)
    items = [(k, p) for k, p in probs.items() if k not in excluded and p > 0]
    if not items:
        raise ValueError("no candidates left to choose from")
    total = sum(p for _, p in items)
    r = rng.random() * total
    for k, p in items:
        r -= p
        if r <= 0:
            return k
    return items[-1][0]


def sample_object_identity(
    rng: random.Random, allow_heldout: bool, taken: set[tuple[str, str]]
) -> tuple[str, str, str]:
    """Shape, colour and size under the world prior; (shape, colour) distinct within a scene."""
    for _ in range(100):
        shape = rng.choice(lexicon.SHAPES)
        color = weighted_choice(rng, lexicon.color_prior(shape))
        if (shape, color) in taken:
            continue
        if not allow_heldout and (color, shape) in lexicon.HELDOUT_COLOR_SHAPE:
            continue
        size = weighted_choice(rng, lexicon.size_prior(shape))
        return shape, color, size
    raise RuntimeError("could not sample a distinct object identity")


def place_objects(
    rng: random.Random, identities: Sequence[tuple[str, str, str]], max_tries: int = 400
) -> tuple[SceneObject, ...] | None:
    """Rejection-sample grid positions until every pair is clear; None if the identities don't fit."""
    for _ in range(max_tries):
        objects = []
        for shape, color, size in identities:
            if size == "small":  # centred in a cell
                x, y = (rng.randrange(GRID) + 0.5) / GRID, (rng.randrange(GRID) + 0.5) / GRID
            else:  # centred on an inner grid corner, covering the 2x2 block around it
                x, y = rng.randrange(1, GRID) / GRID, rng.randrange(1, GRID) / GRID
            objects.append(SceneObject(
                shape=shape, color=color, size=size, x=x, y=y,
                radius=RADIUS_IN_CELLS[size] / GRID, rotation=rng.uniform(-10.0, 10.0),
            ))
        if layout_is_clear(objects):
            return tuple(objects)
    return None


def sample_background(rng: random.Random) -> tuple[int, int, int]:
    base = rng.randint(150, 205)
    return (base + rng.randint(-12, 12), base + rng.randint(-12, 12), base + rng.randint(-12, 12))


def sample_scene(rng: random.Random, n_objects: int | None = None, allow_heldout: bool = True) -> Scene:
    """A scene under the world prior. ``allow_heldout=False`` for training images."""
    while True:
        n = n_objects or int(weighted_choice(rng, {str(k): v for k, v in N_OBJECTS_WEIGHTS.items()}))
        taken: set[tuple[str, str]] = set()
        identities = []
        for _ in range(n):
            shape, color, size = sample_object_identity(rng, allow_heldout, taken)
            taken.add((shape, color))
            identities.append((shape, color, size))
        objects = place_objects(rng, identities)
        if objects is not None:
            return Scene(objects=objects, background=sample_background(rng))


def contains_heldout(scene: Scene) -> bool:
    return any((o.color, o.shape) in lexicon.HELDOUT_COLOR_SHAPE for o in scene.objects)
