"""Tables 5 and 10's rows of runs trained here name the recipe each ran with (``table5_context.json``'s
``training``, copied there from the runs' sidecars by the tables stage), in both profiles; other rows do not."""
from __future__ import annotations

import json
import shutil

import pytest

from common.audit.runs import RecipeRecordError
from common.paths import RESULTS
from papers.sugarcrepe import audit

MINI = RESULTS / "sugarcrepe" / "mini"
RECIPE = {"name": "mini", "digest": "d1g", "settings": {}, "deviations": {}}


def _results(tmp_path, training):
    out = tmp_path / "results" / "sugarcrepe" / "mini"
    out.mkdir(parents=True)
    for name in ("table5.csv", "table10.csv", "table4.csv"):
        shutil.copy(MINI / name, out / name)
    (out / "table5_context.json").write_text(json.dumps({"training": training}))
    return tmp_path / "results"


def test_trained_rows_name_their_recipe(tmp_path):
    results = _results(tmp_path, {"sugarcrepe/mini-clip-ft": {"recipe": RECIPE},
                                  "sugarcrepe/mini-negclip-swap": {"loss": "negclip"}})
    recs = audit.run_recomputations("mini", results)
    row = {r.row: r.note for r in recs if r.table == "Table 5"}
    assert row["ViT-B/32 | CLIP finetuned | N/A"].endswith("recipe mini (d1g): this workspace's settings (params.yaml)")
    assert row["ViT-B/32 | NEGCLIP finetuned | SWAP"].endswith("recipe not recorded (trained before recipes existed: "
                                                             "retrain to name it)")
    assert "recipe" not in row["ViT-B/32 | Pretrained | N/A"]
    assert any(r.table == "Table 10" and "recipe mini (d1g)" in r.note for r in recs)


def test_a_damaged_recipe_is_one_error(tmp_path):
    results = _results(tmp_path, {"sugarcrepe/mini-clip-ft": {"recipe": {"name": 1}}})
    with pytest.raises(RecipeRecordError, match="table5_context.json: training.sugarcrepe/mini-clip-ft: 'recipe'"):
        audit.run_recomputations("mini", results)
