"""``common.files.jsonl.read_jsonl``: records parsed in order; every bad line an error naming the file and the line."""
import json

import pytest

from common.errors import WorkspaceError
from common.files.jsonl import coco_captions, read_jsonl
from common.files.tasks import DatasetError


def _write(tmp_path, lines):
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_parses_each_line_in_order_and_skips_blank_lines(tmp_path):
    path = _write(tmp_path, [json.dumps({"a": 1}), "", json.dumps({"a": 2})])
    assert list(read_jsonl(path, lambda r: r["a"], "a row")) == [1, 2]


@pytest.mark.parametrize("bad, reason", [("{not json", "not a row"), (json.dumps({"b": 1}), "'a'"),
                                         (json.dumps([1]), "not a row")])
def test_a_bad_line_names_the_file_and_the_line(tmp_path, bad, reason):
    path = _write(tmp_path, [json.dumps({"a": 1}), bad])
    with pytest.raises(DatasetError, match=rf"rows\.jsonl: line 2: .*{reason}"):
        list(read_jsonl(path, lambda r: r["a"], "a row"))


def test_the_parsers_own_dataset_error_gets_the_line(tmp_path):
    def parse(record):
        if record["a"] < 0:
            raise DatasetError("a is negative")
        return record["a"]

    path = _write(tmp_path, [json.dumps({"a": 1}), json.dumps({"a": -1})])
    with pytest.raises(DatasetError, match=r"rows\.jsonl: line 2: a is negative$"):
        list(read_jsonl(path, parse, "a row"))


def test_write_jsonl_round_trips_dataclasses_and_dicts(tmp_path):
    from dataclasses import dataclass

    from common.files.jsonl import write_jsonl

    @dataclass
    class Row:
        caption: str
        k: int

    path = write_jsonl(tmp_path / "rows.jsonl", [Row("a dog", 1), {"caption": "no cat", "k": 2}])
    assert path.read_text(encoding="utf-8") == '{"caption": "a dog", "k": 1}\n{"caption": "no cat", "k": 2}\n'
    assert list(read_jsonl(path, lambda r: Row(**r), "a row")) == [Row("a dog", 1), Row("no cat", 2)]
    with pytest.raises(TypeError):
        write_jsonl(tmp_path / "bad.jsonl", [{"ok": 1}, {"bad": object()}])
    assert not (tmp_path / "bad.jsonl").exists()  # all or nothing


def test_read_json_names_line_column_and_top_level_type(tmp_path):
    from common.errors import WorkspaceError
    from common.files.jsonl import read_json

    good = tmp_path / "m.json"
    good.write_text('{"a": 1}')
    assert read_json(good) == {"a": 1}
    with pytest.raises(DatasetError, match=r"m.json: expected an array at the top level, found dict"):
        read_json(good, list)
    bad = tmp_path / "bad.json"
    bad.write_text('{\n  "a": 1,\n}')
    with pytest.raises(DatasetError, match=r"bad.json: line 3 column 1: not valid JSON"):
        read_json(bad)
    with pytest.raises(WorkspaceError, match=r"gone.json: missing; run the set stage"):
        read_json(tmp_path / "gone.json", remedy="run the set stage")


def test_read_rows_checks_every_field_and_the_row(tmp_path):
    from dataclasses import dataclass

    from common.files.jsonl import read_rows

    @dataclass(frozen=True)
    class Row:
        image: str
        index: int
        score: float
        note: str | None = None

    def check(row: Row) -> None:
        if row.index > 9:
            raise ValueError(f"index {row.index} past the set")

    path = tmp_path / "rows.jsonl"
    path.write_text('{"image": "a.jpg", "index": 0, "score": 0.5}\n\n{"image": "b.jpg", "index": 1, "score": 1, '
                    '"note": null}\n')
    assert [r.image for r in read_rows(path, Row, "a row", check=check)] == ["a.jpg", "b.jpg"]
    for line, message in (('{"image": "", "index": 0, "score": 0}', "line 1: 'image' is ''"),
                          ('{"image": "a", "index": -1, "score": 0}', "line 1: 'index' is -1"),
                          ('{"image": "a", "index": true, "score": 0}', "line 1: 'index' is True"),
                          ('{"image": "a", "index": 0, "score": NaN}', "line 1: 'score' is nan"),
                          ('{"image": "a", "score": 0}', "line 1: no 'index'"),
                          ('[1, 2]', "line 1: not a JSON object"),
                          ('{"image": "a", "index": 10, "score": 0}', "line 1: index 10 past the set")):
        path.write_text(line + "\n")
        with pytest.raises(DatasetError, match=message.replace("(", r"\(")):
            read_rows(path, Row, "a row", check=check)
    path.write_text("\n")
    with pytest.raises(DatasetError, match="rows.jsonl: no rows"):
        read_rows(path, Row, "a row")


