"""The negative scene (common.miniworld.edits): the scene a hard negative caption describes, made by editing the scene.

Checked against the world's own truth (``satisfies``) for every edit type over many draws, and on hand-built scenes
where the expected edit is known (a swap trades identities; a replaced colour changes one object only)."""
from __future__ import annotations

import random

import pytest

from common.miniworld.claims import claim_from_objects, sample_claim, satisfies
from common.miniworld.edits import ADD_EDITS, assignment, negative_scene
from common.miniworld.negatives import EDIT_TYPES
from common.miniworld.scene import GRID, RADIUS_IN_CELLS, Scene, SceneObject, layout_is_clear, sample_scene


def _obj(shape, color, size, cx, cy):
    x, y = ((cx + 0.5) / GRID, (cy + 0.5) / GRID) if size == "small" else (cx / GRID, cy / GRID)
    return SceneObject(shape, color, size, x, y, RADIUS_IN_CELLS[size] / GRID)


@pytest.mark.parametrize("kind", sorted(EDIT_TYPES))
def test_every_edit_type_gives_a_scene_of_the_negative(kind):
    rng = random.Random(kind)
    made = tried = 0
    while tried < 60:
        scene = sample_scene(rng)
        claim = sample_claim(rng, scene)
        negative = EDIT_TYPES[kind](scene, claim, rng)
        if negative is None:
            continue
        tried += 1
        edited = negative_scene(scene, claim, negative, rng, allow_positive=kind in ADD_EDITS)
        if edited is None:
            continue
        made += 1
        assert satisfies(edited, negative), (kind, negative.text())
        assert layout_is_clear(edited.objects)
        assert edited.background == scene.background
        identities = [(o.shape, o.color) for o in edited.objects]
        assert len(set(identities)) == len(identities)
        if kind in ADD_EDITS:
            assert satisfies(edited, claim)  # adding never removes what the caption said
        else:
            assert not satisfies(edited, claim), (kind, claim.text(), negative.text())
    assert made >= 50, f"{kind}: only {made} of {tried} negatives could be drawn"


def test_swap_obj_trades_identities_in_place():
    scene = Scene((_obj("circle", "red", "small", 0, 2), _obj("square", "blue", "small", 4, 2)))
    claim = claim_from_objects(scene, [0, 1], "relation")  # "a small red circle to the left of a small blue square"
    negative = EDIT_TYPES["swap_obj"](scene, claim, random.Random(0))
    edited = negative_scene(scene, claim, negative, random.Random(0))
    assert [(o.shape, o.color, o.x, o.y) for o in edited.objects] == [
        ("square", "blue", scene.objects[0].x, scene.objects[0].y),
        ("circle", "red", scene.objects[1].x, scene.objects[1].y)]


def test_replace_att_changes_one_object_and_keeps_the_rest():
    scene = Scene((_obj("circle", "red", "small", 0, 2), _obj("square", "blue", "small", 2, 2),
                   _obj("star", "green", "small", 4, 2)))
    assert layout_is_clear(scene.objects)
    claim = claim_from_objects(scene, [0], "one", mention=("color",))
    negative = claim.__class__((claim.phrases[0].with_attribute("color", "yellow"),), (), claim.template)
    edited = negative_scene(scene, claim, negative, random.Random(0))
    assert edited.objects[0].color == "yellow" and edited.objects[0].shape == "circle"
    assert edited.objects[1:] == scene.objects[1:]
    assert (edited.objects[0].x, edited.objects[0].y) == (scene.objects[0].x, scene.objects[0].y)


def test_an_edit_that_would_duplicate_an_identity_is_refused():
    scene = Scene((_obj("circle", "red", "small", 0, 2), _obj("circle", "blue", "small", 4, 2)))
    claim = claim_from_objects(scene, [0], "one", mention=("color",))
    negative = claim.__class__((claim.phrases[0].with_attribute("color", "blue"),), (), claim.template)
    assert negative_scene(scene, claim, negative, random.Random(0)) is None


def test_a_claim_false_of_the_scene_has_no_assignment():
    scene = Scene((_obj("circle", "red", "small", 0, 0),))
    other = Scene((_obj("square", "red", "small", 0, 0),))
    claim = claim_from_objects(other, [0], "one")
    assert assignment(scene, claim) is None
    assert negative_scene(scene, claim, claim, random.Random(0)) is None
