"""Blind (text-only) attacks on image-to-text benchmarks, and the adversarial refinement that removes them.

SugarCrepe (Hsieh et al., 2023) shows that a model which never sees the image can pick the positive caption on the
older compositionality benchmarks; BiVLC filters its training negatives with the same scorers. An example is solved
blind when a scorer ranks its positive caption strictly above the negative: the released scorers (``pretrained``) or
ones fitted here and always cross-fitted (``ngram``, ``classifier``); ``refine`` is SugarCrepe's Algorithm 1."""
