"""Benchmarks that several papers read, each with one loader: SugarCrepe's released JSON format
(``caption_negatives``: an image, its caption and a negative caption per example, one JSON file per category).

A benchmark that only one paper evaluates stays in that paper's package; one that two or more papers score (CoN-CLIP
and BiVLC report SugarCrepe beside their own) lives here, so no paper imports another.
"""
