"""The documentation's checked content: numbers from ``results/``, the audit's coverage and every citation."""
