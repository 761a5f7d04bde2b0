"""Every distinct (image, positive caption) of a prepared SugarCrepe set, for ``aro_crepe_sets_full`` and
``negclip_sets_full``: its own module so that neither set stage reruns when the other's builder changes.
"""
from __future__ import annotations

from pathlib import Path

from common.benchmarks.caption_negatives import PreparedSet, read_category


def sugarcrepe_positives(manifest: Path) -> tuple[list[tuple[str, str]], Path]:
    """Every distinct (image file name, positive caption), in category then example order, and the image folder."""
    prepared = PreparedSet.load(Path(manifest))
    positives: dict[tuple[str, str], None] = {}
    for path in prepared.files().values():
        for record in read_category(path).values():
            positives.setdefault((record["filename"], record["caption"]), None)
    return list(positives), prepared.image_root
