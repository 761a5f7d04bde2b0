"""SugarCrepe — *Fixing Hackable Benchmarks for Vision-Language Compositionality* (Hsieh et al., NeurIPS 2023
D&B). See README.md beside this file.

``PAPER`` is what ``common`` runs of this paper (``common.paper``): keep this module light, every stage of the
paper imports it."""
from __future__ import annotations

from common.paper import Paper, PlugIn

PAPER = Paper(
    name="sugarcrepe",
    audit=PlugIn("papers.sugarcrepe.audit"),
    report=PlugIn("papers.sugarcrepe.report"),
    card=PlugIn("papers.sugarcrepe.card"),
    oracle=PlugIn("papers.sugarcrepe.oracle"),
    cli=PlugIn("papers.sugarcrepe.cli"),
)
