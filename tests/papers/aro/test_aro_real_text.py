"""The real-text stage: the generator against released NegCLIP negatives, and the perturbed Order set."""
from __future__ import annotations

import csv
import json

import pytest

from common.errors import run_entry_point
from common.files.tasks import DatasetError
from papers.aro import real_text
from papers.aro.negatives import parse_captions
from papers.aro.real_text import WordView, infer_kind, read_released

HEADER = "\ttitle\tfilepath\tneg_caption\tneg_image\n"
ROWS = [
    # an NN swap and a verb-phrase swap (the generator can draw both)
    ("A child holding a flowered umbrella and petting a yak.",
     ["A umbrella holding a flowered child and petting a yak .",
      "A child petting a flowered umbrella and holding a yak ."]),
    # a noun-chunk swap (reachable) and a str.replace artefact (not a swap of the caption's words)
    ("A little boy is hitting a tee ball from a tee ball stand.",
     ["a tee ball is hitting a little boy from a tee ball stand .",
      "a tee ball is hitting a little boy from a little boy stand."]),
    # a case-only "swap": the same words
    ("Large elephant rubbing itself up against a large tree.",
     ["large elephant rubbing itself up against a Large tree ."]),
]


def _write_tsv(path, rows, bad_row=None):
    lines = [HEADER]
    for i, (title, negs) in enumerate(rows):
        neg = "['unclosed" if i == bad_row else repr(negs)
        lines.append(f"{i}\t{title}\tcoco/val2014/x_{i}.jpg\t{neg}\t[1, 2, 3]\n")
    path.write_text("".join(lines), encoding="utf-8")
    return path


def _read_csv(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_infer_kind_from_moved_words():
    titles = [r[0] for r in ROWS]
    parsed = parse_captions(titles)
    views = [WordView.of(t, parsed[t]) for t in titles]
    assert [infer_kind(views[0], n) for n in ROWS[0][1]] == ["NN", "verb_phrase"]
    assert [infer_kind(views[1], n) for n in ROWS[1][1]] == ["noun_chunk", "other"]
    assert infer_kind(views[2], ROWS[2][1][0]) == "unchanged"
    assert infer_kind(views[0], "A child holding a yak umbrella and petting a flowered .") == "token_other"


def test_stage_on_a_small_tsv(tmp_path, capsys):
    tsv = _write_tsv(tmp_path / "valid_neg_clip.tsv", ROWS)
    out = tmp_path / "out"
    assert real_text.main(["--tsv", str(tsv), "--out", str(out), "--seeds", "0", "1"]) == 0
    table = {r["released_kind"]: r for r in _read_csv(out / "generator_vs_released.csv")}
    assert table["all"]["n_released"] == "5" and table["all"]["n_reachable"] == "3"
    assert {k: table[k]["n_released"] for k in ("NN", "verb_phrase", "noun_chunk", "other", "unchanged")} == \
        {"NN": "1", "verb_phrase": "1", "noun_chunk": "1", "other": "1", "unchanged": "1"}
    for kind in ("NN", "verb_phrase", "noun_chunk"):
        assert table[kind]["n_reachable_same_kind"] == "1"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_captions"] == 3 and summary["n_released_negatives"] == 5
    assert summary["recall_reachable"] == 0.6
    assert all(isinstance(v, (int, float)) for v in summary.values())  # DVC metrics: flat numbers, one short row
    breakdown = json.loads((out / "breakdown.json").read_text())
    assert breakdown["released_per_kind"]["NN"] == 1 and set(breakdown["order_same_as_original_share"]) == \
        set(real_text.ORDER_PERTURBATIONS)
    missed = _read_csv(out / "examples_missed.csv")
    assert sorted(m["released_kind"] for m in missed) == ["other", "unchanged"]
    order = _read_csv(out / "order_perturbed.csv")
    assert len(order) == 6 and [r["seed"] for r in order] == ["0", "0", "0", "1", "1", "1"]
    assert list(order[0]) == list(real_text.ORDER_FIELDS)
    assert order[0]["original"] == ROWS[0][0] and order[0]["original_normalised"] == ROWS[0][0][:-1].lower()
    generated = _read_csv(out / "generated_negatives.csv")
    assert {g["index"] for g in generated} == {"0", "1", "2"}
    context = json.loads((out / "context.json").read_text())
    assert context["spacy"]["package"] and context["order_seeds"] == [0, 1]
    assert "reachable" in capsys.readouterr().out


def test_malformed_row_names_file_and_row(tmp_path, capsys):
    tsv = _write_tsv(tmp_path / "valid_neg_clip.tsv", ROWS, bad_row=1)
    with pytest.raises(DatasetError, match=r"valid_neg_clip\.tsv: row 2 \(index '1'\)"):
        read_released(tsv)
    out = tmp_path / "out"
    assert run_entry_point(real_text.main, ["--tsv", str(tsv), "--out", str(out), "--seeds", "0"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "row 2" in err[0]
    assert not (out / "summary.json").exists()


def test_bad_header_and_not_a_list(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("a\tb\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="bad.tsv: header"):
        read_released(bad)
    bad.write_text(HEADER + "0\tA cat.\tx.jpg\t'not a list'\t[]\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="row 1 .*not a list of strings"):
        read_released(bad)


def test_released_file_from_the_mirror(released_env):
    from common.registry.fetch import fetch

    rows = read_released(fetch(real_text.SOURCE_KEY))
    assert len(rows) == 4839 and sum(len(r.negatives) for r in rows) == 7370
    assert all(1 <= len(r.negatives) <= 5 for r in rows)
    assert [r.index for r in rows] == list(range(4839))
