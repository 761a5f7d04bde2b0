"""The report card: any CLIP-like model on every benchmark of the five papers (``python -m common card --model
SPEC``; docs/card.md), which a paper offers through ``papers/<paper>/card.py``: nothing in ``common`` names a paper.
"""
