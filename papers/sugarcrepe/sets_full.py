"""The full profile's SugarCrepe: the released JSON and COCO val2017, fetched (or verified) and checked.

Stage ``full-set``: every example must resolve to an image under the COCO root, or the stage fails naming the file
and example. With a cap (``params.yaml full_inputs.cap``; a rehearsal's) every example is still checked, but the set
holds the first ``cap`` of each category, written in the released format beside the manifest.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Sequence

from common.benchmarks.caption_negatives import (
    CATEGORIES, PreparedSet, fetch_released, load_sugarcrepe, read_category, write_manifest)
from common.files.io import output_group, sha256_file, write_json_atomic
from common.pipeline.cli import stage_parser
from common.pipeline.inputs import full_inputs
from common.pipeline.params import own_params
from common.registry.fetch import fetch

COCO_VAL2017 = "coco/val2017.zip"
CAPPED_DATA = "data"
"""A capped set's category files, under the set's folder."""


def prepare_full(out_dir: Path, cap: int | None = None) -> PreparedSet:
    """Fetch (or verify) the released JSON and COCO val2017, check every example, write the manifest."""
    if cap is not None and cap < 1:
        raise ValueError(f"cap must be a positive number of examples per category or None, got {cap}")
    files = fetch_released()
    coco_dir = fetch(COCO_VAL2017)
    image_root = coco_dir / "val2017" if (coco_dir / "val2017").is_dir() else coco_dir
    items = load_sugarcrepe(files, image_root)  # every example, every image, capped or not
    counts = dict(Counter(it.group for it in items))
    info: dict = {"kind": "sugarcrepe", "profile": "full", "counts": counts,
                  "n_images": len({it.image for it in items}),
                  "sha256": {c: sha256_file(p) for c, p in files.items()}}
    data_dir = files[CATEGORIES[0]].parent.resolve()
    # One output group: a capped set's category files and the manifest naming them replace the previous ones
    # together (an interrupted rerun leaves the previous set whole); the manifest is checked in staging first.
    with output_group(out_dir) as staging:
        if cap is not None:
            capped = staging / CAPPED_DATA
            for path in files.values():
                kept = dict(list(read_category(path).items())[:cap])
                write_json_atomic(capped / path.name, kept)
            info.update(cap=cap, released_counts=counts, counts={c: min(n, cap) for c, n in counts.items()},
                        n_images=len({it.image for it in load_sugarcrepe(
                            {c: capped / p.name for c, p in files.items()}, image_root)}))
            data_dir = Path(CAPPED_DATA)  # relative to the manifest's folder
        write_manifest(staging, data_dir, image_root.resolve(), info)
    return PreparedSet.load(Path(out_dir) / "manifest.json")


def main(argv: Sequence[str] | None = None) -> int:
    parser = stage_parser(__spec__.name, __doc__)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--stage", default=None, help="the DVC stage whose parameters (full_inputs.cap) to read "
                                                      "(default: the one running this module)")
    args = parser.parse_args(argv)

    cap = full_inputs(own_params(args.stage)).cap
    print(json.dumps(prepare_full(args.out, cap=cap).describe(), indent=2))
    return 0


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
