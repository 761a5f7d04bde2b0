"""Behaviour of the mini world (common/miniworld): truth by construction, edits of each type, grammar,
geometry, rendering, determinism and the SugarCrepe-format / training-set builders.

Everything here is CPU-cheap: a few hundred sampled scenes, tiny images, 5 examples per category.
"""
from __future__ import annotations

import json
import random
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from common.miniworld import VERSION, build, lexicon
from common.miniworld.claims import (
    PATTERNS, Claim, NounPhrase, RelationClaim, claim_from_objects, realize_phrase, sample_claim, satisfies,
    surface_form)
from common.miniworld.negatives import (
    EDIT_TYPES, _conjoin, add_att, add_obj, replace_att, replace_rel, swap_att, swap_obj)
from common.miniworld.render import NATURAL, SYNTHETIC, render
from common.miniworld.scene import (
    GRID, Scene, SceneObject, contains_heldout, layout_is_clear, pair_is_clear, sample_scene, spatial_relation)

N_SAMPLES = 300
EPS = 1e-9


# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------
def obj(shape: str, color: str, x: float, y: float, size: str = "small") -> SceneObject:
    return SceneObject(shape=shape, color=color, size=size, x=x, y=y, radius=0.05)


def sampled_examples(seed: int = 12345, n: int = N_SAMPLES):
    """(scene, positive, {category: negative or None}) triples, deterministic."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        scene = sample_scene(rng)
        positive = sample_claim(rng, scene)
        negatives = {c: g(scene, positive, rng) for c, g in EDIT_TYPES.items()}
        out.append((scene, positive, negatives))
    return out


@pytest.fixture(scope="module")
def examples():
    return sampled_examples()


def changed_indices(a: tuple, b: tuple) -> list[int]:
    assert len(a) == len(b)
    return [i for i, (x, y) in enumerate(zip(a, b)) if x != y]


def phrase_fields_changed(a: NounPhrase, b: NounPhrase) -> set[str]:
    return {f for f in ("shape", "color", "size") if getattr(a, f) != getattr(b, f)}


def slot_count(template: str) -> int:
    return len(re.findall(r"\{n\d+\}", template))


ALL_SURFACE_WORDS = {w for forms in lexicon.SURFACE.values() for form in forms for w in form.split()}
TEMPLATE_WORDS = {
    w for p in PATTERNS.values() for t in p.templates
    for w in re.sub(r"\{[nr]\d+\}", " ", t).replace(",", " ").split()
} | {"are", "and"}  # "are" and "and" come from add_obj's conjunction
ARTICLES = {"a", "an"}


# --------------------------------------------------------------------------------------------------
# determinism
# --------------------------------------------------------------------------------------------------
def test_same_seed_gives_identical_scenes_captions_negatives_and_pixels():
    def run(seed: int):
        rng = random.Random(seed)
        out = []
        for _ in range(25):
            scene = sample_scene(rng)
            positive = sample_claim(rng, scene)
            negs = {c: g(scene, positive, rng) for c, g in EDIT_TYPES.items()}
            pixels = render(scene, 48, NATURAL, seed=rng.randrange(2**31)).tobytes()
            out.append((scene, positive.text(), {c: n and n.text() for c, n in negs.items()}, pixels))
        return out

    a, b = run(7), run(7)
    assert a == b
    c = run(8)
    assert [x[0] for x in a] != [x[0] for x in c], "a different seed should give different scenes"


def test_train_set_records_version(tmp_path: Path):
    t = build.build_train_set(build.TrainSetConfig(n_images=2, seed=4), tmp_path / "t", progress=False)
    assert t["world_version"] == VERSION
    assert json.loads((tmp_path / "t" / "manifest.json").read_text())["world_version"] == VERSION


# --------------------------------------------------------------------------------------------------
# truth by construction
# --------------------------------------------------------------------------------------------------
def test_positives_true_negatives_false_and_texts_differ(examples):
    produced = {c: 0 for c in EDIT_TYPES}
    for scene, positive, negatives in examples:
        assert satisfies(scene, positive), positive.text()
        for category, negative in negatives.items():
            if negative is None:
                continue
            produced[category] += 1
            assert not satisfies(scene, negative), (category, positive.text(), negative.text())
            assert negative.text() != positive.text(), (category, positive.text())
    assert len(produced) == 7
    for category, n in produced.items():
        assert n >= 30, f"{category}: only {n} negatives out of {N_SAMPLES} examples"


def test_satisfies_relation_on_hand_built_scene():
    red_circle, blue_square = obj("circle", "red", 0.2, 0.5), obj("square", "blue", 0.8, 0.5)
    scene = Scene((red_circle, blue_square))
    rc, bs = NounPhrase("circle", "red"), NounPhrase("square", "blue")
    tmpl = PATTERNS["relation"].templates[0]

    def rel(pred: str, a=rc, b=bs) -> Claim:
        return Claim((a, b), (RelationClaim(0, pred, 1),), tmpl)

    assert satisfies(scene, rel("left_of"))
    assert not satisfies(scene, rel("right_of"))
    assert not satisfies(scene, rel("above"))
    assert not satisfies(scene, rel("below"))
    assert satisfies(scene, rel("right_of", bs, rc))
    # wrong colour, wrong size, absent shape
    assert not satisfies(scene, rel("left_of", NounPhrase("circle", "blue"), bs))
    assert not satisfies(scene, rel("left_of", NounPhrase("circle", "red", "large"), bs))
    assert satisfies(scene, rel("left_of", NounPhrase("circle", "red", "small"), bs))
    assert not satisfies(scene, rel("left_of", NounPhrase("star", "red"), bs))
    # a phrase without colour matches any colour
    assert satisfies(scene, rel("left_of", NounPhrase("circle"), NounPhrase("square")))
    # vertical
    vscene = Scene((obj("star", "yellow", 0.5, 0.1), obj("heart", "red", 0.5, 0.9)))
    up = Claim((NounPhrase("star"), NounPhrase("heart")), (RelationClaim(0, "above", 1),), tmpl)
    assert satisfies(vscene, up)
    assert not satisfies(vscene, replace(up, relations=(RelationClaim(0, "below", 1),)))


def test_satisfies_needs_distinct_objects():
    one = Scene((obj("circle", "red", 0.2, 0.5), obj("square", "blue", 0.8, 0.5)))
    two = Scene((obj("circle", "red", 0.2, 0.5), obj("circle", "red", 0.8, 0.5)))
    pair = PATTERNS["pair"].templates[0]
    twice = Claim((NounPhrase("circle", "red"), NounPhrase("circle", "red")), (), pair)
    assert not satisfies(one, twice), "one red circle cannot be two"
    assert satisfies(two, twice)
    # duplicates in a relation: the left red circle is left of the right one
    rel = PATTERNS["relation"].templates[0]
    left = Claim((NounPhrase("circle"), NounPhrase("circle")), (RelationClaim(0, "left_of", 1),), rel)
    assert satisfies(two, left)
    assert not satisfies(one, left)
    # "a circle" and "a red circle" need two circles
    assert not satisfies(one, Claim((NounPhrase("circle"), NounPhrase("circle", "red")), (), pair))


def test_satisfies_is_an_injective_matching_not_greedy():
    # phrase 0 ("a circle") also matches the red circle that phrase 1 needs: a greedy matcher that
    # gives phrase 0 the first candidate fails; the injective search must find (blue, red)
    scene = Scene((obj("circle", "red", 0.2, 0.5), obj("circle", "blue", 0.8, 0.5)))
    pair = PATTERNS["pair"].templates[0]
    assert satisfies(scene, Claim((NounPhrase("circle"), NounPhrase("circle", "red")), (), pair))
    rel = PATTERNS["relation"].templates[0]
    # relation forces the assignment: the red circle is left of *some other* circle
    assert satisfies(scene, Claim((NounPhrase("circle", "red"), NounPhrase("circle")),
                                  (RelationClaim(0, "left_of", 1),), rel))
    assert not satisfies(scene, Claim((NounPhrase("circle", "red"), NounPhrase("circle")),
                                      (RelationClaim(0, "right_of", 1),), rel))
    # three phrases, two objects: never true
    triple = PATTERNS["triple"].templates[0]
    assert not satisfies(scene, Claim((NounPhrase("circle"),) * 3, (), triple))
    # chain with a middle object: A left of B, B left of C
    row = Scene((obj("circle", "red", 0.1, 0.5), obj("square", "blue", 0.5, 0.5), obj("star", "red", 0.9, 0.5)))
    chain = PATTERNS["chain"].templates[0]
    c = Claim((NounPhrase("circle"), NounPhrase("square"), NounPhrase("star")),
              (RelationClaim(0, "left_of", 1), RelationClaim(1, "left_of", 2)), chain)
    assert satisfies(row, c)
    assert not satisfies(row, replace(c, relations=(RelationClaim(0, "left_of", 1), RelationClaim(1, "right_of", 2))))
    # colour-only phrases: "a red <shape>" -- the red star is the one right of the square
    c2 = Claim((NounPhrase("star", "red"), NounPhrase("square")), (RelationClaim(0, "right_of", 1),), rel)
    assert satisfies(row, c2)


def test_claim_from_objects_is_true():
    scene = Scene((obj("circle", "red", 0.2, 0.2), obj("square", "blue", 0.8, 0.25), obj("star", "green", 0.25, 0.9)))
    for pattern, idx in [("one", [0]), ("pair", [1, 2]), ("relation", [0, 1]), ("fork", [0, 1, 2]),
                         ("chain", [2, 0, 1]), ("triple", [0, 1, 2])]:
        c = claim_from_objects(scene, idx, pattern)
        assert satisfies(scene, c), (pattern, c)


# --------------------------------------------------------------------------------------------------
# each generator's edit is of its type
# --------------------------------------------------------------------------------------------------
def check_replace_obj(pos: Claim, neg: Claim) -> None:
    assert neg.relations == pos.relations and neg.template == pos.template
    (i,) = changed_indices(pos.phrases, neg.phrases)
    assert phrase_fields_changed(pos.phrases[i], neg.phrases[i]) == {"shape"}


def check_replace_att(pos: Claim, neg: Claim) -> None:
    assert neg.relations == pos.relations and neg.template == pos.template
    (i,) = changed_indices(pos.phrases, neg.phrases)
    (kind,) = phrase_fields_changed(pos.phrases[i], neg.phrases[i])
    assert kind in lexicon.ATTRIBUTE_KINDS
    old, new = pos.phrases[i].attribute(kind), neg.phrases[i].attribute(kind)
    assert old is not None and new is not None and new in {"size": lexicon.SIZES, "color": lexicon.COLORS}[kind]


def check_replace_rel(pos: Claim, neg: Claim) -> None:
    assert neg.phrases == pos.phrases and neg.template == pos.template
    (k,) = changed_indices(pos.relations, neg.relations)
    a, b = pos.relations[k], neg.relations[k]
    assert (a.subject, a.object) == (b.subject, b.object)
    assert a.predicate != b.predicate and b.predicate in lexicon.RELATIONS


def check_swap_obj(pos: Claim, neg: Claim) -> None:
    assert neg.relations == pos.relations and neg.template == pos.template
    changed = changed_indices(pos.phrases, neg.phrases)
    assert len(changed) == 2
    i, j = changed
    assert neg.phrases[i] == pos.phrases[j] and neg.phrases[j] == pos.phrases[i]
    assert any({r.subject, r.object} == {i, j} for r in pos.relations), "swapped phrases must be related"


def check_swap_att(pos: Claim, neg: Claim) -> None:
    assert neg.relations == pos.relations and neg.template == pos.template
    changed = changed_indices(pos.phrases, neg.phrases)
    assert len(changed) == 2
    i, j = changed
    fi = phrase_fields_changed(pos.phrases[i], neg.phrases[i])
    fj = phrase_fields_changed(pos.phrases[j], neg.phrases[j])
    assert fi == fj and len(fi) == 1
    (kind,) = fi
    assert kind in lexicon.ATTRIBUTE_KINDS
    assert neg.phrases[i].attribute(kind) == pos.phrases[j].attribute(kind) is not None
    assert neg.phrases[j].attribute(kind) == pos.phrases[i].attribute(kind) is not None


def check_add_obj(pos: Claim, neg: Claim) -> None:
    assert neg.relations == pos.relations
    assert len(neg.phrases) == len(pos.phrases) + 1 and neg.phrases[:-1] == pos.phrases
    assert slot_count(neg.template) == slot_count(pos.template) + 1
    assert "{n%d}" % len(pos.phrases) in neg.template
    assert neg.template.replace(" and {n%d}" % len(pos.phrases), "").replace(" are", " is") == pos.template


def check_add_att(pos: Claim, neg: Claim) -> None:
    assert neg.relations == pos.relations and neg.template == pos.template
    (i,) = changed_indices(pos.phrases, neg.phrases)
    (kind,) = phrase_fields_changed(pos.phrases[i], neg.phrases[i])
    assert kind in lexicon.ATTRIBUTE_KINDS
    assert pos.phrases[i].attribute(kind) is None and neg.phrases[i].attribute(kind) is not None


CHECKS = {
    "replace_obj": check_replace_obj, "replace_att": check_replace_att, "replace_rel": check_replace_rel,
    "swap_obj": check_swap_obj, "swap_att": check_swap_att, "add_obj": check_add_obj, "add_att": check_add_att,
}


def test_check_table_covers_every_category():
    assert set(CHECKS) == set(EDIT_TYPES)


@pytest.mark.parametrize("category", sorted(CHECKS))
def test_each_generator_edit_is_of_its_type(examples, category):
    n = 0
    for _scene, positive, negatives in examples:
        negative = negatives[category]
        if negative is not None:
            CHECKS[category](positive, negative)
            assert negative.lexical_seed == positive.lexical_seed
            n += 1
    assert n > 0


def test_generators_return_none_when_inapplicable():
    scene = Scene((obj("circle", "red", 0.2, 0.5), obj("square", "blue", 0.8, 0.5)))
    rng = random.Random(0)
    pair = PATTERNS["pair"].templates[0]
    no_rel = Claim((NounPhrase("circle", "red"), NounPhrase("square", "blue")), (), pair)
    assert satisfies(scene, no_rel)
    for _ in range(20):
        assert replace_rel(scene, no_rel, rng) is None
        assert swap_obj(scene, no_rel, rng) is None
    # one phrase: nothing to swap
    single = Claim((NounPhrase("circle", "red", "small"),), (), PATTERNS["one"].templates[0])
    assert swap_att(scene, single, rng) is None
    assert swap_obj(scene, single, rng) is None
    # two phrases but no attribute kind stated by both
    disjoint = Claim((NounPhrase("circle", "red"), NounPhrase("square", size="small")), (), pair)
    assert satisfies(scene, disjoint)
    assert swap_att(scene, disjoint, rng) is None
    # same value of the shared kind: swapping changes nothing
    same = Scene((obj("circle", "red", 0.2, 0.5), obj("square", "red", 0.8, 0.5)))
    same_claim = Claim((NounPhrase("circle", "red"), NounPhrase("square", "red")), (), pair)
    assert swap_att(same, same_claim, rng) is None
    # no stated attribute: nothing to replace; every attribute stated: nothing to add
    bare = Claim((NounPhrase("circle"), NounPhrase("square")), (), pair)
    assert replace_att(scene, bare, rng) is None
    full = Claim((NounPhrase("circle", "red", "small"), NounPhrase("square", "blue", "small")), (), pair)
    assert add_att(scene, full, rng) is None
    # the edit would be true: a scene with both colours on both shapes makes swap_att impossible
    both = Scene((obj("circle", "red", 0.1, 0.5), obj("square", "blue", 0.35, 0.5),
                  obj("circle", "blue", 0.6, 0.5), obj("square", "red", 0.9, 0.5)))
    assert swap_att(both, no_rel, rng) is None


def test_generators_find_applicable_edits_on_hand_built_claim():
    scene = Scene((obj("circle", "red", 0.2, 0.5), obj("square", "blue", 0.8, 0.5)))
    c = claim_from_objects(scene, [0, 1], "relation", mention=("color",))
    rng = random.Random(3)
    swapped = swap_obj(scene, c, rng)
    assert swapped is not None and swapped.phrases == (c.phrases[1], c.phrases[0])
    sa = swap_att(scene, c, rng)
    assert sa is not None and [p.color for p in sa.phrases] == ["blue", "red"]
    rr = replace_rel(scene, c, rng)
    assert rr is not None and rr.relations[0].predicate != "left_of"


# --------------------------------------------------------------------------------------------------
# grammar
# --------------------------------------------------------------------------------------------------
def test_indefinite_article():
    assert lexicon.indefinite_article("orange circle") == "an"
    assert lexicon.indefinite_article("red circle") == "a"
    for seed in range(40):
        assert realize_phrase(NounPhrase("circle", "orange"), seed).startswith("an orange ")
        assert realize_phrase(NounPhrase("star", "red"), seed) == "a red star"
        assert realize_phrase(NounPhrase("star", "orange", "large"), seed).split()[0] == "a"
    c = Claim((NounPhrase("triangle", "orange"),), (), "there is {n0}")
    assert c.text() == "There is an orange triangle."


def test_sentence_form_and_articles(examples):
    texts = []
    for _scene, positive, negatives in examples:
        texts.append(positive.text())
        texts += [n.text() for n in negatives.values() if n is not None]
    assert len(texts) > 1000
    for t in texts:
        assert t[0].isupper(), t
        assert t.endswith(".") and t.count(".") == 1, t
        assert "  " not in t and " ," not in t, t
        words = t[:-1].replace(",", "").split()
        for k, w in enumerate(words[:-1]):
            if w.lower() in ARTICLES:
                expected = "an" if words[k + 1][0] in "aeiou" else "a"
                assert w.lower() == expected, t


def test_words_come_only_from_the_lexicon(examples):
    vocabulary = ALL_SURFACE_WORDS | TEMPLATE_WORDS | ARTICLES
    synonyms_seen = set()
    canonical = {forms[0] for forms in lexicon.SURFACE.values()}
    for _scene, positive, negatives in examples:
        for claim in [positive, *[n for n in negatives.values() if n is not None]]:
            words = set(claim.text()[:-1].replace(",", "").lower().split())
            assert words <= vocabulary, (claim.text(), words - vocabulary)
            for p in claim.phrases:
                for concept in p.concepts():
                    form = surface_form(concept, claim.lexical_seed)
                    assert form in lexicon.SURFACE[concept]
                    if form not in canonical:
                        synonyms_seen.add(form)
            for r in claim.relations:
                assert surface_form(r.predicate, claim.lexical_seed) in lexicon.SURFACE[r.predicate]
    assert synonyms_seen, "SYNONYM_RATE > 0 but no synonym was ever used"


def test_surface_form_depends_only_on_seed_and_concept():
    for seed in range(200):
        for concept in ("circle", "left_of", "small", "purple"):
            assert surface_form(concept, seed) == surface_form(concept, seed)
    rates = [surface_form("left_of", s) != "to the left of" for s in range(2000)]
    assert 0.1 < np.mean(rates) < 0.3  # SYNONYM_RATE = 0.2


def edited_slot_text(claim: Claim, other: Claim) -> str:
    """The realization of the one slot (phrase or relation) where ``claim`` differs from ``other``."""
    if claim.phrases != other.phrases:
        (i,) = changed_indices(claim.phrases, other.phrases)
        return realize_phrase(claim.phrases[i], claim.lexical_seed)
    (k,) = changed_indices(claim.relations, other.relations)
    return surface_form(claim.relations[k].predicate, claim.lexical_seed)


@pytest.mark.parametrize("category", ["replace_obj", "replace_att", "replace_rel", "add_att"])
def test_lexical_seed_keeps_unchanged_words(examples, category):
    """A one-slot edit changes words only inside that slot; every other word is kept verbatim."""
    n = 0
    for _scene, positive, negatives in examples:
        negative = negatives[category]
        if negative is None:
            continue
        a, b = (c.text()[:-1].lower().replace(",", " ,").split() for c in (positive, negative))
        prefix = 0
        while prefix < min(len(a), len(b)) and a[prefix] == b[prefix]:
            prefix += 1
        suffix = 0
        while suffix < min(len(a), len(b)) - prefix and a[-1 - suffix] == b[-1 - suffix]:
            suffix += 1
        middle_a, middle_b = " ".join(a[prefix:len(a) - suffix]), " ".join(b[prefix:len(b) - suffix])
        assert middle_b, (positive.text(), negative.text())
        assert middle_a in edited_slot_text(positive, negative).lower(), (positive.text(), negative.text())
        assert middle_b in edited_slot_text(negative, positive).lower(), (positive.text(), negative.text())
        n += 1
    assert n > 0


def test_lexical_seed_keeps_phrases_for_swaps_and_add_obj(examples):
    for _scene, positive, negatives in examples:
        for category in ("swap_obj", "add_obj"):
            neg = negatives[category]
            if neg is None:
                continue
            # every phrase of the positive is realized with exactly the same words in the negative
            for p in positive.phrases:
                words = realize_phrase(p, positive.lexical_seed)
                assert words.lower() in neg.text().lower(), (category, positive.text(), neg.text())
            for r in positive.relations:
                assert surface_form(r.predicate, positive.lexical_seed) in neg.text()


def test_conjoin_gives_plural_verb_for_conjoined_subject():
    assert _conjoin("{n0} is {r0} {n1}", 0, 2) == "{n0} and {n2} are {r0} {n1}"
    assert _conjoin("{n0} is {r0} {n1}", 1, 2) == "{n0} is {r0} {n1} and {n2}"
    assert _conjoin("{n0} {r0} {n1}", 0, 2) == "{n0} and {n2} {r0} {n1}"
    assert _conjoin("{n0} is {r0} {n1}, which is {r1} {n2}", 1, 3) == "{n0} is {r0} {n1} and {n3}, which are {r1} {n2}"
    assert _conjoin("{n0} is {r0} {n1}, which is {r1} {n2}", 0, 3) == "{n0} and {n3} are {r0} {n1}, which is {r1} {n2}"
    assert _conjoin("{n0} is {r0} {n1} and {r1} {n2}", 0, 3) == "{n0} and {n3} are {r0} {n1} and {r1} {n2}"
    assert _conjoin("there is {n0}", 0, 1) == "there is {n0} and {n1}"


def test_add_obj_on_subject_realizes_plural_agreement():
    scene = Scene((obj("circle", "red", 0.5, 0.1), obj("square", "blue", 0.5, 0.9)))
    positive = claim_from_objects(scene, [0, 1], "relation", template_index=1, mention=("color",))
    assert positive.text() in ("A red circle is above a blue square.", "A red disk is above a blue square.",
                               "A red circle is over a blue square.", "A red disk is over a blue square.")
    found = None
    for seed in range(200):
        neg = add_obj(scene, positive, random.Random(seed))
        if neg is not None and neg.template.startswith("{n0} and {n2}"):
            found = neg
            break
    assert found is not None
    assert re.fullmatch(r"A red (circle|disk) and an? [a-z ]+ are (above|over) a blue square\.", found.text()), found.text()
    assert " is " not in found.text()
    # over many sampled add_obj negatives: a conjoined subject never keeps "is"
    for _scene, pos, negatives in sampled_examples(seed=99, n=150):
        neg = negatives["add_obj"]
        if neg is not None:
            assert not re.search(r"\{n\d+\} and \{n\d+\}(, which)? is\b", neg.template), neg.template


# --------------------------------------------------------------------------------------------------
# geometry
# --------------------------------------------------------------------------------------------------
def test_spatial_relation():
    a, b = obj("circle", "red", 0.2, 0.5), obj("square", "blue", 0.8, 0.5)
    assert spatial_relation(a, b) == "left_of" and spatial_relation(b, a) == "right_of"
    c, d = obj("circle", "red", 0.5, 0.1), obj("square", "blue", 0.45, 0.9)
    assert spatial_relation(c, d) == "above" and spatial_relation(d, c) == "below"
    # the dominant axis decides
    e, f = obj("circle", "red", 0.1, 0.1), obj("square", "blue", 0.9, 0.4)
    assert spatial_relation(e, f) == "left_of"
    g, h = obj("circle", "red", 0.4, 0.1), obj("square", "blue", 0.5, 0.9)
    assert spatial_relation(g, h) == "above"
    assert Scene((a, b)).relation(0, 1) == "left_of" and Scene((a, b)).relation(1, 0) == "right_of"


def test_pair_is_clear_rejects_ambiguous_and_overlapping_pairs():
    s = 1 / GRID
    a = SceneObject("circle", "red", "small", 0.5 * s, 0.5 * s, 0.42 * s)
    assert pair_is_clear(a, SceneObject("star", "red", "small", 3.5 * s, 0.5 * s, 0.42 * s))
    # diagonal: neither axis dominates
    assert not pair_is_clear(a, SceneObject("star", "red", "small", 2.5 * s, 2.5 * s, 0.42 * s))
    # same cell
    assert not pair_is_clear(a, SceneObject("star", "red", "small", 0.5 * s, 0.5 * s, 0.42 * s))
    # a large object covering the small one's cell
    big = SceneObject("square", "red", "large", 1 * s, 1 * s, 0.9 * s)
    assert (0, 0) in big.cells()
    assert not pair_is_clear(a, big)


def test_sampled_layouts_are_clear_and_on_the_grid():
    rng = random.Random(5)
    seen_sizes = set()
    for _ in range(N_SAMPLES):
        scene = sample_scene(rng)
        objects = scene.objects
        assert 1 <= len(objects) <= 4
        assert layout_is_clear(objects)
        used: set[tuple[int, int]] = set()
        for o in objects:
            seen_sizes.add(o.size)
            gx, gy = o.x * GRID, o.y * GRID
            if o.size == "small":  # centred in a cell
                assert abs(gx - 0.5 - round(gx - 0.5)) < 1e-6 and abs(gy - 0.5 - round(gy - 0.5)) < 1e-6
                assert 0 <= round(gx - 0.5) < GRID and 0 <= round(gy - 0.5) < GRID
                assert len(o.cells()) == 1
            else:  # on an inner grid corner
                assert abs(gx - round(gx)) < 1e-6 and abs(gy - round(gy)) < 1e-6
                assert 1 <= round(gx) <= GRID - 1 and 1 <= round(gy) <= GRID - 1
                assert len(o.cells()) == 4
            cells = o.cells()
            assert all(0 <= i < GRID and 0 <= j < GRID for i, j in cells)
            assert not (cells & used), "two objects share a cell"
            used |= cells
        for i in range(len(objects)):
            for j in range(len(objects)):
                if i != j:
                    assert scene.relation(j, i) == lexicon.CONVERSE[scene.relation(i, j)]
        # (shape, colour) distinct within a scene
        ids = [(o.shape, o.color) for o in objects]
        assert len(set(ids)) == len(ids)
    assert seen_sizes == {"small", "large"}


def test_heldout_pairs_only_in_test_style_sampling():
    rng = random.Random(11)
    for _ in range(1500):
        scene = sample_scene(rng, allow_heldout=False)
        assert not contains_heldout(scene)
        assert not any((o.color, o.shape) in lexicon.HELDOUT_COLOR_SHAPE for o in scene.objects)
    rng = random.Random(11)
    seen = set()
    for _ in range(1500):
        scene = sample_scene(rng, allow_heldout=True)
        seen |= {(o.color, o.shape) for o in scene.objects} & lexicon.HELDOUT_COLOR_SHAPE
    assert seen, "test-style sampling should produce held-out (colour, shape) pairs"
    assert len(seen) >= 3


# --------------------------------------------------------------------------------------------------
# renderer
# --------------------------------------------------------------------------------------------------
def nearest_palette_colour(rgb) -> str:
    return min(lexicon.COLOR_RGB, key=lambda c: sum((int(a) - b) ** 2 for a, b in zip(rgb, lexicon.COLOR_RGB[c])))


def test_render_size_and_mode():
    scene = sample_scene(random.Random(0))
    for size in (48, 64):
        for style in (NATURAL, SYNTHETIC):
            image = render(scene, size, style, seed=1)
            assert image.size == (size, size) and image.mode == "RGB"


def test_natural_render_centre_pixels_have_object_colour():
    rng = random.Random(21)
    size = 192  # every shape (star's inner pentagon included) covers its centre pixel
    tolerance = NATURAL.color_jitter + 4 * NATURAL.noise_std + 2
    checked = 0
    for k in range(40):
        scene = sample_scene(rng)
        image = np.asarray(render(scene, size, NATURAL, seed=k))
        for o in scene.objects:
            px = image[int(o.y * size), int(o.x * size)]
            expected = np.array(lexicon.COLOR_RGB[o.color])
            assert np.abs(px.astype(int) - expected).max() <= tolerance, (o, px, expected)
            assert nearest_palette_colour(px) == o.color
            checked += 1
    assert checked > 60
    # background away from objects is the scene background (up to noise)
    scene = Scene((obj("circle", "red", 0.25, 0.25),), background=(180, 170, 160))
    image = np.asarray(render(scene, 96, NATURAL, seed=0))
    assert np.abs(image[80, 80].astype(int) - np.array([180, 170, 160])).max() <= 4 * NATURAL.noise_std


def test_render_is_seeded_and_synthetic_has_no_noise():
    scene = sample_scene(random.Random(3))
    a, b = render(scene, 48, NATURAL, seed=1), render(scene, 48, NATURAL, seed=1)
    assert a.tobytes() == b.tobytes()
    assert render(scene, 48, NATURAL, seed=2).tobytes() != a.tobytes()
    s1, s2 = render(scene, 48, SYNTHETIC, seed=1), render(scene, 48, SYNTHETIC, seed=2)
    assert s1.tobytes() == s2.tobytes()
    # flat colours: every pixel is the background or an exact palette colour
    allowed = {tuple(scene.background), *lexicon.COLOR_RGB.values()}
    colours = {tuple(int(v) for v in px) for px in np.asarray(s1).reshape(-1, 3)}
    assert colours <= allowed, colours - allowed
    # and the synthetic render differs from the natural one of the same scene
    assert s1.tobytes() != a.tobytes()


# --------------------------------------------------------------------------------------------------
# builders
# --------------------------------------------------------------------------------------------------
def test_build_train_set(tmp_path: Path):
    cfg = build.TrainSetConfig(n_images=6, captions_per_image=2, image_size=32, seed=3)
    manifest = build.build_train_set(cfg, tmp_path / "train", progress=False)
    images = np.load(tmp_path / "train" / "images.npy")
    captions = json.loads((tmp_path / "train" / "captions.json").read_text())
    assert images.shape == (6, 32, 32, 3) and images.dtype == np.uint8
    assert len(captions) == 6 and all(len(c) == 2 and all(isinstance(s, str) and s for s in c) for c in captions)
    assert manifest["n_images"] == 6 and manifest["n_captions"] == 12 and manifest["world_version"] == VERSION
    assert json.loads((tmp_path / "train" / "manifest.json").read_text()) == manifest

    # aligned: replaying the documented random stream gives the same scenes, pixels and (true) captions
    rng = build.stream(3, "train")
    for i in range(6):
        scene = sample_scene(rng, allow_heldout=False)
        assert not contains_heldout(scene)
        pixels = np.asarray(render(scene, 32, NATURAL, seed=rng.randrange(2**31)))
        assert np.array_equal(images[i], pixels)
        claims = [sample_claim(rng, scene) for _ in range(2)]
        assert captions[i] == [c.text() for c in claims]
        assert all(satisfies(scene, c) for c in claims)

    # smaller sets are prefixes of larger ones
    build.build_train_set(replace(cfg, n_images=3), tmp_path / "small", progress=False)
    small = np.load(tmp_path / "small" / "images.npy")
    assert np.array_equal(small, images[:3])
    assert json.loads((tmp_path / "small" / "captions.json").read_text()) == captions[:3]
