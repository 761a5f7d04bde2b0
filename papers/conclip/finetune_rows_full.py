"""The full profile's fine-tuning set as files (``rows.jsonl``): what ``papers.conclip.sets_full`` writes (stage
``finetune-full-set``) and ``papers.conclip.train_full`` reads (stages ``finetune-full@<run>``). A module of its own, so
that the GPU fine-tunes do not depend on the code that builds the set.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from common.jsonl import read_rows

REMEDY = "run the finetune-full-set stage (`python -m papers.conclip.sets_full set`)"


@dataclass(frozen=True)
class FullRow:
    """One training entry: image and distractor as paths under their folders (CC-Neg's, COCO's), c, c' (commas
    removed) and the CREPE-Negate negation of c (or None)."""

    index: int
    """The entry's index in ``ccneg_preprocessed.pt`` (and its row of the mapping)."""
    image: str
    caption: str
    negated: str
    distractor: str
    distractor_index: int
    """The distractor's index in the COCO pool (``CocoCaptions`` order)."""
    crepe_negated: str | None
    """None where the caption gets no usable CREPE-Negate negation: the CREPE-Negate run skips the row."""


def load_rows(set_dir: Path) -> list[FullRow]:
    """The set's rows; a bad line is a ``DatasetError`` naming the file and the line."""
    return read_rows(Path(set_dir) / "rows.jsonl", FullRow, "a training row", REMEDY)
