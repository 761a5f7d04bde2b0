"""Hard positives, the full profile's fine-tuning set (``finetune_sets_full``, read through ``finetune_rows``)
on a tiny COCO 2017 layout (``conftest.write_coco``): types, what was set aside, bad records and missing files named."""
from __future__ import annotations

import json

import pytest

from common.errors import WorkspaceError
from common.files.tasks import DatasetError
from papers.hard_positives import finetune_sets_full as fs
from papers.hard_positives.finetune_rows import load_rows
from papers.hard_positives.runs import TYPES


def test_the_set_pairs_each_caption_with_a_positive_and_a_negative_of_one_type(coco, train_set, tmp_path):
    manifest = json.loads((train_set / "manifest.json").read_text())
    counts = manifest["counts"]
    rows = load_rows(train_set)
    assert counts["captions"] == 24 and counts["distinct_captions"] == 12
    assert counts["rows"] == len(rows) and counts["rows"] + counts["captions_without_a_type"] == 24
    assert counts["rows_by_type"] == {t: sum(r.type == t for r in rows) for t in TYPES}
    assert set(counts["rows_by_type"]) == {"replace", "swap"} and all(counts["rows_by_type"].values())
    for r in rows:
        texts = {r.caption.lower(), r.positive.lower(), r.negative.lower()}
        assert len(texts) == 3 and "\n" not in r.caption
    swaps = {r.caption: r.positive for r in rows if r.type == "swap"}
    assert swaps.get("A lamp to the left of a table.") == "A table to the right of a lamp."
    assert swaps.get("A white plate and a silver fork on a wooden table.") == (
        "A silver fork and a white plate on a wooden table.")
    assert manifest["positives"]["generator"] == "papers.hard_positives.rules"
    again = tmp_path / "again"
    fs.build_set(*coco, again, seed=0)
    assert (again / "rows.jsonl").read_bytes() == (train_set / "rows.jsonl").read_bytes()


def test_a_swap_negative_that_reads_like_the_positive_is_set_aside():
    """The only two nouns of "A dog and a cat." swapped read like the reordered phrases: neither is used."""
    positives, negatives, counts = fs.perturbations(["A dog and a cat.", "A lamp to the left of a table."])
    assert positives["swap"] == [None, "A table to the right of a lamp."] and negatives["swap"][0] is None
    assert counts["positive_reads_like_negative"] == {"replace": 0, "swap": 1}


def test_bad_records_are_named(make_coco, tmp_path):
    path, images = make_coco(tmp_path / "a", annotations=[{"id": 7, "image_id": 99, "caption": "A cat."}], images=1)
    with pytest.raises(DatasetError, match=r"captions_train2017.json: annotations\[0\] \(id 7\): image_id 99"):
        fs.read_coco_captions(path, images)
    path, images = make_coco(tmp_path / "b", annotations=[{"id": 8, "image_id": 1, "caption": "A cat on a mat."}],
                             images=1)
    (images / "000000000001.jpg").unlink()
    with pytest.raises(DatasetError, match=r"1 captioned image\(s\) not found .* '000000000001.jpg'"):
        fs.read_coco_captions(path, images)
    (tmp_path / "rows.jsonl").write_text('{"image": "x.jpg", "caption": "c", "type": "swap", "positive": "p"}\n')
    with pytest.raises(DatasetError, match=r"rows.jsonl: line 1: no 'negative'"):
        load_rows(tmp_path)
    (tmp_path / "rows.jsonl").write_text('{"image": "x.jpg", "caption": "c", "type": "negate", "positive": "p", '
                                         '"negative": "n"}\n')
    with pytest.raises(DatasetError, match=r"rows.jsonl: line 1: unknown type 'negate'"):
        load_rows(tmp_path)
    (tmp_path / "rows.jsonl").write_text("")
    with pytest.raises(DatasetError, match=r"rows.jsonl: no rows"):
        load_rows(tmp_path)
    with pytest.raises(WorkspaceError, match="rows.jsonl: missing; run the finetune-full-set stage"):
        load_rows(tmp_path / "nowhere")
    with pytest.raises(WorkspaceError, match="captions_train2017.json: missing; fetch it: python -m common fetch"):
        fs.read_coco_captions(tmp_path / "captions_train2017.json", images)
