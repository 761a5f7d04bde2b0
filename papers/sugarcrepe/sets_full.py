"""The full profile's SugarCrepe: the released JSON and COCO val2017, fetched (or verified) and checked.

Stage ``full-set`` of ``papers/sugarcrepe/dvc.yaml``: ``python -m papers.sugarcrepe.sets_full --out build/full/sugarcrepe``.
Every example must resolve to an image under the COCO root, or the stage fails naming the file and example.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Sequence

from common.download import fetch
from common.io import sha256_file
from common.benchmarks.caption_negatives import CATEGORIES, PreparedSet, fetch_released, load_sugarcrepe, write_manifest

COCO_VAL2017 = "coco/val2017.zip"


def prepare_full(out_dir: Path) -> PreparedSet:
    """Fetch (or verify) the released JSON and COCO val2017, check every example, write the manifest."""
    files = fetch_released()
    coco_dir = fetch(COCO_VAL2017)
    image_root = coco_dir / "val2017" if (coco_dir / "val2017").is_dir() else coco_dir
    items = load_sugarcrepe(files, image_root)
    counts: dict[str, int] = {}
    for it in items:
        counts[it.group] = counts.get(it.group, 0) + 1
    out_dir.mkdir(parents=True, exist_ok=True)
    return write_manifest(out_dir, files[CATEGORIES[0]].parent.resolve(), image_root.resolve(), {
        "kind": "sugarcrepe", "profile": "full", "counts": counts,
        "n_images": len({it.image for it in items}),
        "sha256": {c: sha256_file(p) for c, p in files.items()},
    })


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m papers.sugarcrepe.sets_full", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    print(json.dumps(prepare_full(args.out).describe(), indent=2))
    return 0


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
