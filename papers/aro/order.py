"""COCO-Order / Flickr30k-Order cases and Table 3's text-shuffled caption lists, as pure functions over strings.

The two uses normalise in opposite orders, as the authors' code does:

- Order benchmark (``COCO_Order``; ``Flickr30k_Order`` repeats it): each perturbation is applied to the raw caption
  (cased, punctuated: spaCy tags it as written), then ``pre_caption(., 30)`` to every option, the original included
  (``mertyg/vision-language-models-are-bows@81fdd20d dataset_zoo/aro_datasets.py:236``
  "[pre_caption(caption,max_words)]",
  ``mertyg/vision-language-models-are-bows@81fdd20d dataset_zoo/aro_datasets.py:239``
  "append(pre_caption(perturb_fn(caption), max_words))"). Options are ``[original, nouns+adj, all-but-nouns+adj,
  within-trigrams, trigrams]``
  (``mertyg/vision-language-models-are-bows@81fdd20d dataset_zoo/aro_datasets.py:209-210``
  "perturb_functions = [shuffler.shuffle_nouns_and_adj, shuffler.shuffle_allbut_nouns_and_adj,
  shuffler.shuffle_within_trigrams, shuffler.shuffle_trigrams]"); upstream scores ``argmax == 0``
  (``mertyg/vision-language-models-are-bows@81fdd20d dataset_zoo/aro_datasets.py:279`` "correct_mask = (preds == 0)":
  a tie with the original counts as correct) and keeps options that happen to equal the original.
- Text-shuffled retrieval: the dataset's captions are ``pre_caption``-ed first, lowercase, no periods
  (``mertyg/vision-language-models-are-bows@81fdd20d dataset_zoo/retrieval.py:79``
  "self.text.append(pre_caption(caption,max_words))"), and the perturbation is applied to those, with no
  normalisation after (``mertyg/vision-language-models-are-bows@81fdd20d main_retrieval.py:45``
  "loader.dataset.text = [text_perturb_fn(t) for t in loader.dataset.text]").
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from common.text.caption_text import (
    MAX_WORDS, ORDER_PERTURBATIONS, RETRIEVAL_PERTURBATIONS, Tagged, perturb_captions, pre_caption)


@dataclass(frozen=True)
class OrderCase:
    """One Order test case: the caption's five options, the original first (index 0)."""

    index: int
    options: tuple[str, ...]


OPTION_NAMES = ("original", *ORDER_PERTURBATIONS)


def order_cases(captions: Sequence[str], seed: int, tagged: Mapping[str, Tagged] | None = None) -> list[OrderCase]:
    """One case per caption (``index``: its position): the original and Table 1's 4 perturbations in upstream order,
    each ``pre_caption``-ed; ``tagged``: ``tag_captions(captions)``, to tag once for several seeds."""
    perturbed = perturb_captions(captions, ORDER_PERTURBATIONS, seed, tagged)
    return [OrderCase(i, (pre_caption(caption, MAX_WORDS),
                          *(pre_caption(perturbed[kind][i], MAX_WORDS) for kind in ORDER_PERTURBATIONS)))
            for i, caption in enumerate(captions)]


def normalised_captions(captions: Sequence[str]) -> list[str]:
    """The retrieval sets' captions (``pre_caption``), which Table 3's shuffles start from."""
    return [pre_caption(c, MAX_WORDS) for c in captions]


def shuffled_retrieval_texts(captions: Sequence[str], seed: int,
                             tagged: Mapping[str, Tagged] | None = None) -> dict[str, list[str]]:
    """``{"none": normalised captions, kind: shuffled captions, ...}`` for Table 3, in caption order (so image/caption
    links hold). ``tagged``: ``tag_captions(normalised_captions(captions))``, to tag once for several seeds."""
    normalised = normalised_captions(captions)
    return {"none": normalised, **perturb_captions(normalised, RETRIEVAL_PERTURBATIONS, seed, tagged)}
