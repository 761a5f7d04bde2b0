"""``python -m common card collect DIR... [--out STEM]``: many cards' JSON files merged into one leaderboard, one row
per card, one column per number, as CSV and Markdown (a table per profile: docs/card.md).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from common.card.core import CardError
from common.files.io import write_csv_atomic, write_text_atomic
from common.paths import build_root, refuse_workspace_outputs
from common.reporting.markdown_table import md_table

DEFAULT_STEM = "leaderboard"


def read_card(path: Path) -> tuple[dict, dict[str, str]]:
    """One card's JSON, checked: its leaderboard row, and its numbers' labels (key -> "Benchmark: metric")."""
    try:
        card = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CardError(f"{path}: not a readable card ({type(exc).__name__}: {str(exc).splitlines()[0]})") from exc
    if not isinstance(card, dict) or not all(k in card for k in ("model", "profile", "numbers")):
        raise CardError(f"{path}: not a card (a card's JSON has model, profile and numbers); remove it or write it "
                        f"again with `python -m common card`")
    numbers = card["numbers"]
    if not isinstance(numbers, list) or not all(
            isinstance(n, dict) and isinstance(n.get("key"), str) and isinstance(n.get("value"), (int, float))
            for n in numbers):
        raise CardError(f"{path}: damaged card: every number needs a key and a numeric value")
    provenance = card.get("provenance") if isinstance(card.get("provenance"), dict) else {}
    hw = (provenance.get("environment") or {}).get("hardware") or {}
    profile = f"{card['profile']} (rehearsal)" if provenance.get("rehearsal") else str(card["profile"])
    seconds = provenance.get("evaluation_seconds")
    row = {"model": str(card["model"]), "profile": profile, **{n["key"]: round(float(n["value"]), 2) for n in numbers}}
    row |= {"evaluation_seconds": "" if seconds is None else seconds, "hardware": hw.get("gpu") or hw.get("cpu", ""),
            "commit": str(provenance.get("commit", "")), "file": str(path)}
    return row, {n["key"]: f"{n.get('benchmark', '')}: {n.get('metric', n['key'])}" for n in numbers}


def find_cards(folders: Sequence[Path]) -> list[Path]:
    """Every card JSON in the folders (not recursive), in name order per folder."""
    paths: list[Path] = []
    for folder in folders:
        if not folder.is_dir():
            raise CardError(f"{folder}: no such folder of cards")
        paths += [p for p in sorted(folder.glob("*.json")) if p.name != "comparison.json"]  # written beside the cards
    if not paths:
        raise CardError(f"no card (<model>.json) in {', '.join(map(str, folders))}; write them with "
                        f"`python -m common card --model SPEC --out DIR`")
    return paths


def leaderboard(cards: Sequence[tuple[dict, dict[str, str]]]) -> tuple[list[str], list[dict], dict[str, str]]:
    """(columns, rows, column labels): one row per card (``read_card``), mini rows last."""
    seen: dict[tuple[str, str], str] = {}
    labels: dict[str, str] = {}  # in the order first read
    for row, numbers in cards:
        model, profile = row["model"], row["profile"]
        if (model, profile) in seen:
            raise CardError(f"{row['file']} and {seen[model, profile]} are both the {profile} card of {model}; "
                            f"collect one of them")
        seen[model, profile] = row["file"]
        labels |= {k: label for k, label in numbers.items() if k not in labels}
    rows = sorted((row for row, _ in cards), key=lambda r: r["profile"].startswith("mini"))
    return ["model", "profile", *labels, "evaluation_seconds", "hardware", "commit", "file"], rows, labels


def markdown(columns: Sequence[str], rows: Sequence[dict], labels: dict[str, str]) -> str:
    """Per profile, a table of the numbers (the shared renderer), headed by the profile."""
    numbers = [c for c in columns if c in labels]
    shown = ["model", *numbers, "evaluation_seconds", "hardware"]
    out = ["# Leaderboard", "",
           "Percent per number (each by its paper's rule: see each card's JSON); one table per profile, since a mini "
           "number (the rendered mini world) is never comparable with a full one (the papers' benchmarks).", ""]
    for profile in dict.fromkeys(r["profile"] for r in rows):
        mine = [r for r in rows if r["profile"] == profile]
        present = [c for c in shown if c not in labels or any(c in r for r in mine)]
        out += [f"## {profile} profile", "",
                md_table([{**r, **{labels[c]: r.get(c, "") for c in numbers}} for r in mine],
                         [labels.get(c, c) for c in present]), ""]
    return "\n".join(out)


def collect(folders: Sequence[Path], out_stem: Path) -> list[Path]:
    """Read the cards, write ``<stem>.csv`` and ``<stem>.md``; the paths written."""
    columns, rows, labels = leaderboard([read_card(p) for p in find_cards(folders)])
    return [write_csv_atomic(out_stem.with_suffix(".csv"), rows, columns),
            write_text_atomic(out_stem.with_suffix(".md"), markdown(columns, rows, labels))]


def _cmd_collect(args: argparse.Namespace) -> int:
    stem = Path(args.out).expanduser() if args.out else build_root() / "cards" / DEFAULT_STEM
    if stem.suffix in (".csv", ".md"):
        stem = stem.with_suffix("")
    refuse_workspace_outputs([stem.with_suffix(".csv"), stem.with_suffix(".md")], "--out")
    for path in collect([Path(d).expanduser() for d in args.dirs], stem):
        print(f"written: {path}", file=sys.stderr)
    print(stem.with_suffix(".md").read_text(encoding="utf-8"))
    return 0


def register_cli(actions) -> None:
    """``card collect``, under the card command's parser."""
    p = actions.add_parser("collect", help="merge cards into one leaderboard table (CSV and Markdown)",
                           description="Merge the cards (<model>.json) of one or more folders into one leaderboard: "
                                       "one row per model and profile, one column per number.")
    p.add_argument("dirs", nargs="+", metavar="DIR", help="folders of cards (python -m common card --out DIR)")
    p.add_argument("--out", default=None, metavar="FILE_STEM",
                   help=f"writes FILE_STEM.csv and FILE_STEM.md (default: <build>/cards/{DEFAULT_STEM})")
    p.set_defaults(func=_cmd_collect)
