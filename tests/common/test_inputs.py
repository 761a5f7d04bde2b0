"""``common.pipeline.inputs``: how much of the full profile's inputs a stage reads (``params.yaml full_inputs.cap``) and a
fine-tune's step budget (``max_steps``), which the rehearsal sets in its copy."""
from __future__ import annotations

import pytest

from common.pipeline.inputs import FullInputs, full_inputs, step_budget
from common.pipeline.params import ParamsError


def test_a_stage_that_did_not_declare_the_inputs_reads_them_uncapped():
    assert full_inputs({}) == FullInputs(cap=None) and full_inputs({}).comparable


def test_only_all_of_the_inputs_are_comparable():
    assert full_inputs({"full_inputs": {"cap": None}}).comparable
    capped = full_inputs({"full_inputs": {"cap": 2}})  # a cap is a production parameter too (the rehearsal's: 4)
    assert capped.cap == 2 and not capped.comparable


@pytest.mark.parametrize("node, message", [
    ({"cap": 0}, "full_inputs.cap: must be null or a positive integer"),
    ({"cap": True}, "full_inputs.cap: must be null or a positive integer"),
    ([1], "full_inputs: must be a table"),
    ({"published": False, "cap": None}, r"full_inputs: unknown key\(s\) \['published'\]"),  # stated by the registry now
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
