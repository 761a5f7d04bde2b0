"""Each paper's README "Recipe" table is ``python -m common recipes <paper>`` of its ``recipes.toml``, so the two
cannot drift; the command prints it."""
from __future__ import annotations

import re

import pytest

from common.cli import main
from common.paths import ROOT
from common.training.recipes import markdown

PAPERS = sorted(p.parent.name for p in (ROOT / "papers").glob("*/recipes.toml"))


def test_every_paper_has_recipes():
    assert PAPERS == ["aro", "bivlc", "conclip", "hard_positives", "sugarcrepe"]


@pytest.mark.parametrize("paper", PAPERS)
def test_the_readme_table_is_the_command_s_output(paper, capsys):
    text = (ROOT / "papers" / paper / "README.md").read_text(encoding="utf-8")
    found = re.search(rf"<!-- recipes: python -m common recipes {paper} -->\n(.*?)<!-- recipes: end -->", text, re.S)
    assert found, f"papers/{paper}/README.md has no Recipe table"
    assert main(["recipes", paper]) == 0
    printed = capsys.readouterr().out
    assert found.group(1) == printed == markdown(ROOT / "papers" / paper / "recipes.toml")
    assert "## Deviations" in text


def test_the_table_shows_the_authors_rules_beside_the_mini_ones():
    table = markdown(ROOT / "papers" / "conclip" / "recipes.toml")
    cited = 'jaisidhsingh/CoN-CLIP@503388ac src/conclip_fine_tuning.py:115-118 "filter(lambda p: p.requires_grad, model.parameters())"'
    assert f"| decay_rule | all | {cited}" in table
    assert table.splitlines()[4].endswith("| adamw | adamw |")
    assert "| betas | (0.9, 0.999) |" in table and table.count("(0.9, 0.98) |") == 1  # the mini column
