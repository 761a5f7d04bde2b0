"""The workspace's records and files: task records (``tasks``), atomic writes and hashing (``io``), JSON and
JSON-lines (``jsonl``), numpy arrays (``arrays``), images as the models see them (``image_transforms``) and Visual
Genome's released test cases (``visual_genome``). Imports nothing above ``common.errors``, so every layer reads and
writes through it.
"""
