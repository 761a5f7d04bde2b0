"""BiVLC — *Extending Vision-Language Compositionality Evaluation with Text-to-Image Retrieval* (Miranda et al.,
NeurIPS 2024 D&B). See README.md beside this file.

``PAPER`` is what ``common`` runs of this paper (``common.paper``): keep this module light, every stage of the
paper imports it."""
from __future__ import annotations

from common.paper import Paper, PlugIn

PAPER = Paper(
    name="bivlc",
    audit=PlugIn("papers.bivlc.audit"),
    report=PlugIn("papers.bivlc.report"),
    card=PlugIn("papers.bivlc.card"),
    oracle=PlugIn("papers.bivlc.oracle"),
    cli=PlugIn("papers.bivlc.cli"),
)
