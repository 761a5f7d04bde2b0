"""Render a scene graph to pixels with PIL; ``RenderStyle`` changes how an image looks, never what it shows
(docs/mini-world.md).
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw

from common.miniworld import lexicon
from common.miniworld.scene import Scene


@dataclass(frozen=True)
class RenderStyle:
    name: str
    supersample: int = 4
    color_jitter: int = 18
    noise_std: float = 5.0


NATURAL = RenderStyle("natural")
SYNTHETIC = RenderStyle("synthetic", supersample=1, color_jitter=0, noise_std=0.0)
STYLES = {s.name: s for s in (NATURAL, SYNTHETIC)}


def shape_outline(shape: str) -> list[tuple[float, float]] | None:
    """Polygon of a shape in unit coordinates (radius 1, centred at 0); None for the circle."""
    if shape == "circle":
        return None
    if shape == "square":
        a = 0.82
        return [(-a, -a), (a, -a), (a, a), (-a, a)]
    if shape == "triangle":
        return [(0.0, -1.0), (0.95, 0.75), (-0.95, 0.75)]
    if shape == "diamond":
        return [(0.0, -1.0), (0.7, 0.0), (0.0, 1.0), (-0.7, 0.0)]
    if shape == "cross":
        w, a = 0.3, 0.95
        return [(-w, -a), (w, -a), (w, -w), (a, -w), (a, w), (w, w), (w, a), (-w, a), (-w, w),
                (-a, w), (-a, -w), (-w, -w)]
    if shape == "star":
        points = []
        for k in range(10):
            r = 1.0 if k % 2 == 0 else 0.45
            t = math.pi * k / 5 - math.pi / 2
            points.append((r * math.cos(t), r * math.sin(t)))
        return points
    if shape == "heart":
        points = []
        for k in range(40):
            t = 2 * math.pi * k / 40
            x = 16 * math.sin(t) ** 3
            y = 13 * math.cos(t) - 5 * math.cos(2 * t) - 2 * math.cos(3 * t) - math.cos(4 * t)
            points.append((x / 17.0, -y / 17.0 - 0.1))
        return points
    raise ValueError(f"unknown shape {shape!r}")


def render(scene: Scene, size: int = 48, style: RenderStyle = NATURAL, seed: int = 0) -> Image.Image:
    """Draw ``scene`` at ``size``x``size`` pixels; deterministic for a given seed."""
    rng = random.Random(seed)
    scale = size * style.supersample
    image = Image.new("RGB", (scale, scale), scene.background)
    draw = ImageDraw.Draw(image)
    for obj in scene.objects:
        cx, cy, radius = obj.x * scale, obj.y * scale, obj.radius * scale
        jitter = style.color_jitter
        fill = tuple(max(0, min(255, v + rng.randint(-jitter, jitter))) for v in lexicon.COLOR_RGB[obj.color])
        outline = shape_outline(obj.shape)
        if outline is None:
            draw.ellipse([cx - radius, cy - radius, cx + radius, cy + radius], fill=fill)
        else:
            t = math.radians(obj.rotation)
            c, s = math.cos(t), math.sin(t)
            points = [(cx + (x * c - y * s) * radius, cy + (x * s + y * c) * radius) for x, y in outline]
            draw.polygon(points, fill=fill)
    if style.supersample > 1:
        image = image.resize((size, size), Image.Resampling.BOX)
    if style.noise_std > 0:
        noise = np.random.default_rng(seed).normal(0.0, style.noise_std, (size, size, 3))
        pixels = np.asarray(image, dtype=np.float32) + noise
        image = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))
    return image
