"""The hard-positives benchmark (Kamath et al., ECCV 2024, Sec. 2.4) read from the released files as (c, c_p, c_n)
items for ``papers.hard_positives.evaluation``. Stage ``full-data`` (``prepare_full``) fetches everything before it
crops anything, so that a missing manual download fails at once; ``FullSet`` reads the prepared set back. The files,
their images, how the authors' code pairs them and what is checked here: the README's "The released files".
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

from common.errors import WorkspaceError
from common.files.io import sha256_file, write_json_atomic
from common.files.jsonl import read_json
from common.files.tasks import DatasetError, ImageToTextItem, resolve_under
from common.files.visual_genome import (
    VG_ATTRIBUTION, VgRecord, check_vg_image, crop_relpath, crop_vg, raise_problems, read_vg, resolve_vg_image,
    vg_image_folders, vg_image_root)
from common.paths import build_dir
from common.pipeline.cli import stage_parser
from common.pipeline.inputs import full_inputs
from common.pipeline.params import add_stage_option, own_params
from common.registry.fetch import quiet_fetch
from papers.hard_positives import evaluation, released

Fetch = Callable[[str], Path]
"""A download-registry key -> the verified local file (``common.registry.fetch.fetch``, or a prepared set's files)."""
REPLACE_KINDS: tuple[str, ...] = ("attributes", "relations")
REPLACE_GROUPS = {"attributes": "replace-attributes", "relations": "replace-relations"}
SWAP_GROUP = "swap"
SWAP_FILES = ("hard_positives/data/visual_genome_attribution.json",
              "hard_positives/swapped_data/visual_genome_attribution.json")
"""Registry keys of SWAP's (original captions, hard positives)."""
SWAP_IMAGES = "aro/vgr_vga_images.zip"
"""The image zip the authors' ``VG_Attribution`` downloads (ARO's, in the shared registry)."""
MANIFEST_NAME = "manifest.json"
CROPS = "crops"
ANNOTATION_KEYS: tuple[str, ...] = (*(k for kind in REPLACE_KINDS for k in released.file_keys(kind)), *SWAP_FILES)
"""Registry keys of the six released files: REPLACE's (original, hard positives) per kind, then SWAP's."""


class HardPositivesDataError(WorkspaceError):
    """The prepared full-profile set is missing or does not match its manifest."""


def _triple(item_id: str, group: str, image: Path, original: str, positive: str, negative: str,
            origin: str) -> ImageToTextItem:
    """``evaluation.triple_item``, except that a row with two equal captions is kept as released: a tie, wrong for
    Orig. and Aug. and in neither brittleness pattern (``triple_item`` refuses it)."""
    if len({original, positive, negative}) < 3:
        return ImageToTextItem(item_id, group, image, (original, positive, negative), origin)
    return evaluation.triple_item(item_id, group, image, original, positive, negative, origin)


def replace_items(fetch: Fetch, image_root: Path | Mapping[str, Path]) -> list[ImageToTextItem]:
    """REPLACE's rows as items, every missing image reported. ``image_root``: the authors' ``data/``, or its
    ``VG_100K/`` and ``VG_100K_2/`` by name (``vg_image_folders``: they come from two zips)."""
    folders = dict(image_root) if isinstance(image_root, Mapping) else {
        name: Path(image_root) / name for name in ("VG_100K", "VG_100K_2")}
    items: list[ImageToTextItem] = []
    problems: list[str] = []
    for kind in REPLACE_KINDS:
        original, swapped = (Path(fetch(key)) for key in released.file_keys(kind))
        for index, (row, hard) in enumerate(released.load_aligned(original, swapped)):
            origin = f"{original}:{index}"
            try:
                image = resolve_vg_image(folders, str(row.get("image_path", "")), origin)
                if not image.is_file():
                    raise DatasetError(f"{origin}: image {row['image_path']!r} not found at {image}")
                items.append(_triple(f"{REPLACE_GROUPS[kind]}/{index}", REPLACE_GROUPS[kind], image,
                                     row["true_caption"], hard["true_caption"], row["false_caption"], origin))
            except DatasetError as exc:
                problems.append(str(exc))
    raise_problems(problems, "REPLACE record(s)")
    return items


SWAP_ALIGNED_FIELDS = ("image_path", "bbox", "false_caption", "group")
"""What the two SWAP files must share at every index: the image and box, c_n, and the attributes."""


def swap_pairs(fetch: Fetch) -> list[tuple[VgRecord, VgRecord]]:
    """SWAP's (original row, hard-positive row) pairs, by position as the authors pair them, checked to be aligned."""
    original, swapped = (Path(fetch(key)) for key in SWAP_FILES)
    a, b = read_vg(original, VG_ATTRIBUTION), read_vg(swapped, VG_ATTRIBUTION)
    if len(a) != len(b):
        raise DatasetError(f"{original} has {len(a)} rows but {swapped} has {len(b)}: the files are paired by "
                           "position, so they must hold the same rows in the same order")
    problems = []
    for x, y in zip(a, b):
        differ = [f for f in SWAP_ALIGNED_FIELDS if getattr(x, f) != getattr(y, f)]
        if differ:
            problems.append(f"{y.origin}: differs from {x.origin} in {', '.join(differ)} (the files are paired by "
                            "position: same image, box, attributes and hard negative at every index)")
    raise_problems(problems, "SWAP record(s)")
    return list(zip(a, b))


def swap_items(fetch: Fetch, image_root: Path, crop_root: Path) -> list[ImageToTextItem]:
    """SWAP's rows as items, each image the crop of its box under ``crop_root``; ``image_root``: the ``images/``
    folder of ARO's zip."""
    items: list[ImageToTextItem] = []
    problems: list[str] = []
    for row, hard in swap_pairs(fetch):
        try:
            resolve_under(Path(image_root), row.image_path, row.origin)
            image = resolve_under(Path(crop_root), crop_relpath(row), row.origin)
            problem = check_vg_image(row, image, cropped=True, prepare_hint="run the full-data stage")
            if problem:
                raise DatasetError(problem)
            items.append(_triple(f"{SWAP_GROUP}/{row.index}", SWAP_GROUP, image, row.true_caption, hard.true_caption,
                                 row.false_caption, row.origin))
        except DatasetError as exc:
            problems.append(str(exc))
    raise_problems(problems, "SWAP record(s)")
    return items


def equal_caption_ids(items: Sequence[ImageToTextItem]) -> list[str]:
    """The items with two equal captions, kept as released (c_n equal to c or c_p: a tie, wrong for Orig. and Aug.)."""
    return [it.item_id for it in items if len(set(it.captions)) < len(it.captions)]


def prepare_full(out_dir: Path, fetch: Fetch = quiet_fetch, cap: int | None = None) -> "FullSet":
    """Fetch (or verify) every file and image set, crop SWAP's boxes, check every row, write ``manifest.json``
    (with ``cap``, every row is still read and checked but the set scores the first ``cap`` of each group)."""
    out_dir = Path(out_dir)
    if cap is not None and cap < 1:
        raise ValueError(f"cap must be a positive number of items per group or None, got {cap}")
    files = {key: Path(fetch(key)).resolve() for key in ANNOTATION_KEYS}
    folders = {name: path.resolve() for name, path in vg_image_folders(fetch).items()}
    swap_root = vg_image_root(Path(fetch(SWAP_IMAGES))).resolve()
    swap_pairs(files.__getitem__)  # aligned (same boxes) before any crop is written
    crops = crop_vg({VG_ATTRIBUTION: files[SWAP_FILES[0]]}, swap_root, out_dir / CROPS)
    manifest = {
        "kind": "hard_positives", "profile": "full",
        "files": {key: str(path) for key, path in files.items()},
        "sha256": {key: sha256_file(path) for key, path in files.items()},
        "vg_image_folders": {name: str(path) for name, path in folders.items()},
        "swap_image_root": str(swap_root), "crop_root": CROPS, "crops": crops, "cap": cap,
    }
    full = FullSet(out_dir / MANIFEST_NAME, manifest)
    every = full.items(capped=False)  # every row read, every image present
    manifest["counts"] = full.counts(full.capped(every))
    if cap is not None:
        manifest["released_counts"] = full.counts(every)
    write_json_atomic(out_dir / MANIFEST_NAME, manifest)
    return FullSet.load(out_dir)


@dataclass(frozen=True)
class FullSet:
    """The prepared benchmark, from ``manifest.json`` (written by ``prepare_full``)."""

    path: Path
    info: dict

    @classmethod
    def load(cls, manifest: Path) -> "FullSet":
        manifest = Path(manifest)
        if manifest.is_dir():
            manifest = manifest / MANIFEST_NAME
        if not manifest.is_file():
            raise HardPositivesDataError(f"{manifest}: no prepared set here; run `dvc repro "
                                         "papers/hard_positives/dvc.yaml:full-data` (python -m papers.hard_positives.sets_full)")
        info = read_json(manifest, dict, remedy="run the full-data stage again")
        missing = [k for k in ("files", "sha256", "vg_image_folders", "swap_image_root", "crop_root") if k not in info]
        if missing:
            raise HardPositivesDataError(f"{manifest}: manifest lacks {missing}; run the full-data stage again")
        return cls(manifest, info)

    def _path(self, value: str) -> Path:
        path = Path(value)
        return path if path.is_absolute() else self.path.parent / path

    def fetch(self, key: str) -> Path:
        """The prepared file of a registry key, checked against the sha256 recorded when it was prepared."""
        if key not in self.info["files"]:
            raise HardPositivesDataError(f"{self.path}: no file for {key!r}; run the full-data stage again")
        path = self._path(self.info["files"][key])
        if not path.is_file():
            raise HardPositivesDataError(f"{self.path}: {key}: {path} is gone; run the full-data stage again")
        if sha256_file(path) != self.info["sha256"].get(key):
            raise HardPositivesDataError(f"{self.path}: {key}: {path} changed since it was prepared (sha256 "
                                         f"{sha256_file(path)}, recorded {self.info['sha256'].get(key)}); run the "
                                         "full-data stage again")
        return path

    @property
    def cap(self) -> int | None:
        """The cap on items per group the set was prepared with (``full_inputs.cap``; None: every item)."""
        return self.info.get("cap")

    def capped(self, items: Sequence[ImageToTextItem]) -> list[ImageToTextItem]:
        """The first ``cap`` items of each group, in order (all of them without a cap)."""
        if self.cap is None:
            return list(items)
        seen: Counter = Counter()
        kept = []
        for it in items:
            seen[it.group] += 1
            if seen[it.group] <= self.cap:
                kept.append(it)
        return kept

    def items(self, capped: bool = True) -> list[ImageToTextItem]:
        """REPLACE (attributes, relations), then SWAP, every row read and checked."""
        folders = {name: self._path(p) for name, p in self.info["vg_image_folders"].items()}
        items = [*replace_items(self.fetch, folders),
                 *swap_items(self.fetch, self._path(self.info["swap_image_root"]), self._path(self.info["crop_root"]))]
        return self.capped(items) if capped else items

    @staticmethod
    def counts(items: Sequence[ImageToTextItem]) -> dict:
        """Per group: items, distinct (image, c, c_p, c_n), and rows with two equal captions (kept as released)."""
        equal = Counter(i.split("/")[0] for i in equal_caption_ids(items))
        out = {}
        for group in evaluation.GROUPS:
            chosen = [it for it in items if it.group == group]
            if chosen:
                out[group] = {"items": len(chosen), "distinct": len({(str(it.image), it.captions) for it in chosen}),
                              "equal_captions": equal.get(group, 0)}
        return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = stage_parser(
        __spec__.name, "Fetch or verify the released REPLACE and SWAP files and their images, crop SWAP's boxes, "
                       "check every row, write manifest.json", out="default: build/full/hard_positives")
    add_stage_option(parser)
    args = parser.parse_args(argv)

    cap = full_inputs(own_params(args.stage)).cap
    full = prepare_full(Path(args.out or build_dir("full", "hard_positives")), cap=cap)
    print(json.dumps({"manifest": str(full.path), "counts": full.info["counts"], "crops": full.info["crops"]},
                     indent=2))
    return 0


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