def test_read_rows_accepts_a_fields_declared_default(tmp_path):
    """A COCO row has no negative: written as the field's default ``""``, which a non-empty check must not refuse."""
    from dataclasses import dataclass

    from common.files.jsonl import read_rows

    @dataclass(frozen=True)
    class Row:
        caption: str
        negative: str = ""

    path = tmp_path / "rows.jsonl"
    path.write_text('{"caption": "a dog", "negative": ""}\n{"caption": "a cat"}\n{"caption": "a cow", "negative": "x"}\n')
    assert [r.negative for r in read_rows(path, Row, "a row")] == ["", "", "x"]
    path.write_text('{"caption": "", "negative": "x"}\n')
    with pytest.raises(DatasetError, match="'caption' is ''"):
        read_rows(path, Row, "a row")


DEEP = "[" * 100_000 + "]" * 100_000
"""Nested past the parser's recursion limit (a damaged or hostile file): a RecursionError traceback before."""


def test_json_nested_too_deep_is_one_line(tmp_path):
    from common.files.jsonl import read_json

    path = tmp_path / "deep.json"
    path.write_text('{"a": ' + DEEP + "}")
    with pytest.raises(DatasetError, match=r"deep\.json: nested too deeply") as info:
        read_json(path)
    assert "\n" not in str(info.value)
    rows = _write(tmp_path, [json.dumps({"a": 1}), DEEP])
    with pytest.raises(DatasetError, match=r"rows\.jsonl: line 2: nested too deeply"):
        list(read_jsonl(rows, lambda r: r, "a row"))


def test_parse_json_names_a_duplicate_key_when_asked(tmp_path):
    from common.files.jsonl import parse_json

    path = tmp_path / "m.json"
    text = '{"a": 1,\n "b": {"c": 1, "c": 2}}'
    assert parse_json(text, path) == {"a": 1, "b": {"c": 2}}  # JSON's own rule: the last wins
    with pytest.raises(DatasetError, match=r"m\.json: duplicate key 'c' \(a key appears once per object\)"):
        parse_json(text, path, unique_keys=True)
    with pytest.raises(DatasetError, match=r"m\.json: line 1 column 9: not valid JSON"):
        parse_json('{"a": 1,}', path)


def test_coco_captions_names_the_file_and_the_annotation(tmp_path):
    path = tmp_path / "captions_train2017.json"
    with pytest.raises(WorkspaceError, match=r"captions_train2017\.json: missing; fetch it: python -m common fetch "
                                             r"coco-train2017"):
        coco_captions(path)
    path.write_text(json.dumps({"images": []}))
    with pytest.raises(DatasetError, match=r"captions_train2017\.json: not a COCO captions file \(no 'annotations' "
                                           r"list\)"):
        coco_captions(path)
    record = {"annotations": [{"image_id": 1, "caption": "A cat."}, {"image_id": "2", "caption": "A dog."}]}
    path.write_text(json.dumps(record))
    with pytest.raises(DatasetError, match=r"captions_train2017\.json: annotations\[1\]: needs an integer 'image_id' "
                                           r"and a string 'caption'"):
        coco_captions(path)
    record["annotations"].pop()
    path.write_text(json.dumps(record))
    assert coco_captions(path) == record
