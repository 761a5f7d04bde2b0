"""Evaluation: the encode-once engine, one scorer per task shape, results files and seeded intervals (docs/layout.md
lists the modules)."""
