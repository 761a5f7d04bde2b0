"""The mini world's concepts, their surface forms and its world priors, declared once (docs/mini-world.md)."""
from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

SHAPES: tuple[str, ...] = ("circle", "square", "triangle", "diamond", "cross", "star", "heart")
COLORS: tuple[str, ...] = ("red", "green", "blue", "yellow", "purple", "orange", "white", "black")
SIZES: tuple[str, ...] = ("small", "large")
RELATIONS: tuple[str, ...] = ("left_of", "right_of", "above", "below")

ATTRIBUTE_KINDS: tuple[str, ...] = ("size", "color")
"""Attribute kinds in English adjective order (size before color: "a small red circle")."""

CONVERSE: Mapping[str, str] = MappingProxyType(
    {"left_of": "right_of", "right_of": "left_of", "above": "below", "below": "above"}
)

SURFACE: Mapping[str, tuple[str, ...]] = MappingProxyType({
    # shapes
    "circle": ("circle", "disk"),
    "square": ("square",),
    "triangle": ("triangle",),
    "diamond": ("diamond", "rhombus"),
    "cross": ("cross", "plus sign"),
    "star": ("star",),
    "heart": ("heart",),
    # colors
    "red": ("red",),
    "green": ("green",),
    "blue": ("blue",),
    "yellow": ("yellow",),
    "purple": ("purple", "violet"),
    "orange": ("orange",),
    "white": ("white",),
    "black": ("black",),
    # sizes
    "small": ("small", "little"),
    "large": ("large", "big"),
    # relations
    "left_of": ("to the left of", "left of", "on the left of"),
    "right_of": ("to the right of", "right of", "on the right of"),
    "above": ("above", "over"),
    "below": ("below", "under", "beneath"),
})

SYNONYM_RATE = 0.2
"""Probability that a realization uses a non-canonical surface form of a concept."""

# RGB of each color concept (the renderer jitters these a little).
COLOR_RGB: Mapping[str, tuple[int, int, int]] = MappingProxyType({
    "red": (220, 40, 40),
    "green": (40, 170, 60),
    "blue": (40, 80, 220),
    "yellow": (240, 220, 40),
    "purple": (140, 50, 190),
    "orange": (245, 140, 30),
    "white": (250, 250, 250),
    "black": (20, 20, 20),
})

# World priors. Each shape has two typical colors (a "commonsense" regularity like yellow bananas)
# and a typical size; the rest of the mass is spread evenly.
TYPICAL_COLORS: Mapping[str, tuple[str, str]] = MappingProxyType({
    "circle": ("blue", "white"),
    "square": ("black", "green"),
    "triangle": ("orange", "green"),
    "diamond": ("purple", "blue"),
    "cross": ("red", "white"),
    "star": ("yellow", "orange"),
    "heart": ("red", "purple"),
})
TYPICAL_COLOR_MASS = 0.6
TYPICAL_SIZE: Mapping[str, str] = MappingProxyType({
    "circle": "large", "square": "large", "triangle": "large", "diamond": "small",
    "cross": "small", "star": "small", "heart": "small",
})
TYPICAL_SIZE_MASS = 0.7

HELDOUT_COLOR_SHAPE: frozenset[tuple[str, str]] = frozenset({
    ("green", "star"), ("yellow", "heart"), ("white", "diamond"), ("purple", "square"),
})
"""(color, shape) pairs never rendered in training images; test images may contain them, so results
can be split into seen and held-out combinations (generalization, not memorization)."""


def color_prior(shape: str) -> dict[str, float]:
    """P(color | shape) under the world prior."""
    typical = TYPICAL_COLORS[shape]
    rest = [c for c in COLORS if c not in typical]
    probs = {c: (1 - TYPICAL_COLOR_MASS) / len(rest) for c in rest}
    for c in typical:
        probs[c] = TYPICAL_COLOR_MASS / len(typical)
    return probs


def size_prior(shape: str) -> dict[str, float]:
    """P(size | shape) under the world prior."""
    typical = TYPICAL_SIZE[shape]
    return {s: (TYPICAL_SIZE_MASS if s == typical else 1 - TYPICAL_SIZE_MASS) for s in SIZES}


def attribute_prior(kind: str, shape: str) -> dict[str, float]:
    return color_prior(shape) if kind == "color" else size_prior(shape)


def indefinite_article(phrase: str) -> str:
    return "an" if phrase[:1].lower() in "aeiou" else "a"
