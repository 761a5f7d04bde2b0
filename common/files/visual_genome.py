"""Visual Genome test cases and images as the compositionality benchmarks release them: read, checked, cropped.

* VG-Relation / VG-Attribution (ARO, Yuksekgonul et al.; the hard-positives SWAP set is VG-Attribution with the true
  caption replaced), ``image_path`` relative to the ``images/`` folder of ARO's image zip (``vg_image_root``). The
  upstream loaders crop each image to its box before preprocessing; the engine only transforms the preprocessed
  tensor, so each crop is written once as a PNG named by image and box (``crop_relpath``) and items point at it.
* Visual Genome's own image release (``VG_IMAGE_SOURCES``), which VL-CheckList-based files name as
  ``data/VG_100K_2/<id>.jpg`` (``resolve_vg_image``).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Mapping

from PIL import Image

from common.files.image_transforms import to_rgb
from common.files.io import atomic_path
from common.files.jsonl import is_number, parse_json
from common.files.tasks import DatasetError, raise_problems, resolve_under

VG_RELATION = "vg_relation"
VG_ATTRIBUTION = "vg_attribution"
VG_KINDS = (VG_RELATION, VG_ATTRIBUTION)
BBOX_FIELDS = ("bbox_x", "bbox_y", "bbox_w", "bbox_h")
VG_IMAGE_SOURCES: dict[str, str] = {"VG_100K": "visual_genome/images.zip", "VG_100K_2": "visual_genome/images2.zip"}
"""Visual Genome's image folders -> the download-registry key of the zip that holds each (group "visual-genome")."""


def read_json(path: Path, what: str) -> Any:
    """A JSON file, or a ``DatasetError`` naming it (missing, unreadable, malformed at line:column)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DatasetError(f"{path}: no {what} file here") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{path}: cannot read {what} file: {exc}") from exc
    return parse_json(text, path)


def is_text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


# ----------------------------------------------------------------------------------------------------------------
# VG-Relation / VG-Attribution
# ----------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class VgRecord:
    """One checked VG-Relation / VG-Attribution test case; ``group`` is the relation or ``"attr1_attr2"``."""

    index: int
    image_path: str
    bbox: tuple[float, float, float, float]
    true_caption: str
    false_caption: str
    group: str
    origin: str

    def crop_box(self) -> tuple[int, int, int, int]:
        """The pixel box PIL's ``Image.crop`` uses for the upstream ``(x, y, x + w, y + h)`` (it rounds each)."""
        x, y, w, h = self.bbox
        return round(x), round(y), round(x + w), round(y + h)


def _number_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value)).replace(".", "p").replace("-", "m")


def crop_relpath(record: VgRecord) -> str:
    """Where the crop of ``record`` lives under a crop root: the image path without suffix, then the box (so the
    relation and attribution files share crops)."""
    stem = Path(record.image_path).with_suffix("")
    return f"{stem.as_posix()}__{'_'.join(_number_text(v) for v in record.bbox)}.png"


def read_vg(path: Path, kind: str) -> list[VgRecord]:
    """A VG-Relation (``kind="vg_relation"``) or VG-Attribution file, every record checked."""
    if kind not in VG_KINDS:
        raise ValueError(f"kind must be one of {VG_KINDS}, got {kind!r}")
    data = read_json(path, kind)
    if not isinstance(data, list):
        raise DatasetError(f"{path}: expected a JSON list of test cases, got {type(data).__name__}")
    if not data:
        raise DatasetError(f"{path}: no test cases (an empty list)")
    records: list[VgRecord] = []
    problems: list[str] = []
    for index, record in enumerate(data):
        origin = f"{path}:{index}"
        if not isinstance(record, dict):
            problems.append(f"{origin}: expected an object, got {type(record).__name__}")
            continue
        bad = [f for f in ("image_path", "true_caption", "false_caption") if not is_text(record.get(f))]
        bad += [f for f in BBOX_FIELDS if not is_number(record.get(f))]
        if kind == VG_RELATION:
            bad += [] if is_text(record.get("relation_name")) else ["relation_name"]
        else:
            attributes = record.get("attributes")
            if not (isinstance(attributes, list) and len(attributes) == 2 and all(map(is_text, attributes))):
                bad.append("attributes")
        if bad:
            problems.append(f"{origin}: field(s) {', '.join(map(repr, bad))} missing or of the wrong type "
                            "(strings; numbers for the box; 'attributes' a list of two strings)")
            continue
        bbox = tuple(float(record[f]) for f in BBOX_FIELDS)
        if bbox[2] <= 0 or bbox[3] <= 0:
            problems.append(f"{origin}: empty bounding box (bbox_w={bbox[2]}, bbox_h={bbox[3]})")
            continue
        group = record["relation_name"] if kind == VG_RELATION else "_".join(record["attributes"])
        records.append(VgRecord(index, record["image_path"], bbox, record["true_caption"],  # type: ignore[arg-type]
                                record["false_caption"], group, origin))
    raise_problems(problems, f"{kind} record(s)")
    return records


