"""The audit's core (common/audit/core.py) and its report (common/audit/report.py), on small synthetic inputs.

Verdicts: equality after the printed rounding, the claim comparisons (>, >=, <, <=, ~), unit conversion
(fraction <-> percent), the std / default run tolerances, mini-profile rows (never compared), malformed
recomputations (AuditError), the ordering of the rows (discrepancies first), and the files write_audit
produces. Plus the ``comparison`` column of the claims schema (common/reporting/published.py).
"""
from __future__ import annotations

import csv
import json
import math

import pytest

from common.audit.core import (
    CLAIM_TABLE, DEFAULT_RUN_TOLERANCE, VERDICTS, AuditError, Recomputed, VerdictCounts, audit_rows, convert,
    printed_half_unit)
from common.reporting.published import (
    CLAIM_FIELDS, COMPARISONS, PublishedCell, PublishedClaim, PublishedDataError, load_claims)

PAPER = "toy"


# ----------------------------------------------------------------------------------------- builders
def cell(table: str, row: str, column: str, text: str, unit: str = "percent") -> PublishedCell:
    return PublishedCell(PAPER, table, row, column, float(text), unit, "ok", "", "", 0, text)


def claim(claim_id: str, text: str, comparison: str = "=", unit: str = "percent", quote: str = "") -> PublishedClaim:
    return PublishedClaim(PAPER, claim_id, "Sec. 1", quote or f"the text says {text}", float(text) if text else None,
                          unit, comparison, "", "", 0, text)


def rec(table: str, row: str, column: str, value: float, unit: str = "percent", rule: str = "exact",
        profile: str = "released", tolerance: float | None = None, source: str = "test") -> Recomputed:
    return Recomputed(PAPER, table, row, column, value, unit, source, profile, rule, tolerance)


def claim_rec(claim_id: str, value: float, unit: str = "percent", rule: str = "claim", **kw) -> Recomputed:
    kw.setdefault("profile", "paper")
    return rec(CLAIM_TABLE, claim_id, "value", value, unit, rule, **kw)


def one(cells=(), claims=(), recs=()):
    rows = [r for r in audit_rows(PAPER, list(cells), list(claims), list(recs)) if r.recomputed is not None
            or r.verdict == "mini profile: not comparable"]
    assert len(rows) == 1, rows
    return rows[0]


def verdict_of_claim(text: str, comparison: str, value: float, unit: str = "percent", **kw) -> str:
    return one(claims=[claim("c", text, comparison, unit)], recs=[claim_rec("c", value, unit, **kw)]).verdict


# ----------------------------------------------------------------------------------------- equality
def test_printed_half_unit():
    assert printed_half_unit("91.77") == pytest.approx(0.005)
    assert printed_half_unit("17") == pytest.approx(0.5)
    assert printed_half_unit("0.595") == pytest.approx(0.0005)
    assert printed_half_unit("50.00") == pytest.approx(0.005)  # trailing zeros are printed precision


@pytest.mark.parametrize("value,verdict", [(91.774, "reproduced"), (91.7651, "reproduced"), (91.77, "reproduced"),
                                           (91.776, "differs"), (91.764, "differs")])
def test_equality_after_printed_rounding(value, verdict):
    c = cell("Table 1", "CLIP", "Acc", "91.77")
    row = one(cells=[c], recs=[rec("Table 1", "CLIP", "Acc", value)])
    assert row.verdict == verdict
    assert row.tolerance == pytest.approx(0.005, abs=1e-8)
    assert row.difference == pytest.approx(value - 91.77)
    assert row.published_text == "91.77"


def test_claim_equality_uses_the_claims_printed_precision():
    assert verdict_of_claim("24.4", "=", 24.3714) == "reproduced"
    assert verdict_of_claim("24.4", "=", 24.34) == "differs"
    assert verdict_of_claim("99", "=", 98.5) == "reproduced"  # 98.5 rounds half-up to 99: at the edge
    assert verdict_of_claim("94", "=", 94.51) == "differs"


def test_empty_comparison_means_equality():
    c = claim("c", "10", "")
    row = one(claims=[c], recs=[claim_rec("c", 10.4)])
    assert row.verdict == "reproduced"


