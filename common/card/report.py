"""A card's files (``<model>.{json,csv,md,png}``; for several models ``comparison.{json,csv,md}``), written as one
output group: all appear, or none do.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import numpy as np

from common.card.published import comparability
from common.card.result import Card
from common.files.io import output_group, staged_to_final, write_csv_atomic, write_json_atomic, write_text_atomic
from common.reporting.figures import pyplot, save_figure
from common.reporting.markdown_table import md_table

CSV_FIELDS = ["key", "benchmark", "metric", "value", "low", "high", "n", "ties", "aggregate", "precision", "blind",
              "blind_low", "blind_high", "trend_residual", "residual_low", "residual_high", "trend_expected", "rule",
              "source"]
COMPARISON_FIELDS = ["a", "b", "key", "benchmark", "metric", "n", "precision", "a_value", "b_value", "difference",
                     "low", "high", "verdict"]


def _r(x: float | None) -> float | str:
    return "" if x is None else round(x, 2)


def footer(provenance: dict) -> str:
    """The Markdown footer line of a card: wall time, versions, hardware, commit (what produced its numbers)."""
    env = provenance.get("environment") or {}
    seconds = provenance.get("evaluation_seconds")
    parts = [] if seconds is None else [f"evaluated in {seconds:.1f} s"]
    hw = env.get("hardware") or {}
    if hw:
        where = f"{hw.get('cpu', 'unknown CPU')} ({hw.get('cpu_count')} cores)"
        parts.append(f"on {hw.get('gpu') or hw.get('device', 'cpu')}, {where}")
    if env.get("versions"):
        parts.append(", ".join(f"{k} {v}" for k, v in env["versions"].items()))
    if provenance.get("commit"):
        parts.append(f"workspace commit {provenance['commit']}")
    return "; ".join(parts)


def rows(card: Card) -> list[dict]:
    """One row per number, in the card's order."""
    out = []
    for m in card.measures:
        e, b, r = card.estimates[m.key], card.blind.get(m.key), card.residuals.get(m.key)
        out.append({"key": m.key, "benchmark": m.benchmark, "metric": m.metric, "value": _r(e.value),
                    "low": _r(e.low), "high": _r(e.high), "n": m.n, "ties": "" if m.ties is None else m.ties,
                    "aggregate": m.aggregate,
                    "precision": m.precision or card.provenance.get("engine", {}).get("precision", ""),
                    "blind": _r(b.value) if b else "", "blind_low": _r(b.low) if b else "",
                    "blind_high": _r(b.high) if b else "", "trend_residual": _r(r.value) if r else "",
                    "residual_low": _r(r.low) if r else "", "residual_high": _r(r.high) if r else "",
                    "trend_expected": _r(r.expected) if r else "", "rule": m.rule, "source": m.source})
    return out


def note(card: Card) -> str:
    """What the numbers are: the mini world's, a rehearsal's stand-ins', or the papers' benchmarks'."""
    if card.provenance.get("rehearsal"):
        return "a rehearsal: the full profile's code on stand-in data and random weights, never the papers' numbers"
    if card.profile == "mini":
        scored = "a real model on" if card.warnings else "tiny CLIPs on"
        return f"mini profile: {scored} the rendered mini world, never the papers' numbers"
    return "full profile: the papers' benchmarks"


def as_json(card: Card) -> dict:
    numbers = []
    for row, m in zip(rows(card), card.measures):
        r = card.residuals.get(m.key)
        numbers.append({**{k: v for k, v in row.items() if not k.startswith(("blind", "trend", "residual"))},
                        "interval": card.estimates[m.key].method,
                        "blind": ({"value": row["blind"], "low": row["blind_low"], "high": row["blind_high"],
                                   "scorer": m.blind_note} if m.blind is not None else {"value": None,
                                                                                        "why": m.blind_note}),
                        "trend": r.as_dict() if r else None})
    return {"model": card.model.spec_text, "profile": card.profile,
            "note": note(card), "warnings": list(card.warnings),
            "numbers": numbers, "not_on_card": card.missing,
            "published": {"comparability": comparability(card.profile, bool(card.provenance.get("rehearsal"))),
                          "rows": card.published},
            "provenance": card.provenance}


