"""ARO — *When and why vision-language models behave like bags-of-words* (Yuksekgonul et al., ICLR 2023). See
README.md beside this file.

``PAPER`` is what ``common`` runs of this paper (``common.paper``): keep this module light, every stage of the
paper imports it."""
from __future__ import annotations

from common.paper import Paper, PlugIn

PAPER = Paper(
    name="aro",
    audit=PlugIn("papers.aro.audit"),
    report=PlugIn("papers.aro.report"),
    card=PlugIn("papers.aro.card"),
    oracle=PlugIn("papers.aro.oracle"),
)
