"""The report card: any CLIP-like model on every benchmark of the five papers, in one command
(``python -m common card --model SPEC``; ``make card MODEL=SPEC``).

Each number of a card is computed by its paper's own scoring code under its paper's decision rule (tie rule
included), on the current profile's data (the mini world's sets in the mini profile, the real benchmarks in the
full one), and carries: n, ties, a 95% percentile-bootstrap interval over examples; the blind baseline, what a
text-only scorer gets on the same examples under the same rule (``blind``); and, where a paper offers a recognition
trend over reference checkpoints, the residual from it ("compositional beyond what recognition buys", ``trend``).
Two or more models carded together get paired differences per number (``core.paired_difference``).

* ``core``: ``Measure`` (one number's per-example outcomes), intervals, paired differences, ``CardBenchmark``;
* ``models``: what ``--model`` accepts (zoo name, open_clip ARCH:TAG or ARCH:FILE, hf:REPO) and the model built;
* ``blind``: the text-only engine; ``trend``: residuals from the recognition trend;
* ``run``: the command (benchmarks found in each paper's ``card.py``); ``result``: ``Card``; ``report``: its files.

A paper puts its benchmarks on the card with ``papers/<paper>/card.py``: ``benchmarks(profile) ->
list[CardBenchmark]`` and, optionally, ``trends(profile) -> list[Trend]``; nothing in ``common`` names a paper.
"""
