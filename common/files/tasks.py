"""Task shapes: every benchmark of the five papers reduces to a few records, each scored by one module of
``common.evaluation.scoring``. In an item of K candidates, candidate 0 is the positive by convention (the scorer's
``DecisionRule`` says which must win). An image may carry a tensor transform (``ImageRef``: ARO's shuffles need no
shuffled files on disk); records carry their ``origin``, so an error downstream names the input that caused it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, Sequence, Union, runtime_checkable

from common.errors import WorkspaceError

if TYPE_CHECKING:  # annotations only: readers of task files (manifests, reports) need no torch
    import torch


class DatasetError(WorkspaceError, ValueError):
    """Bad benchmark input; the message names the file and the record."""


MAX_LISTED_PROBLEMS = 20
"""How many bad records one ``DatasetError`` lists before "... and N more"."""


def raise_problems(problems: Sequence[str], what: str, *, where: str = "", one_line: bool = False) -> None:
    """Raise one ``DatasetError`` for every bad record a reader found, or nothing: readers check a whole file before
    refusing it, so one run names every record to fix. One problem is the message itself; several are counted
    ("<where>: N bad <what>:") and listed, the first ``MAX_LISTED_PROBLEMS``, one per line or on one line."""
    if len(problems) == 1:
        raise DatasetError(problems[0])
    if problems:
        separator = "; " if one_line else "\n  "
        listed = separator.join(problems[:MAX_LISTED_PROBLEMS])
        unlisted = len(problems) - MAX_LISTED_PROBLEMS
        more = f"{separator}... and {unlisted} more" if unlisted > 0 else ""
        lead = f"{where}: " if where else ""
        raise DatasetError(f"{lead}{len(problems)} bad {what}:{' ' if one_line else separator}{listed}{more}")


@runtime_checkable
class ImageTransform(Protocol):
    """A deterministic function of a preprocessed image tensor (C, H, W) and the file's content hash."""

    @property
    def identity(self) -> str:
        """Everything that determines the output (name, parameters, seed): part of the embedding cache key."""
        ...

    def __call__(self, pixels: torch.Tensor, content_key: str) -> torch.Tensor: ...


@dataclass(frozen=True)
class ImageRef:
    """An image file, optionally transformed after preprocessing."""

    path: Path
    transform: ImageTransform | None = None

    def __post_init__(self) -> None:
        if self.transform is not None and not isinstance(self.transform, ImageTransform):
            raise TypeError(f"{self.path}: transform {self.transform!r} lacks identity / __call__")


Image = Union[Path, ImageRef]
"""What a record may hold for an image: a plain path, or an ``ImageRef`` with a transform."""


def as_ref(image: Image) -> ImageRef:
    """``image`` as an ``ImageRef``; a ``Path`` is kept as it is (``Path(path)`` parses it again, and an evaluation
    looks each item's image up more than once: 15,000 parses were a tenth of a second for SugarCrepe)."""
    if isinstance(image, ImageRef):
        return image
    return ImageRef(image if isinstance(image, Path) else Path(image))


@dataclass(frozen=True)
class ImageToTextItem:
    item_id: str
    group: str
    image: Image
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
    images: tuple[Image, ...]
    origin: str = ""

    def __post_init__(self) -> None:
        if len(self.images) < 2:
            raise DatasetError(f"{self.origin or self.item_id}: needs at least two candidate images")


@dataclass(frozen=True)
class GroupItem:
    """Two images and two captions; caption k describes image k (BiVLC: C0/I0 positive, C1/I1 negative)."""

    item_id: str
    group: str
    images: tuple[Image, Image]
    captions: tuple[str, str]
    origin: str = ""

    def __post_init__(self) -> None:
        if len(self.images) != 2 or len(self.captions) != 2:
            raise DatasetError(f"{self.origin or self.item_id}: a group item has exactly 2 images and 2 captions")


@dataclass(frozen=True)
class RetrievalSet:
    """A gallery of images and captions; ``caption_image[k]`` is the index of the image caption k describes."""

    name: str
    images: tuple[Image, ...]
    captions: tuple[str, ...]
    caption_image: tuple[int, ...]

    def __post_init__(self) -> None:
        if len(self.captions) != len(self.caption_image):
            raise DatasetError(f"{self.name}: {len(self.captions)} captions but {len(self.caption_image)} image indices")
        if not self.images or not self.captions:
            raise DatasetError(f"{self.name}: no images or no captions")
        bad = [k for k, i in enumerate(self.caption_image) if not 0 <= i < len(self.images)]
        if bad:
            raise DatasetError(f"{self.name}: caption(s) {bad[:5]} point to no image (of {len(self.images)})")
        described = set(self.caption_image)
        orphans = [i for i in range(len(self.images)) if i not in described]
        if orphans:
            raise DatasetError(f"{self.name}: image(s) {orphans[:5]} have no caption; image-to-text recall is undefined")


@dataclass(frozen=True)
class ClassificationSet:
    """Images with class labels and, per class, the prompts whose mean normalised embedding is its classifier."""

    name: str
    images: tuple[Image, ...]
    labels: tuple[int, ...]
    class_names: tuple[str, ...]
    class_prompts: tuple[tuple[str, ...], ...]

    def __post_init__(self) -> None:
        if len(self.images) != len(self.labels):
            raise DatasetError(f"{self.name}: {len(self.images)} images but {len(self.labels)} labels")
        if not self.images:
            raise DatasetError(f"{self.name}: no images")
        if len(self.class_names) != len(self.class_prompts):
            raise DatasetError(f"{self.name}: {len(self.class_names)} class names but prompts for {len(self.class_prompts)}")
        empty = [self.class_names[c] for c, p in enumerate(self.class_prompts) if not p]
        if empty:
            raise DatasetError(f"{self.name}: class(es) {empty[:5]} have no prompt")
        bad = [k for k, y in enumerate(self.labels) if not 0 <= y < len(self.class_names)]
        if bad:
            raise DatasetError(f"{self.name}: image(s) {bad[:5]} have a label outside 0..{len(self.class_names) - 1}")

    @classmethod
    def from_templates(cls, name: str, images: Sequence[Image], labels: Sequence[int], class_names: Sequence[str],
                       templates: Sequence[str]) -> "ClassificationSet":
        """Prompts as ``template.format(class_name)`` for every template (CLIP's prompt ensembling)."""
        prompts = tuple(tuple(t.format(c) for t in templates) for c in class_names)
        return cls(name, tuple(images), tuple(labels), tuple(class_names), prompts)


def resolve_under(root: Path, relative: str, origin: str) -> Path:
    """``root / relative``, refusing names that escape ``root`` (absolute paths, ``..``, links out)."""
    try:
        root_resolved = root.resolve()
    except (OSError, RuntimeError, ValueError) as exc:  # a NUL byte, a symlink loop in the root itself
        raise DatasetError(f"{origin}: image root {str(root)!r} cannot be resolved: {exc}") from exc
    try:
        candidate = (root / relative).resolve()
    except (OSError, RuntimeError, ValueError) as exc:  # NUL bytes, symlink loops
        raise DatasetError(f"{origin}: filename {relative!r} cannot be resolved: {exc}") from exc
    if not candidate.is_relative_to(root_resolved):
        raise DatasetError(f"{origin}: filename {relative!r} escapes the image root {root}")
    return candidate
