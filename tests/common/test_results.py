"""Result tables: paper-shaped CSV, DVC metrics (numbers only, one file per model), a context sidecar, long CSV for
plots, predictions; all atomic."""
from __future__ import annotations

import csv
import json

import pytest

from common.evaluation.outcomes import Outcome
from common.evaluation.results import ModelRow, write_accuracy_table, write_predictions
from common.evaluation.scoring.selection import SelectionResult


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
    assert [p.name for p in paths["metrics"].iterdir()] == ["m.json"]
    assert json.loads((paths["metrics"] / "m.json").read_text()) == {"a": 50.0, "b": 75.0, "average": 62.5}
    context = json.loads(paths["context"].read_text())
    assert context["profile"] == "mini" and context["models"]["m"]["ties"] == {"a": 0, "b": 1}
    assert context["models"]["m"]["rule"] == "strict"
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


def test_metrics_folder_holds_one_file_per_current_model(tmp_path):
    """A model dropped from the list leaves no stale metrics file behind; a '/' in a name becomes '__'."""
    one = _result("fam/one", {"a": [(True, False)]})
    two = _result("fam/two", {"a": [(False, False)]})
    write_accuracy_table(tmp_path, "t", [(ModelRow("fam/one", "f", "1", "", ""), one),
                                         (ModelRow("fam/two", "f", "2", "", ""), two)], ["a"], {})
    paths = write_accuracy_table(tmp_path, "t", [(ModelRow("fam/one", "f", "1", "", ""), one)], ["a"], {})
    assert sorted(p.name for p in paths["metrics"].iterdir()) == ["fam__one.json"]


def test_written_files_respect_the_umask(tmp_path):
    """Atomic writes go through mkstemp (0600); the file that lands must have the usual permissions."""
    import os

    from common.files.io import write_text_atomic

    old = os.umask(0o022)
    try:
        path = write_text_atomic(tmp_path / "x.txt", "x")
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644


@pytest.mark.parametrize("item_id", ["a\r", "a\rb", "a\r\nb", "a\nb", "\r", 'say "a\r"'])
def test_predictions_round_trip_line_breaks_in_ids(tmp_path, item_id):
    """An id from someone's JSON keys may hold "\\r": each prediction is still one row, read back exactly."""
    outcomes = [Outcome(item_id=item_id, group="g", scores=(0.5, 0.25), correct=True, tie=False),
                Outcome(item_id="plain", group="g", scores=(0.25, 0.5), correct=False, tie=False)]
    path = write_predictions(tmp_path / "p.csv", SelectionResult("m", "f" * 32, "image_to_text", outcomes=outcomes))
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [row["item_id"] for row in rows] == [item_id, "plain"]
    assert path.read_text(encoding="utf-8").endswith("\nplain,g,0,0,0.25,0.5\n")  # other rows are written as before
