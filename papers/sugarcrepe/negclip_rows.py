"""The NegCLIP training sets as refinement and the runs read them, both profiles: mini ``FinetuneSet`` and
``run_data``; full ``TrainRow``, ``run_rows`` and ``run_negatives``; a refined run keeps the rows its ``refined.json``
lists for its kind (``kept_rows``). Its own module so that the runs import neither the sets' builders nor the
refinement's blind scorers.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from common.errors import WorkspaceError
from common.files.arrays import load_array
from common.files.jsonl import read_json, read_rows
from common.files.tasks import DatasetError
from papers.sugarcrepe.runs import ALL, FULL_RUNS, KINDS, RUNS, run_spec

REMEDY = "rebuild the fine-tuning set (`python -m papers.sugarcrepe.negclip_sets_mini`, stage negclip-mini-set)"


class NegclipSetError(WorkspaceError):
    """An input of the NegCLIP runs that cannot be used as given (the message names the file)."""


def kept_rows(path: Path, run: str, kind: str, remedy: str) -> list[Any]:
    """The rows ``refined.json`` at ``path`` keeps for ``kind``: refused when it has no such kind or kept none."""
    refined = read_json(path, dict, remedy)
    try:
        kept = refined["kinds"][kind]["kept"]
    except (KeyError, TypeError):
        raise DatasetError(f"{path}: no refinement of kind {kind!r}") from None
    if not kept:
        n_in = refined["kinds"][kind].get("n_in", "?")
        raise NegclipSetError(f"{path}: refinement kept no {kind} negative of {n_in}; {run} has nothing to train on")
    return kept


@dataclass(frozen=True)
class FinetuneSet:
    """Images (N, H, W, 3) uint8; per image ``captions_per_image`` captions; per caption a negative of each kind."""

    images: np.ndarray
    captions: list[list[str]]
    negatives: list[list[dict[str, str]]]

    def __post_init__(self):
        if self.images.ndim != 4 or len(self.images) != len(self.captions) or len(self.captions) != len(self.negatives):
            raise ValueError("FinetuneSet: images (N, H, W, 3), captions and negatives need one entry per image")
        per_image = {len(c) for c in self.captions}
        if len(per_image) != 1 or any(len(c) != len(n) for c, n in zip(self.captions, self.negatives)):
            raise ValueError("FinetuneSet: every image needs the same number of captions, each with its negatives")

    @property
    def captions_per_image(self) -> int:
        return len(self.captions[0])

    def kinds(self) -> tuple[str, ...]:
        return tuple(self.negatives[0][0])

    def rows(self) -> list[tuple[int, int]]:
        """(image, caption) of every caption, image-major: the order ``refined.json`` indexes."""
        return [(i, j) for i in range(len(self.captions)) for j in range(self.captions_per_image)]

    def subset(self, rows: Sequence[Sequence[int]]) -> "FinetuneSet":
        """Only the given (image, caption) rows: the images that keep one, each caption list padded to the same
        length by repeating its kept captions in order (the layout needs as many per image)."""
        kept: dict[int, list[int]] = {}
        for i, j in rows:
            kept.setdefault(int(i), []).append(int(j))
        images = sorted(kept)
        if not images:
            raise NegclipSetError("the subset of the fine-tuning set is empty")
        per_image = self.captions_per_image
        picks = {i: [kept[i][k % len(kept[i])] for k in range(per_image)] for i in images}
        return FinetuneSet(self.images[images], [[self.captions[i][j] for j in picks[i]] for i in images],
                           [[self.negatives[i][j] for j in picks[i]] for i in images])

    @classmethod
    def load(cls, root: Path) -> "FinetuneSet":
        root = Path(root)
        try:
            images = load_array(root / "images.npy")
        except FileNotFoundError:
            raise NegclipSetError(f"{root / 'images.npy'}: no fine-tuning set here; run the negclip-mini-set stage "
                                  "(`python -m papers.sugarcrepe.negclip_sets_mini`)") from None
        captions = read_json(root / "captions.json", list, REMEDY)
        negatives = read_json(root / "negatives.json", list, REMEDY)
        if len(captions) != len(images):
            raise DatasetError(f"{root / 'captions.json'}: expected {len(images)} caption lists (one per image)")
        if len(negatives) != len(images):
            raise DatasetError(f"{root / 'negatives.json'}: expected {len(images)} records (one per image)")
        kinds = None
        for i, (caps, negs) in enumerate(zip(captions, negatives)):
            if len(caps) != len(negs):
                raise DatasetError(f"{root / 'negatives.json'}: record {i}: {len(negs)} negative sets for "
                                   f"{len(caps)} captions")
            for j, n in enumerate(negs):
                kinds = kinds or sorted(n)
                if sorted(n) != kinds or not all(isinstance(v, str) and v for v in n.values()):
                    raise DatasetError(f"{root / 'negatives.json'}: record {i}: caption {j}: needs one non-empty "
                                       f"negative of each kind {kinds}, has {n}")
        try:
            return cls(images, captions, negatives)
        except ValueError as exc:
            raise DatasetError(f"{root}: {exc}") from None


def run_data(run: str, set_dir: Path) -> FinetuneSet:
    """What mini ``run`` trains on: the whole set, or (a refined run) the rows ``refined.json`` keeps for its kind."""
    spec = run_spec(RUNS, run)
    data = FinetuneSet.load(set_dir)
    if not spec.refined:
        return data
    return data.subset(kept_rows(Path(set_dir) / "refined.json", run, spec.hard_negative, REMEDY))


@dataclass(frozen=True)
class TrainRow:
    """One caption of NegCLIP's train TSV with its CREPE-style negative of each kind."""

    image: str
    """The COCO file name (resolved under the images folder)."""
    caption: str
    negatives: Mapping[str, str]


