"""``python -m common card collect DIR... [--out STEM]``: many cards' JSON files merged into one leaderboard, one row
per card (model and profile), one column per number, as CSV and Markdown (CLIP_benchmark's ``build`` does the same
for its result files).

Cards of different profiles may share a table: each row says its profile (a rehearsal's as "full (rehearsal)"), and
the Markdown puts the mini profile's rows under their own heading, so that no one reads a mini number against a full
one. A file that is not a card (damaged, or another JSON) stops the command with one line naming it.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from common.card.core import CardError
from common.files.io import write_csv_atomic, write_text_atomic
from common.paths import build_root, refuse_workspace_outputs
from common.reporting.markdown_table import md_table

FIXED = ("model", "profile")
TRAILING = ("evaluation_seconds", "hardware", "commit", "file")
NOT_CARDS = ("comparison.json",)
"""JSON files the card command writes beside the cards that are not cards."""
DEFAULT_STEM = "leaderboard"


@dataclass(frozen=True)
class Entry:
    """One card as the leaderboard reads it."""

    path: Path
    model: str
    profile: str
    values: dict[str, float]
    labels: dict[str, str]
    """Number key -> "Benchmark: metric"."""
    seconds: float | None
    hardware: str
    commit: str


def read_card(path: Path) -> Entry:
    """One card's JSON, checked: a damaged one is one line naming the file."""
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
    return Entry(path, str(card["model"]), profile, {n["key"]: float(n["value"]) for n in numbers},
                 {n["key"]: f"{n.get('benchmark', '')}: {n.get('metric', n['key'])}" for n in numbers},
                 provenance.get("evaluation_seconds"), hw.get("gpu") or hw.get("cpu", ""),
                 str(provenance.get("commit", "")))


def find_cards(folders: Sequence[Path]) -> list[Path]:
    """Every card JSON in the folders (not recursive), in name order per folder."""
    paths: list[Path] = []
    for folder in folders:
        if not folder.is_dir():
            raise CardError(f"{folder}: no such folder of cards")
        paths += [p for p in sorted(folder.glob("*.json")) if p.name not in NOT_CARDS]
    if not paths:
        raise CardError(f"no card (<model>.json) in {', '.join(map(str, folders))}; write them with "
                        f"`python -m common card --model SPEC --out DIR`")
    return paths


def leaderboard(entries: Sequence[Entry]) -> tuple[list[str], list[dict], dict[str, str]]:
    """(columns, rows, column labels): one row per card, mini rows last, each profile's rows in the order read."""
    seen: dict[tuple[str, str], Path] = {}
    for e in entries:
        if (e.model, e.profile) in seen:
            raise CardError(f"{e.path} and {seen[e.model, e.profile]} are both the {e.profile} card of {e.model}; "
                            f"collect one of them")
        seen[e.model, e.profile] = e.path
    labels: dict[str, str] = {}  # in the order first read
    for e in entries:
        labels |= {k: e.labels[k] for k in e.values if k not in labels}
    ordered = sorted(entries, key=lambda e: e.profile.startswith("mini"))
    rows = [{"model": e.model, "profile": e.profile, **{k: round(v, 2) for k, v in e.values.items()},
             "evaluation_seconds": "" if e.seconds is None else e.seconds, "hardware": e.hardware,
             "commit": e.commit, "file": str(e.path)} for e in ordered]
    return [*FIXED, *labels, *TRAILING], rows, labels


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
    entries = [read_card(p) for p in find_cards(folders)]
    columns, rows, labels = leaderboard(entries)
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
