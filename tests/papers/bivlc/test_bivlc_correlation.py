"""Finding 3 and the cross-benchmark view (papers/bivlc/correlation.py): the intervals against hand-computed values,
the permutation p-values against brute force over every ordering (ties included) and scipy, the undefined cases, the
published rows, and a whole run on a hand-written results tree."""
from __future__ import annotations

import csv
import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
import scipy.stats

from papers.bivlc import correlation as corr
from papers.bivlc.correlation import (
    BENCHMARKS, Benchmark, CorrelationInputError, collect, kendall_interval, permutation_p, published_scores,
    rank_correlation, spearman_interval)

PUBLISHED = Path(__file__).resolve().parents[3] / "results" / "published"


# ---- intervals ----------------------------------------------------------------------------------------------------
def test_spearman_interval_is_bonett_wright():
    # rho = 0.5, n = 7: z = atanh(0.5) = 0.549306, SE = sqrt(1.125 / 4) = 0.530330, 1.959964 * SE = 1.039426
    low, high = spearman_interval(0.5, 7)
    assert low == pytest.approx(math.tanh(0.549306 - 1.039426), abs=1e-5) == pytest.approx(-0.45428, abs=1e-4)
    assert high == pytest.approx(math.tanh(0.549306 + 1.039426), abs=1e-5) == pytest.approx(0.91995, abs=1e-4)


def test_kendall_interval_is_fieller():
    # tau = 0.4, n = 9: z = atanh(0.4) = 0.423649, SE = sqrt(0.437 / 5) = 0.295635, 1.959964 * SE = 0.579434
    low, high = kendall_interval(0.4, 9)
    assert low == pytest.approx(math.tanh(0.423649 - 0.579434), abs=1e-5)
    assert high == pytest.approx(math.tanh(0.423649 + 0.579434), abs=1e-5)


def test_intervals_undefined_where_the_formula_is():
    assert all(math.isnan(v) for v in spearman_interval(0.5, 3))
    assert all(math.isnan(v) for v in kendall_interval(0.5, 4))
    assert all(math.isnan(v) for v in spearman_interval(1.0, 8))
    assert all(math.isnan(v) for v in kendall_interval(-0.9999999999999999, 8))  # floating-point +-1


# ---- permutation p-values -----------------------------------------------------------------------------------------
def brute_force_p(x, y):
    """Every ordering of y through scipy's own statistics: the share with |stat| >= |observed|."""
    rho0 = scipy.stats.spearmanr(x, y).statistic
    tau0 = scipy.stats.kendalltau(x, y).statistic
    rhos, taus = [], []
    for perm in itertools.permutations(y):
        rhos.append(abs(scipy.stats.spearmanr(x, perm).statistic) >= abs(rho0) - 1e-9)
        taus.append(abs(scipy.stats.kendalltau(x, perm).statistic) >= abs(tau0) - 1e-9)
    return float(np.mean(rhos)), float(np.mean(taus))


@pytest.mark.parametrize("x, y", [
    ([1.0, 2.0, 3.0, 4.0, 5.0], [2.0, 1.0, 4.0, 3.0, 5.0]),
    ([3.1, 0.2, 5.5, 5.5, 1.0, 2.0], [1.0, 1.0, 2.0, 7.0, 0.5, 3.0]),  # ties on both sides
    ([0.1, 0.4, 0.3, 0.2], [4.0, 1.0, 3.0, 2.0]),
])
def test_exact_p_is_the_share_of_all_orderings(x, y):
    p_rho, p_tau, method = permutation_p(x, y)
    want_rho, want_tau = brute_force_p(x, y)
    assert p_rho == pytest.approx(want_rho, abs=1e-12) and p_tau == pytest.approx(want_tau, abs=1e-12)
    assert method == f"exact ({math.factorial(len(x))} orderings)"


def test_exact_p_matches_scipy_permutation_test_at_nine_models():
    rng = np.random.default_rng(3)
    x = rng.normal(size=9)
    y = x + rng.normal(size=9)
    p_rho, _, _ = permutation_p(x, y)
    rx = scipy.stats.rankdata(x) - 5.0

    def rho(v, axis=-1):  # vectorized Spearman without ties: both rank vectors are orderings of 1..9
        return (scipy.stats.rankdata(v, axis=axis) - 5.0) @ rx / (rx @ rx)

    assert rho(y) == pytest.approx(scipy.stats.spearmanr(x, y).statistic)
    want = scipy.stats.permutation_test((y,), rho, permutation_type="pairings", n_resamples=np.inf,
                                        vectorized=True).pvalue
    assert p_rho == pytest.approx(want, rel=1e-9)


