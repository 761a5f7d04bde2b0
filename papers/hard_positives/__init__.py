"""The Hard Positive Truth about Vision-Language Compositionality (Kamath et al., ECCV 2024). See README.md beside
this file.

``PAPER`` is what ``common`` runs of this paper (``common.paper``): keep this module light, every stage of the
paper imports it."""
from __future__ import annotations

from common.paper import Paper, PlugIn

PAPER = Paper(
    name="hard_positives",
    audit=PlugIn("papers.hard_positives.audit"),
    report=PlugIn("papers.hard_positives.report"),
    card=PlugIn("papers.hard_positives.card"),
    oracle=PlugIn("papers.hard_positives.oracle"),
)
