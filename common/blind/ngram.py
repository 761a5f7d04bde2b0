"""An n-gram language model as an offline blind fluency scorer (the stand-in for SugarCrepe's grammar model).

A word trigram model (NLTK's ``nltk.lm``, Witten-Bell interpolation: Kneser-Ney scores are ~200x slower in NLTK and
would not fit the pipeline's budget) fitted on positive captions; a caption's fluency is its mean log-probability
per token, end-of-sentence included, so that a longer caption (an ADD negative) is not penalised for its length
alone. ``scores`` maps that to (0, 1) by a logistic of the value standardised on positive captions held out of the
fit (up to ``calibration_size``, a fifth at most), the range
adversarial refinement bins over; it is monotone, so which caption of a pair wins is the same either way.
"""
from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np

from common.pipeline.reproducible import logistic

TOKEN = re.compile(r"[a-z0-9]+|[^\sa-z0-9]")
"""Lower-cased words and single punctuation marks: a stray " ." or a missing article shows up as tokens."""


def tokenize(text: str) -> list[str]:
    return TOKEN.findall(text.lower())


@dataclass
class NgramFluency:
    """Fluency of a caption under an n-gram model of positive captions; ``fit`` then ``scores``."""

    order: int = 3
    calibration_size: int = 2000
    seed: int = 0
    name: str = "ngram-lm"
    _lm: object = field(default=None, repr=False)
    _memo: dict = field(default_factory=dict, repr=False)
    _center: float = 0.0
    _scale: float = 1.0
    _unseen_logprob: float = 0.0

    def fit(self, texts: Iterable[str]) -> "NgramFluency":
        # deferred: loads nltk only when called
        from nltk.lm import WittenBellInterpolated
        from nltk.lm.preprocessing import padded_everygram_pipeline

        distinct = sorted(set(texts))
        if len(distinct) < 2:
            raise ValueError(f"NgramFluency.fit: {len(distinct)} distinct text(s) to fit on, need at least 2")
        # the calibration captions are held out of the fit: in-sample captions look more fluent than any new one
        held = set(random.Random(self.seed).sample(distinct, min(self.calibration_size, len(distinct) // 5 or 1)))
        sentences = [tokenize(t) for t in distinct if t not in held]
        train, vocab = padded_everygram_pipeline(self.order, sentences)
        self._lm = WittenBellInterpolated(self.order)
        self._lm.fit(train, vocab)
        self._memo = {}
        tokens = sum(len(s) + 1 for s in sentences)
        self._unseen_logprob = -math.log2(tokens + len(self._lm.vocab))  # add-one estimate of one unseen word
        values = self.mean_logprob(sorted(held))
        self._center = float(np.mean(values))
        self._scale = float(np.std(values)) or 1.0
        return self

    def _logprob(self, word: str, context: tuple[str, ...]) -> float:
        key = (context, word)
        value = self._memo.get(key)
        if value is None:
            value = self._lm.logscore(word, context)  # log2
            if not math.isfinite(value):  # a word no fitting caption has: NLTK's unigram level gives it mass 0
                value = self._unseen_logprob
            self._memo[key] = value
        return value

    def mean_logprob(self, texts: Sequence[str]) -> np.ndarray:
        """Mean log2-probability per token (end of sentence included) of each text."""
        if self._lm is None:
            raise RuntimeError("NgramFluency: call fit() first")
        # deferred: loads nltk only when called
        from nltk.lm.preprocessing import pad_both_ends
        from nltk.util import ngrams

        out = np.empty(len(texts), dtype=np.float64)
        for i, text in enumerate(texts):
            padded = list(pad_both_ends(tokenize(text), n=self.order))
            grams = list(ngrams(padded, self.order))
            total = sum(self._logprob(g[-1], g[:-1]) for g in grams)
            out[i] = total / len(grams) if grams else 0.0
        return out

    def scores(self, texts: Sequence[str]) -> np.ndarray:
        """Fluency in (0, 1): logistic of the mean log-probability standardised on the held-out calibration captions."""
        z = (self.mean_logprob(texts) - self._center) / self._scale
        return logistic(z)

