"""``python -m common zoo``: list the registered models, or check that models load (and record their fingerprints)."""
from __future__ import annotations

import sys
from pathlib import Path

from common.files.io import write_json_atomic
from common.pipeline.params import read_params, section, stage_params
from common.zoo import factory
from common.zoo.interface import ModelUnavailable
from common.zoo.specs import registry


def _cmd_zoo(args) -> int:
    """``zoo list`` / ``zoo check NAME... [--from-params KEY] [--manifest FILE]``."""
    if args.action == "list":
        for spec in registry().values():
            weights = spec.pretrained and f"{spec.backend}:{spec.pretrained}" or spec.checkpoint
            print(f"{spec.name:40s} {spec.family:9s} {spec.arch:28s} {weights}")
        return 0
    names = list(args.models)
    if args.from_params:
        params = stage_params(args.stage) if args.stage else read_params()
        names += list(section(params, args.from_params))
    status, manifest = 0, {}
    for name in names:
        try:
            model = factory.create_model(name)
            manifest[name] = {"fingerprint": model.fingerprint, "arch": model.spec.arch,
                              "pretrained": model.spec.pretrained, "checkpoint": model.spec.checkpoint}
            print(f"{name}: ok, fingerprint {model.fingerprint}")
        except ModelUnavailable as exc:
            print(f"{name}: UNAVAILABLE: {exc}", file=sys.stderr)
            status = 1
    if args.manifest:
        if status:
            unavailable = [name for name in names if name not in manifest]
            raise ModelUnavailable(f"not writing {args.manifest}: {len(unavailable)} of {len(names)} models are "
                                   f"unavailable ({', '.join(unavailable)}; why and how to get each above)")

        write_json_atomic(Path(args.manifest), manifest)
    return status


def register_cli(subparsers) -> None:
    """Add ``zoo`` to ``python -m common``."""
    p = subparsers.add_parser("zoo", help="list models, or check that models load")
    p.add_argument("action", choices=["list", "check"])
    p.add_argument("models", nargs="*")
    p.add_argument("--from-params", help="also check the model list at this params.yaml key")
    p.add_argument("--stage", help="read --from-params through this DVC stage's declared parameters")
    p.add_argument("--manifest", help="write name -> fingerprint JSON here (all must load)")
    p.set_defaults(func=_cmd_zoo)
