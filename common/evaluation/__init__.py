"""Evaluation: the encode-once engine and its cache (``engine``, ``cache``), one scorer per task shape
(``scoring``), the loop every table script shares (``evaluate``), results files (``results``) and seeded confidence
intervals (``stats``).
"""
