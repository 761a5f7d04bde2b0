"""Hard positives: REPLACE counts recomputed from the released files (``papers.hard_positives.released``)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from common.audit.core import CLAIM_TABLE, AuditError, audit_rows
from papers.hard_positives import released as rh


def _entry(image: str, c: str, c_n: str) -> dict:
    return {"image_id": image, "true_caption": c, "false_caption": c_n, "image_path": f"data/VG_100K/{image}.jpg"}


def _write(tmp_path: Path, name: str, original: list[dict], positives: list[str]) -> tuple[Path, Path]:
    a, b = tmp_path / "data" / name, tmp_path / "swapped_data" / name
    for p in (a, b):
        p.parent.mkdir(exist_ok=True)
    a.write_text(json.dumps(original), encoding="utf-8")
    b.write_text(json.dumps([dict(e, true_caption=cp) for e, cp in zip(original, positives)]), encoding="utf-8")
    return a, b


@pytest.fixture
def fixture_counts(tmp_path):
    attrs = [
        _entry("1", "white dog", "black dog"),
        _entry("1", "white dog", "black dog"),                      # an exact repeat: still one entry each
        _entry("2", "red car", "blue car"),
        _entry("3", "red covered table", "blue covered table"),     # substring artefact of red -> crimson
    ]
    attr_cp = ["ivory dog", "ivory dog", "crimson car", "crimson covecrimson table"]
    rels = [
        _entry("4", "man wears hat", "man under hat"),
        _entry("5", "man wearing hat", "man under hat"),            # same relation, other inflection
        _entry("6", "cup on top of table", "cup under table"),      # deletion: "on top of" -> "on"
        _entry("7", "window in building in scene", "window near building in scene"),  # two edits, one rule
    ]
    rel_cp = ["man in hat", "man in hat", "cup on table", "window within building within scene"]
    pairs = {
        "attributes": rh.load_aligned(*_write(tmp_path, "vl_checklist_attributes.json", attrs, attr_cp)),
        "relations": rh.load_aligned(*_write(tmp_path, "vl_checklist_relations.json", rels, rel_cp)),
    }
    return {k: rh.count_replace(k, v) for k, v in pairs.items()}


def test_count_replace_on_fixture(fixture_counts):
    a, r = fixture_counts["attributes"], fixture_counts["relations"]
    assert (a.examples, a.images, a.distinct_triples) == (4, 3, 3)
    assert a.words == ["red", "white"]
    assert a.rules == {("white", "ivory"): 2, ("red", "crimson"): 2}
    assert (r.examples, r.images) == (4, 4)
    assert r.words == ["in", "on top of", "wearing", "wears"]
    assert r.word_stems == ["in", "on top of", "wear"]
    assert r.rules[("in", "within")] == 2 and r.rules[("on top of", "on")] == 1


def test_replace_recomputed_maps_claims(fixture_counts):
    recs = {r.row: r for r in rh.replace_recomputed(fixture_counts, {"attributes": "fa", "relations": "fr"})}
    assert recs["replace_attr_hp"].value == 4 and recs["replace_rel_hp"].value == 4
    assert recs["replace_total"].value == recs["intro_replace_hp"].value == 8
    assert recs["replaced_relations"].value == 3  # inflections merged
    assert recs["replaced_attributes"].value == 2
    assert all(r.table == CLAIM_TABLE and r.unit == "count" and r.profile == "released" for r in recs.values())


def test_load_aligned_refuses_misaligned_files(tmp_path):
    a, b = _write(tmp_path, "x.json", [_entry("1", "white dog", "black dog")], ["ivory dog"])
    b.write_text(json.dumps([_entry("1", "ivory dog", "brown dog")]), encoding="utf-8")
    with pytest.raises(AuditError):
        rh.load_aligned(a, b)
    b.write_text(json.dumps([]), encoding="utf-8")
    with pytest.raises(AuditError):
        rh.load_aligned(a, b)
    a2, b2 = _write(tmp_path, "y.json", [_entry("1", "white dog", "black dog")], ["white dog"])
    with pytest.raises(AuditError):
        rh.count_replace("attributes", rh.load_aligned(a2, b2))


@pytest.fixture(scope="module")
def released(released_env):
    return {r.row: r for r in rh.recompute()}


def test_released_replace_counts(released):
    assert released["replace_rel_hp"].value == 16868
    assert released["replace_attr_hp"].value == 10575
    assert released["replace_total"].value == released["intro_replace_hp"].value == 27443
    assert "6776 distinct images" in released["replace_rel_hp"].note
    assert "4947 distinct images" in released["replace_attr_hp"].note
    # 15 relation phrases (wears/wearing merged -> 14); 23 attribute words (the paper says 24)
    assert released["replaced_relations"].value == 14
    assert "15 surface forms" in released["replaced_relations"].note
    assert released["replaced_attributes"].value == 23


def test_released_recomputations_join_the_published_numbers(released):
    from common.reporting.published import load_cells, load_claims

    rows = audit_rows("hard_positives", load_cells("hard_positives"), load_claims("hard_positives"),
                      list(released.values()))
    assert sum(r.source != "" for r in rows) == len(released)


def test_unfetchable_files_give_not_recomputed_rows():
    from common.registry.errors import DownloadError

    def no_files(key: str) -> Path:
        raise DownloadError(f"{key}: no mirror and no network here")

    recs = rh.recompute(fetcher=no_files)
    assert {r.row for r in recs} == {"replace_rel_hp", "replace_attr_hp", "replace_total", "intro_replace_hp",
                                     "replaced_relations", "replaced_attributes"}
    assert all(r.value != r.value and "could not be fetched" in r.note for r in recs)  # NaN