def published_markdown(card: Card) -> list[str]:
    """Per source table, the card's numbers above the published rows for the same numbers (shared renderer)."""
    if not card.published:
        return []
    metrics = {m.key: f"{m.benchmark}: {m.metric}" for m in card.measures}
    comparable = comparability(card.profile, bool(card.provenance.get("rehearsal")))
    lines = ["", "## Beside the published numbers", "", comparable[0].upper() + comparable[1:] + "."]
    for source in dict.fromkeys(r["source"] for r in card.published):
        rows = [r for r in card.published if r["source"] == source]
        keys = [k for k in metrics if any(k in r["values"] for r in rows)]
        mine = {"model": f"**{card.model.spec_text}** (this card, {card.profile} profile)",
                **{metrics[k]: round(card.estimates[k].value, 2) for k in keys}}
        theirs = [{"model": f"{r['row']} (published)", **{metrics[k]: r["values"].get(k, "") for k in keys}}
                  for r in rows]
        lines += ["", f"{source} (results/published/{rows[0]['paper']}.csv):", "",
                  md_table([mine, *theirs], ["model", *(metrics[k] for k in keys)])]
    return lines


def markdown(card: Card) -> str:
    """The card as a Markdown table (what the command prints)."""
    lines = [f"# Report card: {card.model.spec_text} ({card.profile} profile)", ""]
    lines += [f"**Warning: {w}.**" for w in card.warnings] + ([""] if card.warnings else [])
    lines += [note(card)[0].upper() + note(card)[1:] + ".", ""]
    lines += ["| benchmark | number | % [95% CI] | n | ties | blind text-only | beyond recognition trend |",
              "|---|---|---|---|---|---|---|"]
    for row, m in zip(rows(card), card.measures):
        blind = f"{row['blind']}" if row["blind"] != "" else "n/a"
        trend = ""
        if row["trend_residual"] != "":
            ci = f" [{row['residual_low']}, {row['residual_high']}]" if row["residual_low"] != "" else ""
            trend = f"{row['trend_residual']:+}{ci}"
        lines.append(f"| {m.benchmark} | {m.metric} | {row['value']} [{row['low']}, {row['high']}] | {m.n} | "
                     f"{row['ties']} | {blind} | {trend} |")
    lines += ["", "Rules: " + "; ".join(sorted({f"{m.benchmark}: {m.rule}" for m in card.measures}))]
    authors = card.provenance.get("precision", {}).get("authors", {})
    if authors:
        lines += ["", "Precision: " + "; ".join(f"{b}: the authors' {how}" for b, how in sorted(authors.items()))
                  + " (rows marked [" + card.provenance["precision"]["engine"] + "])."]
    blind_notes = sorted({m.blind_note for m in card.measures if m.blind is not None})
    if blind_notes:
        lines += ["", "Blind baseline: " + "; ".join(blind_notes)]
    if card.residuals:
        lines += ["", "Beyond the recognition trend: the score minus what the model's recognition accuracy predicts "
                      "from " + "; ".join(card.provenance.get("trends") or []) + " (least-squares line; 95% interval "
                      "with the fit's and the model's own uncertainty)."]
    for m in card.missing:
        lines += ["", f"Not on the card: {m['title']} ({m['benchmark']}): {m['why']}; to get it: {m['how']}"]
    lines += published_markdown(card)

    done = footer(card.provenance)
    if done:
        lines += ["", "---", "", f"Computed: {done}."]
    return "\n".join(lines) + "\n"


def draw(card: Card, out_png: Path) -> Path:
    """Benchmarks x accuracy: the numbers with intervals, the blind baseline (x), the trend's expectation (o)."""
    plt = pyplot()
    measures = card.measures
    fig, ax = plt.subplots(figsize=(7.5, 0.28 * len(measures) + 1.2))
    ys = list(range(len(measures)))[::-1]
    for y, m in zip(ys, measures):
        e = card.estimates[m.key]
        ax.errorbar(e.value, y, xerr=[[e.value - e.low], [e.high - e.value]], fmt="s", color="tab:blue",
                    markersize=4, capsize=2, label="model (95% CI)" if y == ys[0] else None)
        if m.key in card.blind:
            ax.plot(card.blind[m.key].value, y, "x", color="tab:red",
                    label="blind text-only" if not ax.get_legend_handles_labels()[1].count("blind text-only") else None)
        if m.key in card.residuals:
            ax.plot(card.residuals[m.key].expected, y, "o", mfc="none", color="tab:green",
                    label="trend expectation" if "trend expectation" not in ax.get_legend_handles_labels()[1]
                    else None)
    _finish(fig, ax, ys, [f"{m.benchmark}: {m.metric}" for m in measures],
            f"{card.model.spec_text} ({card.profile} profile)")
    return save_figure(fig, out_png)


