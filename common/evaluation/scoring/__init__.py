"""One scorer per task shape, each an ``evaluate(engine, data, ...)`` over the engine's encode-once embeddings.

* ``selection``: choose among K candidates (image-to-text, text-to-image), the decision rule as data;
* ``group``: 2 images x 2 captions (BiVLC, Winoground);
* ``retrieval``: Recall@k both ways over a gallery, in chunks;
* ``classification``: zero-shot classification with prompt ensembles.
"""
