"""CoN-CLIP — *Learn "No" to Say "Yes" Better* (Singh et al., ECCV 2024). See README.md beside this file.

``PAPER`` is what ``common`` runs of this paper (``common.paper``): keep this module light, every stage of the
paper imports it."""
from __future__ import annotations

from common.paper import Paper, PlugIn

PAPER = Paper(
    name="conclip",
    audit=PlugIn("papers.conclip.audit"),
    report=PlugIn("papers.conclip.report"),
    card=PlugIn("papers.conclip.card"),
    oracle=PlugIn("papers.conclip.oracle"),
)
