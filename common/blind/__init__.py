"""Blind (text-only) attacks on image-to-text benchmarks, and the adversarial refinement that removes them.

SugarCrepe (Hsieh et al., 2023) shows that a model which never sees the image can pick the positive caption on
the older compositionality benchmarks; BiVLC filters its training negatives with the same scorers. A blind scorer
maps a caption to a number; an example is solved blind when the positive scores strictly higher than the negative.

* ``pretrained``: the released scorers (Vera, the CoLA grammar model), full profile, through ``transformers``;
* ``ngram`` and ``classifier``: offline scorers fitted here (an n-gram language model; a text-only classifier
  trained to tell positives from negatives), always cross-fitted so no text is scored by a model that saw it;
* ``refine``: Algorithm 1 of SugarCrepe (adversarial refinement), seeded.
"""