def _check_row(row: TrainRow) -> None:
    """Every kind's negative, each a non-empty string: the runs share these rows."""
    if (not isinstance(row.negatives, dict) or sorted(row.negatives) != sorted(KINDS)
            or not all(isinstance(v, str) and v for v in row.negatives.values())):
        raise DatasetError(f"needs one non-empty negative of each kind {list(KINDS)}")


def load_rows(set_dir: Path) -> list[TrainRow]:
    """``rows.jsonl`` of a full training set: at least one row, each with every kind's negative."""
    return read_rows(Path(set_dir) / "rows.jsonl", TrainRow, "a training row",
                     remedy="no training set here; run the negclip-full-set stage "
                            "(`python -m papers.sugarcrepe.negclip_sets_full`)", check=_check_row)


def run_rows(run: str, set_dir: Path, refined_path: Path | None = None) -> list[TrainRow]:
    """What full ``run`` trains on: every row, or (a refined run) the rows ``refined.json`` keeps for its kind."""
    spec = run_spec(FULL_RUNS, run)
    rows = load_rows(set_dir)
    if not spec.refined:
        return rows
    if refined_path is None:
        raise NegclipSetError(f"{run} trains on refined rows: give the refinement (refined.json)")
    kept = kept_rows(refined_path, run, spec.hard_negative, "run the negclip-full-refine stage")
    if max(kept) >= len(rows):
        raise DatasetError(f"{refined_path}: row {max(kept)} is beyond the {len(rows)} rows of {set_dir}: rerun the "
                           "negclip-full-refine stage on this set")
    return [rows[i] for i in kept]


def run_negatives(run: str, rows: Sequence[TrainRow], seed: int) -> list[str] | None:
    """Each row's negative for full ``run``: of its kind, none, or (``ALL``) a kind drawn per row with
    ``default_rng([seed, 2])`` (the same draw for every run and rerun)."""
    kind = run_spec(FULL_RUNS, run).hard_negative
    if kind is None:
        return None
    if kind == ALL:
        picks = np.random.default_rng([seed, 2]).integers(0, len(KINDS), len(rows))
        return [r.negatives[KINDS[int(p)]] for r, p in zip(rows, picks)]
    return [r.negatives[kind] for r in rows]
