"""Eq. 4's distractor mining on hand-made features: the image with the subject and without the negated object."""
from __future__ import annotations

import numpy as np
import pytest

from papers.conclip.distractors import distractor_scores, mine_distractors


def _unit(*rows):
    a = np.array(rows, dtype=float)
    return a / np.linalg.norm(a, axis=1, keepdims=True)


def test_the_image_with_the_subject_and_without_the_object_wins():
    # concepts on axes: 0 = dog (subject), 1 = beach (negated object), 2 = something else
    pool = _unit([1, 1, 0], [1, 0, 0.2], [0, 0, 1], [0, 1, 0])  # dog on beach, dog alone, other, beach alone
    subject, obj = _unit([1, 0, 0]), _unit([0, 1, 0])
    scores = distractor_scores(pool, subject, obj)
    assert scores.shape == (1, 4) and scores[0, 1] == pytest.approx(pool[1, 0] - pool[1, 1])
    assert mine_distractors(pool, subject, obj, top_k=2).tolist() == [[1, 0]]
    assert mine_distractors(pool, subject, obj, exclude=np.array([1])).tolist() == [[0]]


def test_shapes_are_checked():
    with pytest.raises(ValueError, match="need images"):
        distractor_scores(np.zeros((3, 4)), np.zeros((2, 4)), np.zeros((2, 5)))
    with pytest.raises(ValueError, match="top_k=5"):
        mine_distractors(np.eye(3), np.eye(3)[:1], np.eye(3)[1:2], top_k=5)
