"""A card's footer: where and with what it was computed (``common.pipeline.machine``), and the wall time of its evaluation, so
that two cards' numbers (and their cost) can be put side by side knowing what produced each.
"""
from __future__ import annotations


def footer(provenance: dict) -> str:
    """The Markdown footer line of a card: wall time, versions, hardware, commit."""
    env = provenance.get("environment") or {}
    seconds = provenance.get("evaluation_seconds")
    parts = []
    if seconds is not None:
        parts.append(f"evaluated in {seconds:.1f} s")
    hw = env.get("hardware") or {}
    if hw:
        where = f"{hw.get('cpu', 'unknown CPU')} ({hw.get('cpu_count')} cores)"
        parts.append(f"on {hw.get('gpu') or hw.get('device', 'cpu')}, {where}")
    if env.get("versions"):
        parts.append(", ".join(f"{k} {v}" for k, v in env["versions"].items()))
    if provenance.get("commit"):
        parts.append(f"workspace commit {provenance['commit']}")
    return "; ".join(parts)
