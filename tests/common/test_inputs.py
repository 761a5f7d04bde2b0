"""``common.inputs``: the full profile's inputs as production parameters (``params.yaml full_inputs``) and a
fine-tune's step budget (``max_steps``), which the rehearsal sets in its copy."""
from __future__ import annotations

import pytest

from common.inputs import FullInputs, full_inputs, step_budget
from common.params import ParamsError


def test_a_stage_that_did_not_declare_the_inputs_reads_the_published_files_uncapped():
    assert full_inputs({}) == FullInputs(published=True, cap=None) and full_inputs({}).comparable


def test_only_the_published_files_all_of_them_are_comparable():
    assert full_inputs({"full_inputs": {"published": True, "cap": None}}).comparable
    assert not full_inputs({"full_inputs": {"published": False, "cap": None}}).comparable  # stand-ins
    capped = full_inputs({"full_inputs": {"published": True, "cap": 2}})  # a cap is a production parameter too
    assert capped.cap == 2 and not capped.comparable


@pytest.mark.parametrize("node, message", [
    ({"published": 1}, "full_inputs.published: must be true or false"),
    ({"cap": 0}, "full_inputs.cap: must be null or a positive integer"),
    ({"cap": True}, "full_inputs.cap: must be null or a positive integer"),
    ([1], "full_inputs: must be a table"),
])
def test_a_bad_section_is_one_line_naming_the_key(node, message):
    with pytest.raises(ParamsError, match=message):
        full_inputs({"full_inputs": node})


def test_the_step_budget_is_the_smoke_runs_then_the_sections_then_the_recipes():
    assert step_budget({"max_steps": 3}, steps=7) == 7  # a smoke run's --steps wins
    assert step_budget({"max_steps": 3}) == 3
    assert step_budget({"max_steps": None}) is None and step_budget({}) is None  # the recipe's epochs
    for bad in (0, True, "2"):
        with pytest.raises(ParamsError, match="max_steps: must be null or a positive integer"):
            step_budget({"max_steps": bad})
