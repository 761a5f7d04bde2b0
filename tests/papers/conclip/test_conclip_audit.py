"""The audit's mapping of this paper's result files to published cells, per profile: the full profile's released
CoN-CLIP is row ``conclip`` and its re-trainings ``ft-<run>``; the mini profile's runs are the bare run names."""
from __future__ import annotations

import csv
from pathlib import Path

from papers.conclip import audit


def _write(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def _results(tmp_path: Path, profile: str, run_prefix: str) -> Path:
    """Every table the audit reads, with the rows and columns its writers write (the audit refuses a table that lacks
    a row the mini run writes, a column it maps, or holds a row twice: issue 35)."""
    out = tmp_path / "results" / "conclip" / profile
    # the released CoN-CLIP and its re-training (full); one conclip row in the mini profile (run_prefix "")
    table3 = {"clip": "61.0", "negclip": "62.0", "conclip": "90.0", f"{run_prefix}conclip": "88.0"}
    _write(out / "table3.csv", [{"row": row, "ccneg": value} for row, value in table3.items()])
    table6_columns = ("sugarcrepe_replace", "sugarcrepe_add", "sugarcrepe_swap", "ccneg", "classification_top1")
    _write(out / "table6.csv", [{"row": f"{run_prefix}{run}", **{c: str(80 + i) for c in table6_columns}}
                                for i, run in enumerate(("conclip", "l1", "l2", "l1-l2", "crepe-negate-l1"))])
    _write(out / "classification.csv", [
        {"row": "clip", "imagenet_top1": "63.3", "cifar10_top1": "88.9", "delta": "1.0"},
        {"row": "negclip", "imagenet_top1": "60.0", "cifar10_top1": "85.0", "delta": "3.0"},
        {"row": "conclip", "imagenet_top1": "63.4", "cifar10_top1": "90.4", "delta": "20.0"},
        {"row": "laclip", "imagenet_top1": "62.0", "cifar10_top1": "87.0", "delta": "2.0"}])
    _write(out / "by_word_k.csv", [{"row": row, "word": "no", "k": str(k), "accuracy": str(70 + k), "n": str(10 * k)}
                                   for row in ("clip", "negclip", "conclip", *(f"{run_prefix}{run}" for run in
                                                                              ("l1", "l2", "l1-l2")))
                                   for k in range(1, 6)])
    return tmp_path / "results"


def _cells(recs) -> dict[tuple[str, str, str], float]:
    return {r.key: r.value for r in recs}


def test_full_profile_maps_released_and_retrained_rows_apart(tmp_path):
    cells = _cells(audit.run_recomputations("full", _results(tmp_path, "full", "ft-")))
    assert cells[("Table 3", "CoN-CLIP", "CC-Neg Accuracy")] == 90.0  # the released checkpoint
    assert cells[("Table 6", "CC-Neg | L_conclip", "CC-Neg | Accuracy")] == 80.0  # the re-training
    assert cells[("Table 6", "CC-Neg | L_2", "CC-Neg | Accuracy")] == 82.0
    assert cells[("Table 4", "CoN-CLIP | ViT-B/32", "ImageNet-1k")] == 63.4
    assert cells[("Table 15", "LaCLIP | ViT-B/32", "CIFAR-10")] == 87.0
    assert ("Table 4", "LaCLIP | ViT-B/32", "CIFAR-10") not in cells  # Table 4 has no LaCLIP row
    assert cells[("Table 16", "CoN-CLIP", "Mean Δ")] == 20.0
    assert cells[("Table 7", "CoN-CLIP", "#3")] == 73.0  # released, by word and K
    assert cells[("Table 10", "CoNCLIP | ViT-B/32 | L_1", "#2")] == 72.0  # re-trained L1
    assert cells[("Table 7", "Split size", "#4")] == 40.0
    assert all(r.profile == "full" for r in audit.run_recomputations("full", tmp_path / "results"))


def test_mini_profile_has_no_per_dataset_tables_and_bare_run_names(tmp_path):
    """A mini run covers its cells but is never compared: each mapped cell is there, with no value."""
    recs = audit.run_recomputations("mini", _results(tmp_path, "mini", ""))
    keys = {r.key for r in recs}
    assert not any(key[0] in ("Table 4", "Table 15") for key in keys)
    assert ("Table 6", "CC-Neg | L_conclip", "CC-Neg | Accuracy") in keys
    assert ("Table 10", "CoNCLIP | ViT-B/32 | L_1", "#5") in keys
    assert ("Table 3", "CoN-CLIP", "CC-Neg Accuracy") in keys
    assert all(r.profile == "mini" and r.value != r.value for r in recs)  # NaN: not comparable


def test_mini_rows_of_runs_trained_here_name_their_recipe(tmp_path):
    import json

    results = _results(tmp_path, "mini", "")
    recipe = {"name": "mini", "digest": "d1g", "settings": {}, "deviations": {}}
    (results / "conclip" / "mini" / "context.json").write_text(json.dumps({"training": {"l1": {"recipe": recipe}}}))
    notes = {(r.table, r.row): r.note for r in audit.run_recomputations("mini", results)}
    assert notes[("Table 6", "CC-Neg | L_1")].endswith("recipe mini (d1g): this workspace's settings (params.yaml)")
    assert "recipe" not in notes[("Table 3", "CLIP")]


def test_cells_that_depend_on_an_unreleased_rule_say_rule_unverified(tmp_path):
    """No file of the authors' release groups CC-Neg by negation word or K, scores BLIP or FLAVA, or runs zero-shot
    classification: those cells' notes start with "rule unverified" (and name the rule); CC-Neg's accuracy (the
    README's evaluation snippet) and SugarCrepe (its own evaluation) are released rules and say nothing of the kind."""
    results = _results(tmp_path, "full", "ft-")
    table3 = results / "conclip" / "full" / "table3.csv"
    table3.write_text(table3.read_text() + "blip,63.0\nflava,59.0\n")
    notes = {r.key: r.note for r in audit.run_recomputations("full", results)}
    unverified = {key for key, note in notes.items() if note.startswith(audit.RULE_UNVERIFIED)}
    assert ("Table 7", "CoN-CLIP", "#3") in unverified and ("Table 10", "CoNCLIP | ViT-B/32 | L_1", "#2") in unverified
    assert ("Table 7", "Split size", "#4") in unverified and "by K" in notes[("Table 7", "Split size", "#4")]
    assert {("Table 3", "BLIP", "CC-Neg Accuracy"), ("Table 2", "FLAVA", "CC-Neg Accuracy")} <= unverified
    assert "BLIP" in notes[("Table 3", "BLIP", "CC-Neg Accuracy")]
    assert ("Table 3", "CoN-CLIP", "CC-Neg Accuracy") not in unverified  # the README's released rule
    assert ("Table 6", "CC-Neg | L_conclip", "CC-Neg | Accuracy") not in unverified
    assert ("Table 6", "CC-Neg | L_conclip", "SugarCREPE R@1 | Add") not in unverified
    assert ("Table 6", "CC-Neg | L_conclip", "Image classification | Top-1 accuracy") in unverified
    assert {("Table 4", "CoN-CLIP | ViT-B/32", "ImageNet-1k"), ("Table 16", "CoN-CLIP", "Mean Δ")} <= unverified
    assert {key[0] for key in unverified} == {"Table 2", "Table 3", "Table 4", "Table 6", "Table 7", "Table 10",
                                              "Table 15", "Table 16"}  # the fixture's by_word_k.csv has "no" only
    mini = audit.run_recomputations("mini", _results(tmp_path / "mini", "mini", ""))
    by_word_k = [r for r in mini if r.table in ("Table 7", "Table 10")]
    assert by_word_k and all(audit.RULE_UNVERIFIED in r.note for r in by_word_k)
