"""The full profile's ARO+CREPE test set (stage ``aro-crepe-full-set``): SugarCrepe's positives with CREPE-style
negatives, the set Table 5's ARO+CREPE columns score.

Every distinct (image, caption) of the full set with one negative per kind (``common.text.crepe_style``, vocabulary
from these positives), in the mini ARO+CREPE set's layout (``aro_crepe``); the manifest counts, per kind, the
positives that got no negative.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Sequence

from common.files.io import output_group, sha256_file, write_json_atomic
from common.files.tasks import DatasetError
from common.paths import build_dir
from common.pipeline.cli import stage_parser
from common.pipeline.params import add_stage_option, own_section
from common.text.crepe_style import (
    CREPE_KINDS, Vocabulary, crepe_negatives, describe as describe_generator, parse_captions)
from papers.sugarcrepe.aro_crepe import KIND as TEMPLATES_KIND
from papers.sugarcrepe.positives import sugarcrepe_positives


def build_aro_crepe_set(sugarcrepe_manifest: Path, out_dir: Path, seed: int = 0,
                        vocabulary_min_count: int = 1) -> dict:
    """``data/<kind>.json`` ({id: {filename, caption, negative_caption}}) and ``manifest.json`` in ``out_dir``."""
    positives, image_root = sugarcrepe_positives(sugarcrepe_manifest)
    captions = [c for _, c in positives]
    parsed = parse_captions(captions)
    vocabulary = Vocabulary.from_parsed(parsed.values(), vocabulary_min_count)
    negatives = crepe_negatives(captions, CREPE_KINDS, seed, vocabulary, parsed=parsed)
    data: dict[str, dict[str, dict]] = {}
    for kind in CREPE_KINDS:
        kept = [(f, c, n) for (f, c), n in zip(positives, negatives[kind]) if n is not None]
        data[kind] = {str(i): {"filename": f, "caption": c, "negative_caption": n} for i, (f, c, n) in enumerate(kept)}
    empty = [k for k, v in data.items() if not v]
    if empty:
        raise DatasetError(f"{sugarcrepe_manifest}: no positive gets a {empty} negative")
    out_dir = Path(out_dir)
    manifest = {
        "data_dir": "data",
        "image_root": Path(os.path.relpath(os.path.abspath(image_root), os.path.abspath(out_dir))).as_posix(),
        "categories": list(CREPE_KINDS), "kind": TEMPLATES_KIND, "profile": "full", "seed": seed,
        "positives": "every distinct (image, caption) of the full SugarCrepe set (build/full/sugarcrepe)",
        "counts": {k: len(v) for k, v in data.items()}, "n_positives": len(positives),
        "no_negative": {k: sum(n is None for n in negatives[k]) for k in CREPE_KINDS},
        "generator": describe_generator(vocabulary),
        "sugarcrepe_manifest_sha256": sha256_file(sugarcrepe_manifest),
    }
    with output_group(out_dir) as staging:
        for kind, examples in data.items():
            write_json_atomic(staging / "data" / f"{kind}.json", examples, indent=1)
        write_json_atomic(staging / "manifest.json", manifest)
    return manifest


def main(argv: Sequence[str] | None = None) -> int:
    parser = stage_parser(__spec__.name, __doc__)
    parser.add_argument("--sugarcrepe", type=Path, default=None, help="default: build/full/sugarcrepe/manifest.json")
    parser.add_argument("--out", type=Path, default=None, help="default: build/full/sugarcrepe_aro_crepe")
    add_stage_option(parser)
    args = parser.parse_args(argv)
    _, section = own_section("sugarcrepe.negclip_full", args.stage)
    manifest = build_aro_crepe_set(args.sugarcrepe or build_dir("full", "sugarcrepe") / "manifest.json",
                                   args.out or build_dir("full", "sugarcrepe_aro_crepe"),
                                   section["seed"], section["vocabulary_min_count"])
    print(json.dumps({k: manifest[k] for k in ("counts", "n_positives", "no_negative")}, indent=2))
    return 0


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