# ----------------------------------------------------------------------------------------- bounds
@pytest.mark.parametrize("comparison,value,verdict", [
    (">", 0.81, "reproduced"), (">", 0.8, "differs"), (">", 0.78, "differs"),  # no rounding slack on a bound
    (">=", 0.8, "reproduced"), (">=", 0.85, "reproduced"), (">=", 0.7999, "differs"),
    ("<", 0.79, "reproduced"), ("<", 0.8, "differs"), ("<", 0.82, "differs"),
    ("<=", 0.8, "reproduced"), ("<=", 0.1, "reproduced"), ("<=", 0.8001, "differs"),
])
def test_bound_comparisons(comparison, value, verdict):
    assert verdict_of_claim("0.8", comparison, value, unit="other") == verdict


def test_bound_has_no_slack_under_exact_and_claim_rules():
    for rule in ("exact", "claim"):
        row = one(claims=[claim("r", "0.8", ">", "other")], recs=[claim_rec("r", 0.78, "other", rule=rule)])
        assert row.tolerance == 0.0 and row.verdict == "differs"


def test_bound_absorbs_float_noise_only_for_non_strict():
    assert verdict_of_claim("0", ">=", -1e-13, unit="points") == "reproduced"
    assert verdict_of_claim("0", "<=", 1e-13, unit="points") == "reproduced"
    assert verdict_of_claim("0", ">=", -1e-6, unit="points") == "differs"


def test_bound_with_explicit_or_run_tolerance_gives_slack_in_the_claims_favour():
    row = one(claims=[claim("r", "30", ">", "points")],
              recs=[claim_rec("r", 29.6, "points", rule="default", profile="full")])
    assert row.tolerance == DEFAULT_RUN_TOLERANCE["points"] and row.verdict == "reproduced"
    row = one(claims=[claim("r", "30", "<", "points")], recs=[claim_rec("r", 30.2, "points", tolerance=0.5)])
    assert row.verdict == "reproduced"
    row = one(claims=[claim("r", "30", "<", "points")], recs=[claim_rec("r", 30.6, "points", tolerance=0.5)])
    assert row.verdict == "differs"


def test_bound_difference_is_signed():
    row = one(claims=[claim("r", "20", ">", "points")], recs=[claim_rec("r", 27.03, "points")])
    assert row.verdict == "reproduced" and row.difference == pytest.approx(7.03)


# ----------------------------------------------------------------------------------------- approximate
@pytest.mark.parametrize("text,value,verdict", [
    ("9", 9.85, "reproduced"), ("9", 8.15, "reproduced"), ("9", 10.1, "differs"), ("9", 7.9, "differs"),
    ("3000", 2933, "reproduced"), ("7000", 7512, "reproduced"), ("7000", 7800, "differs"),
    ("387", 379.5, "reproduced"), ("10", 12.34, "differs"), ("10", 9.26, "reproduced"),
])
def test_approximate_claims_get_ten_percent(text, value, verdict):
    assert verdict_of_claim(text, "~", value, unit="count") == verdict


def test_approximate_tolerance_is_never_below_the_printed_rounding():
    row = one(claims=[claim("a", "1", "~", "count")], recs=[claim_rec("a", 1.45, "count")])
    assert row.tolerance == pytest.approx(0.5, abs=1e-8) and row.verdict == "reproduced"
    row = one(claims=[claim("a", "200", "~", "count")], recs=[claim_rec("a", 219, "count")])
    assert row.tolerance == pytest.approx(20.0, abs=1e-8) and row.verdict == "reproduced"


def test_approximate_widens_run_tolerances_too():
    row = one(claims=[claim("a", "61", "~")], recs=[claim_rec("a", 58.0, rule="default", profile="full")])
    assert row.tolerance == pytest.approx(6.1, abs=1e-8) and row.verdict == "reproduced"


def test_approximate_relative_slack_is_a_parameter():
    from common.audit.core import _Published, tolerance_for

    pub = _Published(CLAIM_TABLE, "a", "value", 50.0, "50", "percent", comparison="~")
    r = claim_rec("a", 52.0)
    assert tolerance_for(r, pub) == pytest.approx(5.0, abs=1e-8)
    assert tolerance_for(r, pub, approx_relative=0.05) == pytest.approx(2.5, abs=1e-8)


