"""Caption-negative sets in SugarCrepe's released format (Hsieh et al., NeurIPS 2023 D&B): one JSON file per category
mapping an example id to ``{"filename", "caption", "negative_caption"}``, plus an image root. The mini world writes
the same format, so one loader serves both profiles."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from common.errors import unknown_name
from common.files.io import write_json_atomic
from common.files.jsonl import parse_json
from common.files.tasks import DatasetError, ImageToTextItem, raise_problems, resolve_under
from common.registry.fetch import fetch

CATEGORIES: tuple[str, ...] = (
    "replace_obj", "replace_att", "replace_rel", "swap_obj", "swap_att", "add_obj", "add_att",
)
"""In Table 6's column order."""

COLUMNS: dict[str, str] = {
    "replace_obj": "REPLACE | Object",
    "replace_att": "REPLACE | Attribute",
    "replace_rel": "REPLACE | Relation",
    "swap_obj": "SWAP | Object",
    "swap_att": "SWAP | Attribute",
    "add_obj": "ADD | Object",
    "add_att": "ADD | Attribute",
}
"""Category -> the column the SugarCrepe paper prints it under (Table 2 / Table 6)."""

REQUIRED_FIELDS = ("filename", "caption", "negative_caption")
MANIFEST_REQUIRED = ("data_dir", "image_root")
"""Keys every ``manifest.json`` has (``PreparedSet``); ``categories`` is optional (default: all seven)."""


def released_file_key(category: str) -> str:
    """Download-registry key of the released JSON for ``category``."""
    return f"sugarcrepe/data/{category}.json"


def fetch_released(categories: tuple[str, ...] = CATEGORIES) -> dict[str, Path]:
    """The released JSON files, through the checksum-verifying (mirror-aware) downloader."""
    return {c: fetch(released_file_key(c), progress=False) for c in categories}


def read_category(path: Path) -> dict[str, dict]:
    """One category file, parsed and checked; errors name the file and the example id."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{path}: cannot read SugarCrepe file: {exc}") from exc
    data = parse_json(text, path, unique_keys=True)
    if not isinstance(data, dict):
        raise DatasetError(f"{path}: expected an object mapping example ids to examples, got {type(data).__name__}")
    if not data:
        raise DatasetError(f"{path}: no examples in this SugarCrepe file (an empty object); every category scored "
                           "needs at least one example (drop the category from the manifest instead)")
    problems: list[str] = []
    for example_id, record in data.items():
        if not isinstance(record, dict):
            problems.append(f"{path}: example {example_id!r}: expected an object, got {type(record).__name__}")
            continue
        problems += [f"{path}: example {example_id!r}: field {name!r} missing or not a non-empty string"
                     for name in REQUIRED_FIELDS if not isinstance(record.get(name), str) or not record[name].strip()]
    raise_problems(problems, "SugarCrepe example(s)", one_line=True)
    return data


def load_sugarcrepe(
    files: dict[str, Path], image_root: Path, check_images: bool = True, expected: dict[str, int] | None = None,
    manifest: Path | None = None,
) -> list[ImageToTextItem]:
    """All examples of the given category files as image-to-text items (positive caption first); every example is kept
    or the load fails, one ``DatasetError`` listing each offending file and example id. ``expected``: a category's known
    example count (a manifest's ``counts``): a file holding another (cut short, hand-edited) is refused."""
    items: list[ImageToTextItem] = []
    problems: list[str] = []
    for category, path in files.items():
        examples = read_category(path)
        wanted = (expected or {}).get(category)
        if wanted is not None and len(examples) != wanted:
            problems.append(f"{path}: holds {len(examples)} example(s) but {manifest or 'the manifest'} counts "
                            f"{wanted}; the file is damaged or the manifest stale: rebuild the set (its stage)")
            continue
        for example_id, record in examples.items():
            origin = f"{path}#{example_id if example_id.isprintable() else repr(example_id)}"  # one line, always
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
    raise_problems(problems, "SugarCrepe example(s)", one_line=True)
    return items


def category_counts(files: dict[str, Path]) -> dict[str, int]:
    return {c: len(read_category(p)) for c, p in files.items()}


@dataclass(frozen=True)
class PreparedSet:
    """A SugarCrepe-format set ready to score, from the ``manifest.json`` a paper's set stage writes (paths relative to
    the manifest's folder)."""

    path: Path
    data_dir: Path
    image_root: Path
    categories: tuple[str, ...]
    info: dict

    @classmethod
    def load(cls, manifest: Path) -> "PreparedSet":
        """The manifest, checked (``counts``, optional: each category's example count, which ``items`` then checks)."""
        try:
            text = manifest.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise DatasetError(f"{manifest}: no prepared SugarCrepe set here; run `dvc repro papers/sugarcrepe`") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise DatasetError(f"{manifest}: cannot read manifest: {exc}") from exc
        info = parse_json(text, manifest, unique_keys=True)
        if not isinstance(info, dict):
            raise DatasetError(f"{manifest}: a manifest is a JSON object (see `python -m common eval --help`), "
                               f"got {type(info).__name__}")
        for key in MANIFEST_REQUIRED:
            if not isinstance(info.get(key), str) or not info[key]:
                raise DatasetError(f"{manifest}: key {key!r} missing or not a non-empty string (a folder, relative "
                                   "to the manifest's; see `python -m common eval --help`)")
            if not info[key].isprintable():
                raise DatasetError(f"{manifest}: key {key!r} holds a NUL or another control character, which no "
                                   f"folder name here may: {info[key]!r:.60}")
        categories = info.get("categories", list(CATEGORIES))
        if not isinstance(categories, list) or not all(isinstance(c, str) for c in categories):
            raise DatasetError(f"{manifest}: key 'categories' must be a list of category names, got {categories!r:.80}")
        if not categories:
            raise DatasetError(f"{manifest}: no examples: 'categories' is empty (omit it for all seven)")
        for category in categories:
            if category not in CATEGORIES:
                raise DatasetError(f"{manifest}: 'categories': {unknown_name('category', category, CATEGORIES)}")
        repeated = sorted({c for c in categories if categories.count(c) > 1})
        if repeated:
            raise DatasetError(f"{manifest}: key 'categories' lists {', '.join(map(repr, repeated))} more than once "
                               "(each category is scored once)")
        counts = info.get("counts")
        if counts is not None and (not isinstance(counts, dict) or not all(
                isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in counts.values())):
            raise DatasetError(f"{manifest}: key 'counts' must map category names to example counts (integers), got "
                               f"{counts!r:.80}")
        base = manifest.parent
        return cls(
            path=manifest, data_dir=base / info["data_dir"], image_root=base / info["image_root"],
            categories=tuple(categories), info=info,
        )

    def files(self) -> dict[str, Path]:
        return {c: self.data_dir / f"{c}.json" for c in self.categories}

    def items(self) -> list[ImageToTextItem]:
        return load_sugarcrepe(self.files(), self.image_root, expected=self.info.get("counts"), manifest=self.path)

    def describe(self) -> dict:
        return {"manifest": str(self.path), "data_dir": str(self.data_dir), "image_root": str(self.image_root),
                **{k: v for k, v in self.info.items() if k not in ("data_dir", "image_root")}}


def write_manifest(out_dir: Path, data_dir: Path | str, image_root: Path | str, info: dict) -> PreparedSet:
    manifest = out_dir / "manifest.json"
    write_json_atomic(manifest, {"data_dir": str(data_dir), "image_root": str(image_root),
                                 "categories": list(CATEGORIES), **info})
    return PreparedSet.load(manifest)