def check_vg_image(record: VgRecord, image: Path, cropped: bool,
                   prepare_hint: str = "run the prepare stage") -> str | None:
    """Why the image an item of ``record`` points at cannot be used, or None: a missing file, or (uncropped) a box
    that does not cover the whole image, read from its header."""
    if not image.is_file():
        what = f"crop {crop_relpath(record)!r} ({prepare_hint})" if cropped else f"image {record.image_path!r}"
        return f"{record.origin}: {what} not found at {image}"
    if cropped:
        return None
    with Image.open(image) as im:
        size = im.size
    if record.crop_box() != (0, 0, *size):
        return (f"{record.origin}: box {record.crop_box()} does not cover the whole {size[0]}x{size[1]} image and "
                "the manifest names no crop root (run the full-set stage that crops it)")
    return None


def vg_image_root(extracted: Path) -> Path:
    """The zip holds ``images/`` (upstream unzips it beside the annotations and reads ``<root>/images``)."""
    return extracted / "images" if (extracted / "images").is_dir() else extracted


def crop_vg(annotations: dict[str, Path], image_root: Path, crop_root: Path) -> dict[str, int]:
    """Write the crop of every (image, box) of both files that is not there yet; return how many of each."""
    wanted: dict[str, tuple[str, tuple[int, int, int, int], str]] = {}
    for kind, path in annotations.items():
        for r in read_vg(path, kind):
            wanted.setdefault(crop_relpath(r), (r.image_path, r.crop_box(), r.origin))
    written = kept = 0
    for relpath, (image_path, box, origin) in sorted(wanted.items()):
        target = resolve_under(crop_root, relpath, origin)
        if target.is_file():
            kept += 1
            continue
        source = resolve_under(image_root, image_path, origin)
        try:
            with Image.open(source) as im:
                crop = to_rgb(im, source).crop(box)
        except FileNotFoundError:
            raise DatasetError(f"{origin}: image {image_path!r} not found under {image_root}") from None
        except OSError as exc:
            raise DatasetError(f"{origin}: cannot read image {source}: {exc}") from exc
        with atomic_path(target) as tmp:
            crop.save(tmp, format="PNG")
        written += 1
    return {"crops": len(wanted), "written": written, "already_there": kept}


# ----------------------------------------------------------------------------------------------------------------
# Visual Genome's image release (VG_100K/, VG_100K_2/)
# ----------------------------------------------------------------------------------------------------------------
def vg_image_folders(fetch: Callable[[str], Path]) -> dict[str, Path]:
    """Each Visual Genome image folder, from its zip's extracted folder (``fetch``: registry key -> local path)."""
    extracted = {name: Path(fetch(key)) for name, key in VG_IMAGE_SOURCES.items()}
    return {name: root / name if (root / name).is_dir() else root for name, root in extracted.items()}


def resolve_vg_image(folders: Mapping[str, Path], image_path: str, origin: str) -> Path:
    """The file a record's ``[data/]<folder>/<file>`` names (``folder`` a key of ``folders``: ``VG_100K``,
    ``VG_100K_2``), refusing any other form and names that escape the folder."""
    parts = PurePosixPath(image_path).parts
    if len(parts) < 2 or parts[-2] not in folders or parts[:-2] not in ((), ("data",)):
        raise DatasetError(f"{origin}: image path {image_path!r} is not [data/]<folder>/<file> with <folder> one of "
                           f"{sorted(folders)}")
    return resolve_under(Path(folders[parts[-2]]), parts[-1], origin)
