"""``python -m common site``: the committed results as a static HTML site that opens offline (``build``)."""
