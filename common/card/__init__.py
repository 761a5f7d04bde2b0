"""The report card: any CLIP-like model on every benchmark of the five papers, in one command
(``python -m common card --model SPEC``; what a card holds: docs/card.md).

A paper puts its benchmarks on the card with ``papers/<paper>/card.py``: ``benchmarks(profile) ->
list[CardBenchmark]`` and, optionally, ``trends(profile) -> list[Trend]``; nothing in ``common`` names a paper.
"""