# ----------------------------------------------------------------------------------------- units
def test_fraction_recomputation_compared_with_percent_cell():
    c = cell("Table 6", "CLIP", "Acc", "91.77", "percent")
    row = one(cells=[c], recs=[rec("Table 6", "CLIP", "Acc", 0.91774, unit="fraction")])
    assert row.recomputed == pytest.approx(91.774) and row.unit == "percent" and row.verdict == "reproduced"
    row = one(cells=[c], recs=[rec("Table 6", "CLIP", "Acc", 0.91776, unit="fraction")])
    assert row.verdict == "differs"


def test_percent_recomputation_compared_with_fraction_cell():
    c = cell("Table 2", "CLIP", "Acc", "0.59", "fraction")
    row = one(cells=[c], recs=[rec("Table 2", "CLIP", "Acc", 59.4, unit="percent")])
    assert row.recomputed == pytest.approx(0.594) and row.verdict == "reproduced"
    row = one(cells=[c], recs=[rec("Table 2", "CLIP", "Acc", 59.6, unit="percent")])
    assert row.verdict == "differs"


def test_unit_conversion_applies_to_bounds_and_approximations():
    assert verdict_of_claim("50", ">", 0.608, unit="percent") == "differs"  # same unit: 0.608 is not > 50
    row = one(claims=[claim("c", "50", ">", "percent")], recs=[claim_rec("c", 0.608, "fraction")])
    assert row.recomputed == pytest.approx(60.8) and row.verdict == "reproduced"
    row = one(claims=[claim("c", "61", "~", "percent")], recs=[claim_rec("c", 0.6096, "fraction")])
    assert row.verdict == "reproduced"


def test_convert():
    assert convert(0.5, "fraction", "percent") == 50.0
    assert convert(50.0, "percent", "fraction") == 0.5
    assert convert(3.0, "count", "count") == 3.0
    with pytest.raises(AuditError, match="cannot compare"):
        convert(3.0, "count", "percent")


def test_incompatible_units_raise():
    with pytest.raises(AuditError, match="cannot compare"):
        audit_rows(PAPER, [cell("T", "r", "c", "5", "count")], [], [rec("T", "r", "c", 5.0, unit="percent")])


# ----------------------------------------------------------------------------------------- run tolerances
def _std_cells():
    return [cell("Table 5", "CLIP", "Accuracy", "0.595", "fraction"),
            cell("Table 5", "CLIP", "Accuracy | std", "0.012", "fraction")]


@pytest.mark.parametrize("value,verdict", [(0.606, "reproduced"), (0.584, "reproduced"), (0.6075, "differs"), (0.582, "differs")])
def test_std_tolerance(value, verdict):
    row = one(cells=_std_cells(),
              recs=[rec("Table 5", "CLIP", "Accuracy", value, "fraction", rule="std", profile="full")])
    assert row.tolerance == pytest.approx(0.012) and row.verdict == verdict


def test_std_tolerance_without_a_published_std_raises():
    with pytest.raises(AuditError, match="no std"):
        audit_rows(PAPER, [cell("T", "r", "c", "50.0")], [], [rec("T", "r", "c", 50.0, rule="std", profile="full")])


@pytest.mark.parametrize("unit,text,value,verdict", [
    ("percent", "76.56", 77.5, "reproduced"), ("percent", "76.56", 77.6, "differs"),
    ("points", "10.0", 9.1, "reproduced"), ("fraction", "0.59", 0.599, "reproduced"), ("fraction", "0.59", 0.601, "differs"),
])
def test_default_run_tolerance(unit, text, value, verdict):
    row = one(cells=[cell("T", "r", "c", text, unit)], recs=[rec("T", "r", "c", value, unit, rule="default", profile="full")])
    assert row.tolerance == DEFAULT_RUN_TOLERANCE[unit] and row.verdict == verdict


