"""Task shapes: every benchmark of the five papers reduces to a few of these records.

* ``ImageToTextItem``: one image, K candidate captions, index 0 correct (SugarCrepe, ARO's
  VG-Relation/Attribution/Order, hard positives, CC-Neg, BiVLC's I2T).
* ``TextToImageItem``: one caption, K candidate images, index 0 correct (BiVLC's T2I).
* ``RetrievalSet`` and ``ClassificationSet``: whole-gallery ranking and zero-shot classification.

Records carry where they came from (``origin``: file and record id), so any error downstream can name
the input that caused it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


class DatasetError(ValueError):
    """Bad benchmark input; the message names the file and the record."""


@dataclass(frozen=True)
class ImageToTextItem:
    item_id: str
    group: str
    image: Path
    captions: tuple[str, ...]
    origin: str = ""

    def __post_init__(self) -> None:
        if len(self.captions) < 2:
            raise DatasetError(f"{self.origin or self.item_id}: needs at least two candidate captions")


@dataclass(frozen=True)
class TextToImageItem:
    item_id: str
    group: str
    caption: str
    images: tuple[Path, ...]
    origin: str = ""

    def __post_init__(self) -> None:
        if len(self.images) < 2:
            raise DatasetError(f"{self.origin or self.item_id}: needs at least two candidate images")


@dataclass(frozen=True)
class RetrievalSet:
    """A gallery of images and captions; ``caption_image[k]`` is the image caption k describes."""

    name: str
    images: tuple[Path, ...]
    captions: tuple[str, ...]
    caption_image: tuple[int, ...]


@dataclass(frozen=True)
class ClassificationSet:
    """Images with class labels and, per class, the prompts whose mean embedding is its classifier."""

    name: str
    images: tuple[Path, ...]
    labels: tuple[int, ...]
    class_prompts: tuple[tuple[str, ...], ...]


def resolve_under(root: Path, relative: str, origin: str) -> Path:
    """``root / relative``, refusing names that escape ``root`` (absolute paths, ``..``, links out)."""
    root_resolved = root.resolve()
    try:
        candidate = (root / relative).resolve()
    except (OSError, RuntimeError, ValueError) as exc:  # NUL bytes, symlink loops
        raise DatasetError(f"{origin}: filename {relative!r} cannot be resolved: {exc}") from exc
    if not candidate.is_relative_to(root_resolved):
        raise DatasetError(f"{origin}: filename {relative!r} escapes the image root {root}")
    return candidate
