"""Disk room for a rehearsal: what it will take, checked before any checkpoint is written; what it took, reported.

A rehearsal writes checkpoints (a few MB each shrunk, 605 MB per ViT-B/32 at the real sizes). On a disk without
room it used to stop at the first checkpoint that did not fit, with torch's ``basic_ios::clear: iostream error`` and a
traceback (CI, 2026-11-26). So ``prepare`` first asks ``check_room``: the stand-in models' exact sizes plus what each
paper's stand-in data and pipeline took when ``MEASURED``; too little free, and it stops with one line.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from common.errors import WorkspaceError
from common.pipeline.disk import free_bytes
from common.zoo import get_spec
from common.zoo.specs import register_local_configs

GB = 1e9


class NoRoomError(WorkspaceError):
    """The disk under the rehearsal's folder has less room than the rehearsal needs."""


@dataclass(frozen=True)
class Footprint:
    """What one paper adds to the copy, in bytes."""

    data: int
    """Its stand-in inputs and what the downloader fetched for them (the stand-in models apart: ``model_bytes``)."""
    kept: int
    """What ``dvc repro papers/<paper>`` leaves: its stages' outputs and DVC's cache of them (hard links counted
    once; stages of another paper's pipeline counted under that paper)."""
    peak: int
    """How far the disk's free space fell below where it stood when the pipeline started, at most, while it ran
    (resume states and temporary files, later removed, on top of ``kept``)."""


MEASURED_REAL_SIZES: dict[str, Footprint] = {
    "aro": Footprint(data=51_859_456, kept=1_227_976_704, peak=4_187_078_656),
    "conclip": Footprint(data=20_717_568, kept=3_033_407_488, peak=3_034_177_536),
    "hard_positives": Footprint(data=37_965_824, kept=5_518_274_560, peak=5_518_557_184),
    "sugarcrepe": Footprint(data=10_289_152, kept=5_699_571_712, peak=5_699_973_120),
    "bivlc": Footprint(data=568_107_008, kept=4_845_617_152, peak=5_447_020_544),
}
"""Per paper, measured on the build machine (2 cores, AMD EPYC) on 2026-11-27. ``data``: the copy's ``data/`` and hub
cache after ``prepare`` of that paper alone with the model writers stubbed (a paper whose pipeline walks another's
stages less that one's). ``kept`` and ``peak``: the largest of three rehearsals of all five (run order aro, conclip,
hard_positives, sugarcrepe, bivlc; 25.0 GB in all): ``python -m tests.rehearsal --quiet`` at fcb21db, the copy's size
sampled every 15 s, and ``bash .ci/run`` at 5ba8020 and at f7a29b2 in fresh clones, the pipelines' own lines
(``Outcome.grew``, ``Outcome.peak``: free space sampled every 5 s; ARO's peak was 3.0, 3.6 and 4.2 GB). Refresh them
from those lines. These are the rehearsal at the architectures' real sizes (``--real-sizes``)."""

MEASURED: dict[str, Footprint] = {
    paper: Footprint(data=MEASURED_REAL_SIZES[paper].data, kept=kept, peak=peak)
    for paper, (kept, peak) in {
        "aro": (38_899_712, 45_735_936),
        "conclip": (74_645_504, 75_382_784),
        "hard_positives": (199_806_976, 200_089_600),
        "sugarcrepe": (177_864_704, 178_241_536),
        "bivlc": (118_468_608, 118_706_176),
    }.items()
}
"""The same with the shrunk architectures (``tests.rehearsal.archs``), the default: ``kept`` and ``peak`` from the
pipelines' own lines of ``make rehearse REHEARSE_FLAGS=--quiet`` on the build machine on 2026-11-29 (the whole
rehearsal: 0.8 GB at its end, the disk's free space 0.9 GB lower at most); ``data`` as measured at the real sizes
(the stand-in data do not depend on the architectures; an over-estimate: the whole copy was 0.2 GB once prepared)."""


UNMEASURED = Footprint(data=GB, kept=6 * GB, peak=9 * GB)
"""A paper with no measurement yet (new stand-ins, ``papers/<paper>.py``): above the largest measured."""
MARGIN = 1.2
"""Room asked for, over the estimate."""