def test_default_tolerance_is_zero_for_units_without_one():
    row = one(cells=[cell("T", "r", "c", "5", "count")], recs=[rec("T", "r", "c", 5.2, "count", rule="default", profile="full")])
    assert row.tolerance == 0.0 and row.verdict == "differs"


def test_explicit_tolerance_wins():
    row = one(cells=[cell("T", "r", "c", "50.00")], recs=[rec("T", "r", "c", 50.2, tolerance=0.25)])
    assert row.tolerance == 0.25 and row.verdict == "reproduced"


def test_unknown_tolerance_rule_raises():
    with pytest.raises(AuditError, match="unknown tolerance rule"):
        audit_rows(PAPER, [cell("T", "r", "c", "50.00")], [], [rec("T", "r", "c", 50.0, rule="close enough")])


# ----------------------------------------------------------------------------------------- mini profile
def test_mini_profile_is_never_compared():
    c = cell("Table 6", "CLIP", "Acc", "91.77")
    for value in (91.77, 10.0, math.nan):
        row = one(cells=[c], recs=[rec("Table 6", "CLIP", "Acc", value, profile="mini", rule="default")])
        assert row.verdict == "mini profile: not comparable"
        assert row.recomputed is None and row.difference is None and row.tolerance is None
        assert row.published == 91.77


def test_mini_row_next_to_a_full_row():
    c = cell("Table 6", "CLIP", "Acc", "91.77")
    rows = audit_rows(PAPER, [c], [], [rec("Table 6", "CLIP", "Acc", 91.77, profile="mini", rule="default"),
                                       rec("Table 6", "CLIP", "Acc", 91.5, profile="full", rule="default")])
    assert [r.verdict for r in rows] == ["reproduced", "mini profile: not comparable"]


def test_nan_recomputation_is_not_recomputed_yet():
    row = audit_rows(PAPER, [cell("T", "r", "c", "1.0")], [], [rec("T", "r", "c", math.nan)])[0]
    assert row.verdict == "not recomputed yet" and row.source == "test"


def test_unknown_profile_raises():
    with pytest.raises(AuditError, match="profile"):
        rec("T", "r", "c", 1.0, profile="tiny")


# ----------------------------------------------------------------------------------------- malformed input
def test_unknown_recomputation_key_raises():
    with pytest.raises(AuditError, match="match no published cell or claim"):
        audit_rows(PAPER, [cell("Table 1", "CLIP", "Acc", "50.0")], [], [rec("Table 1", "CLIP", "Accuracy", 50.0)])
    with pytest.raises(AuditError, match="match no published cell or claim"):
        audit_rows(PAPER, [], [claim("known", "5")], [claim_rec("unknown", 5.0)])


def test_recomputation_of_another_paper_raises():
    other = Recomputed("other", "T", "r", "c", 1.0, "percent", "test", "released")
    with pytest.raises(AuditError, match="other"):
        audit_rows(PAPER, [cell("T", "r", "c", "1.0")], [], [other])


def test_unknown_comparison_raises():
    from common.audit.core import _Published, _verdict

    with pytest.raises(AuditError, match="unknown comparison"):
        _verdict(_Published(CLAIM_TABLE, "c", "value", 1.0, "1", "count", comparison="≈"), 1.0, 0.5)


# ----------------------------------------------------------------------------------------- coverage and order
def test_every_published_number_appears_once_without_recomputation():
    cells = [cell("T", "a", "c", "1.0"), cell("T", "b", "c", "2.0"),
             PublishedCell(PAPER, "T", "x", "c", None, "percent", "not_reported", "", "", 0, "")]
    rows = audit_rows(PAPER, cells, [claim("k", "3"), claim("no_number", "")], [])
    assert sorted((r.table, r.row) for r in rows) == sorted([(CLAIM_TABLE, "k"), ("T", "a"), ("T", "b")])
    assert {r.verdict for r in rows} == {"not recomputed yet"}
    assert next(r for r in rows if r.row == "k").note == "the text says 3"  # a claim row carries its quote


