"""SugarCrepe's subcommands of ``python -m common`` and its report (found by ``common.plugins``).

* ``data describe sugarcrepe [--source released|mini|full]``: per-category example counts;
* ``world sugarcrepe --out DIR`` and ``prepare sugarcrepe --out DIR``: the mini and full test sets;
* ``eval --model NAME [--manifest FILE]``: one zoo model on a prepared SugarCrepe-format set;
* ``bench``: the engine against SugarCrepe's official per-example loop.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from common.paths import build_root


def _describe(args: argparse.Namespace) -> int:
    from papers.sugarcrepe.data import PreparedSet, category_counts, fetch_released

    if args.source == "released":
        files = fetch_released()
        origin = "released JSON (sugarcrepe group of the download registry)"
    else:
        manifest = PreparedSet.load(build_root() / args.source / "sugarcrepe" / "manifest.json")
        files, origin = manifest.files(), f"prepared {args.source} set {manifest.path}"
    counts = category_counts(files)
    print(json.dumps({"dataset": "sugarcrepe", "source": origin, "counts": counts, "total": sum(counts.values())}, indent=2))
    return 0


def _world(args: argparse.Namespace) -> int:
    from papers.sugarcrepe import mini

    return mini.main(["--out", args.out])


def _prepare(args: argparse.Namespace) -> int:
    from papers.sugarcrepe import prepare

    return prepare.main(["--out", args.out])


def _eval(args: argparse.Namespace) -> int:
    from common.engine import Engine
    from common.scoring.selection import image_to_text
    from common.zoo import create_model
    from papers.sugarcrepe.data import PreparedSet

    prepared = PreparedSet.load(Path(args.manifest))
    result = image_to_text(Engine(create_model(args.model)), prepared.items())
    scores = {g: round(100 * s.accuracy, 2) for g, s in result.by_group().items()}
    print(json.dumps({"model": args.model, "accuracy": scores, "ties": result.ties,
                      "average": round(100 * result.macro_accuracy(), 2)}, indent=2))
    return 0


def register(groups) -> None:
    from papers.sugarcrepe import bench

    describe = groups.data_describe.add_parser("sugarcrepe", help="SugarCrepe: examples per category")
    describe.add_argument("--source", default="released", choices=["released", "mini", "full"],
                          help="released JSON through the downloader (default), or a prepared set")
    describe.set_defaults(func=_describe)

    world = groups.world.add_parser("sugarcrepe", help="SugarCrepe-format test set (same as python -m papers.sugarcrepe.mini)")
    world.add_argument("--out", required=True)
    world.set_defaults(func=_world)

    prepare = groups.prepare.add_parser("sugarcrepe", help="released JSON + COCO val2017, fetched and checked")
    prepare.add_argument("--out", default=str(build_root() / "full" / "sugarcrepe"))
    prepare.set_defaults(func=_prepare)

    ev = groups.root.add_parser("eval", help="score one model on a prepared SugarCrepe-format set")
    ev.add_argument("--model", required=True)
    ev.add_argument("--manifest", default=str(build_root() / "mini" / "sugarcrepe" / "manifest.json"))
    ev.set_defaults(func=_eval)

    bench.register_cli(groups.root)

