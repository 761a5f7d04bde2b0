"""Hard positives of the mini world: true of the scene, worded differently, the same facts (and false ones refused)."""
from __future__ import annotations

import random
import re

import pytest

from common.miniworld import lexicon, positives as hp
from common.miniworld.claims import Claim, NounPhrase, RelationClaim, claim_from_objects, sample_claim, satisfies
from common.miniworld.negatives import add_att, replace_att, replace_obj, replace_rel, swap_att, swap_obj
from common.miniworld.scene import Scene, SceneObject, sample_scene
from common.miniworld.templates import atom_value


def _obj(shape, color, size, x, y) -> SceneObject:
    return SceneObject(shape, color, size, x, y, 0.07)


# Left to right: a small red circle, a large blue square, a small purple diamond.
SCENE = Scene((_obj("circle", "red", "small", 0.25, 0.5), _obj("square", "blue", "large", 0.5, 0.5),
               _obj("diamond", "purple", "small", 0.92, 0.6)))


def _canonical_seed(claim: Claim) -> Claim:
    """The claim with a lexical seed under which every concept takes its first (canonical) surface form."""
    for seed in range(10_000):
        candidate = Claim(claim.phrases, claim.relations, claim.template, seed)
        words = [lexicon.SURFACE[c][0] for p in claim.phrases for c in p.concepts()]
        words += [lexicon.SURFACE[r.predicate][0] for r in claim.relations]
        if all(re.search(rf"\b{w}\b", candidate.text()) for w in words):
            return candidate
    raise AssertionError("no canonical seed")  # pragma: no cover


def _samples(n: int = 300, seed: int = 0):
    rng = random.Random(seed)
    for _ in range(n):
        scene = sample_scene(rng)
        yield rng, scene, sample_claim(rng, scene)


def _one_form_replaced(caption: str, positive: str, concept: str) -> bool:
    """Whether ``positive`` is ``caption`` with one occurrence of a surface form of ``concept`` replaced by another."""
    forms = lexicon.SURFACE[concept]
    for old in forms:
        for m in re.finditer(rf"(?<![a-z]){re.escape(old)}(?![a-z])", caption, flags=re.IGNORECASE):
            for new in forms:
                if new != old and caption[:m.start()] + new + caption[m.end():] == positive:
                    return True
    return False


def test_a_pair_is_said_the_other_way_round():
    claim = _canonical_seed(claim_from_objects(SCENE, [0, 1], "pair"))
    assert claim.text() == "A small red circle and a large blue square."
    got = hp.hard_positive(SCENE, claim, "swap", random.Random(0))
    assert got.text == "A large blue square and a small red circle." and got.variant == "reorder_pair"
    assert got.atom is None and satisfies(SCENE, got.claim)


def test_a_relation_is_said_from_its_object_with_the_converse_predicate():
    claim = _canonical_seed(claim_from_objects(SCENE, [0, 1], "relation"))
    assert claim.text() == "A small red circle to the left of a large blue square."
    got = hp.hard_positive(SCENE, claim, "swap", random.Random(0))
    said = {f"A large blue square {form} a small red circle." for form in lexicon.SURFACE["right_of"]}
    assert got.text in said and got.variant == "reorder_relation"
    assert got.claim.relations == (RelationClaim(0, "right_of", 1),) and hp.same_meaning(claim, got.claim)
    negative = swap_obj(SCENE, claim, random.Random(0))  # the swap negative keeps the predicate: another meaning
    assert negative is not None and not hp.same_meaning(claim, negative)


def test_chain_and_fork_keep_every_relation():
    chain = claim_from_objects(SCENE, [0, 1, 2], "chain")
    fork = claim_from_objects(SCENE, [2, 0, 1], "fork")
    for claim, variant in ((chain, "reorder_chain"), (fork, "reorder_fork")):
        got = hp.swap_positive(SCENE, claim, random.Random(1))
        assert got is not None and got.variant == variant
        assert hp.same_meaning(claim, got.claim) and satisfies(SCENE, got.claim) and got.text != claim.text()
    # a fork can only exchange its branches: its subject stays first
    assert hp.swap_positive(SCENE, fork, random.Random(1)).claim.phrases[0] == fork.phrases[0]
    assert hp.reordered(fork, (1, 0, 2)) is None