def test_perfect_order_of_eight_gives_two_orderings_out_of_eight_factorial():
    p_rho, p_tau, _ = permutation_p(range(8), [10.0 * v for v in range(8)])
    assert p_rho == p_tau == 2 / math.factorial(8)


def test_beyond_nine_models_the_test_is_monte_carlo_and_seeded():
    x = list(range(10))
    p1 = permutation_p(x, x, n_resamples=999, seed=5)
    assert p1 == permutation_p(x, x, n_resamples=999, seed=5)
    assert p1[0] == p1[1] == 1 / 1000  # the observed order, no random ordering is as extreme (2 / 10! chance each)
    assert p1[2] == "Monte Carlo (999 orderings; seed 5)"
    y = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3]
    a = permutation_p(x, y, n_resamples=999, seed=1)[0]
    b = permutation_p(x, y, n_resamples=999, seed=2)[0]
    assert a != b and abs(a - b) < 0.1


# ---- rank_correlation ---------------------------------------------------------------------------------------------
def test_rank_correlation_hand_computed():
    # ranks x = 1..5, ranks y = 2 1 4 3 5: sum d^2 = 4, rho = 1 - 6 * 4 / (5 * 24) = 0.8;
    # pairs: 10, one discordant (1,2) and (3,4) -> 2 discordant, tau = (8 - 2) / 10 = 0.6
    r = rank_correlation([1, 2, 3, 4, 5], [2, 1, 4, 3, 5])
    assert r.n == 5 and r.spearman == pytest.approx(0.8) and r.kendall == pytest.approx(0.6)
    assert (r.spearman_low, r.spearman_high) == pytest.approx(spearman_interval(0.8, 5))
    assert (r.kendall_low, r.kendall_high) == pytest.approx(kendall_interval(0.6, 5))
    assert r.note == ""


def test_rank_correlation_undefined_cases_say_why():
    few = rank_correlation([1, 2, 3], [1, 2, 3])
    assert math.isnan(few.spearman) and math.isnan(few.p_exact) and few.note == "n = 3 < 4 models: no statistic"
    flat = rank_correlation([1, 2, 3, 4], [5, 5, 5, 5])
    assert math.isnan(flat.spearman) and "constant" in flat.note
    four = rank_correlation([1, 2, 3, 4], [1, 3, 2, 4])
    assert not math.isnan(four.spearman_low) and math.isnan(four.kendall_low)
    assert "n = 4 < 5: Kendall interval undefined" in four.note
    perfect = rank_correlation([1, 2, 3, 4, 5, 6], [2, 4, 6, 8, 10, 12])
    assert perfect.spearman == perfect.kendall == 1.0 and math.isnan(perfect.spearman_low)
    assert "|spearman| = 1" in perfect.note and "|kendall| = 1" in perfect.note
    with pytest.raises(CorrelationInputError):
        rank_correlation([1, 2, 3, 4], [1, 2, 3])


# ---- the published tables -----------------------------------------------------------------------------------------
def test_published_rows_and_finding3_value():
    scores = published_scores(PUBLISHED)
    assert list(scores["published table2"]) == ["CLIP", "CLIPCOCO", "NegCLIP", "GNM", "Open CapPa", "VQAScore-XL",
                                                "VQAScore-XXL"]
    assert list(scores["published table3"]) == ["CLIP", "CLIPCOCO", "NegCLIP", "GNM", "CLIPTROHN-Text",
                                                "CLIPTROHN-Img"]
    assert len(scores["published table2+table3"]) == 9
    assert scores["published table2"]["CLIP"] == {"sugarcrepe": 76.56, "I2T": 75.83, "T2I": 52.40, "group": 49.06}
    rows = {(r["source"], r["score"]): r for r in corr.finding3_rows(scores)}
    # Table 2, SugarCrepe vs group: ranks 1 3 4 2 5 6 7 vs 2 5 4 3 1 6 7, sum d^2 = 22, rho = 1 - 132 / 336
    assert rows[("published table2", "group")]["spearman"] == round(1 - 132 / 336, 4)
    assert rows[("published table2", "group")]["n"] == 7