def _finish(fig, ax, ys, labels: Sequence[str], title: str) -> None:
    """The axes of a card's figure: a row per number, accuracy 0-100 across."""
    ax.set_yticks(ys)
    ax.set_yticklabels(labels, fontsize=7)
    ax.set_xlim(0, 100)
    ax.set_xlabel("accuracy (%)")
    ax.set_title(title, fontsize=9)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()


def comparison_markdown(comparison: Sequence[dict]) -> str:
    lines = ["# Paired differences (a - b, points; 95% paired-bootstrap interval over the same examples)", "",
             "| a | b | benchmark | number | a | b | a - b [95% CI] | verdict |", "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['a']} | {r['b']} | {r['benchmark']} | {r['metric']} | {r['a_value']} | {r['b_value']} | "
              f"{r['difference']:+} [{r['low']}, {r['high']}] | {r['verdict']} |" for r in comparison]
    return "\n".join(lines) + "\n"


def write_cards(cards: Sequence[Card], comparison: Sequence[dict], out_dir: Path) -> list[Path]:
    """Every card's four files and, with a comparison, its three, as one output group in ``out_dir``."""
    written = []
    with output_group(out_dir) as staging:
        for card in cards:
            stem = card.model.file_stem
            written += [write_json_atomic(staging / f"{stem}.json", as_json(card)),
                        write_csv_atomic(staging / f"{stem}.csv", rows(card), CSV_FIELDS),
                        write_text_atomic(staging / f"{stem}.md", markdown(card)),
                        draw(card, staging / f"{stem}.png")]
        if comparison:
            written += [write_json_atomic(staging / "comparison.json", list(comparison)),
                        write_csv_atomic(staging / "comparison.csv", list(comparison), COMPARISON_FIELDS),
                        write_text_atomic(staging / "comparison.md", comparison_markdown(comparison))]
    return [staged_to_final(p, staging, out_dir) for p in written]


def read_cards(folder: Path) -> list[dict]:
    """Every ``<model>.json`` card in ``folder`` (``comparison.json`` aside), in name order."""
    return [json.loads(p.read_text()) for p in sorted(Path(folder).glob("*.json")) if p.name != "comparison.json"]


def side_by_side(cards: Sequence[dict]):
    """Several cards in one figure (the blind baseline from the first: the same examples for every model)."""
    plt = pyplot()
    keys = [n["key"] for n in cards[0]["numbers"]]
    labels = {n["key"]: f"{n['benchmark']}: {n['metric']}" for n in cards[0]["numbers"]}
    fig, ax = plt.subplots(figsize=(8, 0.32 * len(keys) + 1.4))
    offsets = np.linspace(-0.3, 0.3, len(cards)) if len(cards) > 1 else [0.0]
    for offset, card in zip(offsets, cards):
        numbers = {n["key"]: n for n in card["numbers"]}
        shown = [(y + offset, numbers[key]) for y, key in enumerate(reversed(keys)) if key in numbers]
        ax.errorbar([n["value"] for _, n in shown], [y for y, _ in shown],
                    xerr=[[n["value"] - n["low"] for _, n in shown], [n["high"] - n["value"] for _, n in shown]],
                    fmt="s", markersize=3, capsize=1.5, label=card["model"])
    first = {n["key"]: n for n in cards[0]["numbers"]}
    blind = [(y, first[k]["blind"]["value"]) for y, k in enumerate(reversed(keys))
             if first[k]["blind"].get("value") not in (None, "")]
    if blind:
        ax.plot([b for _, b in blind], [y for y, _ in blind], "x", color="black", label="blind text-only")
    _finish(fig, ax, range(len(keys)), [labels[k] for k in reversed(keys)],
            f"Report cards ({cards[0]['profile']} profile)")
    return fig