def model_bytes(arch: str) -> int:
    """The bytes of an open_clip architecture's fp32 state dict, built on the ``meta`` device: no memory."""
    # deferred: loads open_clip, torch only when called
    import open_clip
    import torch

    # deferred: loads PIL, torch only when called
    from common.zoo.openclip import quiet_random_init_warning

    register_local_configs()
    with torch.device("meta"), quiet_random_init_warning():
        model = open_clip.create_model(arch, pretrained=None, device="meta")
    return sum(t.numel() * t.element_size() for t in model.state_dict().values())


def needed(papers: Sequence[str], models: Iterable[str], footprints: Mapping[str, Footprint] | None = None) -> int:
    """Bytes a rehearsal of ``papers`` writing stand-ins of ``models`` needs free at its start: the models, every
    paper's data and kept outputs, and the largest peak above that of one pipeline (they run one after another)."""
    archs = [get_spec(name).arch for name in dict.fromkeys(models)]
    sizes = {arch: model_bytes(arch) for arch in dict.fromkeys(archs)}
    footprints = [(MEASURED if footprints is None else footprints).get(p, UNMEASURED) for p in papers]
    return sum(sizes[arch] for arch in archs) + sum(f.data + f.kept for f in footprints) + max(
        (max(f.peak - f.kept, 0) for f in footprints), default=0)


def tree_bytes(folder: Path) -> int:
    """Bytes ``folder`` takes on disk (allocated blocks; a file with several hard links inside it counted once)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for root, dirs, files in os.walk(folder):
        for name in (*dirs, *files):
            try:
                stat = os.lstat(os.path.join(root, name))
            except OSError:  # removed while walking
                continue
            if (stat.st_dev, stat.st_ino) in seen:
                continue
            seen.add((stat.st_dev, stat.st_ino))
            total += stat.st_blocks * 512
    return total


def check_room(folder: Path, papers: Sequence[str], models: Iterable[str], copy: int = 0,
               footprints: Mapping[str, Footprint] | None = None) -> int:
    """Raise ``NoRoomError`` (one line) when the disk under ``folder`` has less free than ``MARGIN`` times what a
    rehearsal of ``papers`` needs, ``copy`` (the workspace copy's bytes) included; returns the bytes needed."""
    need = needed(papers, models, footprints) + copy
    free = free_bytes(folder)
    if free < MARGIN * need:
        unmeasured = [p for p in papers if p not in MEASURED]
        guess = f" ({', '.join(unmeasured)}: not measured yet, counted as {gb(UNMEASURED.data + UNMEASURED.peak)})" \
            if unmeasured else ""
        raise NoRoomError(
            f"{folder}: {gb(free)} free on its disk; a rehearsal of {', '.join(papers)} writes about {gb(need)} "
            f"({f'the workspace copy, {gb(copy)}; ' if copy else ''}the stand-in checkpoints and each "
            f"fine-tune's; measured per paper in tests/rehearsal/space.py){guess}, and asks for "
            f"{gb(MARGIN * need)}. Free some space, give --dir on a "
            "disk with room, or rehearse fewer papers (make rehearse PAPER=...)")
    return need


class FreeWatch:
    """The disk under ``folder`` watched while a pipeline runs (a thread sampling its free space every ``every``
    seconds): ``drop``, how far the free space fell below where it stood at the start, at most."""

    def __init__(self, folder: Path, every: float = 5.0):
        self.folder, self.every, self.drop = Path(folder), every, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> "FreeWatch":
        self._start = self._lowest = free_bytes(self.folder)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(self.every):
            self._lowest = min(self._lowest, free_bytes(self.folder))

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join()
        self._lowest = min(self._lowest, free_bytes(self.folder))
        self.drop = max(0, self._start - self._lowest)


def gb(n: float) -> str:
    """Bytes as GB, or as MB below 0.1 GB (the workspace copy is a few MB: "0.0 GB" would say nothing)."""
    return f"{n / GB:.1f} GB" if abs(n) >= 0.1 * GB else f"{n / 1e6:.1f} MB"