def test_ordering_discrepancies_first():
    cells = [cell("Table 1", f"m{i}", "Acc", "50.00") for i in range(5)] + [cell("Table 1", "pending", "Acc", "1.00")]
    claims = [claim("small_miss", "10"), claim("big_miss", "10"), claim("ok", "10"), claim("mini", "10")]
    recs = [
        rec("Table 1", "m0", "Acc", 50.001), rec("Table 1", "m1", "Acc", 52.0), rec("Table 1", "m2", "Acc", 57.0),
        rec("Table 1", "m3", "Acc", 50.0, profile="mini", rule="default"), rec("Table 1", "m4", "Acc", 50.002),
        claim_rec("small_miss", 11.0), claim_rec("big_miss", 30.0), claim_rec("ok", 10.2),
    ]
    rows = audit_rows(PAPER, cells, claims, recs)
    order = {v: i for i, v in enumerate(VERDICTS)}
    assert [order[r.verdict] for r in rows] == sorted(order[r.verdict] for r in rows)
    differs = [(r.table, r.row) for r in rows if r.verdict == "differs"]
    # claims first, then tables; within each, the largest |difference| first
    assert differs == [(CLAIM_TABLE, "big_miss"), (CLAIM_TABLE, "small_miss"), ("Table 1", "m2"), ("Table 1", "m1")]
    assert rows[0].verdict == "differs" and rows[-1].verdict == "mini profile: not comparable"
    assert VerdictCounts.of(rows).counts == {"differs": 4, "reproduced": 3, "not recomputed yet": 2,
                                             "mini profile: not comparable": 1}


# ----------------------------------------------------------------------------------------- write_audit
def _report_inputs():
    long_note = "a very long note " * 40
    long_source = "released file " + "x" * 300
    long_quote = "a long claim quote that goes on and on " * 5
    cells = [cell("Table 6", "CLIP", "Acc", "91.77"), cell("Table 6", "BLIP", "Acc", "80.00")]
    claims = [claim("r_gt", "0.8", ">", "other", quote="strong on all other hard negatives (r > 0.8)"),
              claim("about_9", "9", "~", "points", quote=long_quote), claim("eq", "12.9", "=", "points")]
    recs = [rec("Table 6", "CLIP", "Acc", 0.91772, unit="fraction", source=long_source),
            Recomputed(PAPER, "Table 6", "BLIP", "Acc", 70.0, "percent", "run x", "full", "default", note=long_note),
            claim_rec("r_gt", 0.78, "other", source="paper tables: max(" + "cell('T', 'r', 'c'), " * 30 + ")"),
            claim_rec("about_9", 9.5, "points"), claim_rec("eq", 12.9, "points")]
    return cells, claims, recs, long_note, long_source, long_quote


