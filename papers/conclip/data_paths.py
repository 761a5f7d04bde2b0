"""Where the full profile's inputs lie under the data root, as their registry entries extract them: a module of its
own, so that the fine-tunes depend neither on CC-Neg's reader nor on the COCO pool's.
"""
from __future__ import annotations

from pathlib import Path

CCNEG_IMAGES_SUBFOLDER = "cc3m_subset_images_extracted_final"
"""The folder of the JPEGs inside CC-Neg's extracted image archive (the registry entry's instructions)."""
CCNEG_IMAGES = Path("ccneg") / "ccneg_images" / CCNEG_IMAGES_SUBFOLDER
"""CC-Neg's JPEGs (registry entry ``conclip/ccneg/ccneg_images``)."""
COCO_CAPTIONS = Path("coco/annotations_trainval2017/annotations/captions_train2017.json")
"""COCO 2017 train captions (group ``coco-train2017``, key ``coco/annotations_trainval2017.zip``)."""
COCO_IMAGES = Path("coco/train2017/train2017")
"""COCO 2017 train images (group ``coco-train2017``, key ``coco/train2017.zip``)."""
