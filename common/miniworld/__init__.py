"""The offline mini world: a procedurally rendered substrate for every paper's experiments (docs/mini-world.md, "The
modules"). ``VERSION`` is recorded in every output built from the world.
"""

VERSION = "miniworld-1.0"