def test_write_audit_writes_md_csv_json_png(tmp_path):
    from common.audit.report import FIELDS, write_audit

    cells, claims, recs, long_note, long_source, long_quote = _report_inputs()
    rows = audit_rows(PAPER, cells, claims, recs)
    paths = write_audit(PAPER, rows, tmp_path / "audit", "full", claims=claims)
    assert set(paths) == {"markdown", "csv", "metrics", "figure"}
    assert paths["markdown"] == tmp_path / "audit" / f"{PAPER}.md"
    assert paths["csv"] == tmp_path / "audit" / f"{PAPER}.csv"
    assert paths["metrics"] == tmp_path / "audit" / f"{PAPER}_summary.json"
    assert paths["figure"] == tmp_path / "audit" / f"{PAPER}.png"
    for p in paths.values():
        assert p.is_file() and p.stat().st_size > 0
    assert paths["figure"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    summary = json.loads(paths["metrics"].read_text())
    # DVC metrics: only the numbers a reader compares (context is in the Markdown and CSV)
    assert summary == {"differs": 2, "reproduced": 3, "not recomputed yet": 0, "mini profile: not comparable": 0}

    with open(paths["csv"], newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        assert tuple(reader.fieldnames) == FIELDS
        table = list(reader)
    assert [r["verdict"] for r in table][:2] == ["differs", "differs"]
    by_row = {r["row"]: r for r in table}
    assert by_row["r_gt"]["comparison"] == ">" and by_row["r_gt"]["quote"].startswith("strong on all")
    assert by_row["about_9"]["comparison"] == "~" and by_row["CLIP"]["comparison"] == "="
    assert by_row["BLIP"]["note"] == long_note and by_row["CLIP"]["source"] == long_source  # full text in the CSV
    assert by_row["about_9"]["quote"] == long_quote

    md = paths["markdown"].read_text()
    assert md.index("## Discrepancies (2)") < md.index("## Reproduced (3)")
    discrepancies = md[md.index("## Discrepancies"):md.index("## Reproduced")]
    assert "claim `r_gt`" in discrepancies and "> 0.8" in discrepancies and "Table 6 · BLIP · Acc" in discrepancies
    assert discrepancies.index("claim `r_gt`") < discrepancies.index("Table 6 · BLIP")
    assert "strong on all other hard negatives (r > 0.8)" in md
    assert "~ 9" in md and long_quote.strip() not in md and "…" in md
    assert long_note.strip() not in md and long_source not in md  # cut in the Markdown
    assert "cell('T', 'r', 'c')" not in md  # no enormous recompute expression
    assert max(len(line) for line in md.splitlines() if line.startswith("|")) < 450


def test_a_caveat_rides_in_the_verdict_text_not_in_the_verdict(tmp_path):
    """A caveat (a method reconstructed here, a deliberate deviation) leaves the verdict, its count and its section
    alone and is written into the verdict text: the CSV's ``verdict`` column and the Markdown row."""
    from common.audit.report import write_audit

    cells = [cell("T1", "ours", "acc", "50.0"), cell("T1", "base", "acc", "40.0")]
    recs = [Recomputed(PAPER, "T1", "ours", "acc", 50.2, "percent", "run", "full", "default",
                       caveat="method unverified: no released training code"),
            rec("T1", "base", "acc", 45.0, rule="default", profile="full")]
    rows = {r.row: r for r in audit_rows(PAPER, cells, [], recs)}
    assert rows["ours"].verdict == "reproduced" and rows["base"].verdict == "differs"
    assert rows["ours"].verdict_text == "reproduced; method unverified: no released training code"
    assert rows["base"].verdict_text == "differs"
    paths = write_audit(PAPER, list(rows.values()), tmp_path, "full", claims=[])
    with open(paths["csv"], newline="", encoding="utf-8") as fh:
        written = {r["row"]: r["verdict"] for r in csv.DictReader(fh)}
    assert written == {"ours": "reproduced; method unverified: no released training code", "base": "differs"}
    assert json.loads(paths["metrics"].read_text())["reproduced"] == 1
    assert "**method unverified: no released training code**" in paths["markdown"].read_text()


def test_write_audit_reads_the_claims_file_when_not_given(tmp_path):
    from common.audit.report import write_audit

    cells, claims, recs, *_ = _report_inputs()
    rows = audit_rows(PAPER, cells, claims, recs)
    paths = write_audit(PAPER, rows, tmp_path, "mini")  # no results/published/toy_claims.csv: plain rows
    md = paths["markdown"].read_text()
    assert "claim `r_gt`" in md and "> 0.8" not in md


def test_write_audit_on_a_real_paper(tmp_path):
    from common.audit import claims as claim_recs
    from common.audit.report import write_audit
    from common.reporting.published import load_cells

    rows = audit_rows("conclip", load_cells("conclip"), load_claims("conclip"), claim_recs.recompute("conclip"))
    paths = write_audit("conclip", rows, tmp_path, "mini")
    md = paths["markdown"].read_text()
    assert "> 30" in md and "<= 40000" in md and "~ 400" not in md  # clip_pretrain_pairs is not recomputed
    verdicts = {r.row: r.verdict for r in rows if r.table == CLAIM_TABLE}
    assert verdicts["margin_over_30"] == verdicts["k5_above_99"] == verdicts["heldout_sec41"] == "reproduced"
    assert verdicts["zs_gain_abstract"] == "differs"


# ----------------------------------------------------------------------------------------- claims schema
def _write_claims(root, comparison: str) -> None:
    header = ",".join(CLAIM_FIELDS)
    (root / "toy_claims.csv").write_text(
        f"{header}\n"
        f"toy,ok,Sec. 1,more than 3,3,count,>,,\n"
        f"toy,bad,Sec. 2,about 5,5,count,{comparison},,\n", encoding="utf-8")


def test_claims_schema_has_comparison_after_unit():
    assert CLAIM_FIELDS.index("comparison") == CLAIM_FIELDS.index("unit") + 1
    assert set(COMPARISONS) == {"=", ">", ">=", "<", "<=", "~"}


def test_load_claims_reads_and_validates_comparison(tmp_path):
    _write_claims(tmp_path, "~")
    loaded = load_claims("toy", root=tmp_path)
    assert [(c.claim_id, c.comparison) for c in loaded] == [("ok", ">"), ("bad", "~")]
    _write_claims(tmp_path, "")
    assert load_claims("toy", root=tmp_path)[1].comparison == "="
    _write_claims(tmp_path, "about")
    with pytest.raises(PublishedDataError) as exc:
        load_claims("toy", root=tmp_path)
    assert f"{tmp_path / 'toy_claims.csv'}:3" in str(exc.value) and "'about'" in str(exc.value)


def test_every_published_claim_has_a_valid_comparison():
    from common.plugins import paper_names
    from common.reporting.published import PUBLISHED

    assert len(paper_names()) == 5
    for paper in paper_names():
        with open(PUBLISHED / f"{paper}_claims.csv", newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
        assert rows and all(r["comparison"] in COMPARISONS for r in rows), paper  # filled explicitly, never empty


# ----------------------------------------------------------------------------------------- run tables (issue 35)
def _write_full_bivlc(folder, rows: list[dict]) -> None:
    from papers.bivlc import audit as bivlc_audit

    out = folder / "bivlc" / "full"
    out.mkdir(parents=True)
    columns = ["row", *bivlc_audit.MAIN_COLUMNS, *bivlc_audit.FINER_COLUMNS]
    with open(out / "table2.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows({c: r.get(c, "50.0") for c in columns} for r in rows)


def test_a_full_run_leaves_empty_only_what_its_writer_documents(tmp_path):
    """BiVLC's full tables stage writes no SugarCrepe number when it was given no SugarCrepe set: that cell is
    not recomputed. An empty I2T is damage: before issue 35 it was dropped silently, the audit one cell smaller."""
    from common.audit.runs import RunTableError
    from papers.bivlc import audit as bivlc_audit

    _write_full_bivlc(tmp_path / "a", [{"row": "clip", "sugarcrepe": ""}])
    recs = {(r.table, r.column) for r in bivlc_audit.run_recomputations("full", tmp_path / "a")}
    assert ("Table 2", "BiVLC | I2T") in recs and ("Table 2", "SugarCrepe") not in recs
    _write_full_bivlc(tmp_path / "b", [{"row": "clip", "I2T": ""}])
    with pytest.raises(RunTableError, match=r"table2.csv:2: column 'I2T': empty where a number is expected"):
        bivlc_audit.run_recomputations("full", tmp_path / "b")


@pytest.mark.parametrize("paper", ["aro", "bivlc", "conclip", "hard_positives", "sugarcrepe"])
def test_every_committed_mini_run_reads_and_covers_what_the_audit_says(paper):
    """The checks refuse no table the mini pipeline wrote: each audit covers exactly the cells its committed
    results/audit/<paper>_summary.json counts as not comparable."""
    from common.paper import load_paper
    from common.paths import RESULTS
    from common.pipeline.params import read_params

    module = load_paper(paper).audit.load()
    if paper == "sugarcrepe":  # its runs and its Table 6 run (not the released files: no fetching here)
        table6 = RESULTS / paper / "mini" / "table6.csv"
        recs = module.run_recomputations("mini") + module.table_recomputations(
            paper, "Table 6", table6, "mini", module.TABLE6_COLUMNS, module.table6_row,
            read_params()["sugarcrepe"]["models"]["full"], "run")
    elif paper == "aro":
        recs = module.recompute("mini")
    else:
        recs = module.run_recomputations("mini")
    summary = json.loads((RESULTS / "audit" / f"{paper}_summary.json").read_text(encoding="utf-8"))
    assert len(recs) == summary["mini profile: not comparable"]
