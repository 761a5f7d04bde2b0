"""SugarCrepe's subcommands of ``python -m common`` (its ``PAPER``'s cli plug-in, ``common.paper.CliPlugIn``): ``data
describe sugarcrepe``, ``world sugarcrepe``, ``prepare sugarcrepe``, ``eval`` and ``bench eval``, each with its help in
``register``."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from common.benchmarks.caption_negatives import PreparedSet, category_counts, fetch_released
from common.paths import build_root
from papers.sugarcrepe import sets_full


def _describe(args: argparse.Namespace) -> int:
    if args.source == "released":
        files, origin = fetch_released(), "released JSON (sugarcrepe group of the download registry)"
    else:
        manifest = PreparedSet.load(build_root() / args.source / "sugarcrepe" / "manifest.json")
        files, origin = manifest.files(), f"prepared {args.source} set {manifest.path}"
    counts = category_counts(files)
    print(json.dumps({"dataset": "sugarcrepe", "source": origin, "counts": counts, "total": sum(counts.values())}, indent=2))
    return 0


def _world(args: argparse.Namespace) -> int:
    # deferred: loads PIL, tqdm only when called
    from papers.sugarcrepe import sets_mini

    return sets_mini.main(["--out", args.out])


EVAL_EPILOG = """\
manifest format (JSON; written by `world sugarcrepe` and `prepare sugarcrepe`):
  {
    "data_dir": "data",            required: folder of the category files, relative to the manifest's folder
    "image_root": "images",        required: folder the examples' "filename"s are relative to
    "categories": ["replace_obj"]  optional: which category files to score (default: all seven)
    ...                            anything else (counts, config) is kept as information
  }
each category file <data_dir>/<category>.json is SugarCrepe's released format, one object:
  {"<example id>": {"filename": "000000000139.jpg", "caption": "...", "negative_caption": "..."}, ...}
an example is correct when the model scores its caption strictly above its negative caption.

output: the summary (accuracy per category, ties, the macro average) is printed and written with the
per-example scores (item_id, group, correct, tie, score_0 = caption, score_1 = negative caption), both together
or neither (one output group):
  --out DIR        DIR/<model>.json and DIR/<model>.predictions.csv ("/" in the model name becomes "__")
  --out FILE.json  FILE.json and FILE.predictions.csv beside it (.json in any case)
default: --out <build>/eval/ (VLC_BUILD, default build/); never empty, never in the workspace's results/ or over a
file git tracks. Bad input (a malformed manifest or category file, a missing, escaping or unreadable image, an
unknown model, a bad --out) stops with one `error:` line naming the file and record.
"""


def _eval(args: argparse.Namespace) -> int:
    # deferred: loads PIL, torch, tqdm only when called
    from common.evaluation.engine import Engine
    from common.evaluation.evaluate import eval_outputs, write_eval_outputs
    from common.evaluation.scoring.selection import image_to_text
    # deferred: loads PIL, torch only when called
    from common.zoo import create_model, get_spec

    get_spec(args.model)  # an unknown name fails before any data is read
    summary_path, predictions_path = eval_outputs(args.out, args.model)  # so does a bad --out
    prepared = PreparedSet.load(Path(args.manifest))
    items = prepared.items()  # bad examples or images fail before the model loads
    result = image_to_text(Engine(create_model(args.model)), items)
    scores = {g: round(100 * s.accuracy, 2) for g, s in result.by_group().items()}
    summary = {"model": args.model, "manifest": str(prepared.path), "n": len(result.outcomes),
               "accuracy": scores, "ties": result.ties, "average": round(100 * result.macro_accuracy(), 2)}
    write_eval_outputs(summary_path, predictions_path, summary, result)
    print(json.dumps(summary, indent=2))
    print(f"written: {summary_path}, {predictions_path}", file=sys.stderr)
    return 0


def _bench(args: argparse.Namespace) -> int:
    # deferred: loads PIL, torch, tqdm only when called
    from papers.sugarcrepe import bench

    return bench.run(args)


def register(groups) -> None:
    describe = groups.data_describe.add_parser("sugarcrepe", help="SugarCrepe: examples per category")
    describe.add_argument("--source", default="released", choices=["released", "mini", "full"],
                          help="released JSON through the downloader (default), or a prepared set")
    describe.set_defaults(func=_describe)

    world = groups.world.add_parser("sugarcrepe", help="SugarCrepe-format test set (same as python -m papers.sugarcrepe.sets_mini)")
    world.add_argument("--out", required=True)
    world.set_defaults(func=_world)

    prepare = groups.prepare.add_parser("sugarcrepe", help="released JSON + COCO val2017, fetched and checked")
    prepare.add_argument("--out", default=str(build_root() / "full" / "sugarcrepe"))
    prepare.set_defaults(func=lambda args: sets_full.main(["--out", args.out]))

    ev = groups.root.add_parser("eval", help="score one model on a prepared SugarCrepe-format set",
                                description="Score one zoo model on a prepared SugarCrepe-format set (a manifest and its\n"
                                            "category files); print the results and write them (--out).",
                                epilog=EVAL_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    ev.add_argument("--model", required=True, help="a zoo name (`python -m common zoo list` lists them)")
    ev.add_argument("--manifest", default=str(build_root() / "mini" / "sugarcrepe" / "manifest.json"),
                    help="the set's manifest.json (default: the mini set, %(default)s)")
    ev.add_argument("--out", default=str(build_root() / "eval"),
                    help="a folder, or a .json file for the summary (default: %(default)s)")
    ev.set_defaults(func=_eval)

    p = groups.bench.add_parser("eval", help="the evaluation engine vs SugarCrepe's official per-example loop "
                                "(speedup, bound ratio)")
    p.add_argument("--arch", default="ViT-B-32", help="open_clip architecture (random weights)")
    p.add_argument("--images", type=int, default=100, help="synthetic COCO-sized images (x4.8 examples)")
    p.add_argument("--image-batches", type=int, nargs="+", default=[16, 32, 64])
    p.add_argument("--text-batches", type=int, nargs="+", default=[64, 128, 256])
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="where the model runs (both loops)")
    p.set_defaults(func=_bench)

