"""``python -m common``: the workspace's command line (pipeline stages call it too)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from common.paths import ROOT, build_root, data_root


def _cmd_data_describe(args: argparse.Namespace) -> int:
    from common.datasets import sugarcrepe

    if args.dataset != "sugarcrepe":
        raise SystemExit(f"unknown dataset {args.dataset!r} (known: sugarcrepe)")
    if args.source == "released":
        files = sugarcrepe.fetch_released()
        origin = "released JSON (sugarcrepe group of the download registry)"
    else:
        manifest = sugarcrepe.PreparedSet.load(build_root() / args.source / "sugarcrepe" / "manifest.json")
        files, origin = manifest.files(), f"prepared {args.source} set {manifest.path}"
    counts = sugarcrepe.category_counts(files)
    print(json.dumps({"dataset": "sugarcrepe", "source": origin, "counts": counts, "total": sum(counts.values())}, indent=2))
    return 0


def _cmd_world_build(args: argparse.Namespace) -> int:
    from common.miniworld import build
    from common.params import load_params, section

    world = section(load_params(), "mini.world")
    if args.what == "train":
        manifest = build.build_train_set(build.TrainSetConfig(
            n_images=world["train_images"], captions_per_image=world["captions_per_image"],
            image_size=world["image_size"], seed=world["seed"]), Path(args.out))
    else:
        manifest = build.build_sugarcrepe_set(build.SugarCrepeSetConfig(
            examples_per_category=world["sugarcrepe_per_category"], image_size=world["image_size"],
            seed=world["seed"]), Path(args.out))
    print(json.dumps(manifest, indent=2))
    return 0


def _cmd_train(args: argparse.Namespace) -> int:
    from common.io import write_json_atomic
    from common.params import load_params, section
    from common.train import TrainConfig, train_clip
    from common.zoo import get_spec

    recipe = dict(section(load_params(), f"train.{args.name}"))
    spec = get_spec(f"mini/{args.name}")
    if recipe.get("arch") != spec.arch:
        raise SystemExit(f"params.yaml train.{args.name}.arch={recipe.get('arch')!r} but models.toml says {spec.arch!r}")
    out = spec.checkpoint_path()
    assert out is not None
    record = train_clip(TrainConfig(**recipe), Path(args.train_set), out)
    log = out.parent.parent / "logs" / f"train-{args.name}.json"
    write_json_atomic(log, record)
    print(json.dumps(record, indent=2))
    print(f"log (with wall time, not a DVC output): {log}")
    return 0


def _cmd_prepare(args: argparse.Namespace) -> int:
    from common.datasets import sugarcrepe

    manifest = sugarcrepe.prepare_full(Path(args.out))
    print(json.dumps(manifest.describe(), indent=2))
    return 0


def _cmd_zoo(args: argparse.Namespace) -> int:
    from common.zoo import ModelUnavailable, create_model, registry

    if args.action == "list":
        for spec in registry().values():
            weights = spec.pretrained and f"open_clip:{spec.pretrained}" or spec.checkpoint
            print(f"{spec.name:40s} {spec.family:9s} {spec.arch:28s} {weights}")
        return 0
    names = list(args.models)
    if args.from_params:
        from common.params import load_params, section

        names += list(section(load_params(), args.from_params))
    status, manifest = 0, {}
    for name in names:
        try:
            model = create_model(name)
            manifest[name] = {"fingerprint": model.fingerprint, "arch": model.spec.arch,
                              "pretrained": model.spec.pretrained, "checkpoint": model.spec.checkpoint}
            print(f"{name}: ok, fingerprint {model.fingerprint}")
        except ModelUnavailable as exc:
            print(f"{name}: UNAVAILABLE: {exc}", file=sys.stderr)
            status = 1
    if args.manifest:
        if status:
            raise SystemExit(f"not writing {args.manifest}: some models are unavailable (see above)")
        from common.io import write_json_atomic

        write_json_atomic(Path(args.manifest), manifest)
    return status


def _cmd_report(args: argparse.Namespace) -> int:
    from common.params import load_params
    from common.paths import RESULTS

    profile = load_params()["profile"]
    if args.paper == "sugarcrepe":
        _report_table6(RESULTS / args.paper / profile, profile)
    summary = RESULTS / "audit" / f"{args.paper}_summary.json"
    if not summary.is_file():
        raise SystemExit(f"{summary} does not exist yet: run `dvc repro papers/{args.paper}`")
    verdicts = json.loads(summary.read_text())["verdicts"]
    print(f"audit:   {RESULTS / 'audit' / (args.paper + '.md')}  (" + ", ".join(f"{v}: {n}" for v, n in verdicts.items()) + ")")
    return 0


def _report_table6(out_dir: Path, profile: str) -> None:
    import csv

    table = out_dir / "table6.csv"
    if not table.is_file():
        raise SystemExit(f"{table} does not exist yet: run `dvc repro papers/sugarcrepe`")
    with open(table, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    from common.datasets.sugarcrepe import CATEGORIES

    header = ["model", *CATEGORIES, "average"]
    print(f"SugarCrepe Table 6, {profile} profile" + (" (mini world and tiny CLIPs: not the paper's numbers)" if profile == "mini" else ""))
    print("  ".join(f"{h:>11s}" if i else f"{h:<16s}" for i, h in enumerate(header)))
    for row in rows:
        print("  ".join(f"{row[h]:>11s}" if i else f"{row[h]:<16s}" for i, h in enumerate(header)))
    print(f"table:   {table}")
    print(f"metrics: {out_dir / 'table6_metrics.json'}  (dvc metrics show)")
    print(f"plots:   {out_dir / 'table6.png'}, {out_dir / 'table6_plot.csv'}  (dvc plots show)")
    print(f"per-example predictions: {out_dir / 'predictions'}")


def _cmd_eval(args: argparse.Namespace) -> int:
    from common.datasets import sugarcrepe
    from common.engine import Engine
    from common.zoo import create_model

    prepared = sugarcrepe.PreparedSet.load(Path(args.manifest))
    result = Engine(create_model(args.model)).image_to_text(prepared.items())
    scores = {g: round(100 * s.accuracy, 2) for g, s in result.by_group().items()}
    print(json.dumps({"model": args.model, "accuracy": scores, "ties": result.ties,
                      "average": round(100 * result.macro_accuracy(), 2)}, indent=2))
    return 0


def _cmd_audit(args: argparse.Namespace) -> int:
    from common.published import PAPERS

    if args.target == "released":
        if not args.rest or args.rest[0] != "bivlc":
            raise SystemExit("usage: python -m common audit released bivlc <file.csv>")
        from common.audit.released_bivlc import released_cli

        return released_cli(args.rest[1:])
    if args.target not in PAPERS or args.rest:
        raise SystemExit(f"usage: python -m common audit {{{','.join(PAPERS)}}} | released bivlc <file.csv>")
    from common.audit import run_audit
    from common.audit.core import VerdictCounts

    rows, paths = run_audit(args.target)
    counts = VerdictCounts.of(rows).counts
    print(f"audit {args.target}: " + ", ".join(f"{v}: {n}" for v, n in counts.items()))
    for kind, path in paths.items():
        print(f"{kind}: {path}")
    unavailable = sorted({r.source for r in rows if r.profile == "released" and r.recomputed is None})
    if unavailable:
        from common.download import default_registry

        registry = default_registry()
        print(f"{len(unavailable)} released source(s) could not be read (their cells say why):", file=sys.stderr)
        for source in unavailable:
            print(f"  {source}", file=sys.stderr)
        # A checksum-pinned source that could not be read makes the audit incomplete; a source with no
        # pinned hash (not mirrored, not verifiable here) stays "not recomputed yet" without failing.
        pinned = [s for s in unavailable if s not in registry or registry[s].sha256]
        if args.strict and pinned:
            print(f"audit incomplete (--strict): {len(pinned)} pinned source(s) unreadable; fetch them "
                  "(VLC_MIRROR or internet) and rerun", file=sys.stderr)
            return 3
    return 0


def build_parser() -> argparse.ArgumentParser:
    from common import bench, download

    parser = argparse.ArgumentParser(prog="python -m common", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    data = sub.add_parser("data", help="inspect benchmark data")
    data_sub = data.add_subparsers(dest="data_command", required=True)
    describe = data_sub.add_parser("describe", help="per-category example counts as JSON")
    describe.add_argument("dataset", choices=["sugarcrepe"])
    describe.add_argument("--source", default="released", choices=["released", "mini", "full"],
                          help="released JSON through the downloader (default), or a prepared set")
    describe.set_defaults(func=_cmd_data_describe)

    world = sub.add_parser("world", help="build mini-world data sets (pipeline stages)")
    world.add_argument("what", choices=["train", "sugarcrepe"])
    world.add_argument("--out", required=True)
    world.set_defaults(func=_cmd_world_build)

    train = sub.add_parser("train", help="train one tiny CLIP of the mini family (params.yaml train.<name>)")
    train.add_argument("name")
    train.add_argument("--train-set", default=str(build_root() / "mini" / "world" / "train"))
    train.set_defaults(func=_cmd_train)

    prepare = sub.add_parser("prepare", help="full profile: fetch and verify SugarCrepe + COCO val2017")
    prepare.add_argument("dataset", choices=["sugarcrepe"])
    prepare.add_argument("--out", default=str(build_root() / "full" / "sugarcrepe"))
    prepare.set_defaults(func=_cmd_prepare)

    zoo = sub.add_parser("zoo", help="list models, or check that models load")
    zoo.add_argument("action", choices=["list", "check"])
    zoo.add_argument("models", nargs="*")
    zoo.add_argument("--from-params", help="also check the model list at this params.yaml key")
    zoo.add_argument("--manifest", help="write name -> fingerprint JSON here (all must load)")
    zoo.set_defaults(func=_cmd_zoo)

    report = sub.add_parser("report", help="print a paper's reproduced table and where its files are")
    report.add_argument("paper", choices=["aro", "hard_positives", "conclip", "bivlc", "sugarcrepe"])
    report.set_defaults(func=_cmd_report)

    ev = sub.add_parser("eval", help="score one model on a prepared SugarCrepe-format set")
    ev.add_argument("--model", required=True)
    ev.add_argument("--manifest", default=str(build_root() / "mini" / "sugarcrepe" / "manifest.json"))
    ev.set_defaults(func=_cmd_eval)

    audit = sub.add_parser("audit", help="published vs recomputed numbers of a paper (results/audit/)")
    audit.add_argument("target", help="a paper (aro, hard_positives, conclip, bivlc, sugarcrepe) or 'released'")
    audit.add_argument("rest", nargs="*", help="for 'released': the paper and a file in its released format")
    audit.add_argument("--strict", action="store_true",
                       help="exit 3 when a released source could not be fetched (pipelines: never cache a partial audit)")
    audit.set_defaults(func=_cmd_audit)

    bench.register_cli(sub)
    download.register_cli(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


__all__ = ["main", "build_parser", "ROOT", "data_root"]
