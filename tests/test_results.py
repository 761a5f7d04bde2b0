"""Result tables: paper-shaped CSV, DVC metrics, long CSV for plots, predictions; all atomic."""
from __future__ import annotations

import csv
import json

import pytest

from common.engine import Outcome, SelectionResult
from common.results import ModelRow, write_accuracy_table, write_predictions


def _result(name: str, outcomes: dict[str, list[tuple[bool, bool]]]) -> SelectionResult:
    result = SelectionResult(name, "f" * 32, "image_to_text")
    for group, decisions in outcomes.items():
        for i, (correct, tie) in enumerate(decisions):
            result.outcomes.append(Outcome(f"{group}/{i}", group, (0.5, 0.5 if tie else 0.4), correct, tie))
    return result


def test_accuracy_table_average_is_the_macro_mean(tmp_path):
    result = _result("m", {"a": [(True, False), (False, False)], "b": [(True, False)] * 3 + [(False, True)]})
    paths = write_accuracy_table(tmp_path, "t", [(ModelRow("m", "fam", "M", "2k", "1.0"), result)], ["a", "b"],
                                 {"profile": "mini"})
    rows = list(csv.DictReader(open(paths["table"])))
    assert rows[0]["a"] == "50.00" and rows[0]["b"] == "75.00" and rows[0]["average"] == "62.50"
    assert rows[0]["ties"] == "1"
    metrics = json.loads(paths["metrics"].read_text())
    assert metrics["models"]["m"]["average"] == 62.5 and metrics["models"]["m"]["ties"] == {"a": 0, "b": 1}
    assert metrics["context"] == {"profile": "mini"}
    long = list(csv.DictReader(open(paths["plot"])))
    assert [(r["group"], r["accuracy"]) for r in long] == [("a", "50.00"), ("b", "75.00")]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_missing_group_is_an_error(tmp_path):
    result = _result("m", {"a": [(True, False)]})
    with pytest.raises(ValueError, match="no items in group"):
        write_accuracy_table(tmp_path, "t", [(ModelRow("m", "f", "M", "", ""), result)], ["a", "b"], {})


def test_predictions_keep_every_item(tmp_path):
    result = _result("m", {"a": [(True, False), (False, True)]})
    path = write_predictions(tmp_path / "p.csv", result)
    rows = list(csv.DictReader(open(path)))
    assert [(r["item_id"], r["correct"], r["tie"]) for r in rows] == [("a/0", "1", "0"), ("a/1", "0", "1")]
    assert rows[1]["score_0"] == rows[1]["score_1"]
