"""Cross-paper consistency: the identity table matches the transcriptions; verdicts on hand-made cases; the
comparison on the real transcriptions and BiVLC's released predictions (mirror)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from common.audit.consistency import (
    CONSISTENT, EXPLAINED, MACRO, MICRO, PER_CATEGORY, UNEXPLAINED, UNSTATED, Breakdown, Part, Printed, Side, compare)
from common.audit.cross_paper import CrossPaperIncomplete, read_released, run
from common.audit.identities import IdentityError, load_identities, resolve
from common.paths import PUBLISHED
from common.registry.errors import FetchError
from common.reporting.published import load_cells


def side(source: str, text: str, averaging: str = PER_CATEGORY, scale: int = 1) -> Side:
    return Side(source, Printed(text, scale), averaging)


# ---- the identity table ----------------------------------------------------------------------------------------

def test_identity_table_loads_and_every_mapping_exists_in_the_transcriptions():
    ids = load_identities()
    cells = {paper: load_cells(paper) for paper in {"aro", "bivlc", "conclip", "hard_positives", "sugarcrepe"}}
    members = resolve(ids, cells)  # raises IdentityError naming every label no published cell carries
    mapped = {(m.model, m.measure) for m in members}
    for model in ids.models:
        assert any(k[0] == model.id for k in mapped), f"model {model.id} maps no cell"
    for measure in ids.measures:
        assert any(k[1] == measure.id for k in mapped), f"measure {measure.id} maps no cell"
    # The shared numbers the issue names are joined: CLIP ViT-B/32 on SugarCrepe in SugarCrepe, CoN-CLIP, BiVLC.
    papers = {m.paper for m in members if m.model == "openai-clip-vit-b-32" and m.measure.startswith("sugarcrepe/")}
    assert papers == {"sugarcrepe", "conclip", "bivlc"}
    negclip = {m.paper for m in members if m.model == "negclip"}
    assert negclip == {"sugarcrepe", "aro", "bivlc", "hard_positives"}
    assert all(m.certainty == "uncertain" for m in members if m.paper == "hard_positives" and m.model == "negclip")


def test_a_label_missing_from_the_transcriptions_is_an_error_naming_it(tmp_path):
    text = (PUBLISHED / "cross_paper.toml").read_text(encoding="utf-8")
    (tmp_path / "ids.toml").write_text(text.replace('label = "CLIP | ViT-L/14"', 'label = "CLIP | ViT-L/41"', 1),
                                       encoding="utf-8")
    ids = load_identities(tmp_path / "ids.toml")
    cells = {paper: load_cells(paper) for paper in ids.papers}
    with pytest.raises(IdentityError, match=r"openai-clip-vit-l-14: conclip Table 4 has no row 'CLIP \| ViT-L/41'"):
        resolve(ids, cells)


def test_a_paper_typo_is_blamed_on_its_own_entry(tmp_path):
    """Issue 35: a typo in a [[table]]'s paper was reported against every model or measure that uses the layout."""
    text = (PUBLISHED / "cross_paper.toml").read_text(encoding="utf-8")
    (tmp_path / "ids.toml").write_text(text.replace('[[table]]\npaper = "bivlc"', '[[table]]\npaper = "bivcl"', 1),
                                       encoding="utf-8")
    line = text[:text.index('[[table]]\npaper = "bivlc"')].count("\n") + 1
    with pytest.raises(IdentityError) as caught:
        load_identities(tmp_path / "ids.toml")
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / 'ids.toml'}:{line}: [[table]] #8: paper 'bivcl' has no transcription")
    assert "did you mean 'bivlc'" in message and "\n" not in message


def test_the_identity_table_is_utf8_and_names_a_bad_byte(tmp_path):
    data = (PUBLISHED / "cross_paper.toml").read_bytes()
    (tmp_path / "ids.toml").write_bytes(data.replace(b"Evidence quotes", b"Evid\xe9nce quotes", 1))
    with pytest.raises(IdentityError, match=r"ids.toml:18: character 7: byte 0xe9 is not UTF-8"):
        load_identities(tmp_path / "ids.toml")
    (tmp_path / "ids.toml").write_bytes(b"\xef\xbb\xbf" + data)
    with pytest.raises(IdentityError, match=r"ids.toml:1: the file starts with a UTF-8 byte-order mark"):
        load_identities(tmp_path / "ids.toml")


