"""NegCLIP's hard-negative caption generator (real spaCy parse)."""
from __future__ import annotations

from collections import Counter

from common.miniworld.build import stream
from common.miniworld.claims import sample_claim
from common.miniworld.scene import sample_scene
from papers.aro.negatives import NEGATIVE_KINDS, generate_negatives, parse_captions, swap

MINI = "A small red circle is to the left of a blue square."
PAPER = "The horse is eating the grass and the zebra is drinking the water"


def _norm(text: str) -> list[str]:
    return [t.lower() for t in text.split() if t not in (".", ",")]


def _mini_captions(n: int) -> list[str]:
    rng = stream(0, "test-aro-negatives")
    return [sample_claim(rng, sample_scene(rng, allow_heldout=False)).text() for _ in range(n)]


def test_mini_caption_gives_relation_and_attribute_swaps():
    parsed = parse_captions([MINI])[MINI]
    assert parsed.spans["noun_chunk"] == ((0, 4), (9, 12))  # "the left" (2 words) is not swapped
    assert swap(parsed.tokens, (0, 4), (9, 12))[:3] == ["a", "blue", "square"]
    negatives = generate_negatives([MINI])[0]
    by_kind = {n.kind: n.text for n in negatives}
    assert by_kind["noun_chunk"] == "a blue square is to the left of a small red circle ."
    assert "ADJ" in by_kind and Counter(by_kind["ADJ"].split()) == Counter(parsed.tokens)
    adj_positions = [i for i, p in enumerate(parsed.pos) if p == "ADJ"]
    changed = [i for i, (a, b) in enumerate(zip(parsed.tokens, by_kind["ADJ"].split())) if a != b]
    assert len(changed) == 2 and set(changed) <= set(adj_positions)


def test_paper_example_verb_phrase_swap():
    by_kind = {n.kind: n.text for n in generate_negatives([PAPER])[0]}
    assert by_kind["verb_phrase"] == "the horse is drinking the grass and the zebra is eating the water"
    assert by_kind["NN"].split() != PAPER.split() and Counter(by_kind["NN"].split()) == Counter(PAPER.split())


def test_negatives_are_false_swaps_of_the_right_tokens():
    captions = _mini_captions(150) + [PAPER, "Two dogs and three cats quickly run and slowly walk on the grass."]
    parsed = parse_captions(captions)
    results = generate_negatives(captions, seed=0)
    kinds = Counter()
    for caption, negatives in zip(captions, results):
        p = parsed[caption]
        texts = [n.text for n in negatives]
        assert len(set(texts)) == len(texts) <= len(NEGATIVE_KINDS)
        for n in negatives:
            kinds[n.kind] += 1
            assert n.kind in NEGATIVE_KINDS
            assert _norm(n.text) != _norm(caption)  # never the original (ignoring "." "," and case)
            tokens = n.text.split(" ")
            assert Counter(t.lower() for t in tokens) == Counter(t.lower() for t in p.tokens)
            if n.kind in ("NN", "NNS", "ADV", "ADJ"):
                changed = [i for i, (a, b) in enumerate(zip(p.tokens, tokens)) if a != b]
                labels = p.tags if n.kind.startswith("NN") else p.pos
                assert len(changed) == 2 and all(labels[i] == n.kind for i in changed)
        if len(p.spans["noun_chunk"]) >= 2 and len({p.tokens[a:b] for a, b in p.spans["noun_chunk"]}) >= 2:
            assert any(n.kind == "noun_chunk" for n in negatives), caption
    assert kinds["noun_chunk"] > 30 and kinds["ADJ"] > 30 and kinds["NN"] > 30
    assert kinds["NNS"] >= 1 and kinds["ADV"] >= 1 and kinds["verb_phrase"] >= 1


def test_deterministic_batch_independent_and_seeded():
    captions = _mini_captions(60)
    a = generate_negatives(captions, seed=0)
    assert a == generate_negatives(captions, seed=0)
    assert generate_negatives(captions[::-1], seed=0)[::-1] == a
    assert generate_negatives(captions[7:8], seed=0)[0] == a[7]
    assert generate_negatives(captions, seed=1) != a


def test_case_only_swaps():
    caption = "Large elephant rubbing itself up against a large tree."
    for n in generate_negatives([caption], seed=0)[0]:
        assert _norm(n.text) != _norm(caption)
    assert generate_negatives([], seed=0) == []
    assert generate_negatives(["A cat."], seed=0) == [[]]
