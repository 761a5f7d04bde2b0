"""The documentation's checked content: numbers written from ``results/`` (``docnumbers``), the audit's coverage
(``coverage``) and every citation of the authors' code and papers (``citations``).
"""
