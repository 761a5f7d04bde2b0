"""Hard positives in the rehearsal (``tests.rehearsal``): this paper's stand-ins, models and shrinking.

What the full stages read, and what the rehearsal puts there:

* REPLACE's VL-CheckList files: pinned, so real (the mirror); Visual Genome's two image zips get a stand-in for every
  image they name.
* SWAP's VG-Attribution files: unpinned, so stand-ins in ARO's format, row-aligned as released (same image, box,
  attributes and c_n; c vs c_p), with ARO's image zip holding their images.
* COCO 2017's captions and train images (``finetune-full-set``): stand-in zips; DVC's data deps.
* Models: the base and the Table 1 rows the rehearsal keeps (``KEPT_ROWS``); the GELU build of a kept model
  (``papers.hard_positives.tables.AUTHORS_BUILD``) reads the same file, so it needs none.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from common.files.jsonl import read_json
from tests.rehearsal import standins
from tests.rehearsal.models import needing_standins

SWAP_ROWS = (  # (image, box, attributes, c, c_p, c_n)
    ("2354786.jpg", (2, 3, 20, 15), ("white", "black"), "the white cat and the black dog",
     "the black dog and the white cat", "the black cat and the white dog"),
    ("2368436.jpg", (0, 0, 40, 30), ("open", "red"), "the open door and the red car", "the red car and the open door",
     "the red door and the open car"),
    ("2354786.jpg", (1.5, 0, 10, 10), ("small", "wooden"), "the small cup and the wooden table",
     "the wooden table and the small cup", "the wooden cup and the small table"),
    ("2405212.jpg", (5, 4, 30, 22), ("tall", "green"), "the tall tree and the green bush",
     "the green bush and the tall tree", "the green tree and the tall bush"),
    ("2331109.jpg", (0, 2, 25, 18), ("blue", "yellow"), "the blue shirt and the yellow hat",
     "the yellow hat and the blue shirt", "the yellow shirt and the blue hat"),
)
"""SWAP's stand-in rows: ARO's VG-Attribution records (boxes within ARO-named images); c_p reorders the phrases."""
CHECKPOINT_LAYOUTS = {"hard_positives/crepe-swap": "state_dict", "hard_positives/crepe-replace": "state_dict"}
"""The release layout of this paper's ``data:`` checkpoints: open_clip training checkpoints (models.toml)."""
KEPT_ROWS = ("base", "crepe-swap")
"""The Table 1 rows the rehearsal scores: the base (the comparisons' reference) and one released checkpoint."""


def params(params: dict[str, Any]) -> None:
    """Table 1's rows cut to ``KEPT_ROWS``."""
    full = params["hard_positives"]["full"]
    full["models"] = {row: name for row, name in full["models"].items() if row in KEPT_ROWS}


def models(params: dict[str, Any]) -> list[str]:
    full = params["hard_positives"]["full"]
    return needing_standins([full["finetune"]["base"], *full["models"].values()])


def prepare(data_root: Path, fetch: Callable[[str], Path]) -> list[str]:
    """``fetch``: the downloader with the mirror, for the pinned REPLACE files whose images are stood in for."""
    # deferred: loads PIL, torch, tqdm only when called
    from papers.hard_positives import released, sets_full

    image_paths = [row["image_path"] for kind in sets_full.REPLACE_KINDS for key in released.file_keys(kind)
                   for row in read_json(fetch(key), list)]
    standins.visual_genome_images(data_root, image_paths)
    original, swapped = sets_full.SWAP_FILES
    standins.vg_files(data_root, {
        original: [standins.vg_record(i, b, c, n, attributes=list(a)) for i, b, a, c, _, n in SWAP_ROWS],
        swapped: [standins.vg_record(i, b, p, n, attributes=list(a)) for i, b, a, _, p, n in SWAP_ROWS]})
    return standins.coco_train2017(data_root, standins.coco_captions(images=12))
