"""A text-only classifier trained to tell a positive caption from its hard negative: the strongest blind attack.

A pairwise (ranking) logistic regression over TF-IDF uni- and bigrams of words (punctuation marks apart) and of the
whitespace-separated tokens as written (so a generator's spacing or casing habits count too: NegCLIP's swaps end in
" ."); character n-grams gained about a point more for three times the time. It learns w such that
w . phi(positive) > w . phi(negative), from the difference of the two feature vectors in both orders, with no
intercept (the task is symmetric). A caption's score is sigmoid(w . phi(text)) in (0, 1), so
a pair is solved when the positive scores higher, exactly as for Vera or the grammar model. Everything is
scikit-learn; fitted on training pairs only (``common.blind.crossfit`` makes sure of it).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from common.pipeline.reproducible import logistic


@dataclass
class PairwiseTextClassifier:
    C: float = 1.0
    name: str = "text-classifier"
    _vectorizer: object = field(default=None, repr=False)
    _weights: np.ndarray | None = field(default=None, repr=False)

    def fit(self, positives: Sequence[str], negatives: Sequence[str]) -> "PairwiseTextClassifier":
        # deferred: loads scipy only when called
        from scipy.sparse import vstack
        # deferred: loads sklearn only when called
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import FeatureUnion

        if len(positives) != len(negatives) or not positives:
            raise ValueError(f"PairwiseTextClassifier.fit: {len(positives)} positives, {len(negatives)} negatives")
        self._vectorizer = FeatureUnion([
            # words, punctuation marks apart: what a caption says
            ("words", TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True,
                                      token_pattern=r"(?u)\b\w+\b|[^\w\s]")),
            # whitespace-separated tokens as written: how it is written ("yak ." against "yak.", a casing slip)
            ("tokens", TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True, lowercase=False,
                                       token_pattern=r"\S+")),
        ]).fit(list(positives) + list(negatives))
        diff = self._vectorizer.transform(positives) - self._vectorizer.transform(negatives)
        x = vstack([diff, -diff]).tocsr()
        y = np.r_[np.ones(diff.shape[0]), np.zeros(diff.shape[0])]
        model = LogisticRegression(C=self.C, fit_intercept=False, max_iter=2000, solver="liblinear")
        model.fit(x, y)
        self._weights = model.coef_.ravel()
        return self

    def scores(self, texts: Sequence[str]) -> np.ndarray:
        if self._weights is None:
            raise RuntimeError("PairwiseTextClassifier: call fit() first")
        margin = self._vectorizer.transform(list(texts)) @ self._weights
        return logistic(margin)
