"""The mini profile's "ARO+CREPE": the mini SugarCrepe positives with rule-based negatives, in the released format.

SugarCrepe (Sec. 5) regenerates ARO's and CREPE's REPLACE, SWAP, NEGATE and SHUFFLE negatives for its own positives,
so the two benchmarks differ only in how their negatives were made. Here the positives are exactly the mini set's
(``sets_mini.iter_examples`` regenerates its scenes and claims from the same stream; every caption is checked against
the built set), the negatives the world's rule-based ones (``common.miniworld.templates``), up to
``examples_per_category`` per kind. ``edits.jsonl`` records which rule made each negative; the manifest's four kinds
make it a set for ``aro_crepe.load_template_set``, not ``PreparedSet``. The same bytes on every run.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Sequence

from common.benchmarks.caption_negatives import PreparedSet, read_category
from common.files.io import output_group, write_json_atomic, write_text_atomic
from common.files.tasks import DatasetError
from common.miniworld import VERSION
from common.miniworld.build import stream
from common.miniworld.templates import TEMPLATE_KINDS, template_edit
from common.paths import build_dir
from common.pipeline.cli import stage_parser
from common.pipeline.params import add_stage_option, own_params
from papers.sugarcrepe.aro_crepe import KIND
from papers.sugarcrepe.sets_mini import MiniSetConfig, config_from_params, iter_examples


def build_template_set(config: MiniSetConfig, mini_dir: Path, out_dir: Path) -> dict:
    """Up to ``config.examples_per_category`` negatives of each kind for the mini set's positives (its order)."""
    mini_set = PreparedSet.load(mini_dir / "manifest.json")
    positives: dict[str, str] = {}  # image file name -> its positive caption, over every category file
    for path in mini_set.files().values():
        for key, record in read_category(path).items():
            known = positives.setdefault(record["filename"], record["caption"])
            if known != record["caption"]:
                raise DatasetError(f"{path}: example {key!r}: image {record['filename']!r} has caption "
                                   f"{record['caption']!r} here and {known!r} in another category")
    last = max(int(name.removeprefix("mini_").removesuffix(".png")) for name in positives)
    quota = config.examples_per_category
    data: dict[str, dict[str, dict]] = {kind: {} for kind in TEMPLATE_KINDS}
    edits: list[str] = []
    used: set[str] = set()
    for index, scene, positive, _ in iter_examples(config):
        if index > last or all(len(v) >= quota for v in data.values()):
            break
        filename = f"mini_{index:06d}.png"  # as sets_mini names it (checked: in the built set, same caption)
        if filename not in positives:  # the mini set needed no negative of this image: it rendered none
            continue
        caption = positive.text()
        if caption != positives[filename]:
            raise DatasetError(f"{mini_dir}: image {filename!r} has caption {positives[filename]!r} but the mini "
                               f"world regenerates {caption!r} with seed {config.seed}: rebuild the mini set "
                               "(`dvc repro papers/sugarcrepe/dvc.yaml:mini-set`)")
        for kind in TEMPLATE_KINDS:
            if len(data[kind]) >= quota:
                continue
            edit = template_edit(scene, positive, kind, stream(config.seed, f"templates:{filename}:{kind}"))
            if edit is None:
                continue
            key = str(len(data[kind]))
            data[kind][key] = {"filename": filename, "caption": caption, "negative_caption": edit.text}
            edits.append(json.dumps({"kind": kind, "id": key, "filename": filename, "variant": edit.variant}))
            used.add(filename)
    counts = {kind: len(v) for kind, v in data.items()}
    empty = [kind for kind, n in counts.items() if n == 0]
    if empty:
        raise DatasetError(f"{mini_dir}: no example of {empty} among its {len(positives)} images")
    image_root = Path(os.path.relpath(os.path.abspath(mini_set.image_root), os.path.abspath(out_dir)))
    manifest = {
        "data_dir": "data", "image_root": image_root.as_posix(), "categories": list(TEMPLATE_KINDS),
        "kind": KIND, "profile": "mini", "world_version": VERSION,
        "config": {"examples_per_category": quota, "seed": config.seed},
        "positives": f"the mini SugarCrepe set's ({mini_dir.name}), same images and captions",
        "counts": counts, "n_images": len(used),
    }
    with output_group(out_dir) as staging:
        for kind, examples in data.items():
            write_json_atomic(staging / "data" / f"{kind}.json", examples, indent=1)
        write_text_atomic(staging / "edits.jsonl", "\n".join(edits) + "\n")
        write_json_atomic(staging / "manifest.json", manifest)
    return manifest


def main(argv: Sequence[str] | None = None) -> int:
    parser = stage_parser(__spec__.name, __doc__)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--mini-set", type=Path, default=build_dir("mini", "sugarcrepe"),
                        help="the built mini SugarCrepe set whose positives and images are used")
    add_stage_option(parser)
    args = parser.parse_args(argv)
    manifest = build_template_set(config_from_params(own_params(args.stage)), args.mini_set, args.out)
    print(json.dumps(manifest, indent=2))
    return 0


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