def test_a_synonym_replaces_one_word_and_keeps_the_claim():
    claim = _canonical_seed(claim_from_objects(SCENE, [0, 2], "relation"))  # small red circle, small purple diamond
    atoms = {(a.kind, atom_value(claim, a)) for a in hp.synonym_atoms(claim)}
    assert atoms == {("size", "small"), ("shape", "circle"), ("shape", "diamond"), ("color", "purple"),
                     ("relation", "left_of")}  # red has no other form
    seen = set()
    for seed in range(40):
        got = hp.hard_positive(SCENE, claim, "replace", random.Random(seed))
        assert got.claim == claim and got.kind == "replace"
        assert _one_form_replaced(claim.text(), got.text, atom_value(claim, got.atom))
        seen.add(got.variant)
    assert seen == {"synonym_size", "synonym_shape", "synonym_color", "synonym_relation"}


def test_the_benchmarks_positive_rewords_the_fact_the_negative_replaced():
    n = 0
    for rng, scene, claim in _samples(400):
        for edit in (replace_att, replace_rel):
            negative = edit(scene, claim, rng)
            if negative is None:
                continue
            atom = hp.replaced_atom(claim, negative)
            assert atom is not None and atom_value(claim, atom) != atom_value(negative, atom)
            got = hp.positive_for_negative(scene, claim, negative, rng)
            if len(lexicon.SURFACE[atom_value(claim, atom)]) == 1:
                assert got is None
                continue
            n += 1
            assert got.atom == atom and satisfies(scene, got.claim) and not satisfies(scene, negative)
            assert _one_form_replaced(claim.text(), got.text, atom_value(claim, atom))
    assert n > 100


def test_edits_that_are_not_one_replacement_have_no_replaced_fact():
    claim = claim_from_objects(SCENE, [0, 1], "pair", mention=("color",))
    assert hp.replaced_atom(claim, swap_att(SCENE, claim, random.Random(0))) is None  # two facts changed
    assert hp.replaced_atom(claim, add_att(SCENE, claim, random.Random(0))) is None  # a fact added
    assert hp.replaced_atom(claim, claim) is None


def test_every_positive_is_true_differs_and_states_the_same_facts():
    counts = {"replace": 0, "swap": 0}
    for rng, scene, claim in _samples(400, seed=1):
        for kind in hp.POSITIVE_KINDS:
            got = hp.hard_positive(scene, claim, kind, rng)
            if got is None:
                continue
            counts[kind] += 1
            assert got.kind == kind and satisfies(scene, got.claim)
            assert got.text.lower() != claim.text().lower()
            assert hp.same_meaning(claim, got.claim)
            if kind == "swap":
                assert got.text == got.claim.text()
    assert min(counts.values()) > 150


def test_same_meaning_tells_swaps_and_replacements_apart():
    claim = claim_from_objects(SCENE, [0, 1], "relation")
    assert hp.same_meaning(claim, hp.reordered(claim, (1, 0)))
    assert not hp.same_meaning(claim, replace_rel(SCENE, claim, random.Random(0)))
    assert not hp.same_meaning(claim, replace_obj(SCENE, claim, random.Random(0)))
    pair = claim_from_objects(SCENE, [0, 1], "pair")
    assert hp.same_meaning(pair, hp.reordered(pair, (1, 0)))
    assert not hp.same_meaning(pair, swap_att(SCENE, pair, random.Random(0)))


def test_captions_without_a_rewrite_get_none():
    scene = Scene((_obj("square", "red", "small", 0.5, 0.5),))
    bare = Claim((NounPhrase("square", "red"),), (), "{n0}", 0)  # red and square have one form each
    assert hp.hard_positive(scene, bare, "replace", random.Random(0)) is None
    assert hp.hard_positive(scene, bare, "swap", random.Random(0)) is None
    twins = Scene((_obj("square", "red", "small", 0.2, 0.5), _obj("square", "blue", "small", 0.8, 0.5)))
    alike = Claim((NounPhrase("square"), NounPhrase("square")), (), "{n0} and {n1}", 0)
    assert hp.swap_positive(twins, alike, random.Random(0)) is None  # the reorder reads the same


def test_a_false_claim_gets_no_positive_and_an_unknown_kind_is_named():
    claim = claim_from_objects(SCENE, [0, 1], "relation")
    false = Claim(claim.phrases, (RelationClaim(0, "right_of", 1),), claim.template, 0)
    assert hp.replace_positive(SCENE, false, random.Random(0)) is None
    with pytest.raises(KeyError, match="unknown hard positive kind 'negate'"):
        hp.hard_positive(SCENE, claim, "negate", random.Random(0))


def test_draws_depend_only_on_the_rng():
    claim = claim_from_objects(SCENE, [0, 1, 2], "triple")
    first = [hp.hard_positive(SCENE, claim, k, random.Random(5)) for k in hp.POSITIVE_KINDS]
    assert first == [hp.hard_positive(SCENE, claim, k, random.Random(5)) for k in hp.POSITIVE_KINDS]
