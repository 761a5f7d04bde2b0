"""One scorer per task shape (``selection``, ``group``, ``retrieval``, ``classification``), each an
``evaluate(engine, data, ...)`` over the encode-once embeddings; ``matching`` scores pairs with a cross-encoder.
"""
