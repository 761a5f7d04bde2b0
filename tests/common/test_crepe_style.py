"""CREPE-style negatives on real captions (real spaCy tags): what each kind changes, what it must keep."""
from __future__ import annotations

import pytest

from common.text import crepe_style as cs

CAPTIONS = [
    "A woman standing behind a fence looking at an elephant.",
    "A red fire hydrant on a city sidewalk.",
    "Two adult bears play fight in the water.",
    "A man sitting in front of a laptop computer.",
    "A teddy bear next to a stuffed fish.",
    "A large brown dog and a small white cat on the green grass.",
]
VOCABULARY = cs.Vocabulary.from_parsed(cs.parse_captions(CAPTIONS + [
    "A soda on a table.", "Birds flying around the old tower.", "A cat sleeping under a blue blanket."]).values())


@pytest.fixture(scope="module")
def negatives():
    return cs.crepe_negatives(CAPTIONS, seed=0, vocabulary=VOCABULARY)


def _words(text: str) -> list[str]:
    return text.rstrip(".").lower().split()


def test_replace_changes_one_word_to_a_new_word_of_its_tag(negatives):
    parsed = cs.parse_captions(CAPTIONS)
    for caption, negative in zip(CAPTIONS, negatives["replace"]):
        before, after = _words(caption), _words(negative)
        assert len(before) == len(after)
        changed = [i for i, (a, b) in enumerate(zip(before, after)) if a != b]
        assert len(changed) == 1, (caption, negative)
        new = after[changed[0]]
        assert new not in before  # never the same word, never one already in the caption
        p = parsed[caption]
        tag = p.tags[[t.lower() for t in p.tokens].index(before[changed[0]])]
        assert new in VOCABULARY.words[tag] and p.word_class(p.tokens.index(p.tokens[changed[0]])) is not None


def test_replace_never_draws_a_word_already_in_the_caption():
    """With a vocabulary whose only other noun is in the caption, a noun can only become 'soda'."""
    vocabulary = cs.Vocabulary({"NN": ("bear", "soda", "water")})
    out = cs.crepe_negatives(["A bear in the water."], ("replace",), seed=3, vocabulary=vocabulary)
    assert out["replace"] == ["A soda in the water."] or out["replace"] == ["A bear in the soda."]
    for seed in range(20):
        negative = cs.crepe_negatives(["A bear in the water."], ("replace",), seed, vocabulary)["replace"][0]
        assert "soda" in negative and negative.count("bear") + negative.count("water") == 1
    nothing_new = cs.Vocabulary({"NN": ("bear", "water")})
    assert cs.crepe_negatives(["A bear in the water."], ("replace",), 0, nothing_new)["replace"] == [None]


def test_swap_exchanges_two_nouns_or_adjectives_and_keeps_the_rest(negatives):
    parsed = cs.parse_captions(CAPTIONS)
    for caption, negative in zip(CAPTIONS, negatives["swap"]):
        before, after = _words(caption), _words(negative)
        assert sorted(before) == sorted(after) and before != after
        changed = [i for i, (a, b) in enumerate(zip(before, after)) if a != b]
        assert len(changed) == 2 and after[changed[0]] == before[changed[1]] and after[changed[1]] == before[changed[0]]
        classes = {parsed[caption].word_class(i) for i in changed}
        assert len(classes) == 1 and classes <= {"object", "attribute"}
    # casing follows the position: a noun moved to the front is capitalised, the one moved out is not
    out = cs.crepe_negatives(["Man swinging tennis racket while group of people watches."], ("swap",), 0)["swap"][0]
    assert out[0].isupper() and "Man" not in out.split()[1:]


def test_negate_appends_there_is_no_or_inserts_not_before_a_noun():
    forms = set()
    for seed in range(12):
        negative = cs.crepe_negatives(["A teddy bear next to a stuffed fish."], ("negate",), seed)["negate"][0]
        if negative.startswith("A teddy bear next to a stuffed fish. There is no "):
            forms.add("there_is_no")
            assert negative.endswith(("There is no teddy bear.", "There is no fish."))
        else:
            forms.add("not")
            words = negative.split()
            k = words.index("not")
            assert words[:k] + words[k + 1:] == "A teddy bear next to a stuffed fish.".split()
            assert words[k + 1].strip(".") in ("teddy", "bear", "fish")
    assert forms == {"there_is_no", "not"}
    # a caption without a final period gets one before the added sentence
    out = cs.crepe_negatives(["a dog on a couch"], ("negate",), 1)["negate"][0]
    assert out in ("a dog on a couch. There is no dog.", "a dog on a couch. There is no couch.",
                   "a not dog on a couch", "a dog on a not couch")


def test_shuffle_is_aros_nouns_and_adjectives_shuffle(negatives):
    from common.text.caption_text import perturb_captions

    aro = perturb_captions(CAPTIONS, ["shuffle_nouns_and_adj"], 0)["shuffle_nouns_and_adj"]
    assert len(negatives["shuffle"]) == len(CAPTIONS)
    for caption, negative, reference in zip(CAPTIONS, negatives["shuffle"], aro):
        assert negative is not None and sorted(negative.split()) == sorted(reference.split())


def test_none_where_a_kind_does_not_apply():
    captions = ["A dog.", "Two dogs and a dog.", "Walking slowly."]
    out = cs.crepe_negatives(captions, ("swap", "negate", "shuffle"), 0)
    assert out["swap"] == [None, "Two dog and a dogs.", None]  # two distinct nouns: dogs/dog
    assert out["negate"][2] is None and out["negate"][0] is not None
    assert out["shuffle"][0] is None and out["shuffle"][2] is None


def test_same_negative_for_a_caption_in_any_list():
    caption = CAPTIONS[2]
    first = cs.crepe_negatives([caption], seed=5, vocabulary=VOCABULARY)
    second = cs.crepe_negatives(list(reversed(CAPTIONS)) + ["Three cows grazing."], seed=5, vocabulary=VOCABULARY)
    index = list(reversed(CAPTIONS)).index(caption)
    for kind in cs.CREPE_KINDS:
        assert first[kind][0] == second[kind][index], kind
    other_seed = cs.crepe_negatives(CAPTIONS, seed=6, vocabulary=VOCABULARY)
    assert any(other_seed[k] != cs.crepe_negatives(CAPTIONS, seed=5, vocabulary=VOCABULARY)[k] for k in cs.CREPE_KINDS)


def test_unknown_kind_is_refused():
    with pytest.raises(cs.CrepeStyleError, match="unknown CREPE-style kind"):
        cs.crepe_negatives(["A dog."], ("add",))
