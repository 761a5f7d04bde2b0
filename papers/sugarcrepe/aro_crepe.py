"""The paper's "ARO+CREPE" (Sec. 4.1) as the stages read it: SugarCrepe's positives with the older benchmarks'
rule-based negatives (REPLACE, SWAP, NEGATE, SHUFFLE), in SugarCrepe's released layout with its own ``kind``. Its own
module so that the readers do not rerun when a builder (``mini_templates``, ``aro_crepe_sets_full``) changes.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from common.benchmarks.caption_negatives import load_sugarcrepe
from common.files.jsonl import read_json
from common.files.tasks import DatasetError, ImageToTextItem
from common.miniworld.templates import TEMPLATE_KINDS

KIND = "sugarcrepe-templates"
"""The manifest's ``kind``: the four template kinds as categories, so ``load_template_set`` reads it, not
``common.benchmarks.caption_negatives.PreparedSet``, which knows SugarCrepe's seven categories only."""


@dataclass(frozen=True)
class TemplateSet:
    """A built template set: its category files, the (mini set's) image folder and the manifest."""

    path: Path
    files: dict[str, Path]
    image_root: Path
    info: dict

    def items(self) -> list[ImageToTextItem]:
        """Image-to-text items, positive first, through the SugarCrepe loader (engine-ready)."""
        return load_sugarcrepe(self.files, self.image_root)


def load_template_set(out_dir: Path) -> TemplateSet:
    out_dir = Path(out_dir)
    manifest = out_dir / "manifest.json"
    if not manifest.is_file():
        raise DatasetError(f"{manifest}: no template set here; run `dvc repro "
                           "papers/sugarcrepe/dvc.yaml:mini-templates-set` (full profile: aro-crepe-full-set)")
    info = read_json(manifest, dict)
    if info.get("kind") != KIND:
        raise DatasetError(f"{manifest}: not a {KIND} manifest (kind {info.get('kind')!r})")
    unknown = [c for c in info.get("categories", []) if c not in TEMPLATE_KINDS]
    if unknown or not info.get("categories"):
        raise DatasetError(f"{manifest}: 'categories' must be some of {list(TEMPLATE_KINDS)}, got "
                           f"{info.get('categories')!r}")
    data_dir = out_dir / info["data_dir"]
    return TemplateSet(manifest, {c: data_dir / f"{c}.json" for c in info["categories"]},
                       out_dir / info["image_root"], info)
