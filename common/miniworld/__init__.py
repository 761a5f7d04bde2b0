"""The offline mini world: a procedurally rendered substrate for every paper's experiments.

Scenes are scene graphs (``scene``), captions are claims realized by one grammar (``claims``),
hard negatives are claim edits (``negatives``), images come from one renderer (``render``), and
``build`` assembles train/test sets. ``VERSION`` is recorded in every output built from the world.
"""

VERSION = "miniworld-1.0"
