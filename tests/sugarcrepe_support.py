"""A SugarCrepe-format set written by a test: every category holds the same few (image, caption, negative) records,
over images another test set already rendered. For papers that score SugarCrepe through its own loader."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence


def write_sugarcrepe_set(root: Path, image_dir: Path, records: Sequence[tuple[str, str, str]]) -> Path:
    """(filename, caption, negative caption) records in every category; returns the set's ``manifest.json``."""
    from common.benchmarks.caption_negatives import CATEGORIES, write_manifest

    data = root / "data"
    data.mkdir(parents=True)
    for category in CATEGORIES:
        (data / f"{category}.json").write_text(json.dumps(
            {str(i): {"filename": f, "caption": c, "negative_caption": n} for i, (f, c, n) in enumerate(records)}))
    return write_manifest(root, "data", str(image_dir), {"kind": "sugarcrepe"}).path
