"""SugarCrepe (Hsieh et al., NeurIPS 2023 D&B): the released JSON files plus an image root.

Each category file maps an example id to ``{"filename", "caption", "negative_caption"}``; an example
becomes one ``ImageToTextItem`` with the positive caption first. The mini world writes the same
format, so one loader serves both profiles.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from common.tasks import DatasetError, ImageToTextItem, resolve_under

CATEGORIES: tuple[str, ...] = (
    "replace_obj", "replace_att", "replace_rel", "swap_obj", "swap_att", "add_obj", "add_att",
)
"""In Table 6's column order."""

REQUIRED_FIELDS = ("filename", "caption", "negative_caption")
MANIFEST_REQUIRED = ("data_dir", "image_root")
"""Keys every ``manifest.json`` has (``PreparedSet``); ``categories`` is optional (default: all seven)."""
MAX_LISTED_ERRORS = 20


def released_file_key(category: str) -> str:
    """Download-registry key of the released JSON for ``category``."""
    return f"sugarcrepe/data/{category}.json"


def fetch_released(categories: tuple[str, ...] = CATEGORIES) -> dict[str, Path]:
    """The released JSON files, through the checksum-verifying (mirror-aware) downloader."""
    from common.download import fetch

    return {c: fetch(released_file_key(c), progress=False) for c in categories}


def read_category(path: Path) -> dict[str, dict]:
    """One category file, parsed and checked; errors name the file and the example id."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{path}: cannot read SugarCrepe file: {exc}") from exc
    duplicates: list[str] = []

    def no_duplicate_ids(pairs: list[tuple[str, object]]) -> dict:
        seen: dict = {}
        for key, value in pairs:
            if key in seen:
                duplicates.append(key)
            seen[key] = value
        return seen

    try:
        data = json.loads(text, object_pairs_hook=no_duplicate_ids)
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}: malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from exc
    if not isinstance(data, dict):
        raise DatasetError(f"{path}: expected an object mapping example ids to examples, got {type(data).__name__}")
    if not data:
        raise DatasetError(f"{path}: no examples in this SugarCrepe file (an empty object); every category scored "
                           "needs at least one example (drop the category from the manifest instead)")
    problems = [f"{path}: duplicate key {key!r} (JSON keeps only the last; an example id must appear once)"
                for key in duplicates]
    for example_id, record in data.items():
        if not isinstance(record, dict):
            problems.append(f"{path}: example {example_id!r}: expected an object, got {type(record).__name__}")
            continue
        for name in REQUIRED_FIELDS:
            value = record.get(name)
            if not isinstance(value, str) or not value.strip():
                problems.append(f"{path}: example {example_id!r}: field {name!r} missing or not a non-empty string")
    _raise_if(problems)
    return data


def load_sugarcrepe(
    files: dict[str, Path], image_root: Path, check_images: bool = True
) -> list[ImageToTextItem]:
    """All examples of the given category files as image-to-text items (positive caption first).

    Every example is kept or the load fails: a missing image, a filename escaping ``image_root`` or a
    malformed record raises ``DatasetError`` listing each offending file and example id.
    """
    items: list[ImageToTextItem] = []
    problems: list[str] = []
    for category, path in files.items():
        for example_id, record in read_category(path).items():
            origin = f"{path}#{example_id}"
            try:
                image = resolve_under(image_root, record["filename"], origin)
            except DatasetError as exc:
                problems.append(str(exc))
                continue
            if check_images and not image.is_file():
                problems.append(f"{origin}: image {record['filename']!r} not found under {image_root}")
                continue
            items.append(ImageToTextItem(
                item_id=f"{category}/{example_id}", group=category, image=image,
                captions=(record["caption"], record["negative_caption"]), origin=origin,
            ))
    _raise_if(problems)
    return items


def category_counts(files: dict[str, Path]) -> dict[str, int]:
    return {c: len(read_category(p)) for c, p in files.items()}


def _raise_if(problems: list[str]) -> None:
    if len(problems) == 1:
        raise DatasetError(problems[0])
    if problems:
        listed = "\n  ".join(problems[:MAX_LISTED_ERRORS])
        more = f"\n  ... and {len(problems) - MAX_LISTED_ERRORS} more" if len(problems) > MAX_LISTED_ERRORS else ""
        raise DatasetError(f"{len(problems)} bad SugarCrepe example(s):\n  {listed}{more}")


@dataclass(frozen=True)
class PreparedSet:
    """A SugarCrepe-format set ready to score: category files, an image root, and where they came from.

    ``manifest.json`` is written by ``papers.sugarcrepe.sets_mini`` (the rendered set) or ``papers.sugarcrepe.sets_full``
    (released JSON + COCO val2017); relative paths in it are relative to the manifest's folder.
    """

    path: Path
    data_dir: Path
    image_root: Path
    categories: tuple[str, ...]
    info: dict

    @classmethod
    def load(cls, manifest: Path) -> "PreparedSet":
        try:
            info = json.loads(manifest.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise DatasetError(f"{manifest}: no prepared SugarCrepe set here; run `dvc repro papers/sugarcrepe`") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise DatasetError(f"{manifest}: cannot read manifest: {exc}") from exc
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{manifest}: malformed manifest JSON at line {exc.lineno} column {exc.colno}: "
                               f"{exc.msg}") from exc
        if not isinstance(info, dict):
            raise DatasetError(f"{manifest}: a manifest is a JSON object (see `python -m common eval --help`), "
                               f"got {type(info).__name__}")
        for key in MANIFEST_REQUIRED:
            if not isinstance(info.get(key), str) or not info[key]:
                raise DatasetError(f"{manifest}: key {key!r} missing or not a non-empty string (a folder, relative "
                                   "to the manifest's; see `python -m common eval --help`)")
        categories = info.get("categories", list(CATEGORIES))
        if not isinstance(categories, list) or not all(isinstance(c, str) for c in categories):
            raise DatasetError(f"{manifest}: key 'categories' must be a list of category names, got {categories!r}")
        if not categories:
            raise DatasetError(f"{manifest}: no examples: 'categories' is empty (omit it for all seven)")
        for category in categories:
            if category not in CATEGORIES:
                from common.errors import unknown_name

                raise DatasetError(f"{manifest}: 'categories': {unknown_name('category', category, CATEGORIES)}")
        base = manifest.parent
        return cls(
            path=manifest, data_dir=base / info["data_dir"], image_root=base / info["image_root"],
            categories=tuple(categories), info=info,
        )

    def files(self) -> dict[str, Path]:
        return {c: self.data_dir / f"{c}.json" for c in self.categories}

    def items(self) -> list[ImageToTextItem]:
        return load_sugarcrepe(self.files(), self.image_root)

    def describe(self) -> dict:
        return {"manifest": str(self.path), "data_dir": str(self.data_dir), "image_root": str(self.image_root),
                **{k: v for k, v in self.info.items() if k not in ("data_dir", "image_root")}}


def write_manifest(out_dir: Path, data_dir: Path | str, image_root: Path | str, info: dict) -> PreparedSet:
    from common.io import write_json_atomic

    manifest = out_dir / "manifest.json"
    write_json_atomic(manifest, {"data_dir": str(data_dir), "image_root": str(image_root),
                                 "categories": list(CATEGORIES), **info})
    return PreparedSet.load(manifest)