@pytest.mark.parametrize("edit,named", [
    (lambda t: t.replace("\nn = 1652", '\nn = "1652"', 1), r"\[\[measure\]\] #1 \(sugarcrepe/replace-obj\): n '1652'"),
    (lambda t: t.replace("\nn = 1652", "\nn = 0", 1), r"n 0: Input should be greater than 0"),
    (lambda t: t.replace('certainty = "certain"', 'certainty = "sure"', 1), r"label 1: certainty 'sure'"),
    (lambda t: t.replace("reason = ", "reasons = ", 1), r"\[\[not_joined\]\] #1: unknown key 'reasons'"),
    (lambda t: t + '\n[[modle]]\nid = "x"\n', r"unknown key 'modle'"),
])
def test_the_identity_table_schema(edit, named, tmp_path):
    """Types, enums and key names of every section (a typo of a key was ignored, a count could be a string)."""
    (tmp_path / "ids.toml").write_text(edit((PUBLISHED / "cross_paper.toml").read_text(encoding="utf-8")),
                                       encoding="utf-8")
    with pytest.raises(IdentityError, match=named) as caught:
        load_identities(tmp_path / "ids.toml")
    assert "\n" not in str(caught.value)


def test_malformed_identity_entries_are_errors(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[[table]]\npaper = "aro"\ntable = "Table 6"\nmodel_axis = "diagonal"\n', encoding="utf-8")
    with pytest.raises(IdentityError, match=r"bad.toml:1: \[\[table\]\] #1: model_axis 'diagonal'"):
        load_identities(bad)
    bad.write_text('[[table]]\npaper = "aro"\ntable = "Table 6"\nmodel_axis = "row"\n[[model]]\nid = "x"\n'
                   'name = "X"\nlabels = [{ paper = "aro", table = "Table 6", label = "CLIP", certainty = "maybe" }]\n',
                   encoding="utf-8")
    with pytest.raises(IdentityError, match="certainty 'maybe'"):
        load_identities(bad)


# ---- verdicts on hand-made cases ----------------------------------------------------------------------------------

def test_within_printed_precision_is_consistent():
    assert compare(side("p", "80.08"), side("q", "80.07"), 788).verdict == CONSISTENT
    # a fraction with two decimals stands for +-0.5 points
    assert compare(side("p", "0.71", MACRO, 100), side("q", "70.9", MICRO)).verdict == CONSISTENT
    assert compare(side("p", "80.08"), side("q", "80.06"), 788).verdict != CONSISTENT


def test_a_truncated_last_digit_is_named_as_the_rounding_rule():
    # 631/788 = 80.0761...: one paper rounds to 80.08, the other truncates to 80.07 (one unit apart: consistent)
    verdict = compare(side("p", "80.08"), side("q", "80.07"), 788)
    assert (verdict.verdict, verdict.cause) == (CONSISTENT, "rounding rule"), verdict
    assert "631/788" in verdict.evidence and "q truncates it to 80.07" in verdict.evidence
    # with no whole count behind both, only the printed precision is left
    assert compare(side("p", "80.08"), side("q", "80.07")).cause == "within printed precision"


def test_one_example_fewer_is_a_data_version():
    # 148/246 = 60.16 in one paper; the other's set lost an example: 147/245 = 60.00 exactly.
    verdict = compare(side("p", "60.16"), side("q", "60.00"), 246, other_sizes={245: "the release has 245"})
    assert (verdict.verdict, verdict.cause) == (EXPLAINED, "data version"), verdict
    assert "147/245" in verdict.evidence and "the release has 245" in verdict.evidence
    # without a known size, n - 1 is still tried
    assert compare(side("p", "60.16"), side("q", "60.00"), 246).cause == "data version"


def test_micro_against_macro_is_explained_by_averaging():
    parts = (Part(Printed("90.00"), 100), Part(Printed("50.00"), 300))  # micro 60.00, macro 70.00
    breakdown = Breakdown("p's per-category table", parts)
    verdict = compare(side("p", "70.00", MACRO), side("q", "60.00", UNSTATED), breakdowns=[breakdown])
    assert (verdict.verdict, verdict.cause) == (EXPLAINED, "averaging"), verdict
    assert "micro over 400 examples = 60.00" in verdict.evidence and "macro over 2 parts = 70.00" in verdict.evidence
    # a stated averaging that the number does not fit is not explained by that averaging
    assert compare(side("p", "70.00", MACRO), side("q", "61.00", MICRO), breakdowns=[breakdown]).verdict == UNEXPLAINED


def test_unlisted_examples_widen_the_micro_interval():
    parts = (Part(Printed("0.50", 100), 100),)
    breakdown = Breakdown("t", parts, total=200)  # 100 examples unlisted: micro anywhere in [24.75, 75.25]
    low, high = breakdown.interval(MICRO)
    assert (float(low), float(high)) == (24.75, 75.25)


def test_a_real_difference_is_unexplained_with_the_counts_it_implies():
    verdict = compare(side("sugarcrepe", "90.92"), side("conclip", "90.79"), 1652)
    assert verdict.verdict == UNEXPLAINED
    assert "1502/1652" in verdict.evidence and "1500/1652 (truncates)" in verdict.evidence
    assert "2 examples" in verdict.evidence
    assert compare(side("a", "0.46", scale=100), side("b", "37.14")).verdict == UNEXPLAINED


# ---- released per-example files -------------------------------------------------------------------------------

def _spec():
    ids = load_identities()
    return ids.released[0]


def test_released_file_with_a_bad_flag_names_the_file_and_line(tmp_path):
    f = tmp_path / "preds.csv"
    f.write_text('"filename","type","subtype","correct"\n"a.jpg","add","obj","1"\n"b.jpg","add","obj","yes"\n',
                 encoding="utf-8")
    with pytest.raises(Exception, match=r"preds.csv:3: column 'correct': 'yes', expected 0 or 1"):
        read_released(f, _spec())
    f.write_text('"filename","type","subtype","correct"\n"a.jpg","add","thing","1"\n', encoding="utf-8")
    with pytest.raises(Exception, match=r"preds.csv:2: column\(s\) type/subtype: category 'add/thing'"):
        read_released(f, _spec())
    f.write_text('"filename","type","correct"\n', encoding="utf-8")
    with pytest.raises(Exception, match=r"missing column\(s\) \['subtype'\]"):
        read_released(f, _spec())


def test_a_released_file_with_an_example_twice_is_an_error(tmp_path):
    """Issue 35: a copied row counted an example twice, silently."""
    f = tmp_path / "preds.csv"
    row = '"a.jpg","cap","neg","add","obj","1"\n'
    f.write_text('"filename","caption","negative_caption","type","subtype","correct"\n' + row + row, encoding="utf-8")
    with pytest.raises(Exception, match=r"preds.csv:3: the same row as line 2"):
        read_released(f, _spec())


def test_a_released_file_in_cp1252_names_the_line_and_column(tmp_path):
    f = tmp_path / "preds.csv"
    f.write_bytes(b'"filename","type","subtype","correct"\n"caf\xe9.jpg","add","obj","1"\n')
    with pytest.raises(Exception, match=r"preds.csv:2: column 'filename': byte 0xe9 is not UTF-8"):
        read_released(f, _spec())


def test_witness_rows_missing_or_not_numbers_are_errors(tmp_path):
    from common.audit.cross_paper import read_witness

    spec = load_identities().witnesses[0]
    f = tmp_path / "w.csv"
    header = ["arch", "pretrained", *spec.columns.values()]
    good = {"arch": "ViT-B-32", "pretrained": "openai", **{c: "50.0" for c in spec.columns.values()}}
    rows = [good, {**good, "arch": "ViT-L-14"}, {**good, "arch": "NegCLIP", "pretrained": "coco-ft"}]
    rows[1]["aro::VG_Relation"] = "-"

    def write(rs):
        with open(f, "w", newline="", encoding="utf-8") as fh:
            import csv as _csv
            w = _csv.DictWriter(fh, fieldnames=header)
            w.writeheader()
            w.writerows(rs)

    write(rows)
    with pytest.raises(Exception, match=r"w.csv:3 \(ViT-L-14/openai\): column 'aro::VG_Relation': '-' is not a number "
                                         "as a table prints it"):
        read_witness(f, spec)
    rows[1]["aro::VG_Relation"] = "6_1.5"  # float() reads 61.5
    write(rows)
    with pytest.raises(Exception, match=r"w.csv:3 \(ViT-L-14/openai\): column 'aro::VG_Relation': '6_1.5'"):
        read_witness(f, spec)
    write([rows[0], rows[2]])
    with pytest.raises(Exception, match=r"no row \['ViT-L-14/openai'\]"):
        read_witness(f, spec)
    rows[1]["aro::VG_Relation"] = "61.5"
    write(rows)
    values = read_witness(f, spec)
    assert values[("openai-clip-vit-l-14", "aro/vg-relation")] == "61.500000"


def test_strict_with_an_unreadable_release_writes_nothing(tmp_path):
    def unreadable(key: str) -> Path:
        raise FetchError(f"{key}: not in the mirror")

    out = tmp_path / "audit"
    out.mkdir()
    (out / "cross_paper.md").write_text("previous\n")
    with pytest.raises(CrossPaperIncomplete, match="nothing was written"):
        run(out_dir=out, fetcher=unreadable, strict=True)
    assert (out / "cross_paper.md").read_text() == "previous\n"
    assert sorted(p.name for p in out.iterdir()) == ["cross_paper.md"]


def test_comparison_on_the_transcriptions_and_bivlcs_released_predictions(tmp_path, released_env):
    import csv

    rows, paths = run(out_dir=tmp_path)
    by = {(r.kind, r.model, r.measure, r.source_b): r for r in rows}
    # BiVLC's released CLIP predictions reproduce SugarCrepe's Table 6 in every category and its macro Average,
    # and BiVLC's own SugarCrepe column as a micro average.
    for cat in ("replace-obj", "replace-att", "replace-rel", "swap-obj", "swap-att", "add-obj", "add-att"):
        assert by[("released", "openai-clip-vit-b-32", f"sugarcrepe/{cat}", "sugarcrepe")].verdict == CONSISTENT
    assert by[("released", "openai-clip-vit-b-32", "sugarcrepe/overall", "bivlc")].averaging_a == MICRO
    # ... and not CoN-CLIP's SWAP-OBJ, which fits no count of 246 (149/245 truncated).
    swap = by[("released", "openai-clip-vit-b-32", "sugarcrepe/swap-obj", "conclip")]
    assert swap.verdict == UNEXPLAINED and "149/245 (truncates)" in swap.evidence
    # SugarCrepe's macro Average vs BiVLC's micro column: explained by averaging from Table 6's categories.
    overall = by[("papers", "openai-clip-vit-b-32", "sugarcrepe/overall", "bivlc")]
    assert (overall.verdict, overall.cause) == (EXPLAINED, "averaging")
    # NegCLIP's BiVLC number is not SugarCrepe's categories averaged either way.
    assert by[("papers", "negclip", "sugarcrepe/overall", "bivlc")].verdict == UNEXPLAINED
    # the third witness (Oh et al.'s table) counts SWAP-OBJ on the released 245 examples: 150/245 vs 151/246
    witness = by[("witness", "openai-clip-vit-b-32", "sugarcrepe/swap-obj", "sugarcrepe")]
    assert (witness.verdict, witness.cause) == (EXPLAINED, "data version") and "150/245" in witness.evidence
    assert by[("witness", "openai-clip-vit-b-32", "sugarcrepe/replace-obj", "sugarcrepe")].verdict == CONSISTENT
    # discrepancies first, metrics a short flat table
    with open(paths["csv"], newline="", encoding="utf-8") as fh:
        verdicts = [r["verdict"] for r in csv.DictReader(fh) if r["kind"] == "papers"]
    assert verdicts == sorted(verdicts, key=["unexplained", "explained", "consistent"].index)
    metrics = json.loads(Path(paths["metrics"]).read_text())
    assert metrics["pairs"] == sum(metrics[f"pairs_{v}"] for v in ("consistent", "explained", "unexplained"))
    assert len(metrics) <= 12 and Path(paths["figure"]).stat().st_size > 10_000


def test_committed_comparison_is_current(tmp_path, released_env):
    """results/audit/cross_paper.csv is what the code writes today (the stage was rerun after every change)."""
    committed = Path(PUBLISHED.parent / "audit" / "cross_paper.csv")
    if not committed.is_file():
        pytest.skip("no committed comparison")
    _, paths = run(out_dir=tmp_path)
    assert Path(paths["csv"]).read_text(encoding="utf-8") == committed.read_text(encoding="utf-8")
    shutil.rmtree(tmp_path, ignore_errors=True)
