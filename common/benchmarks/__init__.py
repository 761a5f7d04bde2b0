"""Benchmarks that two or more papers score, each with one loader (SugarCrepe's format: ``caption_negatives``), so no
paper imports another; a benchmark only one paper evaluates stays in that paper's package."""