def test_published_tables_must_agree_on_shared_rows(tmp_path):
    lines = (PUBLISHED / "bivlc.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    target = "bivlc,Table 3,GNM,BiVLC | Group,57.96,"
    assert sum(line.startswith(target) for line in lines) == 1
    (tmp_path / "bivlc.csv").write_text("".join(line.replace(target, "bivlc,Table 3,GNM,BiVLC | Group,57.97,")
                                                for line in lines), encoding="utf-8")
    with pytest.raises(CorrelationInputError, match="GNM: Tables 2 and 3 print different scores"):
        published_scores(tmp_path)


# ---- the cross-benchmark view on a hand-written results tree ------------------------------------------------------
def write_csv(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


MODELS = ["mini/a", "mini/b", "mini/c", "mini/d", "mini/e"]
TABLE2 = [  # the tables stage's schema; sugarcrepe ranks a<b<c<d<e, group ranks b<a<c<e<d
    {"row": m.split("/")[1], "model": m, "label": m, "kind": "pretrained", "sugarcrepe": sc, "I2T": i2t, "T2I": t2i,
     "group": g, "Ipos2T": 1, "Ineg2T": 1, "Tpos2I": 1, "Tneg2I": 1, "n": 100}
    for m, sc, i2t, t2i, g in zip(MODELS, [60, 61, 62, 63, 64], [40, 41, 42, 43, 44], [30, 29, 31, 33, 32],
                                  [20, 19, 21, 23, 22])
]


@pytest.fixture
def results(tmp_path) -> Path:
    root = tmp_path / "results"
    write_csv(root / "bivlc" / "mini" / "table2.csv", TABLE2)
    write_csv(root / "sugarcrepe" / "mini" / "table6.csv",
              [{"model": m, "average": 70 + k} for k, m in enumerate(MODELS[:4])])
    categories = dict.fromkeys(corr.SUGARCREPE_CATEGORIES, 0.0)
    write_csv(root / "conclip" / "mini" / "sugarcrepe.csv",
              [{"row": "x", "model": "mini/a", **categories, "replace_obj": 70.0},  # mean of 7 = 10
               {"row": "y", "model": "conclip/run", **categories}])
    write_csv(root / "conclip" / "mini" / "table3.csv", [{"model": "mini/a", "ccneg": 55.0}])
    write_csv(root / "hard_positives" / "mini" / "table1.csv",
              [{"model": "mini/a", "replace_aug": 1, "swap_aug": 2, "replace_brittleness": 3, "swap_brittleness": 4},
               {"model": "hp/run", "replace_aug": 5, "swap_aug": 6, "replace_brittleness": 7, "swap_brittleness": 8}])
    write_csv(root / "hard_positives" / "mini" / "table3.csv",
              [{"model": "hp/run", "replace_aug": 5, "swap_aug": 6, "replace_brittleness": 7, "swap_brittleness": 8},
               {"model": "hp/ratio", "replace_aug": 9, "swap_aug": 9, "replace_brittleness": 9, "swap_brittleness": 9}])
    metrics = root / "aro" / "mini" / "metrics"
    metrics.mkdir(parents=True)
    (metrics / "aro__mini-negclip.json").write_text(json.dumps({"VG-Relation": 0.5, "VG-Attribution": 0.8,
                                                                "COCO-PRC": 0.25}), encoding="utf-8")
    # conclip's classification.csv is left out: listed as missing, not an error
    return root


def test_collect_reads_declared_columns_and_lists_missing_files(results):
    view = collect(BENCHMARKS, "mini", results)
    assert view.missing == ("results/conclip/mini/classification.csv",)
    assert view.scores["conclip:SugarCrepe"] == {"mini/a": 10.0, "conclip/run": 0.0}
    assert view.scores["aro:VG-Relation"] == {"aro/mini-negclip": 0.5}
    assert view.scores["aro:COCO-Order"] == {"aro/mini-negclip": 0.25}
    assert view.scores["hard_positives:SWAP brittleness"] == {"mini/a": 4.0, "hp/run": 8.0, "hp/ratio": 9.0}
    assert view.scores["bivlc:group"]["mini/d"] == 23.0
    assert "conclip:classification top-1" not in view.scores
    rows, fields = corr.cross_table_rows(view)
    assert fields[:2] == ["model", "n_benchmarks"] and "sugarcrepe:SugarCrepe" in fields
    a = next(r for r in rows if r["model"] == "mini/a")
    assert a["n_benchmarks"] == 11 and a["conclip:CC-Neg"] == 55.0


def test_two_files_of_one_column_must_agree(results):
    write_csv(results / "hard_positives" / "mini" / "table3.csv",
              [{"model": "hp/run", "replace_aug": 5.5, "swap_aug": 6, "replace_brittleness": 7,
                "swap_brittleness": 8}])
    with pytest.raises(CorrelationInputError, match="hp/run.*REPLACE aug"):
        collect(BENCHMARKS, "mini", results)


def test_a_missing_column_names_the_file(results):
    bad = Benchmark("sugarcrepe", "SugarCrepe", "sugarcrepe/{profile}/table6.csv", ("overall",), "percent")
    with pytest.raises(CorrelationInputError, match=r"table6.csv: no column 'overall'"):
        collect([bad], "mini", results)


def test_a_bad_number_names_file_line_and_column(results):
    write_csv(results / "conclip" / "mini" / "table3.csv", [{"model": "mini/a", "ccneg": "n/a"}])
    with pytest.raises(CorrelationInputError, match=r"table3.csv:2: model 'mini/a', column 'ccneg'"):
        collect(BENCHMARKS, "mini", results)


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_main_writes_every_output(results, monkeypatch, capsys):
    monkeypatch.setattr(corr, "RESULTS", results)
    assert corr.main(["--profile", "mini"]) == 0
    out = results / "bivlc" / "mini"
    finding3 = {(r["source"], r["score"]): r for r in read_csv(results / "bivlc" / "finding3.csv")}
    runs = finding3[("runs-mini", "group")]
    # sugarcrepe ranks 1..5, group ranks 2 1 3 5 4: sum d^2 = 4, rho = 0.8; exact over 120 orderings
    assert runs["n"] == "5" and float(runs["spearman"]) == 0.8 and runs["p_method"] == "exact (120 orderings)"
    assert float(runs["p_exact"]) == pytest.approx(permutation_p(range(5), [2, 1, 3, 5, 4])[0], abs=1e-4)
    assert ("published table2", "group") in finding3
    pairs = {(r["benchmark_a"], r["benchmark_b"]): r for r in read_csv(out / "benchmark_correlations.csv")}
    assert len(pairs) == 14 * 13 // 2  # 15 declared columns, conclip's classification missing
    few = pairs[("sugarcrepe:SugarCrepe", "aro:VG-Relation")]
    assert few["n_models"] == "0" and few["spearman"] == "" and few["note"] == "n = 0 < 4 models: no statistic"
    four = pairs[("sugarcrepe:SugarCrepe", "bivlc:I2T")]
    assert four["n_models"] == "4" and float(four["spearman"]) == 1.0 and four["spearman_low"] == ""
    summary = json.loads((out / "correlation_summary.json").read_text(encoding="utf-8"))
    assert len(summary) <= 12 and all(v is None or isinstance(v, float) for v in summary.values())
    assert summary["runs_group_spearman"] == 0.8 and summary["cross_benchmarks"] == 14.0
    context = json.loads((out / "correlation_context.json").read_text(encoding="utf-8"))
    assert context["missing"] == ["results/conclip/mini/classification.csv"]
    assert context["finding3_sources"]["runs-mini"] == "results/bivlc/mini/table2.csv"
    cross = read_csv(out / "cross_benchmark.csv")
    assert [r["model"] for r in cross][:5] == ["mini/a", "mini/b", "mini/c", "mini/d", "aro/mini-negclip"]
    assert next(r for r in cross if r["model"] == "mini/e")["bivlc:group"] == "22.0"
    assert "runs-mini" in capsys.readouterr().out


def test_bad_input_is_one_error_line(results, monkeypatch, capsys):
    from common.errors import run_entry_point

    monkeypatch.setattr(corr, "RESULTS", results)
    (results / "bivlc" / "mini" / "table2.csv").write_text("model,sugarcrepe\nmini/a,1\n", encoding="utf-8")
    assert run_entry_point(corr.main, ["--profile", "mini"], debug=False) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "table2.csv: no column 'I2T'" in err[0]
    assert not (results / "bivlc" / "mini" / "cross_benchmark.csv").exists()
